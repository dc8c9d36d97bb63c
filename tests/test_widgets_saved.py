"""seqviz.widgets.saved: every widget rebuilt from its saved state (what a notebook stores) draws the same static
figure as the original, so the PDF (scripts/pdf.py, `make pdf`) prints each widget's figure and never its text repr.
No TeX here: this runs in CI."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from ipywidgets.embed import embed_data
from matplotlib.figure import Figure

from seqviz.decode import beam_search
from seqviz.widgets import (AttentionHeatmap, AttentionSteps, BeamTree, LSTMGates, NextTokenDistribution,
                            PositionalMatrix)
from seqviz.widgets.saved import WIDGET_CLASSES, decode_state, figure_from_state, widget_from_state
from seqviz.worked_examples import SeedBeamScorer

ROOT = Path(__file__).resolve().parents[1]
STATE_KEY = "application/vnd.jupyter.widget-state+json"


def _softmax(shape, seed, mask=None):
    g = torch.Generator().manual_seed(seed)
    s = torch.randn(*shape, generator=g, dtype=torch.float64)
    if mask is not None:
        s = s.masked_fill(~torch.as_tensor(mask), -math.inf)
    return torch.softmax(s, -1)


def _heatmap():
    mask = torch.tril(torch.ones(7, 7, dtype=torch.bool))
    return AttentionHeatmap(_softmax((2, 3, 7, 7), 0, mask), [f"w{i}" for i in range(7)], mask="causal", layer=1,
                            head=2, title="two layers, three heads")


def _heatmap_grid():
    return AttentionHeatmap(_softmax((5, 2, 9), 1), ["a", "b"], [f"k{i}" for i in range(9)], view="grid")


def _copy():
    """Chapter 8's copy trace: one distribution, its axes named (issue 33)."""
    return AttentionHeatmap(_softmax((4, 15), 7), [f"h{i}" for i in range(4)], [f"a{i}" for i in range(15)],
                            query_label="headline word", key_label="article word", value_label="copy attention")


def _heatmap_named():
    return AttentionHeatmap(_softmax((2, 2, 3, 3), 8), list("abc"), layer_names=["bidirectional", "causal"],
                            head_names=["first", "second"], layer=1, view="grid")


def _gates():
    g = torch.Generator().manual_seed(2)
    T, U = 6, 5
    sig = lambda: torch.sigmoid(torch.randn(T, U, generator=g))  # noqa: E731
    c = 3 * torch.randn(T, U, generator=g)
    traces = {"f": sig(), "i": sig(), "g": torch.tanh(torch.randn(T, U, generator=g)), "o": sig(), "c": c,
              "h": torch.tanh(c)}
    return LSTMGates(traces, list("hello!"), gate="c", step=3, title="gates")


def _positional():
    return PositionalMatrix(d_model=32, max_len=50, base=1000.0, dims=[0, 3, 9], positions=[5, 30], title="P")


def _next_token():
    z = torch.randn(40, generator=torch.Generator().manual_seed(3))
    z[7] = -math.inf
    return NextTokenDistribution(z, [f"tok{i}" for i in range(40)], temperature=0.7, top_k=12, title="P(w | ctx)",
                                 sample_top_k=True, seed=4)


def _steps():
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 2, 4, 8, generator=g) for _ in range(3))   # (L, H, T, d), float32
    return AttentionSteps(q, k, v, ["We", "wash", "our", "cats"], query=2, causal=True, layer=1, head=0,
                          layer_ids=[0, 3], head_ids=[1, 2], title="steps")


def _steps_f8():
    g = torch.Generator().manual_seed(6)
    q, k, v = (torch.randn(1, 4, generator=g, dtype=torch.float64), torch.randn(5, 4, generator=g,
               dtype=torch.float64), torch.randn(5, 3, generator=g, dtype=torch.float64))
    return AttentionSteps(q, k, v, ["x"], list("abcde"), query_positions=[4])


