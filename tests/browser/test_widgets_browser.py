"""Drive every widget of the built "Visual tools" page in chromium: each control changes the rendering, hover read-outs
show the right numbers, token text stays text, the browser's numbers equal seqviz's Python ones, and the views follow
traits set from Python (through the same model interface the kernel uses)."""
from __future__ import annotations

import numpy as np
import pytest

from seqviz.decode import softmax_with_temperature
from seqviz.widgets import sinusoidal_encoding
from gallery import widgets
from svbrowser import MOCK_RENDER, XSS, embedded_models, show_gallery

PAGE = "book/visual_tools.html"


def sig(locator) -> str:
    """Pixels of a canvas, as a PNG data URL (equal strings = identical pixels)."""
    return locator.evaluate("c => c.toDataURL()")


def hover_cell(page, canvas, i, j, rows, cols):
    """Move the mouse to the centre of cell (row i, column j) of a rows x cols canvas heatmap."""
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + (j + 0.5) * box["width"] / cols, box["y"] + (i + 0.5) * box["height"] / rows)


def model_of(models, kind, **match):
    for mid, m in models.items():
        if m["kind"] == kind and all(m["state"].get(k) == v for k, v in match.items()):
            return mid, m
    raise AssertionError(f"no embedded {kind} widget matching {match}")


def model_drawn(models, kind, shown, tokens_of):
    """The embedded model of ``kind`` whose tokens the view draws (``shown``, read from the page): the page's widget
    state is keyed by random model ids, so "the first LSTMGates" in the state need not be the first on the page."""
    hits = [(mid, m) for mid, m in models.items() if m["kind"] == kind and tokens_of(m["state"]) == shown]
    assert len(hits) == 1, f"{len(hits)} embedded {kind} widgets draw {shown[:5]}..."
    return hits[0]


def lstm_drawn(models, root):
    strip = root.locator(".sv-strip .sv-tok").all_text_contents()
    return model_drawn(models, "LSTMGates", strip, lambda st: [t.replace(" ", "\u2423") for t in st["tokens"]])


def next_token_drawn(models, root):
    labels = root.locator(".sv-bar-label").all_text_contents()
    return model_drawn(models, "NextTokenDistribution", labels, lambda st: st["tokens"][:len(labels)])


@pytest.fixture
def tools(open_page):
    page, log = open_page(PAGE)
    yield page
    assert log.external == [] and log.errors == [] and log.dialogs == []


def clean_log(log):
    """Assert the page asked nothing of another host, logged no error and opened no dialog; then empty the log, so on a
    page shared by several tests what one test caused is reported by that test alone."""
    try:
        assert log.external == [] and log.errors == [] and log.dialogs == []
    finally:
        del log.external[:], log.errors[:], log.dialogs[:]


def unhover(page):
    """The mouse off every widget, no focus, the page at its top: what a test on a shared page starts from."""
    page.mouse.move(0, 0)
    page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")


# Most tests read or drive the built page's widgets in one of two "Visual tools" pages loaded once for the module
# (conftest's shared_page), one at 1,300 px (SHARED_TOOLS) and one at 1,280 px (SHARED_TOOLS_2), instead of a page
# each. Within one page no two tests touch the same widget (the first page: the first heatmap, the cross-attention
# heatmap, the section's LSTM, the positional matrix read by hover only, the first next-token chart, the two beam
# trees, the model's attention steps; the second: the first heatmap read by hover, the positional matrix, the first
# next-token chart, the first beam tree, the two attention steps, and mocks), a test's mocks (MOCK_RENDER prepends
# them to the body) are removed when it ends, each test starts with the mouse off the widgets at the top of the page,
# and the widgets listen on their own elements only (none on window or document), so none sees what another did. A
# third test on one widget (the first beam tree's kept layout) opens a page of its own (tools).
SHARED_TOOLS = pytest.mark.parametrize("shared_page", [(PAGE, 1300)], ids=["1300"], indirect=True)
SHARED_TOOLS_2 = pytest.mark.parametrize("shared_page", [(PAGE, 1280)], ids=["1280"], indirect=True)


@pytest.fixture
def shared_tools(shared_page):
    """The module's shared "Visual tools" page for this test (see SHARED_TOOLS); its mocks go when it ends."""
    page, log = shared_page
    unhover(page)
    yield page
    page.evaluate("() => document.querySelectorAll('[id^=\"sv-mock-\"]').forEach(e => e.remove())")
    clean_log(log)


@pytest.fixture
def shown(open_page):
    """shown(names, width) -> page: the named gallery widgets (the package's current JS) in the book's column, in a
    page of the test's own (these few tests would save one notation.html load between them by sharing one)."""
    pages = []

    def _show(names, width=1300):
        page, log = open_page("book/notation.html", width=width)
        made = widgets()
        show_gallery(page, {n: made[n] for n in names})
        pages.append(log)
        return page
    yield _show
    for log in pages:
        clean_log(log)


# ------------------------------------------------------------------------------------------- attention -----------


# every row and column label of the heatmaps shown that is cut: its text longer than the room its box leaves along
# the line (a row label's width, a vertical column label's height), to the sub-pixel (an ellipsis is drawn for any
# overflow, while scrollWidth rounds), as "text (needed / room px)"
CUT_LABELS = """() => [...document.querySelectorAll('.sv-att .sv-tok')].filter(e => e.getClientRects().length)
  .map(e => {
    const v = e.classList.contains('sv-key'), cs = getComputedStyle(e), r = document.createRange();
    r.selectNodeContents(e);
    const text = r.getBoundingClientRect(), box = e.getBoundingClientRect();
    const room = v ? box.height - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom)
      : box.width - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    return [e.textContent, v ? text.height : text.width, room];
  }).filter(([t, need, room]) => need > room + 0.01)
  .map(([t, need, room]) => `${t} (${need.toFixed(1)} / ${room.toFixed(1)} px)`)"""


