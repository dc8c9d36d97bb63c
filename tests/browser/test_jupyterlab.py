"""The widgets in a real JupyterLab with a live kernel: the test starts ``jupyter lab`` from this environment on
127.0.0.1 (free port, no token, no browser, a temporary root holding one notebook with each seqviz widget, the live
widgets' notebook and a chapter), drives it with Playwright + Debian's chromium, and kills it afterwards.

It checks what the built-book tests cannot: each widget renders from a kernel, a trait set from Python (a later cell)
updates the view, and a control moved in the view updates the trait as Python reads it (a cell that prints it); the
live widgets ask the kernel (issue 34); the save buttons download from JupyterLab (issue 39 item 10); a chapter opens
with its solutions folded (issue 23). No request may leave loopback: the browser blocks and records any, and the
server runs with news, update checks and announcements off.

Every test that needs a JupyterLab server is in this file, so that one server serves them all (`make test` hands whole
files to xdist workers, and a module-scoped fixture imported into another file is started again there: ~20 s of
set-up each under load). The tests pass in any order: each runs the cells it reads (the set-up cell again included),
so those sharing the opened widgets notebook (`notebook`: one page, one kernel) do not depend on one another.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from svbrowser import block_external, is_loopback
from test_save_figure import check_widget

ROOT = Path(__file__).resolve().parents[2]
JUPYTER = Path(sys.executable).with_name("jupyter")
START_TIMEOUT = 60  # s for the server to answer /api/status
CELL_TIMEOUT = 60_000  # ms for a cell (the first imports torch)
CHAPTER = ROOT / "notebooks" / "03_rnn.ipynb"  # a chapter with folded code solutions and prose answers, as chapter.ipynb

SETUP = """\
import json
import numpy as np
from seqviz.widgets import AttentionHeatmap, LSTMGates, NextTokenDistribution, PositionalMatrix

