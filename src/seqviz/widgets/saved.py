"""Widgets rebuilt from their saved state, for print: what a notebook stores is enough to draw ``.to_figure()``.

A notebook saved with its widget state keeps, for every widget, the synced traits in
``metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"][model_id]``: ``state`` (the traits; the
widget's class in ``_anywidget_id``) and ``buffers`` (the byte traits, base64). The static book and the PDF have no
kernel, so ``scripts/pdf.py`` rebuilds each widget here and prints its static matplotlib figure in place of the
widget's text repr.

The rebuilt widget goes through the widget's own constructor and checks, so a state the widget could not have made
raises the same clear errors. It holds what the browser holds: the uint8-quantised weights of an attention heatmap or
an LSTM trace (within 1/255 of the range of the original), the float32 or float64 numbers the other widgets send.
"""
from __future__ import annotations

import base64
from typing import Mapping

import numpy as np

from ._common import dequantize_uint8

__all__ = ["decode_state", "widget_from_state", "figure_from_state", "quiz_from_state", "WIDGET_CLASSES", "QUIZ_ID"]

#: ``_anywidget_id`` of a check-your-understanding question, which print shows as text (``quiz_from_state``), not a
#: figure
QUIZ_ID = "seqviz.widgets.quiz.Quiz"

#: ``_anywidget_id`` of each widget class that can be rebuilt -> its class name in :mod:`seqviz.widgets`
WIDGET_CLASSES = {
    "seqviz.widgets.attention.AttentionHeatmap": "AttentionHeatmap",
    "seqviz.widgets.attention_steps.AttentionSteps": "AttentionSteps",
    "seqviz.widgets.beam_tree.BeamTree": "BeamTree",
    "seqviz.widgets.lstm_gates.LSTMGates": "LSTMGates",
    "seqviz.widgets.next_token.NextTokenDistribution": "NextTokenDistribution",
    "seqviz.widgets.positional.PositionalMatrix": "PositionalMatrix",
}


def decode_state(entry: Mapping) -> dict:
    """The traits of one saved model: ``entry["state"]`` with each of ``entry["buffers"]`` (base64 or raw bytes)
    put back at its path, as ``bytes``. Also accepts a plain state dict (e.g. ``widget.get_state()``)."""
    if not isinstance(entry, Mapping):
        raise TypeError(f"a saved widget model must be a mapping, got {type(entry).__name__}")
    if "state" not in entry:
        return dict(entry)
    state = dict(entry["state"])
    for buf in entry.get("buffers", ()):
        path, data = buf.get("path"), buf.get("data")
        if not path or data is None:
            raise ValueError(f"a saved buffer needs a path and data, got keys {sorted(buf)}")
        if buf.get("encoding", "base64") == "base64":
            data = base64.b64decode(data)
        elif buf.get("encoding") == "hex":
            data = bytes.fromhex(data)
        if len(path) != 1:
            raise ValueError(f"nested buffer path {path}: the seqviz widgets keep their bytes in top-level traits")
        state[path[0]] = bytes(data)
    return state


def _bytes(state: Mapping, name: str) -> bytes:
    v = state.get(name, b"")
    if isinstance(v, memoryview):
        return v.tobytes()
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    raise TypeError(f"trait {name!r} must be bytes (decode the notebook's base64 buffers with decode_state first), "
                    f"got {type(v).__name__}")


