"""Every page of the built book loads offline: no console error, no failed request (a 404 favicon included), no
request off loopback, every embedded widget renders, math is typeset by the vendored MathJax. The pages a reader reads
are checked in test_pages.py, on the page load its other checks share; here the slide decks and the root page."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from svbrowser import book_pages, reading_pages, require_book
from test_pages import load_problems

PAGES = book_pages()
#: what test_pages.py does not load: the slide decks and the root index.html (a redirect to the first page)
OTHER_PAGES = sorted(set(PAGES) - set(reading_pages()))
ROOT = Path(__file__).resolve().parents[2]


def _stored_widget_views(notebook: str) -> int:
    """How many widget views the notebook's stored outputs hold (each one a seqviz widget on the page)."""
    cells = json.loads((ROOT / notebook).read_text())["cells"]
    return sum("application/vnd.jupyter.widget-view+json" in out.get("data", {})
               for cell in cells for out in cell.get("outputs", []))


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


def test_visual_tools_page_loads_its_libraries_from_the_book_itself(open_page):
    page, log = open_page("book/visual_tools.html")
    paths = {r.split("?")[0].split("/", 3)[-1] for r in log.requests if r.startswith("http")}
    for needed in ("vendor/require.js", "vendor/seqviz-offline.js", "vendor/html-manager/embed-amd.js",
                   "vendor/anywidget/index.js", "vendor/mathjax/tex-mml-chtml.js"):
        assert needed in paths, f"{needed} was not loaded from the book (requests: {sorted(paths)})"
    # every widget the notebook stored renders as a seqviz widget (heatmaps, gates, positions, BeamTree, AttentionSteps)
    assert page.locator(".seqviz").count() == _stored_widget_views("book/visual_tools.ipynb") >= 7
    assert page.locator("mjx-container").count() >= 10
    assert log.external == [] and log.errors == []


@pytest.mark.parametrize("path", ["notebooks/04_lstm.html", "book/visual_tools.html"])
def test_the_widgets_icon_fonts_load_from_the_book(open_page, path):
    """The html-manager's widget modules (@jupyter-widgets/base, controls) find their Font Awesome files relative to
    their own AMD address. Before: that address was the page's folder, so once a reader scrolled to where a glyph in
    that font showed, the page asked for notebooks/@jupyter-widgets/1551f4f60c37af51121f.woff2 and its fallbacks, six
    404s in the console (seen in CI on chapter 4's page, only under load, when the quiz test scrolled)."""
    page, log = open_page(path)
    faces = page.evaluate("""async () => {
        const faces = [...document.fonts].filter(f => f.family.replace(/"/g, "").startsWith("Font Awesome"));
        await Promise.allSettled(faces.map(f => f.load()));
        return faces.map(f => `${f.family} ${f.weight}: ${f.status}`);
    }""")
    assert len(faces) >= 3 and all(f.endswith(": loaded") for f in faces), faces
    page.wait_for_timeout(100)
    assert log.failed == [] and log.errors == [], log.failed + log.errors