@pytest.mark.parametrize("width", (1280, 390))
def test_heatmap_labels_are_drawn_whole(shown, width):
    """Before: chapter 8's copy-attention rows read "airways p_gen=0…" (the value, the point, cut off) and the date
    model's </s> row read "</…": the row column was sized for 12 px labels, drawn at 13 px in the wider cells of a
    short matrix, and at 390 px it was held to a third of the width. Every label is drawn whole at either width."""
    from seqviz.widgets import AttentionHeatmap

    page = shown(["heatmap-copy-30", "heatmap-dates", "heatmap-copy", "heatmap-chars"], width)
    assert page.evaluate(CUT_LABELS) == []
    copy30, dates = page.locator(".sv-att").nth(0), page.locator(".sv-att").nth(1)
    assert copy30.get_attribute("data-labels") == dates.get_attribute("data-labels") == "shown"
    made = widgets()
    assert copy30.locator(".sv-query").all_text_contents() == made["heatmap-copy-30"].query_tokens
    assert dates.locator(".sv-query").all_text_contents()[-1] == "</s>"
    fits = ("() => [...document.querySelectorAll('.sv-att')].every(r => r.scrollWidth <= r.clientWidth && "
            "r.getBoundingClientRect().right <= r.closest('article').getBoundingClientRect().right + 1)")
    assert page.evaluate(fits)                                            # the widgets still fit the column
    # rows too long to sit beside the cells at 390 px: they scroll sideways with the matrix, whole
    long_rows = [f"a headline word with a long gloss no. {i} p_gen=0.{i}3" for i in range(4)]
    keys = made["heatmap-copy"].key_tokens[:12]
    show_gallery(page, {"long": AttentionHeatmap(np.full((4, 12), 1 / 12), long_rows, keys)})
    assert page.evaluate(CUT_LABELS) == [] and page.evaluate(fits)
    long = page.locator(".sv-att").first
    assert long.locator(".sv-query").all_text_contents() == long_rows
    if width < 688:
        box = long.locator(".sv-att-matrix")
        assert box.get_attribute("tabindex") == "0" and box.evaluate("e => e.scrollWidth > e.clientWidth")


@SHARED_TOOLS
def test_attention_layer_head_and_grid_controls_change_the_rendering(shared_tools):
    page = shared_tools
    root = page.locator(".sv-att").first
    heat = root.locator("canvas.sv-heat")
    assert root.get_attribute("data-shape") == "2x4x16x16"
    before = sig(heat)
    root.locator("select.sv-layer").select_option("1")
    assert root.get_attribute("data-layer") == "1"
    after_layer = sig(root.locator("canvas.sv-heat"))
    assert after_layer != before
    root.locator("select.sv-head").select_option("3")
    assert root.get_attribute("data-head") == "3"
    assert sig(root.locator("canvas.sv-heat")) != after_layer
    root.locator("select.sv-head").select_option("all")
    grid = root.locator(".sv-att-grid canvas")
    assert root.get_attribute("data-head") == "all" and grid.count() == 4
    assert len({sig(grid.nth(h)) for h in range(4)}) == 4  # four different heads
    grid.nth(2).click()
    assert root.get_attribute("data-head") == "2" and root.locator(".sv-att-grid").count() == 0
    assert root.locator("select.sv-head").input_value() == "2"


@SHARED_TOOLS_2
def test_attention_hover_shows_tokens_and_the_stored_weight(shared_tools):
    page = shared_tools
    mid, m = model_of(embedded_models(page), "AttentionHeatmap", shape=[2, 4, 16, 16])
    L, H, Tq, Tk = m["state"]["shape"]
    w = np.frombuffer(m["buffers"]["weights"], np.uint8).reshape(L, H, Tq, Tk) / 255 * m["state"]["vmax"]
    q = m["state"]["query_tokens"]
    root = page.locator(".sv-att").first
    heat = root.locator("canvas.sv-heat")
    i, j = 5, 2
    hover_cell(page, heat, i, j, Tq, Tk)
    text = root.locator(".sv-readout").text_content()
    assert f"layer 0, head 0: query \u201c{q[i]}\u201d ({i}) \u2192 key \u201c{q[j]}\u201d ({j}): {w[0, 0, i, j]:.3f}" \
        == text
    assert root.locator(".sv-query.sv-hl").text_content() == q[i]
    assert root.locator(".sv-key.sv-hl").text_content() == q[j]
    hover_cell(page, heat, 1, 4, Tq, Tk)  # above the diagonal: masked
    assert root.locator(".sv-readout").text_content().endswith(": masked")
    assert root.locator(".sv-legend-masked").count() == 1


@SHARED_TOOLS
def test_cross_attention_and_the_xss_token_shows_as_text(shared_tools):
    page = shared_tools
    cross = page.locator(".sv-att").nth(1)
    assert cross.get_attribute("data-shape") == "1x1x3x8"
    key = cross.locator(".sv-key").nth(7)
    assert key.text_content() == XSS
    assert key.evaluate("e => e.children.length") == 0  # a text node, not an element
    assert page.locator(".seqviz img").count() == 0
    hover_cell(page, cross.locator("canvas.sv-heat"), 1, 7, 3, 8)
    assert XSS in cross.locator(".sv-readout").text_content()


# ------------------------------------------------------------------------------------------ LSTM gates -----------


@SHARED_TOOLS
def test_lstm_gate_selector_slider_and_token_strip(shared_tools):
    page = shared_tools
    root = page.locator(".sv-lstm").first  # the section on the LSTM; "Try the models" has a live one too
    mid, m = lstm_drawn(embedded_models(page), root)
    tokens = m["state"]["tokens"]
    assert root.get_attribute("data-gate") == "f" and root.get_attribute("data-step") == "7"
    heat = root.locator("canvas.sv-heat")
    before = sig(heat)
    root.locator("select.sv-gate").select_option("c")
    assert root.get_attribute("data-gate") == "c" and sig(heat) != before
    assert "c_t cell state (9.27)" in root.locator(".sv-legend").text_content()
    step_cells = root.locator("canvas.sv-step-cells").first
    cells_before = sig(step_cells)
    root.locator("input.sv-step").fill("20")
    assert root.get_attribute("data-step") == "20"
    assert root.locator(".sv-current").text_content() == tokens[20].replace(" ", "\u2423")
    assert sig(step_cells) != cells_before
    root.locator(".sv-strip .sv-tok").nth(3).click()
    assert root.get_attribute("data-step") == "3"
    T, U = m["state"]["shape"]
    hover_cell(page, heat, 2, 4, U, T)
    assert root.locator(".sv-readout").text_content().startswith(f"unit 2, t = 4 \u201c{tokens[4]}\u201d: c_t = ")