def _heatmap(cls, s):
    shape = [int(n) for n in s["shape"]]                          # (L, H, Tq, Tk)
    vmax = float(s["vmax"])
    w = dequantize_uint8(_bytes(s, "weights"), shape, 0.0, vmax)  # (L, H, Tq, Tk), within vmax / 510
    mask = None
    if s.get("mask_shape"):
        mask = np.frombuffer(_bytes(s, "mask"), dtype=np.uint8).reshape(s["mask_shape"]).astype(bool)
    atol = shape[3] * vmax / 510 + 1e-6                           # a row of Tk rounded weights sums to 1 within this
    return cls(w, list(s["query_tokens"]), list(s["key_tokens"]), mask, layer=int(s.get("layer", 0)),
               head=int(s.get("head", 0)), view=s.get("view", "head"), title=s.get("title", ""), atol=atol,
               query_label=s.get("query_label") or "query", key_label=s.get("key_label") or "key",
               value_label=s.get("value_label") or "attention weight",
               layer_names=s.get("layer_names") or None, head_names=s.get("head_names") or None)


def _gates(cls, s):
    from .lstm_gates import GateTraces

    T, U = (int(n) for n in s["shape"])
    names, ranges = list(s["gates"]), [tuple(float(x) for x in r) for r in s["ranges"]]
    packed = np.frombuffer(_bytes(s, "traces"), dtype=np.uint8).reshape(len(names), T, U)  # (G, T, units)
    traces = {n: dequantize_uint8(packed[g].tobytes(), (T, U), *ranges[g]) for g, n in enumerate(names)}
    w = cls(traces, list(s["tokens"]), gate=s.get("gate") or None, step=int(s.get("step", 0)),
            title=s.get("title", ""))
    # the colour ranges as sent (the cell state's is its largest |c|, which the rounding may shift by an ulp)
    w._data = GateTraces(values=w._data.values, tokens=w._data.tokens, ranges=dict(zip(names, ranges)))
    w.ranges = [list(r) for r in ranges]
    return w


def _positional(cls, s):
    return cls(int(s["d_model"]), int(s["max_len"]), float(s["base"]), dims=list(s["dims"]),
               positions=list(s["positions"]), title=s.get("title", ""))


def _next_token(cls, s):
    z = np.frombuffer(_bytes(s, "logits"), dtype="<f4")           # (V,), sorted highest first, as sent
    return cls(z, list(s["tokens"]), temperature=float(s.get("temperature", 1.0)), top_k=int(s["top_k"]),
               title=s.get("title", ""), sample_top_k=bool(s.get("sample_top_k", False)), seed=int(s.get("seed", 0)))


def _steps(cls, s):
    L, H, Tq, Tk, dk, dv = (int(n) for n in s["shape"])
    dt = "<" + s.get("dtype", "f4")
    q = np.frombuffer(_bytes(s, "q"), dtype=dt).reshape(L, H, Tq, dk)
    k = np.frombuffer(_bytes(s, "k"), dtype=dt).reshape(L, H, Tk, dk)
    v = np.frombuffer(_bytes(s, "v"), dtype=dt).reshape(L, H, Tk, dv)
    return cls(q.astype(dt[1:]), k.astype(dt[1:]), v.astype(dt[1:]), list(s["query_tokens"]), list(s["key_tokens"]),
               query=int(s.get("query", 0)), causal=bool(s.get("causal", False)), layer=int(s.get("layer", 0)),
               head=int(s.get("head", 0)), query_positions=list(s["query_positions"]),
               layer_ids=list(s["layer_ids"]), head_ids=list(s["head_ids"]), title=s.get("title", ""),
               index_base=int(s.get("index_base", 0)))


