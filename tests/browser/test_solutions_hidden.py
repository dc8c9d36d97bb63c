"""Exercise solutions stay hidden on the page until the reader clicks (issue: answers visible without a click).

A solution is a code cell tagged ``hide-cell`` (input and output folded away) and a conceptual answer is prose in
a ``{dropdown}``; both must be closed when the page loads and open on a click.
"""
from __future__ import annotations

import pytest

from svbrowser import book_pages

CHAPTERS = [p for p in book_pages() if p.startswith("notebooks/")]


@pytest.mark.parametrize("path", CHAPTERS or ["(book not built: run `make book`)"])
def test_solutions_are_folded_until_clicked(open_page, path):
    page, _ = open_page(path)
    solutions = page.locator("div.cell").filter(has_text="Solution")
    shown = [i for i in range(solutions.count())
             if "tag_hide-cell" not in (solutions.nth(i).get_attribute("class") or "")
             and solutions.nth(i).locator(".cell_input").first.is_visible()]
    assert not shown, f"{path}: {len(shown)} solution cell(s) show their code without a click (tag them hide-cell)"
    hidden = page.locator("div.cell.tag_hide-cell")
    assert hidden.count() > 0, f"{path} has no folded solution cell (exercises need hidden, executed solutions)"
    for i in range(hidden.count()):
        cell = hidden.nth(i)
        body = cell.locator(".cell_input, .cell_output")
        assert body.count() and not any(body.nth(k).is_visible() for k in range(body.count())), (
            f"{path}: hide-cell cell {i} is visible before any click")
    first = hidden.first
    first.locator("summary").first.click()
    assert first.locator(".cell_input").first.is_visible(), f"{path}: clicking did not unfold the solution"


@pytest.mark.parametrize("path", CHAPTERS or ["(book not built: run `make book`)"])
def test_answers_in_dropdowns_are_closed(open_page, path):
    page, _ = open_page(path)
    drops = page.locator("details.sd-dropdown")
    for i in range(drops.count()):
        assert drops.nth(i).get_attribute("open") is None, f"{path}: dropdown {i} is open before any click"
    if drops.count():
        drops.first.locator("summary").first.click()
        assert drops.first.get_attribute("open") is not None