# ------------------------------------------------------------------------------------------ positional -----------


@SHARED_TOOLS_2
def test_positional_sliders_inputs_change_the_rendering(shared_tools):
    page = shared_tools
    root = page.locator(".sv-pos")
    enc, curves, sim = (root.locator(f"canvas.{c}") for c in ("sv-enc", "sv-curves", "sv-sim"))
    s0 = [sig(enc), sig(curves), sig(sim)]
    root.locator("input.sv-d-model").fill("128")
    assert root.get_attribute("data-d-model") == "128"
    s1 = [sig(enc), sig(curves), sig(sim)]
    assert s1[0] != s0[0] and s1[2] != s0[2]
    root.locator("input.sv-max-len").fill("200")
    assert root.get_attribute("data-max-len") == "200" and sig(sim) != s1[2]
    root.locator("input.sv-base").fill("3")
    assert root.get_attribute("data-base") == "1000" and sig(curves) != s1[1]
    c2 = sig(curves)
    root.locator("input.sv-dims").fill("0, 1")
    root.locator("input.sv-dims").press("Enter")
    assert sig(curves) != c2 and "dim 0 (sin, i=0)" in root.locator(".sv-legend").nth(1).text_content()
    root.locator("input.sv-pos-p").fill("10")
    root.locator("input.sv-pos-p").press("Enter")
    assert root.locator(".sv-pair").text_content().startswith("P[10] \u00b7 P[60] = ")
    root.locator("input.sv-dims").fill("999")
    root.locator("input.sv-dims").press("Enter")
    assert "between 0 and 127" in root.locator(".sv-note").text_content()


@SHARED_TOOLS
def test_positional_numbers_in_the_browser_equal_python(shared_tools):
    page = shared_tools
    mid, _ = model_of(embedded_models(page), "PositionalMatrix")
    for max_len, d, base in [(100, 64, 10000.0), (37, 7, 10.0), (512, 512, 10000.0), (3, 2, 1.5)]:
        js = page.evaluate(
            """async ([mid, n, d, base]) => {
                 const s = JSON.parse(document.querySelector(
                   'script[type="application/vnd.jupyter.widget-state+json"]').textContent).state[mid].state;
                 const mod = await import(URL.createObjectURL(new Blob([s._esm], {type: "text/javascript"})));
                 const P = mod.sinusoidalEncoding(n, d, base);
                 const S = n <= 100 ? Array.from(mod.dotProducts(P, n, d)) : [];
                 return [Array.from(P), S];
               }""", [mid, max_len, d, base])
        P = sinusoidal_encoding(max_len, d, base)
        np.testing.assert_allclose(np.array(js[0]).reshape(max_len, d), P, rtol=0, atol=1e-12)
        if js[1]:
            np.testing.assert_allclose(np.array(js[1]).reshape(max_len, max_len), P @ P.T, rtol=0, atol=1e-9)
    # and what the rendered widget reports on hover is Python's number
    root = page.locator(".sv-pos")
    hover_cell(page, root.locator("canvas.sv-enc"), 22, 9, 100, 64)
    assert root.locator(".sv-hover").text_content().startswith(
        f"P[22, 9] = {sinusoidal_encoding(100, 64)[22, 9]:.4f}")
    assert root.locator(".sv-pair").text_content().startswith(
        f"P[22] \u00b7 P[60] = {(sinusoidal_encoding(100, 64) @ sinusoidal_encoding(100, 64).T)[22, 60]:.3f}")


# ---------------------------------------------------------------------------------------- next token -------------


@SHARED_TOOLS
def test_next_token_temperature_and_top_k_apply_softmax_in_the_browser(shared_tools):
    page = shared_tools
    root = page.locator(".sv-next").first
    mid, m = next_token_drawn(embedded_models(page), root)
    z = np.frombuffer(m["buffers"]["logits"], "<f4").astype(np.float64)
    assert root.locator(".sv-bar-label").count() == 15
    values0 = root.locator(".sv-bar-value").all_text_contents()
    root.locator("input.sv-temperature").fill("0.2")
    T = float(root.get_attribute("data-temperature"))
    assert T < 0.5
    values = root.locator(".sv-bar-value").all_text_contents()
    assert values != values0
    p = softmax_with_temperature(z, T).numpy()  # z is sorted from the highest, so bars are p[0], p[1], ...
    assert values == [f"{x:.4f}" for x in p[:15]]
    root.locator("input.sv-top-k").fill("5")
    assert root.locator(".sv-bar-label").count() == 5 and root.get_attribute("data-top-k") == "5"
    assert root.locator(".sv-bar-label").all_text_contents() == m["state"]["tokens"][:5]


@SHARED_TOOLS_2
def test_next_token_sampling_button_and_top_k_box(shared_tools):
    page = shared_tools
    root = page.locator(".sv-next").first
    tokens = set(next_token_drawn(embedded_models(page), root)[1]["state"]["tokens"])
    root.locator("button.sv-sample").click()
    first = root.locator(".sv-samples .sv-sample").all_text_contents()
    assert len(first) == 20 and set(first) <= tokens
    root.locator("button.sv-sample").click()
    assert root.locator(".sv-samples .sv-sample").all_text_contents() != first
    root.locator("input.sv-top-k").fill("1")
    root.locator("input.sv-only-top-k").check()
    root.locator("button.sv-sample").click()
    assert set(root.locator(".sv-samples .sv-sample").all_text_contents()) == {"lord"}


# ------------------------------------------------------------------ Python -> browser updates, XSS everywhere ----


def mock(page, mid, **overrides) -> int:
    return page.evaluate(MOCK_RENDER, {"modelId": mid, "overrides": overrides})


def kernel_sets(page, handle, name, value):
    """What a trait change from Python does in the browser: model.set fires change:<name>."""
    page.evaluate("([h, k, v]) => window.__svMocks[h].model.set(k, v)", [handle, name, value])
    page.wait_for_timeout(30)


def data(page, handle, attr):
    return page.evaluate("([h, a]) => window.__svMocks[h].el.firstChild.dataset[a]", [handle, attr])