def _steps_from_1():
    g = torch.Generator().manual_seed(9)
    q, k, v = (torch.randn(4, 6, generator=g) for _ in range(3))
    return AttentionSteps(q, k, v, ["We", "wash", "our", "cats"], query=1, causal=True, index_base=1)


def _beam():
    toy = SeedBeamScorer()
    _, trace = beam_search(toy.next_token_logits, [toy.bos], 3, 6, stop_id=toy.eos, trace=True, with_greedy=True)
    return BeamTree(trace, toy, step=4, normalise=True, alpha=0.7, title="seed")


MAKERS = {"heatmap": _heatmap, "heatmap_grid": _heatmap_grid, "copy": _copy, "heatmap_named": _heatmap_named,
          "gates": _gates, "positional": _positional, "next_token": _next_token, "steps": _steps,
          "steps_f8": _steps_f8, "steps_from_1": _steps_from_1, "beam": _beam}


def _tolerance(w) -> float:
    """What the browser gets is quantised for two widgets: heatmap weights and LSTM traces, to 1/255 of the range."""
    if isinstance(w, AttentionHeatmap):
        return w.vmax / 510 + 1e-12
    if isinstance(w, LSTMGates):
        return max(hi - lo for lo, hi in w.ranges) / 510 + 1e-12
    return 1e-6


def _content(fig: Figure) -> list[dict]:
    """What a figure shows, axes by axes: titles, labels, tick labels, texts, image arrays, bars, lines."""
    out = []
    for ax in fig.axes:
        out.append({
            "titles": [ax.get_title(loc=loc) for loc in ("left", "center", "right")],
            "labels": (ax.get_xlabel(), ax.get_ylabel()),
            "ticks": ([t.get_text() for t in ax.get_xticklabels()], [t.get_text() for t in ax.get_yticklabels()]),
            "texts": [t.get_text() for t in ax.texts],
            "images": [np.ma.filled(np.ma.asarray(im.get_array(), dtype=float), np.nan) for im in ax.get_images()],
            "bars": [(p.get_x(), p.get_y(), p.get_width(), p.get_height()) for p in ax.patches],
            "lines": [ln.get_xydata() for ln in ax.lines],
            "visible": ax.get_visible(),
        })
    return out


def assert_same_figure(a: Figure, b: Figure, atol: float) -> None:
    ca, cb = _content(a), _content(b)
    assert len(ca) == len(cb), "different number of axes"
    assert (a._suptitle.get_text() if a._suptitle else "") == (b._suptitle.get_text() if b._suptitle else "")
    for i, (x, y) in enumerate(zip(ca, cb)):
        for key in ("titles", "labels", "ticks", "texts", "visible"):
            assert x[key] == y[key], f"axes {i}: {key} differ: {x[key]} vs {y[key]}"
        assert len(x["images"]) == len(y["images"]) and len(x["lines"]) == len(y["lines"])
        for p, q in zip(x["images"], y["images"]):
            assert p.shape == q.shape
            np.testing.assert_allclose(p, q, atol=atol, rtol=0, equal_nan=True, err_msg=f"axes {i}: image")
        for p, q in zip(x["lines"], y["lines"]):
            np.testing.assert_allclose(p, q, atol=atol, rtol=1e-6, err_msg=f"axes {i}: line")
        np.testing.assert_allclose(np.array(x["bars"], dtype=float).reshape(-1, 4),
                                   np.array(y["bars"], dtype=float).reshape(-1, 4), atol=1e-6, rtol=1e-6,
                                   err_msg=f"axes {i}: bars")


