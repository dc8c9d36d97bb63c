"""The live widgets in the built book (issue 34): the Visual tools page's "Try the models" section in headless
Chromium, served on 127.0.0.1, offline. Each widget starts from its recorded example and loads nothing until the
reader asks; then the runtime and one model load once for the page. On fixed inputs typed into the widgets the
numbers they draw from (logits, attention, q/k/v, gates and states, cross-attention) equal PyTorch's on the same
checkpoint within 1e-4; the widgets' greedy and beam outputs equal seqviz.decode's on five prompts per model; seeded
sampling repeats, also on a fresh page; bad input gets a clear message in the widget and the page keeps working;
the live states pass axe-core and work by keyboard. No request leaves the machine and the console stays clean.

The runtime's own API (every model, the LSTM's decoding included) is tested in the same built page by
test_live_models.py. Run the widgets' current JS on a book built before a change with SEQVIZ_CURRENT_JS=1.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from svbrowser import layout

PAGE = "book/visual_tools.html"
TOL = 1e-4
TITLES = {"next": "The shipped character transformer: the next character",
          "heads": "The shipped character transformer: every layer and head",
          "steps": "The shipped character transformer: one query, step by step",
          "gates": "The shipped character LSTM: gates and states",
          "cross": "The shipped date model: cross-attention, every decoder layer and head",
          "beam": "The shipped date model: a beam of 5"}
RUNTIME = ("vendor/live/", "vendor/onnxruntime-web/")
PROMPT = "ROMEO.\nBut, soft! what light through yonder window breaks?\nIt is the east"   # 73 characters
LM_PROMPTS = ["ROMEO.\n", "First Citizen:\nBefore we proceed", "KING HENRY:\n", "O, ", "To be, or not to be"]
DATES = ["3rd of March 1999", "March 3, 1999", "03-MAR-99", "Wednesday the 3rd of March 1999", "12/25/2031"]


def widgets(page) -> dict:
    """{name: root locator} of the six live widgets, found by their titles."""
    out = {}
    for name, title in TITLES.items():
        root = page.locator(".seqviz", has=page.locator(".sv-title", has_text=title))
        assert root.count() == 1, f"{title!r}: {root.count()} widgets"
        out[name] = root
    return out


def runs(root) -> int:
    return int(root.get_attribute("data-live-runs") or 0)


def wait_runs(page, root, after: int, timeout: float = 90_000) -> None:
    """Wait until the widget has finished a run after its `after`-th."""
    page.wait_for_function("([e, n]) => Number(e.dataset.liveRuns || 0) > n",
                           arg=[root.element_handle(), after], timeout=timeout)


def run_live(page, root, text: str, *, followers=()) -> None:
    """Open the widget's live bar if it is closed, put `text` in its field, press Run and wait for the widget (and
    the `followers` of its group) to have run on it."""
    before = {id(r): runs(r) for r in (root, *followers)}
    opener = root.locator("button.sv-live-open")
    if opener.get_attribute("aria-expanded") != "true":
        opener.click()
    root.locator(".sv-live-input").fill(text)
    root.locator("button.sv-live-run").click()
    for r in (root, *followers):
        page.wait_for_function(
            "([e, n, t]) => Number(e.dataset.liveRuns || 0) > n && (e.dataset.live === 'error' || "
            "e.dataset.liveText === t)", arg=[r.element_handle(), before[id(r)], text], timeout=90_000)


def raw(root, names: tuple[str, ...]) -> dict:
    """The floats the widget's last page run drew from (root.svLive), as lists."""
    return root.evaluate("(e, names) => Object.fromEntries(names.map((n) => { const v = e.svLive[n];"
                         " return [n, ArrayBuffer.isView(v) ? Array.from(v) : v]; }))", list(names))


def close(got, want, what):
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    got = np.asarray(got, dtype=np.float32).reshape(want.shape)
    diff = float(np.abs(got - want).max())
    assert diff <= TOL, f"{what}: max |page - PyTorch| = {diff:.2e} > {TOL}"
    return diff


def clean(log):
    assert log.errors == [], log.errors
    assert log.external == [], f"requests left the machine: {log.external}"
    assert log.failed == [], log.failed