@SHARED_TOOLS_2
def test_views_follow_traits_set_from_python(shared_tools):
    page = shared_tools
    models = embedded_models(page)
    att, _ = model_of(models, "AttentionHeatmap", shape=[2, 4, 16, 16])
    h = mock(page, att)
    kernel_sets(page, h, "layer", 1)
    kernel_sets(page, h, "head", 2)
    assert (data(page, h, "layer"), data(page, h, "head")) == ("1", "2")
    kernel_sets(page, h, "view", "grid")
    assert page.locator(f"#sv-mock-{h} .sv-att-grid canvas").count() == 4
    # new data from Python (set_data): a (1, 1, 2, 2) attention with new tokens
    page.evaluate("""h => { const m = window.__svMocks[h].model;
        m.set("weights", new DataView(new Uint8Array([255, 0, 128, 127]).buffer)); m.set("shape", [1, 1, 2, 2]);
        m.set("mask", new DataView(new ArrayBuffer(0))); m.set("mask_shape", []);
        m.set("query_tokens", ["x", "y"]); m.set("key_tokens", ["x", "y"]); m.set("layer", 0); m.set("head", 0); }""",
                  h)
    page.wait_for_timeout(30)
    assert data(page, h, "shape") == "1x1x2x2"

    lstm, _ = lstm_drawn(models, page.locator(".sv-lstm").first)   # the section's, of 40 steps (the live one: 28)
    h = mock(page, lstm)
    kernel_sets(page, h, "gate", "o")
    kernel_sets(page, h, "step", 30)
    assert (data(page, h, "gate"), data(page, h, "step")) == ("o", "30")

    pos, _ = model_of(models, "PositionalMatrix")
    h = mock(page, pos)
    kernel_sets(page, h, "d_model", 16)
    kernel_sets(page, h, "positions", [3, 9])
    assert data(page, h, "dModel") == "16"
    assert page.locator(f"#sv-mock-{h} .sv-pair").text_content().startswith("P[3] \u00b7 P[9] = ")

    nxt, _ = model_of(models, "NextTokenDistribution")
    h = mock(page, nxt)
    kernel_sets(page, h, "temperature", 2.5)
    kernel_sets(page, h, "top_k", 3)
    assert data(page, h, "temperature") == "2.5"
    assert page.locator(f"#sv-mock-{h} .sv-bar-label").count() == 3


@SHARED_TOOLS_2
def test_xss_token_is_text_in_every_widget(shared_tools):
    page = shared_tools
    models = embedded_models(page)
    handles = []
    att, m = model_of(models, "AttentionHeatmap", shape=[2, 4, 16, 16])
    handles.append(mock(page, att, query_tokens=[XSS] * 16, key_tokens=[XSS] * 16, title=XSS))
    lstm, m = model_of(models, "LSTMGates")
    handles.append(mock(page, lstm, tokens=[XSS] * m["state"]["shape"][0], labels=[XSS] * len(m["state"]["gates"]),
                        title=XSS))
    pos, _ = model_of(models, "PositionalMatrix")
    handles.append(mock(page, pos, title=XSS))
    nxt, m = model_of(models, "NextTokenDistribution")
    handles.append(mock(page, nxt, tokens=[XSS] * len(m["state"]["tokens"]), title=XSS))
    page.wait_for_timeout(50)
    for h in handles:
        el = page.locator(f"#sv-mock-{h}")
        assert el.locator("img").count() == 0
        assert el.locator(".sv-title").text_content() == XSS
    assert page.locator(f"#sv-mock-{handles[0]} .sv-key").first.text_content() == XSS
    assert page.locator(f"#sv-mock-{handles[1]} .sv-strip .sv-tok").first.text_content() == XSS
    assert page.locator(f"#sv-mock-{handles[3]} .sv-bar-label").first.text_content() == XSS
    page.locator(f"#sv-mock-{handles[3]} button.sv-sample").click()
    assert set(page.locator(f"#sv-mock-{handles[3]} .sv-samples .sv-sample").all_text_contents()) == {XSS}
    assert page.locator("img[src=x]").count() == 0


# ------------------------------------------------------------------------------- beam tree (issue 24) -------------


def beam_state(m) -> dict:
    """The embedded BeamTree's search, decoded as beam_tree.js decodes it."""
    s, b = m["state"], m["buffers"]
    parent = np.frombuffer(b["parent"], "<i4")
    starts = s["step_start"]
    step = np.zeros(len(parent), int)
    for t in range(len(starts) - 1):
        step[starts[t]:starts[t + 1]] = t
    labels = [s["vocab"][i] for i in np.frombuffer(b["token"], "<u4")]

    def text(n):
        out = []
        while n > 0:
            out.append(labels[n])
            n = parent[n]
        return s["joiner"].join(out[::-1])

    return {"parent": parent, "status": np.frombuffer(b["status"], np.uint8), "step": step,
            "logprob": np.frombuffer(b["logprob"], "<f8"), "labels": labels, "text": text, "n_steps": len(starts) - 2}


def beam_table(B, t, normalise, alpha):
    """What the table under the tree must list at step t: live and finished-by-t hypotheses, best first, then greedy."""
    rows = [n for n in range(len(B["step"])) if B["step"][n] == t and B["status"][n] == 0] + \
           [n for n in range(len(B["step"])) if 0 < B["step"][n] <= t and B["status"][n] == 2]
    score = (lambda n: B["logprob"][n] / max(B["step"][n], 1) ** alpha) if normalise else (lambda n: B["logprob"][n])
    return sorted(rows, key=score, reverse=True)