rng = np.random.default_rng(0)
T = 6
tokens = ["the", "cat", "sat", "on", "the", "mat"]
scores = rng.normal(size=(2, 3, T, T))  # (L, H, T_q, T_k)
scores[..., np.triu(np.ones((T, T), dtype=bool), 1)] = -np.inf  # causal: no weight on later keys
weights = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
gates = {n: rng.uniform(0, 1, size=(T, 5)) for n in "fio"}  # (T, units)
gates["g"] = rng.uniform(-1, 1, size=(T, 5))
gates["c"] = rng.normal(size=(T, 5))
gates["h"] = np.tanh(gates["c"]) * gates["o"]
vocab = [f"w{i}" for i in range(30)]
"""
CELLS = [
    SETUP,
    'att = AttentionHeatmap(weights, tokens, mask="causal")\natt',
    "lstm = LSTMGates(gates, tokens)\nlstm",
    "pos = PositionalMatrix(d_model=64, max_len=50)\npos",
    "nxt = NextTokenDistribution(rng.normal(size=30), vocab, temperature=1.0)\nnxt",
    # 5: traits set from Python
    "att.head = 2\nlstm.step = 4\npos.d_model = 32\nnxt.temperature = 0.5",
    # 6: traits read back in Python
    'print(json.dumps({"layer": att.layer, "head": att.head, "gate": lstm.gate, "step": lstm.step,\n'
    '                  "d_model": pos.d_model, "max_len": pos.max_len, "temperature": nxt.temperature}))',
    # 7-10: issue 24's widgets (test_beam_tree_and_attention_steps_live_in_jupyterlab)
    "from seqviz.widgets import AttentionSteps, BeamTree\n"
    "from seqviz.worked_examples import SeedBeamScorer\n"
    "toy = SeedBeamScorer()\n"
    "tree = BeamTree.from_search(toy.next_token_logits, [toy.bos], 3, 6, stop_id=toy.eos, tokens=toy)\ntree",
    "qkv = rng.normal(size=(3, 2, 2, T, 4))  # q, k, v: (L, H, T, d) each\n"
    "steps = AttentionSteps(*qkv, tokens)\nsteps",
    "tree.step = 2\nsteps.query = 3\nsteps.causal = True",
    'print(json.dumps({"step": tree.step, "show_pruned": tree.show_pruned, "normalise": tree.normalise,\n'
    '                  "query": steps.query, "causal": steps.causal, "layer": steps.layer, "head": steps.head}))',
]
ROOTS = {"att": ".sv-att", "lstm": ".sv-lstm", "pos": ".sv-pos", "nxt": ".sv-next"}
DRAWN = {"att": "canvas.sv-heat", "lstm": "canvas.sv-heat", "pos": "canvas.sv-enc", "nxt": ".sv-bar-label"}
# live.ipynb: the live widgets (test_the_live_widgets_ask_the_kernel_in_jupyterlab), in a page and kernel of their own
LIVE_CELLS = [
    "import json\n"
    "from seqviz.widgets import AttentionHeatmap, BeamTree, NextTokenDistribution\n"
    'nxt = NextTokenDistribution.live("char_lm", "ROMEO:\\nBut", top_k=5)\nnxt',
    'cross = AttentionHeatmap.live("dates", "3rd of March 1999", group="d", view="grid")\ncross',
    'tree = BeamTree.live("dates", "3rd of March 1999", group="d", show_pruned=False)\ntree',
    'print(json.dumps({"tokens": nxt.tokens, "cross": cross.query_tokens, "keys": cross.key_tokens,\n'
    '                  "best": tree.beam_at()[0][0]}))',
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _notebook(cells: list[str] = CELLS) -> dict:
    return {"nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None, "outputs": [],
                       "source": src} for i, src in enumerate(cells)]}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Base URL of a JupyterLab server started for this module; killed (with its kernels) at teardown."""
    if not JUPYTER.is_file():
        pytest.fail(f"{JUPYTER} is missing: run `make setup` (jupyterlab is a dev dependency)", pytrace=False)
    tmp = tmp_path_factory.mktemp("lab")
    work, cfg = tmp / "work", tmp / "config"
    work.mkdir()
    (work / "widgets.ipynb").write_text(json.dumps(_notebook()))
    (work / "live.ipynb").write_text(json.dumps(_notebook(LIVE_CELLS)))
    (work / "chapter.ipynb").write_text(CHAPTER.read_text())
    settings = cfg / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    port = _free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(cfg), "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
           "JUPYTER_DATA_DIR": str(tmp / "data"), "IPYTHONDIR": str(tmp / "ipython"), "OMP_NUM_THREADS": "1",
           "PATH": f"{JUPYTER.parent}{os.pathsep}{os.environ.get('PATH', '')}", "JUPYTER_PLATFORM_DIRS": "1"}
    log = open(tmp / "server.log", "w+")
    cmd = [str(JUPYTER), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
           "--IdentityProvider.token=", "--ServerApp.password=", f"--ServerApp.root_dir={work}",
           "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           "--LabApp.expose_app_in_browser=True", f"--LabApp.user_settings_dir={cfg / 'lab-settings'}",
           f"--LabApp.workspaces_dir={cfg / 'workspaces'}", "--ServerApp.terminals_enabled=False",
           "--LabApp.extension_manager=readonly", "--allow-root"]  # readonly: no PyPI search; root: CI containers
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"

    def server_log() -> str:
        log.flush()
        log.seek(0)
        return log.read()[-3000:]

    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyter lab exited with {proc.returncode} before answering:\n{server_log()}",
                            pytrace=False)
            try:
                with urllib.request.urlopen(f"{base}/api/status", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"jupyter lab did not answer on {base} within {START_TIMEOUT} s:\n{server_log()}",
                            pytrace=False)
            time.sleep(0.3)
        yield base, server_log
    finally:
        if proc.poll() is None:
            proc.terminate()  # the server shuts its kernels down itself
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # anything it left behind in its session (a stuck kernel)
        except ProcessLookupError:
            pass
        log.close()