@pytest.fixture(scope="module")
def models():
    from seqviz.live import kernel

    return kernel


# The page is costly (2.3 MB, ~40k nodes, then the runtime's wasm and a model or two for each page that runs), so most
# tests share one of a few pages opened once for the module (`book(name)`), chosen so that no test meets state another
# left that changes what it asserts (pytest runs a file in order, also under xdist's --dist loadfile; the file also
# passes run in reverse order, which opens more pages):
#   "tools": the widgets' first state and what loads (which needs a fresh page: the test opens it, book(fresh=True)),
#     then the tests that run the widgets on inputs they type and only read what those drew: the numbers, decoding,
#     seeded sampling, bad input, Drop, the status after an error. The LSTM test leaves its layer at 0; no later test
#     here reads the LSTM's layer.
#   "tools b": the seeded-sampling test's second page (it must be fresh: that test opens it), then the test that opens
#     the cross-attention's bar by keyboard (it needs that bar closed and its example in the field: only the
#     character transformer's group ran there).
#   "390 px": the generated text at 390 px, then the fields' margins at 390 px (the bars it opens: those still closed).
# The generated text at 1,280 px (no other test at that width), the keyboard test (it opens three bars, needing them
# closed, and moves the LSTM's layer from 1) and the light and dark axe runs open pages of their own. Each test reports the console errors, requests that left the machine and
# failed requests of its time on a page (the log is emptied after it); what comes after the last test fails the file.
@pytest.fixture(scope="module")
def pages(open_module_page):
    """The module's shared pages, {name: (page, log, width, color_scheme)}, and how to open one."""
    shared = {}
    yield shared, open_module_page
    for name, (_, log, *_) in shared.items():                  # what came after the last test on each page
        assert log.errors == [] and log.external == [] and log.failed == [], (name, log)


@pytest.fixture
def book(pages, open_page):
    """book(name=None, fresh=False, width=1300, color_scheme="light") -> (page, log, {name: widget root}) of the
    Visual tools page: the module's page `name` (opened now if no test has opened it), or with fresh=True a page no
    test has touched (the page `name` if it is not open yet, else one of this test's own), or with no name one of this
    test's own. The log is checked (clean) and emptied when the test ends."""
    shared, open_shared = pages
    logs = []

    def get(name=None, *, fresh=False, width=1300, color_scheme="light"):
        if name is not None and name not in shared:
            page, log = open_shared(PAGE, width=width, color_scheme=color_scheme)
            shared[name] = (page, log, width, color_scheme)
        elif name is not None and not fresh:
            page, log, *how = shared[name]
            assert how == [width, color_scheme], (name, how)
            page.mouse.move(0, 0)                                     # start off the widgets, nothing focused
            page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
        else:
            page, log = open_page(PAGE, width=width, color_scheme=color_scheme)
        logs.append(log)
        return page, log, widgets(page)

    yield get
    try:
        for log in logs:
            clean(log)
    finally:
        for log in logs:
            del log.errors[:], log.external[:], log.failed[:], log.dialogs[:]


@pytest.fixture
def visual(book):
    """(page, log, {name: widget root}) of the module's shared Visual tools page "tools"."""
    return book("tools")


