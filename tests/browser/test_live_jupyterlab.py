"""The live widgets in a real JupyterLab with a live kernel (issue 34): there the view has no vendor/ folder to load a
runtime from, so it asks the kernel, whose widget runs the package's own PyTorch model, shows the result (the traits
it sets reach the view) and replies with the notes. The server is test_jupyterlab.py's (`lab`: 127.0.0.1, no token,
nothing leaves loopback); the notebook is written through JupyterLab's own contents service.
"""
from __future__ import annotations

import json

import pytest
from svbrowser import block_external
from test_jupyterlab import CELL_TIMEOUT, KERNEL_IDLE, RUN_CELL, lab, open_in_lab  # noqa: F401 - lab: a fixture

CELLS = [
    "import json\n"
    "from seqviz.widgets import AttentionHeatmap, BeamTree, NextTokenDistribution\n"
    'nxt = NextTokenDistribution.live("char_lm", "ROMEO:\\nBut", top_k=5)\nnxt',
    'cross = AttentionHeatmap.live("dates", "3rd of March 1999", group="d", view="grid")\ncross',
    'tree = BeamTree.live("dates", "3rd of March 1999", group="d", show_pruned=False)\ntree',
    'print(json.dumps({"tokens": nxt.tokens, "cross": cross.query_tokens, "keys": cross.key_tokens,\n'
    '                  "best": tree.beam_at()[0][0]}))',
]


@pytest.fixture(scope="module")
def notebook(lab, browser):  # noqa: F811 - the imported fixture
    """The live notebook open in JupyterLab with an idle kernel: (page, external requests, errors)."""
    base, server_log = lab
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, service_workers="block")
    external, errors = [], []
    block_external(ctx, external)
    page = ctx.new_page()
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}")
            if m.type == "error" and any(w in m.text.lower() for w in ("widget", "seqviz", "model", "live"))
            else None)
    page.set_default_timeout(CELL_TIMEOUT)
    nb = {"nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None, "outputs": [],
                     "source": src} for i, src in enumerate(CELLS)]}
    def save_notebook(page):
        page.goto(f"{base}/lab", wait_until="domcontentloaded")
        page.wait_for_function("() => window.jupyterapp && jupyterapp.serviceManager")
        page.evaluate("async (nb) => { await jupyterapp.serviceManager.contents.save('live.ipynb', "
                      "{type: 'notebook', format: 'json', content: nb}); }", nb)

    open_in_lab(page, f"{base}/lab/tree/live.ipynb", len(CELLS), server_log, prepare=save_notebook)
    yield page, external, errors
    ctx.close()


def run_cell(page, i: int) -> list[dict]:
    page.evaluate(RUN_CELL, [i, CELL_TIMEOUT])
    page.wait_for_function(KERNEL_IDLE)
    res = page.evaluate("(i) => jupyterapp.shell.currentWidget.content.widgets[i].model.outputs.toJSON()", i)
    errs = [o for o in res if o.get("output_type") == "error"]
    assert not errs, f"cell {i} raised {errs[0]['ename']}: {errs[0]['evalue']}"
    return res


def read_back(page) -> dict:
    out = run_cell(page, 3)
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


def test_the_live_widgets_ask_the_kernel_in_jupyterlab(notebook):
    from seqviz.live import kernel

    page, external, errors = notebook
    for i in range(4):
        run_cell(page, i)
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
    got = read_back(page)
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
    got = read_back(page)
    assert got["cross"] == [tgt[i] for i in ids] and got["keys"] == list("2031-12-25")
    _, hyps, _ = kernel.dates_beam("2031-12-25", 5)
    assert got["best"] == "".join(tgt[i] for i in hyps[0][0])
    note = kernel.outside_formats_note("2031-12-25")
    assert cross.locator(".sv-live-status").text_content().endswith(note)
    assert tree.locator(".sv-live-status").text_content().endswith(note)
    assert tree.locator(".sv-live-input").input_value() == "2031-12-25"
    assert not errors, "widget errors in JupyterLab:\n" + "\n".join(errors)
    assert not external, f"requests left loopback: {external}"