@SHARED_TOOLS
def test_beam_tree_step_slider_changes_what_is_drawn(shared_tools):
    page = shared_tools
    mid, m = model_of(embedded_models(page), "BeamTree", beam_size=3, joiner=" ")
    B = beam_state(m)
    root = page.locator(".sv-beam").first
    assert B["n_steps"] == 5 and root.get_attribute("data-step") == str(m["state"]["step"])
    svg = shown_svg(root)
    for t in (1, 4, 2, 5):
        root.locator("input.sv-step").fill(str(t))
        assert root.get_attribute("data-step") == str(t)
        # every node up to step t is drawn (pruned ones too), nothing after it
        assert int(root.get_attribute("data-shown")) == int((B["step"] <= t).sum())
        assert column_drawn(svg, t)
        if t < 5:
            assert not column_drawn(svg, t + 1)
        # the table: the beam at step t with the search's numbers, then greedy's hypothesis
        want = beam_table(B, t, False, 1.0)
        rows = root.locator(".sv-beam-table tr:not(.sv-greedy-row) .sv-beam-hyp")
        assert rows.all_text_contents() == [B["text"](n) for n in want]
        sums = root.locator(".sv-beam-table tr:not(.sv-greedy-row) .sv-beam-sum")
        got = [float(sums.nth(r).get_attribute("data-value")) for r in range(sums.count())]
        np.testing.assert_allclose(got, [B["logprob"][n] for n in want], rtol=0, atol=1e-12)
        greedy = m["state"]["greedy"]
        assert root.locator(".sv-greedy-row .sv-beam-hyp").text_content() == B["text"](greedy[min(t, len(greedy)) - 1])
    # at the last step: the returned hypotheses are ranked; greedy's path is drawn
    assert root.locator(".sv-rank").count() == 3 and root.locator(".sv-rank").first.is_visible()
    first = root.locator(".sv-beam-table tr").nth(1)
    assert first.locator(".sv-beam-hyp").text_content() == "How are you </s>"
    assert "returned #1" in first.locator(".sv-beam-what").text_content()
    assert root.locator(".sv-greedy-row .sv-beam-hyp").text_content() == "How will you </s>"
    assert svg.locator("path.sv-greedy-edge").count() == 4
    root.locator("input.sv-step").fill("4")
    assert not root.locator(".sv-rank").first.is_visible()          # ranks only once the search has ended


@SHARED_TOOLS_2
def test_beam_tree_pruned_switch_score_labels_and_hover(shared_tools):
    page = shared_tools
    mid, m = model_of(embedded_models(page), "BeamTree", beam_size=3, joiner=" ")
    B = beam_state(m)
    root = page.locator(".sv-beam").first
    root.locator("input.sv-step").fill("5")
    before = sig_svg(root)
    root.locator("input.sv-show-pruned").uncheck()
    assert root.get_attribute("data-show-pruned") == "false"
    assert int(root.get_attribute("data-shown")) == int((B["status"] != 1).sum())
    assert sig_svg(root) != before
    assert root.locator(".sv-beam-layout").count() == 2                  # the first layout is kept, not shown
    root.locator("input.sv-show-pruned").check()                         # back: the kept layout is shown again
    assert sig_svg(root) == before
    root.locator("input.sv-show-pruned").uncheck()
    # node labels: log P, then log P / N^alpha
    node = shown_svg(root).locator("g.sv-node.sv-finished").first
    n = int(node.get_attribute("data-node"))
    assert shown_score(root, n) == f"{B['logprob'][n]:.2f}"
    root.locator("select.sv-score").select_option("norm")
    alpha = m["state"]["alpha"]
    assert root.get_attribute("data-score") == "norm"
    assert shown_score(root, n) == f"{B['logprob'][n] / B['step'][n] ** alpha:.2f}"
    want = beam_table(B, 5, True, alpha)
    assert root.locator(".sv-beam-table tr:not(.sv-greedy-row) .sv-beam-hyp").all_text_contents() == \
        [B["text"](k) for k in want]
    assert root.locator(".sv-beam-table tr").nth(1).locator(".sv-beam-hyp").text_content() == "How do you do </s>"
    norms = root.locator(".sv-beam-table tr:not(.sv-greedy-row) .sv-beam-norm")
    np.testing.assert_allclose([float(norms.nth(r).get_attribute("data-value")) for r in range(norms.count())],
                               [B["logprob"][k] / B["step"][k] ** alpha for k in want], rtol=0, atol=1e-12)
    node.scroll_into_view_if_needed()
    node.hover()
    text = root.locator(".sv-readout").text_content()
    assert text.startswith(f"step {B['step'][n]}: \u201c{B['text'](n)}\u201d  log P = {B['logprob'][n]:.3f}")
    assert "finished" in text
    assert shown_svg(root).locator("g.sv-node.sv-path").count() == B["step"][n] + 1   # the path back to the prompt


# a node's look, as the tree (or the legend) draws its box: fill, stroke, dashes, stroke width
LOOK = ("e => { const c = getComputedStyle(e); "
        "return [c.fill, c.stroke, c.strokeDasharray, c.strokeWidth].join(' | '); }")


def test_beam_tree_nodes_kept_then_dropped_have_their_own_look_and_legend_entry(shown):
    """Before: with "show pruned" off, four of the five nodes at each step of the date model's beam (kept at their
    step, dropped later: class sv-kept sv-dropped) were drawn dashed and unfilled, like the legend's "pruned" swatch,
    and the legend had no entry for them. Each kind of node now has a look of its own, drawn whole (not dashed: a
    dashed box is a pruned one), the legend shows each look the tree draws by the same style rules, and the readout
    says the node was kept and dropped later."""
    page = shown(["beam-dates"])
    root = page.locator(".sv-beam").first
    root.locator("input.sv-show-pruned").check()
    pruned = set(shown_svg(root).locator("g.sv-node.sv-pruned:not(.sv-on-greedy) > rect")
                 .evaluate_all(f"rs => rs.map({LOOK})"))
    root.locator("input.sv-show-pruned").uncheck()
    svg = shown_svg(root)
    kinds = {"kept": "g.sv-node.sv-kept:not(.sv-dropped)", "kept, dropped later": "g.sv-node.sv-kept.sv-dropped",
             "finished": "g.sv-node.sv-finished"}
    looks = {k: set(svg.locator(f"{sel}:not(.sv-on-greedy) > rect").evaluate_all(f"rs => rs.map({LOOK})"))
             for k, sel in kinds.items()} | {"pruned": pruned}
    assert all(len(v) == 1 for v in looks.values()), looks                # one look per kind, each drawn
    looks = {k: v.pop() for k, v in looks.items()}
    assert len(set(looks.values())) == len(looks), looks                  # and no two alike
    for col in range(3, 9):                                               # most of a step's kept nodes lead nowhere
        assert svg.locator(f'g.sv-col[data-step="{col}"] g.sv-node.sv-kept.sv-dropped').count() >= 2
    fill, stroke, dashes, _ = looks["kept, dropped later"].split(" | ")
    assert dashes == "none" and fill not in ("none", "rgba(0, 0, 0, 0)"), looks["kept, dropped later"]
    legend = root.locator(".sv-beam-legend")
    labels = legend.locator(".sv-legend-label").all_text_contents()
    swatches = legend.locator(".sv-beam-swatch")
    shown_looks = {lab: swatches.nth(i).evaluate(f"s => ({LOOK})(s.querySelector('rect') || s)")
                   for i, lab in enumerate(labels)}
    assert {k: shown_looks.get(k) for k in looks} == looks
    node = svg.locator('g.sv-col[data-step="4"] g.sv-node.sv-kept.sv-dropped').first
    node.scroll_into_view_if_needed()
    node.hover()
    assert "kept at step 4, dropped later" in root.locator(".sv-readout").text_content()


