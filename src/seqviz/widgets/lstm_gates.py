"""LSTM gates over time: forget, add, candidate and output gates, cell and hidden state (SLP 3rd ed. 9.22-9.29).

Python checks one (T, units) trace per quantity and packs them as uint8 bytes; ``static/lstm_gates.js`` draws the
units x time heatmap, the token strip, the time-step slider and the per-step table, all in the browser.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping, Sequence

import anywidget
import numpy as np
import traitlets

from seqviz.lstm import GATES

from ._common import (CSS, Described, check_finite, check_index, check_nonempty, check_tokens, esm, plain,
                      quantize_uint8, to_array)
from ._live import LiveMode, count

__all__ = ["LSTMGates", "GateTraces", "GATES", "prepare_gates"]


@dataclass(frozen=True)
class GateTraces:
    """Checked traces: ``values[name]`` (T, units) float64 in SLP order, tokens and each quantity's colour range."""

    values: dict[str, np.ndarray]
    tokens: list[str]
    ranges: dict[str, tuple[float, float]]

    @property
    def shape(self) -> tuple[int, int]:
        return next(iter(self.values.values())).shape


def _as_mapping(traces) -> dict:
    if isinstance(traces, Mapping):
        unknown = [k for k in traces if k not in GATES]
        if unknown:
            raise ValueError(f"unknown trace name(s) {unknown}; use keys among {list(GATES)} "
                             f"(SLP: f forget, i add, g candidate, o output, c cell, h hidden)")
        return {k: v for k, v in traces.items() if v is not None}
    if dataclasses.is_dataclass(traces) and not isinstance(traces, type):
        # e.g. the LSTM layer's trace dataclass: take the fields named as in SLP, ignore the rest (k_t, j_t ...)
        return {f.name: getattr(traces, f.name) for f in dataclasses.fields(traces)
                if f.name in GATES and getattr(traces, f.name) is not None}
    raise TypeError(f"traces must be a mapping (or dataclass) from names among {list(GATES)} to (T, units) "
                    f"tensors, got {type(traces).__name__}")


def prepare_gates(traces, tokens: Sequence[str], *, atol: float = 1e-4) -> GateTraces:
    """Check gate traces: each (T, units) (a batch of one, (1, T, units), is accepted), all the same shape, T equal
    to the number of tokens, finite, sigmoid gates within 0..1 and tanh quantities within -1..1."""
    raw = _as_mapping(traces)
    if not raw:
        raise ValueError(f"no traces given; pass at least one of {list(GATES)}, each shaped (T, units)")
    values: dict[str, np.ndarray] = {}
    for name in GATES:  # SLP order, whatever order the caller used
        if name not in raw:
            continue
        a = to_array(raw[name], f"traces[{name!r}]")
        if a.ndim == 3 and a.shape[0] == 1:
            a = a[0]  # (1, T, units) -> (T, units)
        if a.ndim != 2:
            raise ValueError(f"traces[{name!r}] must be (T, units); got shape {tuple(a.shape)}. For a batch, pick one "
                             f"sequence, e.g. traces[{name!r}][0]")
        check_nonempty(a, f"traces[{name!r}]")
        check_finite(a, f"traces[{name!r}]")
        kind = GATES[name].kind
        lo, hi = {"sigmoid": (0.0, 1.0), "tanh": (-1.0, 1.0)}.get(kind, (-np.inf, np.inf))
        if a.min() < lo - atol or a.max() > hi + atol:
            raise ValueError(f"traces[{name!r}] ({GATES[name].name} {GATES[name].symbol}, a {kind}) has values in "
                             f"[{a.min():.4g}, {a.max():.4g}], outside {lo:g}..{hi:g}; pass the activation, not the "
                             f"pre-activation (or check which trace went under which key)")
        values[name] = a
    shapes = {k: v.shape for k, v in values.items()}
    if len(set(shapes.values())) > 1:
        raise ValueError(f"all traces must have the same (T, units) shape; got {shapes}")
    T, _ = next(iter(shapes.values()))
    toks = check_tokens(tokens, T, "tokens", "the number of time steps T")
    ranges = {}
    for name, a in values.items():
        kind = GATES[name].kind
        if kind == "sigmoid":
            ranges[name] = (0.0, 1.0)
        elif kind == "tanh":
            ranges[name] = (-1.0, 1.0)
        else:  # the cell state is a running sum, not squashed: symmetric scale of at least -1..1
            r = float(max(1.0, np.abs(a).max()))
            ranges[name] = (-r, r)
    return GateTraces(values=values, tokens=toks, ranges=ranges)


