"""Every page of the built book loads offline: no console error, no failed request (a 404 favicon included), no
request off loopback, every embedded widget renders, math is typeset by the vendored MathJax. The pages a reader reads
are checked in test_pages.py, on the page load its other checks share (with what the visual tools page loads its
libraries from, and the widgets' icon fonts); here the slide decks and the root page."""
from __future__ import annotations

import pytest

from svbrowser import book_pages, reading_pages, require_book
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