def test_beam_tree_kept_layout_follows_what_changed_while_it_was_not_shown(tools):
    """The pruned switch keeps the other layout: a step and score change made while it was out of view show when it
    comes back, as they would on a fresh one."""
    page = tools
    mid, m = model_of(embedded_models(page), "BeamTree", beam_size=3, joiner=" ")
    B = beam_state(m)
    root = page.locator(".sv-beam").first
    root.locator("input.sv-step").fill("5")
    root.locator("select.sv-score").select_option("sum")
    root.locator("input.sv-show-pruned").check()
    root.locator("input.sv-show-pruned").uncheck()                       # both layouts built, the pruned one hidden
    root.locator("input.sv-step").fill("3")
    root.locator("select.sv-score").select_option("norm")
    root.locator("input.sv-show-pruned").check()                         # the kept layout comes back
    svg = shown_svg(root)
    assert root.locator(".sv-beam-layout").count() == 2
    assert int(root.get_attribute("data-shown")) == int((B["step"] <= 3).sum())
    assert column_drawn(svg, 3) and not column_drawn(svg, 4)
    assert svg.locator('g.sv-col[data-step="4"]').get_attribute("aria-hidden") == "true"
    n = int(svg.locator('g.sv-col[data-step="3"] g.sv-node').first.get_attribute("data-node"))
    assert shown_score(root, n) == f"{B['logprob'][n] / B['step'][n] ** m['state']['alpha']:.2f}"
    assert svg.locator(".sv-scores-sum").get_attribute("aria-hidden") == "true"


def shown_svg(root):
    """The tree's SVG on screen: the pruned switch keeps the other layout, skipped by the renderer, beside it."""
    svg = root.locator(".sv-beam-layout:not(.sv-off) svg.sv-beam-svg")
    assert svg.count() == 1 and svg.evaluate("s => s.checkVisibility({contentVisibilityAuto: true})")
    hidden = root.locator(".sv-beam-layout.sv-off")
    assert all(not hidden.nth(i).evaluate("b => b.firstChild.checkVisibility()") for i in range(hidden.count()))
    return svg


def sig_svg(root) -> str:
    """What the tree draws: the markup of the columns its clip leaves visible and of the score layer shown, with the
    clip's edge (equal strings = the same drawing)."""
    return shown_svg(root).evaluate(
        "s => { const t = +s.closest('.sv-beam').dataset.step;"
        " const layer = s.querySelector(s.classList.contains('sv-show-norm') ? '.sv-scores-norm' : '.sv-scores-sum');"
        " return s.querySelector('clipPath rect').getAttribute('width') + Array.from(s.querySelectorAll('g.sv-col'))"
        ".filter(g => +g.dataset.step <= t).map(g => g.outerHTML).join('') + layer.outerHTML; }")


def column_drawn(svg, t: int) -> bool:
    """Whether step t's column is on screen: the browser's hit test at the centre of its first node finds that node
    (a column after the current step is clipped away, and a clipped element is not hit)."""
    return svg.evaluate(
        """(s, t) => {
          const node = s.querySelector(`g.sv-col[data-step="${t}"] g.sv-node`);
          node.scrollIntoView({ block: "nearest", inline: "nearest" });
          const r = node.querySelector("rect").getBoundingClientRect();
          const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
          return !!hit && hit.closest("g.sv-node") === node;
        }""", t)


def shown_score(root, n: int) -> str:
    """Node n's score label in the score layer the view shows (the other layer is transparent)."""
    layer = shown_svg(root).evaluate(
        "s => [...s.querySelectorAll('.sv-scores')].filter(g => getComputedStyle(g).opacity === '1')"
        ".map(g => g.classList.contains('sv-scores-norm') ? 'norm' : 'sum')")
    assert len(layer) == 1, layer
    return shown_svg(root).locator(f'.sv-scores-{layer[0]} text[data-node="{n}"]').text_content()


@SHARED_TOOLS
def test_beam_tree_of_a_character_model(shared_tools):
    """The page's second beam tree, a character model's (joiner ""). Its model is the character beam whose steps the
    view draws: the page holds more than one, keyed by random ids, so "the first" in the state changes run to run
    (after a re-execution it was the 12-step one while the view drew 11)."""
    page = shared_tools
    root = page.locator(".sv-beam").nth(1)
    steps = root.get_attribute("data-step")
    chars = [(mid, m) for mid, m in embedded_models(page).items() if m["kind"] == "BeamTree"
             and m["state"].get("joiner") == "" and str(beam_state(m)["n_steps"]) == steps]
    assert len(chars) == 1, f"{len(chars)} character-model beams of {steps} steps in the page's state"
    mid, m = chars[0]
    B = beam_state(m)
    assert root.get_attribute("data-step") == str(B["n_steps"])
    assert root.locator(".sv-beam-table tr:not(.sv-greedy-row) .sv-beam-hyp").all_text_contents() == \
        [B["text"](n) for n in beam_table(B, B["n_steps"], False, 1.0)]
    labels = root.locator("g.sv-node .sv-node-label").all_text_contents()
    assert "\u2423" in labels                                          # a space is shown as a visible symbol


# --------------------------------------------------------------------------- attention steps (issue 24) -----------


def steps_state(m) -> dict:
    s, b = m["state"], m["buffers"]
    L, H, Tq, Tk, dk, dv = s["shape"]
    dt = "<f8" if s["dtype"] == "f8" else "<f4"
    return {"q": np.frombuffer(b["q"], dt).astype(np.float64).reshape(L, H, Tq, dk),
            "k": np.frombuffer(b["k"], dt).astype(np.float64).reshape(L, H, Tk, dk),
            "v": np.frombuffer(b["v"], dt).astype(np.float64).reshape(L, H, Tk, dv), "shape": (L, H, Tq, Tk, dk, dv),
            "pos": s["query_positions"]}