def _beam(cls, s):
    """The flat node list the browser gets, turned back into the ``BeamTrace`` it came from; token ids become
    indices into the widget's label list (``vocab``), which is the vocabulary the rebuilt widget is given."""
    from seqviz.decode import BeamCandidate, BeamTrace

    from .beam_tree import FINISHED, GREEDY_ONLY, KEPT, PRUNED

    parent = np.frombuffer(_bytes(s, "parent"), dtype="<i4")
    status = np.frombuffer(_bytes(s, "status"), dtype=np.uint8)
    logprob = np.frombuffer(_bytes(s, "logprob"), dtype="<f8")
    token = np.frombuffer(_bytes(s, "token"), dtype="<u4")
    vocab, starts = list(s["vocab"]), [int(n) for n in s["step_start"]]
    n_steps = len(starts) - 2
    names = {KEPT: "kept", PRUNED: "pruned", FINISHED: "finished"}
    steps, kept_prev = [], [0]                                    # node ids of the previous step's kept hypotheses
    for t in range(1, n_steps + 1):
        nodes = [n for n in range(starts[t], starts[t + 1]) if status[n] != GREEDY_ONLY]
        steps.append(tuple(BeamCandidate(parent=kept_prev.index(int(parent[n])), token=int(token[n]),
                                         token_logprob=float(logprob[n] - logprob[parent[n]]),
                                         logprob=float(logprob[n]), status=names[int(status[n])]) for n in nodes))
        kept_prev = [n for n in nodes if status[n] == KEPT]

    def path(n: int) -> tuple[int, ...]:
        out = []
        while n > 0:
            out.append(int(token[n]))
            n = int(parent[n])
        return tuple(out[::-1])

    stops = {int(token[n]) for n in range(len(status)) if status[n] == FINISHED}
    if len(stops) > 1:
        raise ValueError(f"finished nodes end with different tokens {sorted(vocab[i] for i in stops)}; a beam "
                         f"search has one stop token")
    greedy = tuple((int(token[n]), float(logprob[n] - logprob[parent[n]])) for n in s.get("greedy", ()))
    trace = BeamTrace(prompt_ids=(), beam_size=int(s["beam_size"]), length_penalty=float(s.get("length_penalty", 0)),
                      stop_id=stops.pop() if stops else None, max_new_tokens=n_steps, steps=tuple(steps),
                      hypotheses=tuple((path(n), float(logprob[n])) for n in s.get("result", ())),
                      greedy=greedy or None)
    return cls(trace, vocab, step=int(s.get("step", n_steps)), show_pruned=bool(s.get("show_pruned", True)),
               normalise=bool(s.get("normalise", False)), alpha=float(s.get("alpha", 1.0)),
               root_label=vocab[int(token[0])], joiner=s.get("joiner", " "), title=s.get("title", ""))


_BUILDERS = {"AttentionHeatmap": _heatmap, "LSTMGates": _gates, "PositionalMatrix": _positional,
             "NextTokenDistribution": _next_token, "AttentionSteps": _steps, "BeamTree": _beam}


def widget_from_state(state: Mapping):
    """Rebuild a seqviz widget from its saved state: a notebook's saved model entry (``{"state": ..., "buffers":
    ...}``) or a state dict with bytes (``widget.get_state()``). Raises ``ValueError`` for a model that is not a
    seqviz widget."""
    from seqviz import widgets

    s = decode_state(state)
    wid = s.get("_anywidget_id")
    if wid not in WIDGET_CLASSES:
        raise ValueError(f"not a seqviz widget: _anywidget_id={wid!r} (model {s.get('_model_name')!r}); the widgets "
                         f"that can be rebuilt are {sorted(WIDGET_CLASSES)}")
    name = WIDGET_CLASSES[wid]
    return _BUILDERS[name](getattr(widgets, name), s)


def quiz_from_state(state: Mapping):
    """Rebuild a saved :class:`seqviz.widgets.Quiz` (its ``to_markdown()`` is what print shows in its place). Raises
    ``ValueError`` for a model that is not a quiz."""
    from seqviz.widgets import Quiz

    s = decode_state(state)
    if s.get("_anywidget_id") != QUIZ_ID:
        raise ValueError(f"not a quiz: _anywidget_id={s.get('_anywidget_id')!r}")
    return Quiz(s["question"], [(c["text"], c["correct"], c["why"]) for c in s["choices"]], title=s.get("title", ""))


def figure_from_state(state: Mapping):
    """The static matplotlib figure of a saved seqviz widget: ``widget_from_state(state).to_figure()``."""
    return widget_from_state(state).to_figure()