# ---- before anything loads ----------------------------------------------------------------------------------------
def test_each_live_widget_starts_from_its_recorded_example_and_loads_nothing_until_asked(book):
    page, log, w = book("tools", fresh=True)
    for name, root in w.items():
        assert root.get_attribute("data-live") == "off", name
        opener = root.locator("button.sv-live-open")
        assert opener.text_content() == "Run live on your own input" and opener.get_attribute("aria-expanded") == \
            "false"
        assert root.locator(".sv-live-panel").is_hidden()
        assert root.get_attribute("data-live-engine") == "page"                  # a built page: the browser runs it
    assert w["heads"].get_attribute("data-shape") == "4x4x28x28"                   # the recorded prompt, drawn
    assert not [u for u in log.requests if any(r in u for r in RUNTIME)], "the runtime loaded before anyone asked"

    run_live(page, w["next"], "ROMEO:\nBut, soft! what light", followers=(w["heads"], w["steps"]))
    fetched = [u.split("/vendor/")[1] for u in log.requests if any(r in u for r in RUNTIME)]
    assert sorted(fetched) == sorted(["live/live.js", "onnxruntime-web/ort.wasm.min.mjs",
                                      "onnxruntime-web/ort-wasm-simd-threaded.mjs",
                                      "onnxruntime-web/ort-wasm-simd-threaded.wasm", "live/models/manifest.json",
                                      "live/models/char_lm.onnx"]), fetched          # once each, one model
    for name in ("next", "heads", "steps"):                                        # the group went live together
        assert w[name].get_attribute("data-live") == "ready", name
    for name in ("gates", "cross", "beam"):                                        # the others wait to be asked
        assert w[name].get_attribute("data-live") == "off", name
    run_live(page, w["gates"], "ROMEO.\nBut soft")
    fetched = [u.split("/vendor/")[1] for u in log.requests if any(r in u for r in RUNTIME)]
    assert fetched.count("live/models/char_lstm.onnx") == 1 and fetched.count("live/live.js") == 1
    assert "live/models/dates_encoder.onnx" not in fetched
    clean(log)


# ---- the numbers equal PyTorch's ------------------------------------------------------------------------------------
@pytest.mark.parametrize("T", [64, 9])
def test_char_lm_widgets_draw_pytorchs_logits_attention_and_qkv(visual, models, T):
    from seqviz.transformer.inspect import queries_keys_values

    page, log, w = visual
    text = PROMPT[-T:]
    run_live(page, w["next"], text, followers=(w["heads"], w["steps"]))
    m = models.char_lm()
    ids = torch.tensor([[m.stoi[c] for c in text]])
    with torch.no_grad():
        logits, _, attn = m.model(ids, return_attention=True)                     # (1, T, V), (1, L, H, T, T)
    qkv = queries_keys_values(m.model, ids[0])
    got = raw(w["next"], ("ids", "next"))
    assert got["ids"] == ids[0].tolist()
    close(got["next"], logits[0, -1], "the next character's logits")
    # what the bars show: the top k characters by probability, softmax(z / T) at the slider's temperature
    p = torch.softmax(logits[0, -1].double(), -1)
    k = int(w["next"].get_attribute("data-top-k"))
    top = torch.argsort(-p, stable=True)[:k]
    assert w["next"].locator(".sv-bar-label").all_text_contents() == [m.itos[i].replace(" ", "\u2423").replace(
        "\n", "\u23ce") for i in top]
    assert np.allclose([float(x) for x in w["next"].locator(".sv-bar-value").all_text_contents()], p[top].numpy(),
                       atol=6e-5)
    close(raw(w["heads"], ("attention",))["attention"], attn[0], "attention")
    assert w["heads"].get_attribute("data-shape") == f"4x4x{T}x{T}"
    # what the heatmap drew: its text alternative names, for each query of a head, the key weighted most
    w["heads"].locator("select.sv-layer").select_option("2")
    w["heads"].locator("select.sv-head").select_option("1")
    rows = w["heads"].locator(".sv-summary tr").all()[1:]
    a = attn[0, 2, 1]                                                            # (T, T) layer 2, head 1
    vmax = float(attn[0].max())
    assert len(rows) == T
    for i, row in enumerate(rows):
        query, key, weight = (c.text_content() for c in row.locator("th, td").all())
        assert query == text[i] and abs(float(weight) - float(a[i].max())) <= vmax / 510 + 5e-4, (i, weight)
        assert float(a[i, text.index(key) if text.count(key) == 1 else int(a[i].argmax())]) >= float(
            a[i].max()) - vmax / 255 - 1e-3, (i, key)
    got = raw(w["steps"], ("q", "k", "v"))
    for name in "qkv":
        close(got[name], getattr(qkv, name), name)
    assert w["steps"].get_attribute("data-query") == str(T - 1)                   # the query that predicts next
    # what the steps drew: the chosen head's softmax weights of the last query (the view computes them from q, k)
    layer, head = int(w["steps"].get_attribute("data-layer")), int(w["steps"].get_attribute("data-head"))
    shown = [float(x) for x in w["steps"].locator(".sv-steps-wnum").all_text_contents()]
    assert np.allclose(shown, attn[0, layer, head, T - 1].numpy(), atol=6e-5)
    clean(log)


