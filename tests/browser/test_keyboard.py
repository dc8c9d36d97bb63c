"""Every widget works by keyboard alone (issue 33): Tab reaches each of its controls in order, each shows a visible focus
ring, the usual keys change it (arrows, Home/End, Page Up/Down on sliders and on the cell cursors of canvases, Enter or
Space to act), and what the widget draws and its text alternative change with it. The widgets are the package's
current ones (gallery.py), rendered into the book's real column."""
from __future__ import annotations

import pytest

from gallery import widgets
from svbrowser import show_gallery

FOCUSABLE = "select, input, button, [tabindex='0']"


# Every test draws its widgets afresh in one notation.html page at 1,280 px, loaded once for the module (the
# shared_page fixture): show_gallery replaces the article's widgets, tab_to starts from the top of the article, and the
# widgets listen on their own elements only (none on window or document), so a test finds no trace of the one before.
pytestmark = pytest.mark.parametrize("shared_page", [("book/notation.html", 1280)], ids=["1280"], indirect=True)


@pytest.fixture
def shown(shared_page, open_page):
    """shown(*names) -> (page, {name: root locator}): the named gallery widgets, fresh, in the book's column at
    1,280 px (the module's shared page; another width gets a page of its own)."""
    def _show(*names, width=1280):
        page, log = shared_page if width == 1280 else open_page("book/notation.html", width=width)
        made = widgets()
        show_gallery(page, {n: made[n] for n in names})
        roots = page.locator(".seqviz")
        return page, {n: roots.nth(k) for k, n in enumerate(names)}
    return _show


def sig(locator) -> str:
    """The pixels of a canvas (equal strings: the same drawing)."""
    return locator.evaluate("c => c.toDataURL()")


def focused(page) -> dict:
    """The focused element: tag, class, accessible name (aria-label, aria-labelledby, its <label>, its text), outline."""
    return page.evaluate("""() => { const e = document.activeElement, s = getComputedStyle(e);
        const by = e.getAttribute('aria-labelledby');
        const name = e.getAttribute('aria-label') || (by && document.getElementById(by)?.textContent)
          || (e.labels && e.labels.length ? e.labels[0].textContent : '') || e.textContent;
        return {tag: e.tagName, cls: String(e.className), name: (name || '').trim(), outline: s.outlineStyle,
                width: parseFloat(s.outlineWidth), inWidget: Boolean(e.closest('.seqviz'))}; }""")


def reachable(root) -> list:
    """The widget's controls the Tab key stops at, in order: visible, not taken out of the tab order."""
    controls = root.locator(FOCUSABLE)
    return [controls.nth(i) for i in range(controls.count())
            if controls.nth(i).is_visible() and controls.nth(i).get_attribute("tabindex") != "-1"]


def tab_to(page, root, selector):
    """Press Tab from the top of the page until `selector` (inside root; or a locator) has the focus; the controls
    passed on the way, as (tag, class) pairs."""
    target = root.locator(selector).first if isinstance(selector, str) else selector
    page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
    page.locator("article.bd-article").first.evaluate(
        "a => { a.tabIndex = -1; a.focus(); a.removeAttribute('tabindex'); }")
    passed = []
    for _ in range(80):
        page.keyboard.press("Tab")
        if target.evaluate("e => e === document.activeElement"):
            return passed
        passed.append((focused(page)["tag"], focused(page)["cls"]))
    raise AssertionError(f"Tab never reached {selector}; it passed {passed}")


@pytest.mark.parametrize("name", sorted(widgets()))
def test_tab_reaches_every_control_with_a_visible_focus_ring(shown, name):
    page, roots = shown(name)
    root = roots[name]
    visible = reachable(root)
    assert visible, f"{name} has no control the keyboard can reach"
    tab_to(page, root, visible[0])
    seen = []
    for k in range(len(visible)):
        f = focused(page)
        assert f["inWidget"], f"Tab left {name} after {k} of its {len(visible)} controls: {seen}"
        assert f["outline"] != "none" and f["width"] >= 2, f"{name}: no visible focus ring on {f}"
        assert f["name"], f"{name}: a control without a name: {f}"
        seen.append(f["tag"])
        page.keyboard.press("Tab")
    assert not focused(page)["inWidget"] or len(seen) == len(visible)