@pytest.fixture(scope="module")
def notebook(lab, browser):
    """The widgets notebook open in JupyterLab with its kernel idle: (page, external requests, errors)."""
    yield from lab_page(lab, browser, "widgets", "widgets.ipynb", len(CELLS), ("widget", "anywidget", "seqviz", "model"),
                        websockets=True)


def lab_page(lab, browser, workspace: str, path: str, n_cells: int, words: tuple[str, ...], websockets: bool = False):
    """(page, external requests, errors) of ``path`` open in JupyterLab, in a workspace of its own, with its kernel
    idle (a fixture's body: closes its context when resumed). Errors: uncaught exceptions, and console errors naming
    one of ``words``; with ``websockets``, a websocket off loopback counts as an external request. Tests that share
    the page check what came during their own run; once the last is done, both lists must be empty (what came
    between or after the tests)."""
    base, server_log = lab
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, service_workers="block")
    external, errors = [], []
    block_external(ctx, external)
    page = ctx.new_page()
    if websockets:
        page.on("websocket", lambda ws: None if is_loopback(ws.url) else external.append(ws.url))
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}")
            if m.type == "error" and any(w in m.text.lower() for w in words) else None)
    page.set_default_timeout(CELL_TIMEOUT)
    open_in_lab(page, f"{base}/lab/workspaces/{workspace}/tree/{path}", n_cells, server_log)
    yield page, external, errors
    ctx.close()
    assert not errors and not external, f"{path} in JupyterLab, by the end of its tests: {errors + external}"


def open_in_lab(page, url: str, n_cells: int, server_log) -> None:
    """Open a notebook in JupyterLab and wait until its n_cells cells show and its kernel is idle; otherwise close
    the page's context and fail the test with the server's log.

    Each page opens its notebook in a workspace of its own (/lab/workspaces/NAME/tree/PATH): in the shared default
    workspace a page restores every notebook an earlier page opened (seen: the chapter's page held widgets.ipynb and
    live.ipynb), as hidden tabs joined to those notebooks' kernels, whose widget views and cells then share the page
    with this notebook's (`.jp-OutputArea .sv-att` would match either) and load it with their widgets."""
    try:
        page.goto(url, wait_until="domcontentloaded")
        page.wait_for_function("() => window.jupyterapp && jupyterapp.shell.currentWidget"
                               " && jupyterapp.shell.currentWidget.content"
                               " && jupyterapp.shell.currentWidget.content.widgets.length === %d" % n_cells)
        page.wait_for_function(KERNEL_IDLE)
    except Exception as e:  # noqa: BLE001 - say what the server said
        page.context.close()
        pytest.fail(f"JupyterLab did not open the notebook with an idle kernel ({e}).\nserver log:\n{server_log()}",
                    pytrace=False)


KERNEL_IDLE = """() => {
  const s = jupyterapp.shell.currentWidget.sessionContext;
  return !!(s && s.session && s.session.kernel && s.session.kernel.status === 'idle');
}"""

RUN_CELL = """async ([i, ms]) => {
  const panel = jupyterapp.shell.currentWidget;
  panel.content.activeCellIndex = i;
  panel.content.deselectAll();
  // page.evaluate has no timeout of its own: a hung kernel must fail the test, not stall it
  await Promise.race([jupyterapp.commands.execute('notebook:run-cell'),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`cell ${i} still running after ${ms} ms`)), ms))]);
  const cell = panel.content.widgets[i];
  return { count: cell.model.executionCount, outputs: cell.model.outputs.toJSON() };
}"""


def run_cell(page, i: int) -> list[dict]:
    """Run cell i in the live kernel, wait for the kernel to be idle again, return the cell's outputs."""
    res = page.evaluate(RUN_CELL, [i, CELL_TIMEOUT])
    page.wait_for_function(KERNEL_IDLE)
    res = page.evaluate("(i) => { const c = jupyterapp.shell.currentWidget.content.widgets[i];"
                        " return {count: c.model.executionCount, outputs: c.model.outputs.toJSON()}; }", i)
    errs = [o for o in res["outputs"] if o.get("output_type") == "error"]
    assert res["count"] is not None, f"cell {i} did not run"
    assert not errs, f"cell {i} raised {errs[0]['ename']}: {errs[0]['evalue']}\n{CELLS[i]}"
    return res["outputs"]