def test_lstm_widget_draws_pytorchs_gates_and_states(visual, models):
    page, log, w = visual
    text = PROMPT[:40]
    run_live(page, w["gates"], text)
    m = models.char_lstm()
    traces = m.model.trace(torch.tensor([[m.stoi[c] for c in text]]))             # L x LSTMTrace (1, T, d_h)
    got = w["gates"].evaluate("e => Object.fromEntries(['f', 'g', 'i', 'o', 'c', 'h', 'logits'].map((n) =>"
                              " [n, Array.from(e.svLive.trace[n])]))")
    for g in "fgioch":
        close(got[g], torch.stack([getattr(tr, g)[0] for tr in traces]), f"{g} of every layer")   # (L, T, d_h)
    with torch.no_grad():
        logits, _ = m.model(torch.tensor([[m.stoi[c] for c in text]]))
    close(got["logits"], logits[0], "the LSTM's logits")
    assert w["gates"].get_attribute("data-shape") == "40x384"
    assert w["gates"].locator(".sv-live-status").text_content() == "read 40 characters; layer 1 shown"
    # what the widget drew: its summary of the shown quantity at the time step (values within a byte's step)
    gate, step = w["gates"].get_attribute("data-gate"), int(w["gates"].get_attribute("data-step"))
    values = getattr(traces[1], gate)[0, step]                                   # (d_h,)
    summary = w["gates"].locator(".sv-summary").text_content()
    mean = float(summary.split("mean ")[1].split(";")[0])
    span = 2 * max(1.0, float(traces[1].c[0].abs().max())) if gate == "c" else 2.0
    assert abs(mean - float(values.mean())) <= span / 255 + 1e-3, (summary, float(values.mean()))
    unit = int(summary.split("largest unit ")[1].split(" ")[0])
    assert float(values[unit]) >= float(values.max()) - span / 255 - 1e-3, (summary, int(values.argmax()))
    # the other layer, chosen in the bar
    before = runs(w["gates"])
    w["gates"].locator("select.sv-live-layer").select_option("0")
    wait_runs(page, w["gates"], before)
    assert w["gates"].locator(".sv-live-status").text_content() == "read 40 characters; layer 0 shown"
    assert w["gates"].evaluate("e => e.svLive.layer") == 0
    clean(log)


def test_date_widgets_draw_pytorchs_cross_attention_and_beam(visual, models):
    from seqviz.decode import BeamTrace

    page, log, w = visual
    m = models.dates()
    for text in DATES:
        run_live(page, w["cross"], text, followers=(w["beam"],))
        enc, ids, cross = models.dates_greedy(text)
        got = raw(w["cross"], ("src", "ids", "cross"))
        assert got["src"] == enc.ids and got["ids"] == ids, text
        close(got["cross"], cross, f"cross-attention of {text!r}")
        out = "".join(m.extra["tgt_itos"][i] for i in ids[:-1])
        assert w["cross"].locator(".sv-live-status").text_content().startswith(f"greedy decoding: \u201c{out}\u201d")
        assert w["cross"].get_attribute("data-shape") == f"3x4x{len(ids)}x{len(text)}"   # rows: the output
        _, hyps, trace = models.dates_beam(text, 5)
        page_trace = BeamTrace.from_dict(w["beam"].evaluate("e => e.svLive.trace"))
        assert [[(x.parent, x.token, x.status) for x in s] for s in page_trace.steps] == \
            [[(x.parent, x.token, x.status) for x in s] for s in trace.steps], text
        close([x.logprob for s in page_trace.steps for x in s],
              [x.logprob for s in trace.steps for x in s], f"beam log-probabilities of {text!r}")
        assert [list(h) for h, _ in page_trace.hypotheses] == [list(h) for h, _ in hyps], text
        assert [t for t, _ in page_trace.greedy] == [t for t, _ in trace.greedy], text
        best = "".join(m.extra["tgt_itos"][i] for i in hyps[0][0] if i != 3)
        assert w["beam"].locator(".sv-live-status").text_content().startswith(f"beam of 5: \u201c{best}\u201d")
        # the tree the page drew is the one the package draws for the same search (prepare_beam's layout)
        assert w["beam"].get_attribute("data-step") == str(len(trace.steps))
    clean(log)


