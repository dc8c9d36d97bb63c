"""Attention heatmap: which key each query looks at, per layer and head (SLP 3rd ed. 9.7 and ch. 10).

Python checks the weights and packs them as uint8 bytes; ``static/attention.js`` draws them and handles the layer/head
selectors, the all-heads grid and hovering, so the widget stays interactive in the static book.

Shapes: weights (L, H, Tq, Tk), (H, Tq, Tk) or (Tq, Tk); each row (one query) is a distribution over the Tk keys.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import anywidget
import numpy as np
import traitlets

from seqviz.attention import causal_mask

from ._common import (CSS, Described, check_finite, check_index, check_nonempty, check_tokens, esm, plain,
                      quantize_uint8, to_array)
from ._live import LiveMode

__all__ = ["AttentionHeatmap", "AttentionData", "prepare_attention", "causal_mask"]


@dataclass(frozen=True)
class AttentionData:
    """Checked attention: ``weights`` (L, H, Tq, Tk) float64, ``mask`` (Lm, Hm, Tq, Tk) bool or None (True = may
    attend; Lm is 1 or L, Hm is 1 or H), token lists and ``vmax``, the top of the colour scale."""

    weights: np.ndarray
    mask: np.ndarray | None
    query_tokens: list[str]
    key_tokens: list[str]
    vmax: float


def _as_4d(w: np.ndarray, name: str) -> np.ndarray:
    if w.ndim == 2:
        return w[None, None]  # (Tq, Tk) -> (1, 1, Tq, Tk)
    if w.ndim == 3:
        return w[None]  # (H, Tq, Tk) -> (1, H, Tq, Tk)
    if w.ndim == 4:
        return w
    raise ValueError(f"{name} must have rank 2 (Tq, Tk), 3 (H, Tq, Tk) or 4 (L, H, Tq, Tk); got rank {w.ndim} "
                     f"with shape {tuple(w.shape)}. For a batch, pick one example first, e.g. weights[0].")


def _prepare_mask(mask, shape4: tuple[int, int, int, int]) -> np.ndarray:
    L, H, Tq, Tk = shape4
    if isinstance(mask, str):
        if mask != "causal":
            raise ValueError(f'mask must be an array or the string "causal", got {mask!r}')
        return causal_mask(Tq, Tk)[None, None]
    m = to_array(mask, "mask")
    if not np.isin(m, (0.0, 1.0)).all():
        raise ValueError("mask must be boolean (True = the query may attend to that key). For an additive mask "
                         "of 0 and -inf, pass `mask == 0`.")
    m = m.astype(bool)
    if m.ndim == 2:
        m = m[None, None]  # (Tq, Tk) -> (1, 1, Tq, Tk)
    elif m.ndim == 3:
        m = m[None]  # (H, Tq, Tk) -> (1, H, Tq, Tk)
    elif m.ndim != 4:
        raise ValueError(f"mask must have rank 2 (Tq, Tk), 3 (H, Tq, Tk) or 4 (L, H, Tq, Tk); got shape {m.shape}")
    ok = m.shape[2:] == (Tq, Tk) and m.shape[0] in (1, L) and m.shape[1] in (1, H)
    if not ok:
        raise ValueError(f"mask shape {tuple(m.shape)} does not fit the attention shape (L, H, Tq, Tk) = {shape4}; "
                         f"pass (Tq, Tk) = ({Tq}, {Tk}) to use one mask for every layer and head")
    return m


def prepare_attention(weights, query_tokens: Sequence[str], key_tokens: Sequence[str] | None = None,
                      mask=None, *, atol: float = 1e-3) -> AttentionData:
    """Check attention weights and tokens; raise a clear error for anything the heatmap could not show honestly.

    Rows must be probability distributions (non-negative, summing to 1 within ``atol``); where ``mask`` is False the
    weight must be 0. ``key_tokens`` defaults to ``query_tokens`` (self-attention, Tq = Tk).
    """
    w = _as_4d(to_array(weights, "weights"), "weights")
    check_nonempty(w, "weights")
    check_finite(w, "weights")
    L, H, Tq, Tk = w.shape
    if key_tokens is None:
        if Tq != Tk:
            raise ValueError(f"the attention is {Tq} queries x {Tk} keys (cross-attention), so key_tokens is needed: "
                             f"pass key_tokens with {Tk} entries")
        key_tokens = query_tokens
    q = check_tokens(query_tokens, Tq, "query_tokens", "the number of attention rows Tq")
    k = check_tokens(key_tokens, Tk, "key_tokens", "the number of attention columns Tk")
    if (w < -atol).any():
        idx = tuple(int(i) for i in np.argwhere(w < -atol)[0])
        raise ValueError(f"weights has a negative value {w[idx]:.4g} at (layer, head, query, key) = {idx}; attention "
                         f"weights are probabilities. Pass softmax output, not raw scores.")
    w = np.clip(w, 0.0, None)
    m = None
    if mask is not None:
        m = _prepare_mask(mask, (L, H, Tq, Tk))
        leak = np.broadcast_to(~m, w.shape) & (w > atol)
        if leak.any():
            idx = tuple(int(i) for i in np.argwhere(leak)[0])
            raise ValueError(f"weight {w[idx]:.4g} at (layer, head, query, key) = {idx} is where the mask forbids "
                             f"attention; apply the mask before the softmax (or pass the mask the model used)")
    sums = w.sum(-1)  # (L, H, Tq)
    bad = np.abs(sums - 1.0) > atol
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"attention row (layer, head, query) = {idx} sums to {sums[idx]:.4g}, not 1; each query's "
                         f"weights over the keys must be a softmax (normalise along the last axis, Tk)")
    vmax = float(w.max()) if w.max() > 0 else 1.0
    return AttentionData(weights=w, mask=m, query_tokens=q, key_tokens=k, vmax=vmax)


def _label(value, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"{name} must be a non-empty string naming what it labels (e.g. \"article word\"), "
                        f"got {value!r}")
    return value.strip()


def _names(value, n: int, name: str, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not all(isinstance(v, str) and v.strip() for v in value):
        raise TypeError(f"{name} must be a list of {n} non-empty strings, one per {what}, got {value!r}")
    names = [v.strip() for v in value]
    if len(names) != n:
        raise ValueError(f"{name} has {len(names)} entries but the attention has {n} {what}s; name each {what} once")
    return names


class AttentionHeatmap(Described, anywidget.AnyWidget, LiveMode):
    """Interactive attention heatmap with layer/head selectors, an all-heads grid, a read-out of the cell under the
    mouse or the keyboard's cursor, and masked cells. It fits its container (see ``static/attention.js``).

    ``AttentionHeatmap(weights, query_tokens, key_tokens=None, mask=None)``: weights (L, H, Tq, Tk), (H, Tq, Tk) or
    (Tq, Tk) tensor/array; ``mask`` (Tq, Tk) bool (True = may attend) or ``"causal"``. Set ``layer``, ``head`` or
    ``view`` ("head" or "grid") from Python and the view follows.

    What the axes are, for a distribution that is not a transformer's attention: ``query_label`` (a row, default
    "query"), ``key_label`` (a column, default "key"), ``value_label`` (a cell, default "attention weight"), e.g.
    ``query_label="headline word", key_label="article word", value_label="copy attention"``; they name the axes,
    the read-out, the legend and the text alternative (a single distribution's read-out never names a layer or a
    head). ``layer_names`` / ``head_names`` name the selectors' entries (e.g. ``["bidirectional", "causal"]``).

    ``AttentionHeatmap.live("char_lm", text)``: every layer's and head's self-attention of the shipped character
    transformer over ``text``; ``AttentionHeatmap.live("dates", date)``: the cross-attention of the shipped date
    model's greedy output over the date. Either starts from that recorded example and runs the model on the
    reader's own input (see ``seqviz.widgets._live``).
    """

    _live_models = {"char_lm": "self-attention of every layer and head",
                    "dates": "cross-attention of the greedy output"}

    _esm = esm("attention.js")  # the shared prelude + attention.js
    _css = CSS

    weights = traitlets.Bytes(b"").tag(sync=True)  # uint8, C order (L, H, Tq, Tk); value = q / 255 * vmax
    shape = traitlets.List(traitlets.Int(), default_value=[1, 1, 1, 1]).tag(sync=True)
    vmax = traitlets.Float(1.0).tag(sync=True)
    mask = traitlets.Bytes(b"").tag(sync=True)  # uint8 0/1, C order (Lm, Hm, Tq, Tk); empty = no mask
    mask_shape = traitlets.List(traitlets.Int(), default_value=[]).tag(sync=True)
    query_tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    key_tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    layer = traitlets.Int(0).tag(sync=True)
    head = traitlets.Int(0).tag(sync=True)
    view = traitlets.Enum(["head", "grid"], default_value="head").tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    query_label = traitlets.Unicode("query").tag(sync=True)
    key_label = traitlets.Unicode("key").tag(sync=True)
    value_label = traitlets.Unicode("attention weight").tag(sync=True)
    layer_names = traitlets.List(traitlets.Unicode()).tag(sync=True)  # empty: "layer 0", "layer 1", ...
    head_names = traitlets.List(traitlets.Unicode()).tag(sync=True)

    def __init__(self, weights, query_tokens, key_tokens=None, mask=None, *, layer: int = 0, head: int = 0,
                 view: str = "head", title: str = "", atol: float = 1e-3, query_label: str = "query",
                 key_label: str = "key", value_label: str = "attention weight",
                 layer_names: Sequence[str] | None = None, head_names: Sequence[str] | None = None, **kwargs):
        super().__init__(**kwargs)
        self.title = title
        self.query_label = _label(query_label, "query_label")
        self.key_label = _label(key_label, "key_label")
        self.value_label = _label(value_label, "value_label")
        self.set_data(weights, query_tokens, key_tokens, mask, atol=atol)
        L, H = self.shape[:2]
        self.layer_names = _names(layer_names, L, "layer_names", "layer")
        self.head_names = _names(head_names, H, "head_names", "head")
        self.layer, self.head, self.view = layer, head, view

    def set_data(self, weights, query_tokens, key_tokens=None, mask=None, *, atol: float = 1e-3) -> None:
        """Replace what is shown (checked as in :func:`prepare_attention`); the browser redraws."""
        d = prepare_attention(weights, query_tokens, key_tokens, mask, atol=atol)
        self._data = d
        with self.hold_sync():
            self.shape = list(d.weights.shape)
            self.vmax = d.vmax
            self.weights = quantize_uint8(d.weights, 0.0, d.vmax)
            self.mask = b"" if d.mask is None else np.ascontiguousarray(d.mask, dtype=np.uint8).tobytes()
            self.mask_shape = [] if d.mask is None else list(d.mask.shape)
            self.query_tokens, self.key_tokens = d.query_tokens, d.key_tokens
            self.layer = min(self.layer, d.weights.shape[0] - 1)
            self.head = min(self.head, d.weights.shape[1] - 1)
            if len(self.layer_names) != d.weights.shape[0]:
                self.layer_names = []
            if len(self.head_names) != d.weights.shape[1]:
                self.head_names = []

    @traitlets.validate("layer")
    def _check_layer(self, proposal):
        return check_index(proposal["value"], self.shape[0], "layer")

    @traitlets.validate("head")
    def _check_head(self, proposal):
        return check_index(proposal["value"], self.shape[1], "head")

    @classmethod
    def _live_data(cls, spec, text, request):
        from seqviz.live import kernel

        if spec["model"] == "char_lm":
            enc, f = kernel.char_lm_forward(text)
            return (f.attention, enc.chars), {"mask": "causal"}, {"notes": enc.notes,
                                                                 "status": f"read {len(enc.ids)} characters"}
        enc, ids, cross = kernel.dates_greedy(text)                                # cross (L, H, T_out, S)
        tgt = kernel.dates().extra["tgt_itos"]
        out = "".join(tgt[i] for i in ids if tgt[i] != "</s>")
        return (cross, [tgt[i] for i in ids], enc.chars), {}, {"notes": enc.notes,
                                                               "status": f"greedy decoding: \u201c{out}\u201d"}

    @property
    def data(self) -> AttentionData:
        """The checked float weights behind the widget (the browser sees them quantised to 1/255 of vmax)."""
        return self._data

    def _name(self, names: list[str], i: int, prefix: str) -> str:
        return names[i] if names else f"{prefix} {i}"

    def to_figure(self, layer: int | None = None, head: int | None = None, grid: bool | None = None):
        """Static matplotlib rendering (for print/PDF): one head, or all heads of a layer when ``grid``. Rows and
        columns keep their own size (a 6 x 120 copy trace is a wide, labelled band, not a square), the figure is at
        most 7.5 in wide, and tick labels are thinned so that each keeps 8 pt type."""
        from matplotlib.colors import ListedColormap
        from matplotlib.figure import Figure
        from matplotlib.patches import Rectangle

        d = self._data
        L, H, Tq, Tk = d.weights.shape
        layer = self.layer if layer is None else check_index(layer, L, "layer")
        head = self.head if head is None else check_index(head, H, "head")
        grid = (self.view == "grid") if grid is None else bool(grid)
        heads = list(range(H)) if grid else [head]
        cols = min(len(heads), 4)
        rows = -(-len(heads) // cols)
        if grid:
            panel_w = panel_h = min(2.6, 7.0 / cols)
        else:  # about 0.16 in a cell (an 8 pt label), within 7.5 x 7.5 in
            panel_w = float(np.clip(0.16 * Tk, 2.2, 6.4))
            panel_h = float(np.clip(0.16 * Tq, 0.9, 6.4))
        fig = Figure(figsize=(panel_w * cols + 1.4, panel_h * rows + 1.3), layout="constrained")
        axes = fig.subplots(rows, cols, squeeze=False)
        cmap = ListedColormap(["#bdbdbd"])
        im = None
        single = L * H == 1
        for ax, h in zip(axes.flat, heads):
            w = d.weights[layer, h]  # (Tq, Tk)
            im = ax.imshow(w, cmap="viridis", vmin=0.0, vmax=d.vmax, interpolation="nearest", aspect="auto")
            if d.mask is not None:
                m = d.mask[min(layer, d.mask.shape[0] - 1), min(h, d.mask.shape[1] - 1)]  # (Tq, Tk)
                ax.imshow(np.ma.masked_where(m, np.ones_like(w)), cmap=cmap, interpolation="nearest", aspect="auto")
                if m.size <= 4096:  # hatch each masked cell, as the browser does
                    for i, j in np.argwhere(~m):
                        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", lw=0,
                                               edgecolor="#7a7a7a"))
            if not single:
                where = [self._name(self.layer_names, layer, "layer")] if L > 1 else []
                ax.set_title(", ".join(where + ([self._name(self.head_names, h, "head")] if H > 1 else [])),
                             fontsize=9)
            if not grid or h == heads[0]:
                for axis, toks, n, inches, rot in ((ax.xaxis, d.key_tokens, Tk, panel_w, 90),
                                                   (ax.yaxis, d.query_tokens, Tq, panel_h, 0)):
                    step = max(1, int(np.ceil(n * 0.14 / inches)))  # 8 pt labels need ~0.14 in each
                    ticks = list(range(0, n, step)) if n <= 400 else []
                    axis.set_ticks(ticks)
                    axis.set_ticklabels([plain(toks[t]) for t in ticks], fontsize=8, rotation=rot)
                ax.set_xlabel(self.key_label, fontsize=9)
                ax.set_ylabel(self.query_label, fontsize=9)
            else:
                ax.set_xticks([])
                ax.set_yticks([])
        for ax in list(axes.flat)[len(heads):]:
            ax.set_visible(False)
        fig.colorbar(im, ax=axes, shrink=0.9, aspect=max(8, 12 * panel_h * rows / 6), label=self.value_label)
        if self.title:
            fig.suptitle(self.title, fontsize=10)
        return fig
