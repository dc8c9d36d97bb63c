"""Exercise solutions stay hidden on the page until the reader clicks (issue: answers visible without a click).

A solution is a code cell tagged ``hide-cell`` (input and output folded away) and a conceptual answer is prose in
a ``{dropdown}``; both must be closed when the page loads and open on a click. The pages checked are every built page
with an "Exercises" heading (chapters and appendices alike), found in the HTML, not listed by hand; a test below
checks that finding against the sources in ``_toc.yml``, so a page whose source has exercises cannot slip out.
"""
from __future__ import annotations

import json
import re
import sys

import pytest

from svbrowser import BOOK, ROOT, book_pages

# "Exercises" (or "Exercise"), possibly numbered ("3.10 Exercises"), as a heading of the built page or of its source
HTML_HEADING = re.compile(r"<h[1-6][^>]*>\s*(?:<[^>]+>\s*)*(?:[\d.]+\s+)?Exercises?\b", re.I)
SOURCE_HEADING = re.compile(r"^#{1,6}\s+(?:[\d.]+\s+)?Exercises?\b", re.I | re.M)


def has_exercises(page: str) -> bool:
    return bool(HTML_HEADING.search((BOOK / page).read_text(errors="replace")))


EXERCISE_PAGES = [p for p in book_pages() if has_exercises(p)]
NOT_BUILT = ["(book not built: run `make book`)"]


def toc_sources() -> dict[str, str]:
    """{page path in the built book: its source text (markdown cells only for a notebook)} for every _toc.yml file."""
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_book import toc_files  # the one reader of _toc.yml's files, in reading order

    names = toc_files()
    out = {}
    for name in names:
        name = re.sub(r"\.(md|ipynb)$", "", name)
        if (ROOT / f"{name}.ipynb").is_file():
            nb = json.loads((ROOT / f"{name}.ipynb").read_text())
            out[f"{name}.html"] = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
        elif (ROOT / f"{name}.md").is_file():
            out[f"{name}.html"] = (ROOT / f"{name}.md").read_text()
    return out


def test_every_page_whose_source_has_exercises_is_checked():
    if not EXERCISE_PAGES:
        pytest.fail(f"no built page with an Exercises heading under {BOOK}: run `make book`", pytrace=False)
    with_exercises = sorted(page for page, text in toc_sources().items() if SOURCE_HEADING.search(text))
    assert with_exercises, "no source in _toc.yml has an Exercises heading: the pattern no longer matches the book"
    missed = [p for p in with_exercises if p not in EXERCISE_PAGES]
    assert not missed, f"pages with exercises in their source but not found in the built HTML: {missed}"


# Each page loads once for both tests below (the shared_page fixture, at the default 1,300 px): each test puts back
# what it clicked open and checks it closes again, so the other one finds the page as it loaded.
PAGES = EXERCISE_PAGES or NOT_BUILT
ON_PAGE = pytest.mark.parametrize("shared_page, path", [((p, 1300), p) for p in PAGES], ids=PAGES, indirect=True)


@pytest.fixture(scope="module")
def path(request) -> str:
    """The page's path (for the messages): a fixture of the same scope as shared_page, so that pytest groups one
    page's tests together (a plain parameter beside it would make the pair function-scoped, one load per test)."""
    return request.param


@ON_PAGE
def test_solutions_are_folded_until_clicked(shared_page, path):
    page, _ = shared_page
    solutions = page.locator("div.cell").filter(has_text="Solution")
    shown = [i for i in range(solutions.count())
             if "tag_hide-cell" not in (solutions.nth(i).get_attribute("class") or "")
             and solutions.nth(i).locator(".cell_input").first.is_visible()]
    assert not shown, f"{path}: {len(shown)} solution cell(s) show their code without a click (tag them hide-cell)"
    hidden = page.locator("div.cell.tag_hide-cell")
    assert hidden.count() > 0, f"{path} has exercises but no folded solution cell (they need hidden, executed solutions)"
    for i in range(hidden.count()):
        cell = hidden.nth(i)
        body = cell.locator(".cell_input, .cell_output")
        assert body.count() and not any(body.nth(k).is_visible() for k in range(body.count())), (
            f"{path}: hide-cell cell {i} is visible before any click")
    first = hidden.first
    first.locator("summary").first.click()
    assert first.locator(".cell_input").first.is_visible(), f"{path}: clicking did not unfold the solution"
    first.locator("summary").first.click()  # folded again, as the page loaded
    assert not first.locator(".cell_input").first.is_visible(), f"{path}: a second click did not fold the solution"


@ON_PAGE
def test_answers_in_dropdowns_are_closed(shared_page, path):
    page, _ = shared_page
    drops = page.locator("details.sd-dropdown")
    for i in range(drops.count()):
        assert drops.nth(i).get_attribute("open") is None, f"{path}: dropdown {i} is open before any click"
    if drops.count():
        drops.first.locator("summary").first.click()
        assert drops.first.get_attribute("open") is not None
        drops.first.locator("summary").first.click()  # closed again, as the page loaded
        assert drops.first.get_attribute("open") is None, f"{path}: a second click did not close dropdown 0"