def attr(page, key: str, name: str) -> str | None:
    return page.locator(f".jp-OutputArea {ROOTS[key]}").first.get_attribute(name)


def read_back(page) -> dict:
    out = run_cell(page, 6)
    text = "".join(o.get("text", "") for o in out if o.get("output_type") == "stream")
    assert text.strip(), f"the read-back cell printed nothing: {out}"
    return json.loads(text)


def test_widgets_live_in_jupyterlab(notebook):
    page, external, errors = notebook
    e0, x0 = len(errors), len(external)                  # the page is shared: this test answers for what came now
    for i in range(5):
        run_cell(page, i)
    # each widget renders from the kernel: its root, its canvases, its data attributes
    for key, sel in ROOTS.items():
        root = page.locator(f".jp-OutputArea {sel}")
        try:
            root.first.wait_for(state="visible", timeout=20_000)
        except Exception:  # noqa: BLE001
            pytest.fail(f"{key} ({sel}) did not render in JupyterLab; errors: {errors}", pytrace=False)
        assert root.count() == 1, f"{key}: expected one view, found {root.count()}"
        assert root.first.locator(DRAWN[key]).count() >= 1, f"{key} drew nothing ({DRAWN[key]} missing)"
    assert attr(page, "att", "data-shape") == "2x3x6x6" and attr(page, "att", "data-head") == "0"
    assert attr(page, "lstm", "data-step") == "0"
    assert attr(page, "pos", "data-d-model") == "64"

    # Python -> view: a later cell sets traits; the views follow
    heat = page.locator(".jp-OutputArea .sv-att canvas.sv-heat").first
    before = heat.evaluate("c => c.toDataURL()")
    run_cell(page, 5)
    page.wait_for_function("() => document.querySelector('.jp-OutputArea .sv-att').dataset.head === '2'",
                           timeout=10_000)
    assert heat.evaluate("c => c.toDataURL()") != before, "the heatmap did not redraw for head 2"
    page.wait_for_function("() => document.querySelector('.jp-OutputArea .sv-lstm').dataset.step === '4'",
                           timeout=10_000)
    page.wait_for_function("() => document.querySelector('.jp-OutputArea .sv-pos').dataset.dModel === '32'",
                           timeout=10_000)
    assert abs(float(attr(page, "nxt", "data-temperature")) - 0.5) < 1e-9
    assert read_back(page) == {"layer": 0, "head": 2, "gate": "f", "step": 4, "d_model": 32, "max_len": 50,
                               "temperature": 0.5}

    # view -> Python: move a control of each widget, then read the traits in the kernel
    att = page.locator(".jp-OutputArea .sv-att").first
    att.locator("select.sv-layer").select_option("1")
    att.locator("select.sv-head").select_option("1")
    lstm = page.locator(".jp-OutputArea .sv-lstm").first
    lstm.locator("select.sv-gate").select_option("c")
    lstm.locator("input.sv-step").fill("2")
    pos = page.locator(".jp-OutputArea .sv-pos").first
    pos.locator("input.sv-max-len").fill("80")
    nxt = page.locator(".jp-OutputArea .sv-next").first
    nxt.locator("input.sv-temperature").fill("0.2")
    shown_t = float(nxt.get_attribute("data-temperature"))
    assert shown_t != 0.5, "the temperature slider did not change the view"
    assert (att.get_attribute("data-layer"), att.get_attribute("data-head")) == ("1", "1")
    assert (lstm.get_attribute("data-gate"), lstm.get_attribute("data-step")) == ("c", "2")
    assert pos.get_attribute("data-max-len") == "80"
    got = None
    for _ in range(20):  # the kernel receives the comm messages asynchronously
        got = read_back(page)
        # each model sends its second change (head, step) only once the kernel is idle after its first (ipywidgets'
        # per-model throttle), so it can arrive after the other widgets' changes: wait for every one of them
        if (got["layer"], got["head"], got["gate"], got["step"], got["max_len"]) == (1, 1, "c", 2, 80) \
                and got["temperature"] != 0.5:
            break
        page.wait_for_timeout(250)
    assert got["layer"] == 1 and got["head"] == 1, f"attention layer/head not seen in Python: {got}"
    assert got["gate"] == "c" and got["step"] == 2, f"LSTM gate/step not seen in Python: {got}"
    assert got["d_model"] == 32 and got["max_len"] == 80, f"positional sliders not seen in Python: {got}"
    assert abs(got["temperature"] - shown_t) < 1e-9, f"temperature: view {shown_t}, Python {got['temperature']}"

    assert not errors[e0:], "widget errors in JupyterLab:\n" + "\n".join(errors[e0:])
    assert not external[x0:], f"requests left loopback: {external[x0:]}"