def python_steps(S, l, h, i, causal):
    """seqviz.attention.attention on the numbers the page holds: dots, scaled dots, weights, output."""
    import torch

    from seqviz.attention import attention

    q, k, v = (torch.from_numpy(x) for x in (S["q"][l, h, i][None], S["k"][l, h], S["v"][l, h]))
    Tk = k.shape[0]
    mask = (torch.arange(Tk) <= S["pos"][i])[None] if causal else None
    out, w = attention(q, k, v, mask)                                   # (1, d_v), (1, T_k)
    dots = (k @ q[0]).numpy()
    return dots, dots / np.sqrt(q.shape[1]), w[0].numpy(), out[0].numpy()


# The page's AttentionSteps of a trained model with several layers and heads (section "Attention, step by step"),
# found by its shape: "Try the models" holds a single-head one of the shipped model too, so neither the first float32
# widget nor the n-th on the page is it.
SONNET_STEPS = {"dtype": "f4", "shape": [2, 4, 39, 39, 16, 16]}


def steps_root(page, m):
    """The rendered .sv-steps of the embedded model ``m`` (its data-shape is the model's shape)."""
    root = page.locator(f'.sv-steps[data-shape="{"x".join(map(str, m["state"]["shape"]))}"]')
    assert root.count() == 1, f"{root.count()} AttentionSteps views of shape {m['state']['shape']}"
    return root


def shown_steps(root):
    """The numbers the AttentionSteps view shows, at full precision (data-value) and as printed."""
    def values(cls):
        loc = root.locator(f".{cls}")
        return np.array([float(loc.nth(j).get_attribute("data-value")) for j in range(loc.count())])
    return (values("sv-steps-dot"), values("sv-steps-scaled"), values("sv-steps-weight"), values("sv-steps-yval"),
            root.locator(".sv-steps-wnum").all_text_contents())


@SHARED_TOOLS
def test_attention_steps_numbers_in_the_browser_equal_python(shared_tools):
    page = shared_tools
    mid, m = model_of(embedded_models(page), "AttentionSteps", **SONNET_STEPS)
    S = steps_state(m)
    L, H, Tq, Tk, dk, dv = S["shape"]
    assert L * H > 1
    root = steps_root(page, m)
    for l, h, i, causal in [(0, 0, Tq - 1, True), (L - 1, H - 1, 5, True), (L - 1, 1, 5, False), (0, 2, 0, True)]:
        root.locator("select.sv-layer").select_option(str(l))
        root.locator("select.sv-head").select_option(str(h))
        root.locator(".sv-steps-qtok").nth(i).click()
        if root.locator("input.sv-causal").is_checked() != causal:
            root.locator("input.sv-causal").click()
        assert (root.get_attribute("data-layer"), root.get_attribute("data-head"), root.get_attribute("data-query"),
                root.get_attribute("data-causal")) == (str(l), str(h), str(i), str(causal).lower())
        dots, scaled, weights, out, printed = shown_steps(root)
        want = python_steps(S, l, h, i, causal)
        np.testing.assert_allclose(dots, want[0], rtol=0, atol=1e-6)
        masked = np.arange(Tk) > S["pos"][i] if causal else np.zeros(Tk, bool)
        np.testing.assert_allclose(scaled[~masked], want[1][~masked], rtol=0, atol=1e-6)
        assert np.isneginf(scaled[masked]).all()
        np.testing.assert_allclose(weights, want[2], rtol=0, atol=1e-6)
        np.testing.assert_allclose(out, want[3], rtol=0, atol=1e-6)
        assert printed == ["0 (masked)" if m else f"{w:.4f}" for w, m in zip(want[2], masked)]
        assert root.locator(".sv-steps-cell.sv-steps-weight.sv-masked").count() == int(masked.sum())


@SHARED_TOOLS_2
def test_attention_steps_of_the_seed_example_and_what_a_click_redraws(shared_tools):
    page = shared_tools
    mid, m = model_of(embedded_models(page), "AttentionSteps", dtype="f8")
    root = page.locator(".sv-steps").first
    assert root.get_attribute("data-shape") == "1x1x1x4x64x4"
    assert root.locator(".sv-steps-key").all_text_contents() == ["We", "wash", "our", "cats"]
    dots, scaled, weights, out, printed = shown_steps(root)
    assert dots.tolist() == [13, 24, 20, 12] and scaled.tolist() == [1.625, 3.0, 2.5, 1.5]
    S = steps_state(m)
    np.testing.assert_allclose(weights, python_steps(S, 0, 0, 0, False)[2], rtol=0, atol=1e-12)
    np.testing.assert_allclose(out, python_steps(S, 0, 0, 0, False)[3], rtol=0, atol=1e-12)
    weighted = root.locator("canvas.sv-steps-weighted")
    before = sig(weighted)
    root.locator("input.sv-causal").check()                            # "We" is first: it sees only itself
    assert shown_steps(root)[2].tolist() == [1.0, 0.0, 0.0, 0.0] and sig(weighted) != before
    assert root.locator(".sv-steps-scaled").nth(1).text_content() == "\u2212\u221e (masked)"
    # the model's widget: another query redraws the products and the weighted values
    lm = steps_root(page, model_of(embedded_models(page), "AttentionSteps", **SONNET_STEPS)[1])
    prod = lm.locator("canvas.sv-steps-prod")
    p0, w0 = sig(prod), sig(lm.locator("canvas.sv-steps-weighted"))
    lm.locator(".sv-steps-qtok").nth(3).click()
    assert lm.get_attribute("data-query") == "3" and sig(prod) != p0 and sig(lm.locator("canvas.sv-steps-weighted")) != w0
    assert lm.locator(".sv-steps-qtok.sv-current").text_content() == lm.locator(".sv-steps-qtok").nth(3).text_content()
    S = steps_state(model_of(embedded_models(page), "AttentionSteps", **SONNET_STEPS)[1])
    k = lm.locator("canvas.sv-steps-k")
    k.scroll_into_view_if_needed()
    box = k.bounding_box()
    Tk, dk = S["shape"][3], S["shape"][4]
    page.mouse.move(box["x"] + (2 + 0.5) * box["width"] / dk, box["y"] + (1 + 0.5) * box["height"] / Tk)
    l, h = int(lm.get_attribute("data-layer")), int(lm.get_attribute("data-head"))
    assert lm.locator(".sv-readout").text_content().startswith(f"k_1[2] = {S['k'][l, h, 1, 2]:.3f}")