class LSTMGates(Described, anywidget.AnyWidget, LiveMode):
    """Units x time heatmaps of an LSTM's gates and states with a time-step slider and the token strip.

    ``LSTMGates(traces, tokens)`` with ``traces`` a mapping (or dataclass) from names among ``f, i, g, o, c, h`` to
    (T, units) tensors. Set ``gate`` (one of those names) or ``step`` from Python and the view follows.

    ``LSTMGates.live("char_lstm", text, options={"layer": 1})``: the shipped character LSTM's gates and states of one
    layer over ``text``; the reader can type their own text and pick the layer (see ``seqviz.widgets._live``).
    """

    _live_models = {"char_lstm": "the gates and states of one layer"}

    _esm = esm("lstm_gates.js")  # the shared prelude + lstm_gates.js
    _css = CSS

    traces = traitlets.Bytes(b"").tag(sync=True)  # uint8, C order (G, T, units), gate order = `gates`
    gates = traitlets.List(traitlets.Unicode()).tag(sync=True)
    labels = traitlets.List(traitlets.Unicode()).tag(sync=True)  # e.g. "f_t forget gate (9.22)"
    kinds = traitlets.List(traitlets.Unicode()).tag(sync=True)
    ranges = traitlets.List(traitlets.List(traitlets.Float())).tag(sync=True)  # [lo, hi] per gate
    shape = traitlets.List(traitlets.Int(), default_value=[1, 1]).tag(sync=True)  # (T, units)
    tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    gate = traitlets.Unicode("").tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)

    def __init__(self, traces, tokens, *, gate: str | None = None, step: int = 0, title: str = "", **kwargs):
        super().__init__(**kwargs)
        self.title = title
        self.set_data(traces, tokens)
        if gate is not None:
            self.gate = gate
        self.step = step

    @classmethod
    def from_traces(cls, traces, tokens, **kwargs) -> "LSTMGates":
        """Build from what an LSTM layer returns: a mapping or dataclass with fields among f, i, g, o, c, h."""
        return cls(traces, tokens, **kwargs)

    def set_data(self, traces, tokens) -> None:
        """Replace the traces (checked as in :func:`prepare_gates`); the browser redraws."""
        d = prepare_gates(traces, tokens)
        self._data = d
        names = list(d.values)
        packed = b"".join(quantize_uint8(d.values[n], *d.ranges[n]) for n in names)  # (G, T, units)
        with self.hold_sync():
            self.shape = list(d.shape)
            self.gates = names
            self.labels = [f"{GATES[n].symbol} {GATES[n].name} ({GATES[n].equation})" for n in names]
            self.kinds = [GATES[n].kind for n in names]
            self.ranges = [list(d.ranges[n]) for n in names]
            self.traces = packed
            self.tokens = d.tokens
            if self.gate not in names:
                self.gate = names[0]
            self.step = min(self.step, d.shape[0] - 1)

    @classmethod
    def _live_data(cls, spec, text, request):
        from seqviz.live.kernel import char_lstm, char_lstm_trace

        layers = char_lstm().model.config.num_layers
        layer = count(request.get("layer", spec.get("layer", layers - 1)), "layer", 0, layers - 1)
        enc, traces = char_lstm_trace(text)                                       # one LSTMTrace per layer
        return (traces[layer], enc.chars), {}, {"notes": enc.notes,
                                                "status": f"read {len(enc.ids)} characters; layer {layer} shown"}

    @classmethod
    def live(cls, model, text, *, group=None, options=None, **kwargs):
        from seqviz.live.kernel import LSTM_MAX_CHARS, char_lstm

        layers = char_lstm().model.config.num_layers
        options = {"layer": layers - 1, **(options or {})}
        count(options["layer"], "layer", 0, layers - 1)
        return super().live(model, text, group=group,
                            options={**options, "layers": layers, "max_chars": LSTM_MAX_CHARS}, **kwargs)

    @traitlets.validate("gate")
    def _check_gate(self, proposal):
        g = proposal["value"]
        if self.gates and g not in self.gates:
            raise ValueError(f"gate {g!r} is not among the traces given: {self.gates}")
        return g

    @traitlets.validate("step")
    def _check_step(self, proposal):
        return check_index(proposal["value"], self.shape[0], "step")

    @property
    def data(self) -> GateTraces:
        return self._data

    def to_figure(self, gates: Sequence[str] | None = None):
        """Static matplotlib rendering: one units x time heatmap per quantity, tokens along the time axis."""
        from matplotlib.figure import Figure

        d = self._data
        names = list(d.values) if gates is None else list(gates)
        for n in names:
            if n not in d.values:
                raise ValueError(f"gate {n!r} is not among the traces given: {list(d.values)}")
        T, U = d.shape
        width = float(np.clip(0.16 * T + 2.0, 5.0, 7.5))  # at most a page's width: labels stay 8 pt in print
        fig = Figure(figsize=(width, 1.2 + len(names) * max(1.4, min(3.0, 0.06 * U + 0.8))), layout="constrained")
        axes = fig.subplots(len(names), 1, squeeze=False)[:, 0]
        step = max(1, int(np.ceil(T * 0.14 / (width - 1.6))))  # every step-th token: 8 pt labels need ~0.14 in
        for ax, n in zip(axes, names):
            lo, hi = d.ranges[n]
            cmap = "viridis" if GATES[n].kind == "sigmoid" else "RdBu_r"
            im = ax.imshow(d.values[n].T, cmap=cmap, vmin=lo, vmax=hi, aspect="auto", interpolation="nearest")
            ax.axvline(self.step, color="#e4572e", lw=1.2)
            ax.set_ylabel("unit", fontsize=9)
            ax.set_title(f"${GATES[n].symbol}$ {GATES[n].name} ({GATES[n].equation})", fontsize=9, loc="left")
            ticks = list(range(0, T, step))
            ax.set_xticks(ticks)
            ax.set_xticklabels([plain(d.tokens[t]) for t in ticks], rotation=90, fontsize=8)
            ax.tick_params(axis="y", labelsize=8)
            fig.colorbar(im, ax=ax, shrink=0.9, pad=0.01)
        if self.title:
            fig.suptitle(self.title)
        return fig