def test_beam_tree_and_attention_steps_live_in_jupyterlab(notebook):
    """Issue 24's widgets from a live kernel: they render, follow traits set in a later cell, and a step, switch or
    query chosen in the view reaches Python."""
    page, external, errors = notebook
    e0, x0 = len(errors), len(external)                  # the page is shared: this test answers for what came now
    run_cell(page, 0)                                                     # the set-up (again, if the test above ran)
    run_cell(page, 7)
    run_cell(page, 8)
    tree = page.locator(".jp-OutputArea .sv-beam").first
    steps = page.locator(".jp-OutputArea .sv-steps").first
    for name, root in (("BeamTree", tree), ("AttentionSteps", steps)):
        try:
            root.wait_for(state="visible", timeout=20_000)
        except Exception:  # noqa: BLE001
            pytest.fail(f"{name} did not render in JupyterLab; errors: {errors}", pytrace=False)
    assert tree.get_attribute("data-step") == "5" and tree.locator("g.sv-node").count() > 20
    assert steps.get_attribute("data-shape") == "2x2x6x6x4x4" and steps.get_attribute("data-query") == "0"
    shown = tree.get_attribute("data-shown")
    weights = steps.locator(".sv-steps-wnum").all_text_contents()

    # Python -> view
    run_cell(page, 9)
    page.wait_for_function("() => document.querySelector('.jp-OutputArea .sv-beam').dataset.step === '2'",
                           timeout=10_000)
    page.wait_for_function("() => document.querySelector('.jp-OutputArea .sv-steps').dataset.causal === 'true'",
                           timeout=10_000)
    assert tree.get_attribute("data-shown") != shown, "the tree did not redraw for step 2"
    assert steps.get_attribute("data-query") == "3"
    assert steps.locator(".sv-steps-wnum").all_text_contents() != weights
    assert steps.locator(".sv-steps-cell.sv-steps-weight.sv-masked").count() == 2     # keys 4, 5 after query 3

    # view -> Python
    tree.locator("input.sv-step").fill("4")
    tree.locator("input.sv-show-pruned").uncheck()
    tree.locator("select.sv-score").select_option("norm")
    steps.locator(".sv-steps-qtok").nth(5).click()
    steps.locator("input.sv-causal").uncheck()
    steps.locator("select.sv-head").select_option("1")
    assert tree.get_attribute("data-step") == "4" and steps.get_attribute("data-query") == "5"
    want = {"step": 4, "show_pruned": False, "normalise": True, "query": 5, "causal": False, "layer": 0, "head": 1}
    got = None
    for _ in range(20):                                                   # comm messages arrive asynchronously
        out = run_cell(page, 10)
        got = json.loads("".join(o.get("text", "") for o in out if o.get("output_type") == "stream"))
        if got == want:
            break
        page.wait_for_timeout(250)
    assert got == want, f"the view's choices did not all reach Python: {got}"
    assert not errors[e0:], "widget errors in JupyterLab:\n" + "\n".join(errors[e0:])
    assert not external[x0:], f"requests left loopback: {external[x0:]}"


