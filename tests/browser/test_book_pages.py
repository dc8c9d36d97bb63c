"""Every page of the built book loads offline: no console error, no failed request (a 404 favicon included), no
request off loopback, every embedded widget renders, math is typeset by the vendored MathJax."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from svbrowser import WIDGET_VIEWS, book_pages, require_book

PAGES = book_pages()
ROOT = Path(__file__).resolve().parents[2]


def _stored_widget_views(notebook: str) -> int:
    """How many widget views the notebook's stored outputs hold (each one a seqviz widget on the page)."""
    cells = json.loads((ROOT / notebook).read_text())["cells"]
    return sum("application/vnd.jupyter.widget-view+json" in out.get("data", {})
               for cell in cells for out in cell.get("outputs", []))


def test_the_book_is_built_with_the_visual_tools_page():
    require_book()
    assert "book/visual_tools.html" in PAGES, f"pages found: {PAGES}"


@pytest.mark.parametrize("path", PAGES or ["(book not built: run `make book`)"])
def test_page_loads_offline_without_errors(open_page, path):
    page, log = open_page(path)
    assert log.external == [], f"{path} made requests outside 127.0.0.1: {log.external}"
    assert log.errors == [], f"{path} logged errors:\n" + "\n".join(log.errors)
    assert log.failed == [], f"{path}: requests failed:\n" + "\n".join(log.failed)
    assert log.dialogs == []
    # math was typeset (no raw TeX left, no MathJax error boxes)
    if page.locator(".math").count():
        assert page.locator("mjx-container").count() > 0, f"{path}: MathJax did not typeset"
        assert page.locator("mjx-merror").count() == 0
    # each widget output of the page has its state saved with the page, and was rendered by the html-manager
    views = page.evaluate(WIDGET_VIEWS)
    assert views["with_state"] == views["total"], (
        f"{path}: {views['total'] - views['with_state']} of {views['total']} widget outputs have no saved widget "
        f"state, so they are blank in the book; re-execute the notebook so its widget state is stored")
    rendered = page.evaluate("() => Array.from(document.querySelectorAll('.widget-subarea'))"
                             ".filter(s => s.children.length > 0).length")
    assert rendered >= views["total"]


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