def notebook_entry(widget) -> dict:
    """The widget's model as a notebook stores it (ipywidgets' embed format: state + base64 buffers)."""
    data = embed_data(views=[widget], drop_defaults=False)  # JupyterLab saves every trait
    return data["manager_state"]["state"][widget.model_id]


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_rebuilt_from_the_notebook_format_draws_the_same_figure(name):
    w = MAKERS[name]()
    entry = notebook_entry(w)
    assert entry.get("buffers") or isinstance(w, PositionalMatrix)    # the bytes travel as base64 buffers
    r = widget_from_state(entry)
    assert isinstance(r, type(w).__mro__[1]) and type(r).__name__ == type(w).__name__  # anywidget subclasses each
    assert_same_figure(w.to_figure(), r.to_figure(), _tolerance(w))
    assert_same_figure(w.to_figure(), figure_from_state(entry), _tolerance(w))


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_rebuilt_from_get_state_holds_the_same_traits(name):
    """The rebuilt widget sends the browser the same traits, bytes included: it is the widget the page showed."""
    w = MAKERS[name]()
    r = widget_from_state(w.get_state())
    skip = {"layout", "comm", "_esm", "_css"}
    ws, rs = w.get_state(), r.get_state()
    for key in ws:
        if key in skip:
            continue
        a, b = ws[key], rs[key]
        if isinstance(a, (bytes, memoryview)):
            a, b = bytes(a), bytes(b)
        assert a == b, f"{name}: trait {key!r} differs after the round trip"


def test_quantised_widgets_hold_what_the_browser_holds():
    w = _heatmap()
    r = widget_from_state(notebook_entry(w))
    assert np.abs(r.data.weights - w.data.weights).max() <= w.vmax / 510 + 1e-12
    g = _gates()
    rg = widget_from_state(notebook_entry(g))
    assert rg.data.ranges == g.data.ranges
    for n in g.data.values:
        lo, hi = g.data.ranges[n]
        assert np.abs(rg.data.values[n] - g.data.values[n]).max() <= (hi - lo) / 510 + 1e-12


def test_every_widget_class_can_be_rebuilt():
    import seqviz.widgets as pkg

    classes = {f"{c.__module__}.{c.__qualname__}" for c in vars(pkg).values()
               if isinstance(c, type) and hasattr(c, "_esm") and hasattr(c, "to_figure")}
    assert classes == set(WIDGET_CLASSES)
    made = {f"{type(m()).__module__}.{type(m()).__qualname__}" for m in MAKERS.values()}
    assert made == set(WIDGET_CLASSES)


def test_not_a_seqviz_widget_is_a_clear_error():
    with pytest.raises(ValueError, match="not a seqviz widget"):
        widget_from_state({"state": {"_model_name": "HBoxModel", "children": []}, "buffers": []})
    with pytest.raises(TypeError, match="decode_state"):
        state = decode_state(notebook_entry(_next_token()))
        state["logits"] = "AAAA"
        widget_from_state(state)


def _stored_widget_models(quizzes: bool = False):
    from seqviz.widgets.saved import QUIZ_ID

    for path in sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("book/*.ipynb")]):
        nb = json.loads(path.read_text(encoding="utf-8"))
        models = nb.get("metadata", {}).get("widgets", {}).get(STATE_KEY, {}).get("state", {})
        for mid, entry in models.items():
            if entry.get("model_name") == "AnyModel" and (entry["state"].get("_anywidget_id") == QUIZ_ID) == quizzes:
                yield pytest.param(entry, id=f"{path.parent.name}/{path.stem}:{mid[:8]}")


@pytest.mark.parametrize("entry", list(_stored_widget_models()))
def test_every_stored_widget_of_the_book_rebuilds(entry):
    """What `make pdf` will do to each widget the notebooks store: rebuild it and draw its figure."""
    fig = figure_from_state(entry)
    assert isinstance(fig, Figure) and fig.axes


@pytest.mark.parametrize("entry", list(_stored_widget_models(quizzes=True)))
def test_every_stored_question_rebuilds_as_its_printed_text(entry):
    """What `make pdf` prints in a question's place: its text, lettered choices and the answer with every reason."""
    from seqviz.widgets.saved import quiz_from_state

    quiz = quiz_from_state(entry)
    question, answer = quiz.to_markdown()
    assert quiz.question in question and all(c["why"] in answer for c in entry["state"]["choices"])
    with pytest.raises(ValueError, match="not a seqviz widget"):
        figure_from_state(entry)                       # a question is not a figure: print takes the text path
