"""Every page fits its column and every widget label is readable (issue 33), at a 1,280 px window (the 688 px text
column) and at a 390 px phone width.

- Every page of the built book: no text output (printed line, table, image) and no widget wider than its column,
  unless a widget holds a deliberate scroller (overflow auto, tabindex=0, an accessible name); no widget label drawn
  below 10 px at 1,280 px; each widget's own claim of its smallest font (data-min-font) is what it drew.
  These read the widget JS the notebooks stored; chapters are fixed by shortening their outputs (run
  `python scripts/check_layout.py` on a built book to list what is too wide, page by page). That test is in
  test_pages.py, where one load of each page serves every check of a still page; its rules are here.
- The package's current widgets (gallery.py, rendered into the book's real column): the same rules, and the rule
  behind data-min-font (labels that would be under 10 px are not drawn small: the widget scrolls or hides them).
"""
from __future__ import annotations

import pytest

from gallery import widgets
from svbrowser import layout, show_gallery

WIDTHS = (1280, 390)
MIN_PX = layout.MIN_LABEL_PX


def too_wide(m: dict) -> list[str]:
    return [f"cell {i['cell']} {i['kind']} {i['width']} px > {i['column']} px: "
            f"{('code `' + i['input'] + '`') if i['input'] else ('output `' + i['text'] + '`')}"
            for i in m["items"] if i["over"]]


def font_problems(m: dict) -> list[str]:
    out = []
    for w in m["widgets"]:
        where = f"cell {w['cell']} {w['kind']}"
        if w["minFont"] is not None and w["minFont"] < MIN_PX:
            out.append(f"{where}: a label drawn at {w['minFont']} px (< {MIN_PX} px)")
        if w["claimed"] is None:
            out.append(f"{where}: no data-min-font (the widget JS predates issue 33: re-execute its notebook)")
        elif w["minFont"] is not None and w["claimed"] != w["minFont"]:
            out.append(f"{where}: says its smallest font is {w['claimed']} px, drew {w['minFont']} px")
    return out


# ------------------------------------------------------------------------------------ the package's widgets -----


@pytest.fixture
def gallery(open_page):
    def _show(width: int, which=None):
        page, log = open_page("book/notation.html", width=width)
        made = widgets()
        handles = show_gallery(page, {k: made[k] for k in (which or made)})
        return page, log, handles
    return _show


@pytest.mark.parametrize("width", WIDTHS)
def test_the_widgets_fit_the_column_and_draw_no_label_under_10px(gallery, width):
    page, log, handles = gallery(width)
    m = layout.measure(page)
    assert len(m["widgets"]) == len(handles) and len(m["items"]) == len(handles)
    assert not too_wide(m), too_wide(m)
    assert not font_problems(m), font_problems(m)  # at phone width too: labels scroll, they do not shrink
    assert log.errors == []


def test_labels_that_would_be_too_small_scroll_or_are_not_drawn(gallery):
    """The rule behind data-min-font: a cell narrower than a 10 px label either scrolls at a readable size (inside a
    focusable, named box) or, for a matrix too large even for that, is drawn without labels."""
    import numpy as np

    from seqviz.widgets import AttentionHeatmap

    page, _, _ = gallery(1280, ["heatmap-chars", "heatmap-copy"])
    chars, copy = page.locator(".sv-att").nth(0), page.locator(".sv-att").nth(1)
    # 48 characters fit the 688 px column at 13 px a cell: labels at 11 px, no scrolling
    assert chars.get_attribute("data-scroll") == "false" and int(chars.get_attribute("data-cell")) >= 12
    assert chars.get_attribute("data-min-font") == "11"
    # 120 article words do not: 14 px cells (12 px labels) in a scroller the keyboard reaches
    assert copy.get_attribute("data-scroll") == "true" and copy.get_attribute("data-cell") == "14"
    box = copy.locator(".sv-scroll")
    assert box.get_attribute("tabindex") == "0" and "scrolls sideways" in box.get_attribute("aria-label")
    assert box.evaluate("e => e.scrollWidth > e.clientWidth")
    # 600 x 600: no readable scroller would do; the cells fit the column and no label is drawn
    rng = np.random.default_rng(1)
    w = rng.random((600, 600))
    big = AttentionHeatmap(w / w.sum(-1, keepdims=True), [f"t{i}" for i in range(600)])
    show_gallery(page, {"big": big})
    root = page.locator(".sv-att").first
    assert root.get_attribute("data-labels") == "hidden" and root.get_attribute("data-scroll") == "false"
    assert page.locator(".sv-att .sv-key").first.is_hidden()
    m = layout.measure(page)
    assert not too_wide(m) and m["widgets"][0]["minFont"] == 12 == m["widgets"][0]["claimed"]


def test_a_widget_lays_itself_out_again_when_its_column_narrows(gallery):
    page, _, _ = gallery(1280, ["heatmap-chars", "lstm", "steps-chars"])
    before = {k: page.locator(sel).first.get_attribute("data-scroll")
              for k, sel in [("att", ".sv-att"), ("lstm", ".sv-lstm"), ("steps", ".sv-steps")]}
    assert before == {"att": "false", "lstm": "true", "steps": "false"}
    page.set_viewport_size({"width": 390, "height": 900})
    page.wait_for_timeout(300)
    after = {k: page.locator(sel).first.get_attribute("data-scroll")
             for k, sel in [("att", ".sv-att"), ("lstm", ".sv-lstm"), ("steps", ".sv-steps")]}
    assert after == {"att": "true", "lstm": "true", "steps": "true"}
    assert not too_wide(layout.measure(page))
