"""Every page of the built book loads offline: no console error, no failed request (a 404 favicon included), no
request off loopback, every embedded widget renders, math is typeset by the vendored MathJax. The pages a reader reads
are checked in test_pages.py, on the page load its other checks share (with what the visual tools page loads its
libraries from, and the widgets' icon fonts); here the slide decks and the root page."""
from __future__ import annotations

import pytest

from svbrowser import ROOT, book_pages, reading_pages, require_book
from test_pages import load_problems

PAGES = book_pages()
#: what test_pages.py does not load: the slide decks and the root index.html (a redirect to the first page)
OTHER_PAGES = sorted(set(PAGES) - set(reading_pages()))


def test_the_book_is_built_with_the_visual_tools_page():
    require_book()
    assert "book/visual_tools.html" in PAGES, f"pages found: {PAGES}"


@pytest.mark.parametrize("path", OTHER_PAGES or ["(book not built: run `make book`)"])
def test_page_loads_offline_without_errors(open_page, path):
    page, log = open_page(path)
    problems = load_problems(page, log, path)
    assert not problems, "\n".join(problems)


def test_every_page_is_loaded_by_one_of_the_page_tests():
    require_book()
    assert len(OTHER_PAGES) >= 9 and all(p.startswith("slides/") or p == "index.html" for p in OTHER_PAGES), OTHER_PAGES
    assert set(reading_pages()) | set(OTHER_PAGES) == set(PAGES)


def test_each_shared_page_runs_its_tests_together_in_file_order_and_the_quiz_last():
    """test_pages.py loads each (page, width) once for all its tests. That holds, and its tests that change a page
    run after those that read it, only if pytest runs one page's tests together and in the order the file gives them,
    across its parametrize lists: pytest 9 groups a module-scoped indirect parameter by its value (pytest 8 by its
    index in each list, which would interleave the pages). Collected here as make test collects them."""
    import re
    import subprocess
    import sys

    require_book()
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "tests/browser/test_pages.py"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    ids = [m.groups() for m in re.finditer(r"::(test_\w+)\[(.+)\]$", out.stdout, re.M)]
    source = (ROOT / "tests" / "browser" / "test_pages.py").read_text(encoding="utf-8")
    order = re.findall(r"^def (test_\w+)", source, re.M)           # the test functions in file order
    blocks: dict[str, list[str]] = {}
    last = None
    for name, page in ids:
        assert page == last or page not in blocks, f"{page}'s tests are not together: {name} comes after another page"
        blocks.setdefault(page, []).append(name)
        last = page
    for page, names in blocks.items():
        assert names == sorted(names, key=order.index), (page, names)
        if "test_every_chapters_questions_are_drawn_and_answer" in names:   # it leaves its questions answered
            assert names[-1] == "test_every_chapters_questions_are_drawn_and_answer", (page, names)
    assert len(blocks) == 2 * len(reading_pages()), sorted(blocks)