def test_widgets_save_their_figure_in_jupyterlab(notebook, browser):
    """The save buttons of test_save_figure.py in JupyterLab with a live kernel: the heatmap (canvas) and the beam
    tree (SVG) each download a PNG and an SVG. Before: no save button in JupyterLab either.

    It shares the widgets notebook's page and kernel with the two tests above: it runs the set-up again (rng seeded
    afresh) and the two cells, which replace their outputs with new views of new widgets, so it saves what a fresh
    notebook would show, whichever tests ran before it."""
    page, external, errors = notebook
    e0, x0 = len(errors), len(external)                  # the page is shared: this test answers for what came now
    for i in (0, 1, 7):  # the set-up, the heatmap, the beam tree
        run_cell(page, i)
    blank = browser.new_page()
    problems = []
    for sel in (".sv-att", ".sv-beam"):
        root = page.locator(f".jp-OutputArea {sel}").first
        root.wait_for(state="visible", timeout=20_000)
        root.locator(".sv-save").wait_for(state="visible", timeout=10_000)
        problems += check_widget(page, blank, root, f"JupyterLab {sel}")
    blank.close()
    assert not problems, "\n".join(problems)
    assert not errors[e0:] and not external[x0:], (errors[e0:], external[x0:])


# ---- issue 34: the live widgets ask the kernel ----------------------------------------------------------------------
# There the view has no vendor/ folder to load a runtime from, so it asks the kernel, whose widget runs the package's
# own PyTorch model, shows the result (the traits it sets reach the view) and replies with the notes.
@pytest.fixture(scope="module")
def live_notebook(lab, browser):
    """live.ipynb open in JupyterLab (a page and kernel of its own) with an idle kernel: (page, external requests,
    errors)."""
    yield from lab_page(lab, browser, "live", "live.ipynb", len(LIVE_CELLS), ("widget", "seqviz", "model", "live"))


def run_live_cell(page, i: int) -> list[dict]:
    page.evaluate(RUN_CELL, [i, CELL_TIMEOUT])
    page.wait_for_function(KERNEL_IDLE)
    res = page.evaluate("(i) => jupyterapp.shell.currentWidget.content.widgets[i].model.outputs.toJSON()", i)
    errs = [o for o in res if o.get("output_type") == "error"]
    assert not errs, f"cell {i} raised {errs[0]['ename']}: {errs[0]['evalue']}"
    return res


def live_read_back(page) -> dict:
    out = run_live_cell(page, 3)
    return json.loads("".join(o.get("text", "") for o in out if o.get("output_type") == "stream"))


def runs(root) -> int:
    return int(root.get_attribute("data-live-runs") or 0)


def press(page, root, text, button="button.sv-live-run", followers=()):
    """Put `text` in the widget's field (None: leave it), press `button`, wait until it and its `followers` ran."""
    before = [runs(r) for r in (root, *followers)]
    if text is not None:
        root.locator(".sv-live-input").fill(text)
    root.locator(button).click()
    for r, n in zip((root, *followers), before):
        page.wait_for_function("([e, n]) => Number(e.dataset.liveRuns || 0) > n", arg=[r.element_handle(), n],
                               timeout=CELL_TIMEOUT)