def test_the_page_lays_the_beam_out_as_the_package_does(visual, models):
    """The tree the page drew from its own search is the node list BeamTree.set_data makes of that search."""
    from seqviz.decode import BeamTrace
    from seqviz.widgets import BeamTree

    page, log, w = visual
    for text in ("Wednesday the 3rd of March 1999", "12/25/2031"):
        run_live(page, w["beam"], text)
        got = w["beam"].evaluate("""e => Object.fromEntries(Object.entries(e.svLive.traits).map(([k, v]) =>
            [k, v instanceof DataView ? Array.from(new Uint8Array(v.buffer, v.byteOffset, v.byteLength)) : v]))""")
        want = BeamTree(BeamTrace.from_dict(w["beam"].evaluate("e => e.svLive.trace")),
                        models.dates().extra["tgt_itos"]).get_state()
        for k, v in got.items():
            want_v = list(bytes(want[k])) if isinstance(want[k], (bytes, memoryview)) else want[k]
            assert v == want_v, f"{text!r}: {k}"
    clean(log)


# ---- decoding from the widgets equals seqviz.decode ---------------------------------------------------------------
def test_greedy_generation_in_the_widget_equals_seqviz_decode(visual, models):
    from seqviz.decode import generate

    page, log, w = visual
    m = models.char_lm()
    field = w["next"].locator(".sv-live-input")
    run_live(page, w["next"], LM_PROMPTS[0])
    w["next"].locator("input.sv-live-n").fill("40")
    for prompt in LM_PROMPTS:
        run_live(page, w["next"], prompt)
        before = runs(w["next"])
        w["next"].locator("button.sv-live-greedy").click()
        wait_runs(page, w["next"], before)
        want = generate(m.model, [m.stoi[c] for c in prompt], 40, greedy=True)
        assert field.input_value() == prompt + "".join(m.itos[i] for i in want), prompt
    clean(log)


def test_seeded_sampling_in_the_widget_repeats_also_on_a_fresh_page(visual, book):
    page, log, w = visual

    def sample(page, root, seed: int) -> str:
        run_live(page, root, "ROMEO.\n")
        root.locator("input.sv-live-n").fill("30")
        root.locator("input.sv-live-seed").fill(str(seed))
        root.locator("input.sv-live-seed").dispatch_event("change")
        before = runs(root)
        root.locator("button.sv-live-sample").click()
        wait_runs(page, root, before)
        return root.locator(".sv-live-input").input_value()

    first = sample(page, w["next"], 3)
    assert len(first) == len("ROMEO.\n") + 30
    assert sample(page, w["next"], 3) == first                                   # the same seed, the same text
    assert sample(page, w["next"], 4) != first                                   # another seed, other draws
    page2, log2, w2 = book("tools b", fresh=True)
    assert sample(page2, w2["next"], 3) == first                                 # and on a fresh page
    clean(log)
    clean(log2)