# what the slide decks set (scripts/slides.py's CSS) for a slide-sized view
SLIDE_VARS = "article.bd-article { --sv-steps-keys: 6; --sv-slide-cell: 20px; }"


def test_slide_view_of_attention_steps_and_heatmap(shown):
    """Before (issue 39, item 3): on deck 07 the attention steps drew a row per key, 40 rows, and the slide was 910 px
    tall in a 450 px deck; on deck 05 the German-English heatmaps' cells grew to 32 px (533 and 486 px). Where the page
    sets the slide variables, the steps show the 6 keys the query weights most (in key order) and a row for the rest,
    every key stays in the screen-reader table, and the heatmap's cells are at most 20 px; without them (the book) a
    row per key and 32 px cells."""
    from seqviz.widgets import AttentionHeatmap

    made = widgets()
    small = AttentionHeatmap(np.full((6, 9), 1 / 9), made["heatmap-copy"].key_tokens[:6],
                             made["heatmap-copy"].key_tokens[:9])
    page = shown([])
    show_gallery(page, {"steps": made["steps-chars"], "heat": small})
    book = page.locator(".sv-steps").first
    assert not book.get_attribute("data-compact") and book.locator(".sv-steps-key").count() == 40
    assert page.locator(".sv-att").first.get_attribute("data-cell") == "32"
    weights = shown_steps(book)[2]
    top = sorted(np.argsort(-weights, kind="stable")[:6].tolist())
    page.add_style_tag(content=SLIDE_VARS)
    show_gallery(page, {"steps": made["steps-chars"], "heat": small})
    root = page.locator(".sv-steps").first
    assert root.get_attribute("data-compact") == "6" and root.get_attribute("data-query") == "29"
    assert [int(t) for t in root.locator(".sv-steps-j").all_text_contents()] == top
    np.testing.assert_allclose(shown_steps(root)[2], weights[top], rtol=0, atol=1e-12)
    tokens = made["steps-chars"].key_tokens
    assert root.locator(".sv-steps-key").all_text_contents() == [tokens[j].replace(" ", "\u2423") for j in top]
    rest = np.delete(weights, top)
    assert root.locator(".sv-steps-more").text_content() == (
        f"\u2026 34 more keys: \u03b1 \u2264 {rest.max():.4f} each, {rest.sum():.4f} together, 10 masked")
    assert root.locator(".sv-steps-wsum").text_content() == "1.0000"          # the sum is over every key
    table = root.locator(".sv-steps-all tr")                                  # every key, for screen readers
    assert table.count() == 41 and table.nth(1 + 39).locator("td").nth(1).text_content() == tokens[39]
    assert table.nth(1 + top[0]).locator("td").nth(4).text_content() == f"{weights[top[0]]:.4f}"
    # a row's cursor reads its key, and the keys follow the query
    k = root.locator("canvas.sv-steps-k")
    box = k.bounding_box()
    page.mouse.move(box["x"] + 2, box["y"] + 0.5 * box["height"] / 6)
    assert root.locator(".sv-readout").text_content().startswith(f"k_{top[0]}[0] = ")
    root.locator(".sv-steps-qtok").nth(3).click()
    assert [int(t) for t in root.locator(".sv-steps-j").all_text_contents()] == [0, 1, 2, 3, 4, 5]
    assert root.locator(".sv-steps-more").text_content().endswith("0.0000 together, all masked")
    assert page.locator(".sv-att").first.get_attribute("data-cell") == "20"

# ----------------------------------------------------- issue 24 widgets: Python -> browser updates, XSS ------------


@SHARED_TOOLS_2
def test_beam_tree_and_attention_steps_follow_traits_and_show_tokens_as_text(shared_tools):
    page = shared_tools
    models = embedded_models(page)
    beam, m = model_of(models, "BeamTree", beam_size=3, joiner=" ")
    hb = mock(page, beam)
    kernel_sets(page, hb, "step", 3)
    kernel_sets(page, hb, "normalise", True)
    assert (data(page, hb, "step"), data(page, hb, "score")) == ("3", "norm")
    kernel_sets(page, hb, "show_pruned", False)
    assert data(page, hb, "showPruned") == "false"
    shown = page.locator(f"#sv-mock-{hb} .sv-beam-layout:not(.sv-off)")
    assert shown.count() == 1 and shown.locator("g.sv-node.sv-pruned").count() == 0   # the layout without them
    steps, m2 = model_of(models, "AttentionSteps", **SONNET_STEPS)
    hs = mock(page, steps)
    kernel_sets(page, hs, "query", 2)
    kernel_sets(page, hs, "causal", False)
    kernel_sets(page, hs, "layer", 1)
    assert (data(page, hs, "query"), data(page, hs, "causal"), data(page, hs, "layer")) == ("2", "false", "1")
    # token text: markup in a label stays text
    xb = mock(page, beam, vocab=[XSS] * len(m["state"]["vocab"]), title=XSS)
    Tq, Tk = m2["state"]["shape"][2:4]
    xs = mock(page, steps, query_tokens=[XSS] * Tq, key_tokens=[XSS] * Tk, title=XSS)
    page.wait_for_timeout(50)
    for h in (xb, xs):
        el = page.locator(f"#sv-mock-{h}")
        assert el.locator("img").count() == 0 and el.locator(".sv-title").text_content() == XSS
    assert page.locator(f"#sv-mock-{xb} g.sv-node title").first.text_content() == XSS
    assert XSS in page.locator(f"#sv-mock-{xb} .sv-beam-hyp").first.text_content()
    assert page.locator(f"#sv-mock-{xs} .sv-steps-key").first.text_content() == XSS
    assert page.locator(f"#sv-mock-{xs} .sv-steps-qtok").first.text_content() == XSS
    assert page.locator("img[src=x]").count() == 0