def test_the_live_widgets_ask_the_kernel_in_jupyterlab(live_notebook):
    from seqviz.live import kernel

    page, external, errors = live_notebook
    for i in range(4):
        run_live_cell(page, i)
    nxt = page.locator(".jp-OutputArea .seqviz.sv-next").first
    cross = page.locator(".jp-OutputArea .seqviz.sv-att").first
    tree = page.locator(".jp-OutputArea .seqviz.sv-beam").first
    for root in (nxt, cross, tree):
        root.wait_for(state="visible", timeout=20_000)
        assert root.get_attribute("data-live") == "off" and root.get_attribute("data-live-engine") == "kernel"

    # the prompt goes to the kernel; the package's model answers; the view draws what Python now holds
    nxt.locator("button.sv-live-open").click()
    page.wait_for_function("e => Number(e.dataset.liveRuns || 0) > 0", arg=nxt.element_handle(), timeout=CELL_TIMEOUT)
    press(page, nxt, "JULIET:\n")
    assert nxt.get_attribute("data-live") == "ready" and nxt.get_attribute("data-live-text") == "JULIET:\n"
    enc, f = kernel.char_lm_forward("JULIET:\n")
    m = kernel.char_lm()
    order = sorted(range(len(m.itos)), key=lambda i: (-float(f.logits[-1, i]), i))
    got = live_read_back(page)
    assert got["tokens"][:5] == [m.itos[i] for i in order[:5]]
    shown = nxt.locator(".sv-bar-label").all_text_contents()
    assert shown == [t.replace(" ", "\u2423").replace("\n", "\u23ce") for t in got["tokens"][:5]]
    assert nxt.locator(".sv-live-status").text_content() == "read 8 characters"

    # generation runs in the kernel too (seqviz.decode.generate), then the prompt runs again
    nxt.locator("input.sv-live-n").fill("20")
    press(page, nxt, None, "button.sv-live-greedy")
    generated = kernel.generate_text("JULIET:\n", 20)[1]
    assert nxt.locator(".sv-live-input").input_value() == generated
    # what the kernel's model wrote is shown as the model's, under the field (issue 39 item 4)
    assert nxt.locator(".sv-live-output-label").text_content() == "The model wrote 20 characters (greedy):"
    assert nxt.locator(".sv-live-new").text_content() == generated[len("JULIET:\n"):]

    # bad input: the kernel's message, and the widget keeps working
    press(page, nxt, "naïve")
    assert nxt.get_attribute("data-live") == "error"
    assert nxt.locator(".sv-live-problem span").text_content() == (
        'the model does not know the character "ï" (not in its vocabulary): drop it or replace it')
    # the status under the message is the last good input's, and says so (issue 39 item 8)
    assert nxt.locator(".sv-live-status").text_content().startswith(
        "Still drawn: the last input that ran, \u201cJULIET:\u23ce")
    assert nxt.locator(".sv-live-output").is_hidden()                             # the reader's text now
    press(page, nxt, None, "button.sv-live-drop")
    assert nxt.get_attribute("data-live") == "ready" and nxt.locator(".sv-live-input").input_value() == "nave"

    # the dates group: one date, both widgets, answered by the kernel even outside the training forms
    cross.locator("button.sv-live-open").click()
    press(page, cross, "2031-12-25", followers=(tree,))
    _, ids, _ = kernel.dates_greedy("2031-12-25")
    tgt = kernel.dates().extra["tgt_itos"]
    got = live_read_back(page)
    assert got["cross"] == [tgt[i] for i in ids] and got["keys"] == list("2031-12-25")
    _, hyps, _ = kernel.dates_beam("2031-12-25", 5)
    assert got["best"] == "".join(tgt[i] for i in hyps[0][0])
    note = kernel.outside_formats_note("2031-12-25")
    assert cross.locator(".sv-live-status").text_content().endswith(note)
    assert tree.locator(".sv-live-status").text_content().endswith(note)
    assert tree.locator(".sv-live-input").input_value() == "2031-12-25"
    assert not errors, "widget errors in JupyterLab:\n" + "\n".join(errors)
    assert not external, f"requests left loopback: {external}"