# ---- bad input -------------------------------------------------------------------------------------------------------
def test_bad_input_gets_a_clear_message_in_the_widget_and_the_page_keeps_working(visual):
    page, log, w = visual
    nxt = w["next"]
    run_live(page, nxt, "ROMEO.\n", followers=(w["heads"], w["steps"]))
    shape = w["heads"].get_attribute("data-shape")
    problem = nxt.locator(".sv-live-problem")
    # characters outside the vocabulary: named, with a button that drops them; the drawing keeps the last input
    run_live(page, nxt, "naïve — café")
    assert nxt.get_attribute("data-live") == "error" and problem.is_visible()
    assert problem.locator("span").text_content() == (
        'the model does not know the characters "ï", "—", "é" (not in its vocabulary): drop them or replace them')
    assert problem.get_attribute("role") == "alert"
    assert w["heads"].get_attribute("data-shape") == shape
    drop = problem.locator("button.sv-live-drop")
    assert drop.text_content() == "Drop \u201c\u00ef\u201d, \u201c\u2014\u201d, \u201c\u00e9\u201d"
    before = runs(nxt)
    drop.click()
    wait_runs(page, nxt, before)
    assert nxt.locator(".sv-live-input").input_value() == "nave caf"
    assert nxt.get_attribute("data-live") == "ready" and problem.is_hidden()
    # an empty prompt
    run_live(page, nxt, "")
    assert problem.locator("span").text_content() == "the prompt is empty: type at least one character"
    # longer than the context: cropped, and the bar says so
    run_live(page, nxt, PROMPT, followers=(w["heads"],))
    assert nxt.get_attribute("data-live") == "ready"
    assert nxt.locator(".sv-live-status").text_content() == (
        "read 64 characters\ncropped to its last 64 characters (the model reads at most 64); 9 left out")
    assert w["heads"].get_attribute("data-shape") == "4x4x64x64"
    # a date in none of the training forms: answered, and said
    run_live(page, w["cross"], "2031-12-25", followers=(w["beam"],))
    for name in ("cross", "beam"):
        status = w[name].locator(".sv-live-status").text_content()
        assert w[name].get_attribute("data-live") == "ready"
        assert status.endswith("\u201c2031-12-25\u201d is in none of the 13 forms the model was trained on (such as "
                               "\u201c3rd of March 1999\u201d or \u201c03-MAR-99\u201d): it still answers, but it "
                               "never learnt this one"), status
    # and the page still works
    run_live(page, w["cross"], "3rd of March 1999", followers=(w["beam"],))
    assert w["cross"].locator(".sv-live-status").text_content() == "greedy decoding: \u201c1999-03-03\u201d"
    clean(log)


# ---- accessibility and keyboard -----------------------------------------------------------------------------------
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_nothing_critical_or_serious_in_the_live_states(book, scheme):
    """In the theme's light and dark modes (a dark system gets the dark one; outputs keep a light background)."""
    page, log, w = book(color_scheme=scheme)
    assert page.evaluate("() => document.documentElement.dataset.theme") == scheme
    run_live(page, w["next"], "ROMEO.\nBut", followers=(w["heads"], w["steps"]))
    w["next"].locator("input.sv-live-n").fill("20")                              # what the model wrote, marked
    before = runs(w["next"])
    w["next"].locator("button.sv-live-greedy").click()
    wait_runs(page, w["next"], before)
    assert w["next"].locator(".sv-live-output").is_visible()
    run_live(page, w["gates"], "ROMEO.\nBut")
    run_live(page, w["cross"], "03-MAR-99", followers=(w["beam"],))
    run_live(page, w["beam"], "naïve")                                           # an error state too
    for name, root in w.items():
        root.evaluate("(e, k) => e.setAttribute('data-audit', k)", name)
    assert page.locator(".seqviz[data-audit]").count() == len(w)
    problems = []
    for name, found in layout.axe_by_owner(page, ".seqviz[data-audit]", "data-audit").items():  # one run, told apart
        for v in found:
            if v["impact"] not in ("critical", "serious"):
                continue
            if name is None:
                problems += [f"(no widget) {v['id']} ({v['impact']}): {n['target']}" for n in v["nodes"]]
            else:
                problems.append(f"{name}: {v['id']} ({v['impact']}): {v['help']}; {v['nodes'][0]['html'][:200]}")
    assert not problems, "\n".join(problems)
    clean(log)


def focused(page) -> dict:
    return page.evaluate("""() => { const e = document.activeElement, s = getComputedStyle(e);
        return {cls: String(e.className), tag: e.tagName, outline: s.outlineStyle, width: parseFloat(s.outlineWidth),
                name: (e.getAttribute('aria-label') || (e.labels && e.labels[0] ? e.labels[0].textContent : '')
                       || e.textContent || '').trim()}; }""")