def test_heatmap_cell_cursor_reads_out_by_keyboard(shown):
    page, roots = shown("heatmap-chars")
    root = roots["heatmap-chars"]
    heat = root.locator("canvas.sv-heat")
    readout = root.locator(".sv-readout")
    tab_to(page, root, "canvas.sv-heat")
    assert root.get_attribute("data-cursor") == "0,0"  # focus puts the cursor on the first cell
    first = readout.text_content()
    assert first.startswith("layer 0, head 0: query \u201cW\u201d (0) \u2192 key \u201cW\u201d (0): ")
    drawn = sig(root.locator("canvas.sv-overlay"))
    for key, want in [("ArrowDown", "1,0"), ("ArrowRight", "1,1"), ("End", "1,47"), ("Home", "1,0"),
                      ("PageDown", "11,0"), ("Control+End", "47,47"), ("PageUp", "37,47")]:
        page.keyboard.press(key)
        assert root.get_attribute("data-cursor") == want, key
    assert readout.text_content() != first and "(37) \u2192 key" in readout.text_content()
    assert sig(root.locator("canvas.sv-overlay")) != drawn  # the cursor is drawn
    assert heat.get_attribute("role") == "application" and "arrow keys" in heat.get_attribute("aria-label")
    # the head selector by keyboard: the drawing and the text alternative follow
    summary = root.locator(".sv-summary").text_content()
    before = sig(heat)
    root.locator("select.sv-head").focus()
    page.keyboard.press("ArrowDown")
    assert root.get_attribute("data-head") == "1"
    assert sig(heat) != before and root.locator(".sv-summary").text_content() != summary
    assert root.locator(".sv-summary caption").text_content().startswith("layer 0, head 1: attention weight")


def test_copy_trace_reads_as_headline_words_by_article_words(shown):
    page, roots = shown("heatmap-copy")
    root = roots["heatmap-copy"]
    assert root.locator(".sv-axes").text_content() == (
        "rows: headline word \u00b7 columns: article word \u00b7 colour: copy attention")
    assert root.locator("select.sv-layer").is_hidden() and root.locator("select.sv-head").is_hidden()
    tab_to(page, root, "canvas.sv-heat")
    box = root.locator(".sv-scroll")
    page.keyboard.press("End")
    text = root.locator(".sv-readout").text_content()
    assert text.startswith("headline word \u201c") and "\u2192 article word \u201c" in text and "(119): " in text
    assert "layer" not in text and "head 0" not in text  # one distribution: no layer, no head
    assert box.evaluate("b => b.scrollLeft > 0 && b.scrollLeft + b.clientWidth >= b.scrollWidth - 20")  # followed
    rows = root.locator(".sv-summary tr")
    assert rows.count() == 1 + 6  # a header and one row per headline word
    assert root.locator(".sv-summary caption").text_content().startswith("copy attention, 6 rows (headline word)")


def test_grid_heads_open_by_keyboard(shown):
    page, roots = shown("heatmap-grid")
    root = roots["heatmap-grid"]
    thumbs = root.locator(".sv-att-grid canvas.sv-heat")
    assert thumbs.count() == 4
    tab_to(page, root, ".sv-att-grid canvas.sv-heat")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")  # head 2
    page.keyboard.press("ArrowRight")
    assert "head 2: query" in root.locator(".sv-readout").text_content()
    page.keyboard.press("Enter")
    assert root.get_attribute("data-head") == "2" and root.locator(".sv-att-grid").count() == 0
    assert focused(page)["cls"].startswith("sv-heat")  # the focus stays on the heatmap that replaced the grid


def test_lstm_slider_keys_and_cursor(shown):
    page, roots = shown("lstm")
    root = roots["lstm"]
    slider = root.locator("input.sv-step")
    summary = root.locator(".sv-summary")
    step_cells = root.locator("canvas.sv-step-cells").first
    tab_to(page, root, "input.sv-step")
    before = (summary.text_content(), sig(step_cells))
    for key, want in [("ArrowRight", 21), ("ArrowLeft", 20), ("PageUp", 38), ("PageDown", 20), ("End", 179),
                      ("Home", 0)]:
        page.keyboard.press(key)
        assert root.get_attribute("data-step") == str(want), key
    assert slider.get_attribute("aria-valuetext") == "t = 0: \u201cE\u201d"
    assert (summary.text_content(), sig(step_cells)) != before
    assert summary.text_content().startswith("c_t cell state (9.27) over 180 time steps and 128 units. At t = 0")
    # the time axis scrolls with the step (180 steps do not fit at a readable size)
    box = root.locator(".sv-scroll")
    page.keyboard.press("End")
    assert box.evaluate("b => b.scrollLeft > 0")
    # the heatmap's cursor: arrows read a unit at a step, Enter makes its column the time step
    root.locator("canvas.sv-heat").focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    assert root.get_attribute("data-cursor") == "1,1"
    assert root.locator(".sv-readout").text_content().startswith("unit 1, t = 1 \u201cn\u201d: c_t = ")
    page.keyboard.press("Enter")
    assert root.get_attribute("data-step") == "1"
    # the gate selector
    heat = sig(root.locator("canvas.sv-heat"))
    root.locator("select.sv-gate").focus()
    page.keyboard.press("ArrowUp")
    assert root.get_attribute("data-gate") == "i" and sig(root.locator("canvas.sv-heat")) != heat  # f g i c o h