# ---- issue 23: solutions folded where students run the notebooks ------------------------------------------------
CELL_STATE = """async (indices) => {
  // each cell is scrolled into view first: JupyterLab lays out only the cells near the viewport
  const panel = jupyterapp.shell.currentWidget.content;
  const out = {};
  for (const i of indices) {
    await panel.scrollToItem(i, 'center');
    await new Promise((r) => setTimeout(r, 100));
    const c = panel.widgets[i];
    const input = c.node.querySelector('.jp-Cell-inputWrapper');
    const output = c.node.querySelector('.jp-Cell-outputWrapper:not(.lm-mod-hidden)');
    out[i] = {type: c.model.type, inputHidden: c.inputHidden, outputHidden: c.model.type === 'code' && c.outputHidden,
              inputPlaceholder: !!c.node.querySelector('.jp-InputPlaceholder'),
              text: input ? input.innerText : '', outputText: output ? output.innerText : ''};
  }
  return out;
}"""


def test_solutions_are_folded_when_a_chapter_opens_in_jupyterlab(lab, browser):
    """A chapter opened in JupyterLab shows each exercise's solution folded: a folded code solution shows neither its
    code (past the placeholder's first line) nor its output, a folded prose answer not its text; the cells around
    them stay open. The flags come from scripts/hide_solutions.py (tests/test_solutions_collapsed.py checks the
    files); this checks that JupyterLab honours them."""
    base, server_log = lab
    nb = json.loads(CHAPTER.read_text())
    folded = [i for i, c in enumerate(nb["cells"]) if c["metadata"].get("jupyter", {}).get("source_hidden")]
    solutions = [i for i in folded if nb["cells"][i]["cell_type"] == "code" and "hide-cell" in
                 nb["cells"][i]["metadata"].get("tags", [])]
    answers = [i for i in folded if nb["cells"][i]["cell_type"] == "markdown"]
    assert solutions and answers, f"{CHAPTER.name} has no folded solution or answer to check"
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, service_workers="block")
    external = []
    block_external(ctx, external)
    try:
        page = ctx.new_page()
        page.set_default_timeout(CELL_TIMEOUT)
        page.goto(f"{base}/lab/workspaces/chapter/tree/chapter.ipynb", wait_until="domcontentloaded")
        try:
            page.wait_for_function("() => window.jupyterapp && jupyterapp.shell.currentWidget"
                                   " && jupyterapp.shell.currentWidget.content"
                                   " && jupyterapp.shell.currentWidget.content.widgets.length === %d"
                                   % len(nb["cells"]))
        except Exception as e:  # noqa: BLE001
            pytest.fail(f"JupyterLab did not open {CHAPTER.name} ({e}).\nserver log:\n{server_log()}",
                        pytrace=False)
        opened = [i for i, c in enumerate(nb["cells"]) if i not in folded and c["cell_type"] == "code"
                  and not c["metadata"].get("jupyter")][:5]
        state = {int(k): v for k, v in page.evaluate(CELL_STATE, solutions + answers + opened).items()}
    finally:
        ctx.close()
    for i in solutions:
        src = "".join(nb["cells"][i]["source"]).strip().splitlines()
        s = state[i]
        assert s["inputHidden"] and s["outputHidden"] and s["inputPlaceholder"], \
            f"cell {i} ({src[0]!r}) opens unfolded in JupyterLab: {s}"
        body = [line.strip() for line in src[1:] if len(line.strip()) > 12]
        assert not any(line in s["text"] for line in body), f"cell {i}: its code is visible: {s['text'][:200]!r}"
        outputs = [o.get("text", "") for o in nb["cells"][i].get("outputs", [])]
        shown = [line for o in outputs for line in "".join(o).splitlines() if len(line.strip()) > 12]
        assert not any(line.strip() in s["outputText"] for line in shown), f"cell {i}: its output is visible"
    for i in answers:
        src = "".join(nb["cells"][i]["source"])
        words = [w for w in src.split() if len(w) > 8 and w.isalpha()]
        assert state[i]["inputHidden"] and state[i]["inputPlaceholder"], f"answer cell {i} opens unfolded"
        assert not any(w in state[i]["text"] for w in words[3:]), f"answer cell {i}: its text is visible"
    assert opened and all(not state[i]["inputHidden"] and not state[i]["inputPlaceholder"] and state[i]["text"]
                          for i in opened), "cells without the flags were folded too"
    assert not external, f"requests left loopback: {external}"