def test_the_live_controls_work_by_keyboard(book):
    page, log, w = book()
    nxt = w["next"]
    nxt.locator("button.sv-live-open").focus()
    before = runs(nxt)
    page.keyboard.press("Enter")                                                  # opens the bar, runs the example
    wait_runs(page, nxt, before)
    f = focused(page)
    assert f["cls"] == "sv-live-input" and f["name"] == "Your prompt" and f["outline"] != "none" and f["width"] >= 2
    page.keyboard.press("Control+a")
    page.keyboard.type("ROMEO")
    page.wait_for_function("e => e.dataset.liveText === 'ROMEO' && e.dataset.live === 'ready'",
                           arg=nxt.element_handle(), timeout=60_000)            # typing runs it (after a pause)
    # Tab through the bar's controls: each named, with a visible focus ring
    names = []
    for _ in range(7):
        page.keyboard.press("Tab")
        f = focused(page)
        assert f["outline"] != "none" and f["width"] >= 2 and f["name"], f
        names.append(f["name"])
    assert names[:3] == ["Run", "Recorded example", "append  characters:"] or names[:2] == ["Run", "Recorded example"]
    # each bar's character is a button now: Enter on one appends it
    first = nxt.locator("button.sv-bar-pick").first
    label = first.get_attribute("aria-label")
    assert label.startswith("append \u201c")
    first.focus()
    before = runs(nxt)
    page.keyboard.press("Enter")
    wait_runs(page, nxt, before)
    char = nxt.locator(".sv-live-input").input_value()[len("ROMEO"):]
    assert len(char) == 1 and label.startswith(f"append \u201c{char.replace(' ', chr(0x2423))}")
    # the LSTM's layer by keyboard, the date field's Enter
    gates = w["gates"]
    run_live(page, gates, "ROMEO")
    gates.locator("select.sv-live-layer").focus()
    before = runs(gates)
    page.keyboard.press("ArrowUp")
    wait_runs(page, gates, before)
    assert gates.locator(".sv-live-status").text_content().endswith("layer 0 shown")
    beam = w["beam"]
    beam.locator("button.sv-live-open").focus()
    before = runs(beam)
    page.keyboard.press("Space")
    wait_runs(page, beam, before)
    page.keyboard.press("Control+a")
    page.keyboard.type("March 3, 1999")
    before = runs(beam)
    page.keyboard.press("Enter")
    wait_runs(page, beam, before)
    assert beam.get_attribute("data-live-text") == "March 3, 1999"
    # the bar folds away and the widget keeps what ran
    beam.locator("button.sv-live-open").focus()
    page.keyboard.press("Enter")
    assert beam.locator(".sv-live-panel").is_hidden() and beam.get_attribute("data-live-text") == "March 3, 1999"
    clean(log)


# ---- what a reader sees (issue 39 items 4 and 8) ---------------------------------------------------------------------
@pytest.mark.parametrize("width", [1280, 390])
def test_generated_text_is_in_view_and_marked_as_the_models(book, models, width):
    """Before: after "append 120 characters: greedy" the two-row prompt box still showed the prompt's first lines,
    the new text sat below its fold, and the status said only "read 64 characters / cropped … 63 left out"; nothing
    said which characters the model wrote."""
    from seqviz.decode import generate

    page, log, w = book("390 px", width=390) if width == 390 else book(width=width)   # at 1,280 px: its own page
    nxt = w["next"]
    prompt = "ROMEO.\n"
    run_live(page, nxt, prompt)
    nxt.locator("input.sv-live-n").fill("120")
    before = runs(nxt)
    nxt.locator("button.sv-live-greedy").click()
    wait_runs(page, nxt, before)
    m = models.char_lm()
    new = "".join(m.itos[i] for i in generate(m.model, [m.stoi[c] for c in prompt], 120, greedy=True))
    field = nxt.locator(".sv-live-input")
    assert field.input_value() == prompt + new
    # the box shows its end, where the new text is
    assert field.evaluate("f => f.scrollTop + f.clientHeight >= f.scrollHeight - 1"), "the box shows the prompt"
    # an output line shows what the model wrote, marked as the model's, whole, inside the widget, unscrolled
    out = nxt.locator(".sv-live-output")
    assert out.is_visible()
    assert out.locator(".sv-live-output-label").text_content() == "The model wrote 120 characters (greedy):"
    assert out.locator(".sv-live-new").text_content() == new
    look = out.evaluate("""o => { const n = o.querySelector('.sv-live-new'), s = getComputedStyle(n),
        p = getComputedStyle(o.querySelector('.sv-live-output-text')), r = o.getBoundingClientRect(),
        root = o.closest('.seqviz').getBoundingClientRect();
        return {marked: s.backgroundColor !== p.backgroundColor || s.color !== p.color,
                whole: o.scrollHeight <= o.clientHeight + 1 && o.scrollWidth <= o.clientWidth + 1,
                inside: r.left >= root.left - 0.5 && r.right <= root.right + 0.5}; }""")
    assert look == {"marked": True, "whole": True, "inside": True}, look
    # the reader's edit is no longer what the model wrote: the line goes
    field.press("End")
    field.type("x")
    page.wait_for_function("e => e.dataset.liveText.endsWith('x') && e.dataset.live === 'ready'",
                           arg=nxt.element_handle(), timeout=60_000)
    assert out.is_hidden()
    clean(log)