def test_positional_sliders_and_matrix_cursor(shown):
    page, roots = shown("positional")
    root = roots["positional"]
    sim = root.locator("canvas.sv-sim")
    before = (sig(sim), root.locator(".sv-summary").text_content())
    root.locator("input.sv-max-len").focus()
    page.keyboard.press("PageDown")
    n = int(root.get_attribute("data-max-len"))
    assert n < 100 and (sig(sim), root.locator(".sv-summary").text_content()) != before
    page.keyboard.press("Home")
    assert root.get_attribute("data-max-len") == "2"
    page.keyboard.press("End")
    assert root.get_attribute("data-max-len") == "512"
    sim.focus()
    for key in ["ArrowDown"] * 3 + ["ArrowRight"] * 7:
        page.keyboard.press(key)
    assert root.locator(".sv-hover").text_content().startswith("P[3] \u00b7 P[7] = ")
    page.keyboard.press("Enter")
    assert root.locator(".sv-pair").text_content().startswith("P[3] \u00b7 P[7] = ")


def test_next_token_by_keyboard(shown):
    page, roots = shown("next-token")
    root = roots["next-token"]
    values = root.locator(".sv-bar-value").all_text_contents()
    root.locator("input.sv-temperature").focus()
    page.keyboard.press("PageDown")
    assert float(root.get_attribute("data-temperature")) < 1
    assert root.locator(".sv-bar-value").all_text_contents() != values
    root.locator("input.sv-top-k").focus()
    page.keyboard.press("Home")
    assert root.get_attribute("data-top-k") == "1" and root.locator(".sv-bar-row").count() == 1
    root.locator("button.sv-sample").focus()
    page.keyboard.press("Enter")
    assert root.locator(".sv-samples .sv-sample").count() == 20
    root.locator("input.sv-only-top-k").focus()
    page.keyboard.press("Space")
    assert root.locator("input.sv-only-top-k").is_checked()


def test_attention_steps_query_picker_offers_every_query_by_keyboard(shown):
    page, roots = shown("steps-we")
    root = roots["steps-we"]
    chips = root.locator("button.sv-choice")
    assert chips.all_text_contents() == ["We", "wash", "our", "cats"]
    assert root.locator("[role=radiogroup]").count() == 1
    tab_to(page, root, "button.sv-choice[aria-checked=true]")
    grid_before = root.locator(".sv-steps-weight").all_text_contents()
    summary = root.locator(".sv-summary").text_content()
    # counted from 1, as the chapter's code names them: q_1 is "We"
    assert root.locator(".sv-steps-qname").text_content() == "q_1 of \u201cWe\u201d (position 1), d_k = 64:"
    assert summary.startswith("query 1 \u201cWe\u201d, causal mask: it may see 1 of 4 keys")
    page.keyboard.press("ArrowRight")
    assert root.get_attribute("data-query") == "1"
    assert root.locator(".sv-steps-qname").text_content().startswith("q_2 of \u201cwash\u201d (position 2)")
    assert focused(page)["name"] == "wash" and chips.nth(1).get_attribute("aria-checked") == "true"
    page.keyboard.press("End")
    assert root.get_attribute("data-query") == "3"
    assert root.locator(".sv-steps-weight").all_text_contents() != grid_before
    assert root.locator(".sv-summary").text_content().startswith("query 4 \u201ccats\u201d, causal mask: it may see 4")
    assert [c for c in root.locator(".sv-steps-j").all_text_contents()] == ["1", "2", "3", "4"]
    # the mask switch by keyboard, and a vector column read cell by cell
    root.locator("input.sv-causal").focus()
    page.keyboard.press("Space")
    assert root.get_attribute("data-causal") == "false"
    root.locator("canvas.sv-steps-k").focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    assert root.locator(".sv-readout").text_content().startswith("k_2[1] = ")


def test_beam_tree_scroller_and_nodes_by_keyboard(shown):
    page, roots = shown("beam")
    root = roots["beam"]
    box = root.locator(".sv-beam-tree")
    assert box.get_attribute("tabindex") == "0" and box.get_attribute("role") == "region"
    assert "beam search tree" in box.get_attribute("aria-label")
    table = root.locator(".sv-beam-table").text_content()
    root.locator("input.sv-step").focus()
    page.keyboard.press("Home")
    assert root.get_attribute("data-step") == "1" and root.locator(".sv-beam-table").text_content() != table
    assert root.locator(".sv-beam-caption").text_content().startswith("The beam after step 1 of 6")
    page.keyboard.press("End")
    tab_to(page, root, ".sv-beam-tree")
    page.keyboard.press("ArrowDown")
    first = root.get_attribute("data-cursor")
    assert first and root.locator(".sv-readout").text_content().startswith("step 6: ")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert root.locator(".sv-readout").text_content().startswith("step 4: ")
    assert root.locator(".sv-path").count() >= 5  # the node's path from the prompt is highlighted
    page.keyboard.press("Enter")
    assert root.get_attribute("data-step") == "4"