def test_opening_the_live_bar_selects_the_example_so_typing_replaces_it(book):
    """Before: opening "Run live" by keyboard put the caret after the recorded example, so typing appended to it
    ("Thursday the 2nd of August 19795 May 1999")."""
    page, log, w = book("tools b")
    cross = w["cross"]
    cross.locator("button.sv-live-open").focus()
    before = runs(cross)
    page.keyboard.press("Enter")
    wait_runs(page, cross, before)
    page.keyboard.type("5 May 1999")
    before = runs(cross)
    page.keyboard.press("Enter")
    wait_runs(page, cross, before)
    assert cross.locator(".sv-live-input").input_value() == "5 May 1999"
    assert cross.get_attribute("data-live-text") == "5 May 1999"
    clean(log)


def test_drop_leaves_single_spaces(visual):
    """Before: "Drop" took the characters out and left their spaces: "is — dark — and" became "is  dark  and"."""
    page, log, w = visual
    nxt = w["next"]
    run_live(page, nxt, "The night is \u2014 dark \u2014 and cold")
    assert nxt.get_attribute("data-live") == "error"
    before = runs(nxt)
    nxt.locator("button.sv-live-drop").click()
    wait_runs(page, nxt, before)
    assert nxt.locator(".sv-live-input").input_value() == "The night is dark and cold"
    assert nxt.get_attribute("data-live") == "ready"
    clean(log)


def test_after_an_error_the_status_says_the_drawing_is_the_last_good_inputs(visual):
    """Before: after an error, the last good result's status ("greedy decoding: “1999-03-03”") sat under the red
    message as if it were the new input's."""
    page, log, w = visual
    cross = w["cross"]
    run_live(page, cross, "3rd of March 1999", followers=(w["beam"],))
    status = cross.locator(".sv-live-status")
    assert status.text_content() == "greedy decoding: \u201c1999-03-03\u201d"
    run_live(page, cross, "na\u00efve")
    assert cross.get_attribute("data-live") == "error"
    assert status.text_content() == ("Still drawn: the last input that ran, \u201c3rd of March 1999\u201d\n"
                                     "greedy decoding: \u201c1999-03-03\u201d")
    run_live(page, cross, "03-MAR-99")
    assert status.text_content() == "greedy decoding: \u201c1999-03-03\u201d"
    clean(log)


def test_at_390px_the_live_fields_keep_off_the_widgets_edge(book):
    """Before: at 390 px the date field (and the prompt box) ran to the widget's right edge (0 px between them)."""
    page, log, w = book("390 px", width=390)
    gaps = {}
    for name in ("next", "gates", "cross"):
        opener = w[name].locator("button.sv-live-open")
        if opener.get_attribute("aria-expanded") != "true":       # the generated-text test on this page opened one
            opener.click()
        assert w[name].locator(".sv-live-input").is_visible(), name
        gaps[name] = w[name].evaluate("e => e.getBoundingClientRect().right - "
                                      "e.querySelector('.sv-live-input').getBoundingClientRect().right")
    assert all(g >= 4 for g in gaps.values()), gaps
    clean(log)
