"""Sinusoidal positional encodings (Vaswani et al. 2017; SLP 3rd ed. ch. 9-10) and a widget that explores them.

``sinusoidal_encoding`` is the reference the transformer chapter reuses; ``static/positional.js`` computes the same
numbers in the browser from the sliders (a browser test checks the two agree).
"""
from __future__ import annotations

from typing import Sequence

import anywidget
import numpy as np
import traitlets

from seqviz.transformer import _check_base, _positive_int, sinusoidal_encoding

from ._common import Described, CSS, esm

__all__ = ["PositionalMatrix", "sinusoidal_encoding", "MAX_D_MODEL", "MAX_LEN"]

# the curves' colours (Okabe & Ito's palette, safe for colour-blind readers) and dash patterns, as in positional.js
OKABE_ITO = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442"]
DASHES = ["-", (0, (6, 3)), (0, (2, 2)), (0, (8, 3, 2, 3)), (0, (1, 3)), (0, (10, 4)), (0, (4, 2, 1, 2)), (0, (12, 2))]
MAX_D_MODEL = 512  # slider limits; the browser recomputes P P^T, (max_len^2 * d_model) multiply-adds, on each change
MAX_LEN = 512


class PositionalMatrix(Described, anywidget.AnyWidget):
    """Sine/cosine positional encodings computed in the browser: the encoding matrix, chosen dimensions as curves over
    positions with two marked positions, and the position x position dot-product matrix P P^T.

    Sliders: ``d_model``, ``max_len``, ``base``; ``dims`` lists the dimensions drawn as curves and ``positions`` the
    two positions compared. All are traits, so setting them from Python updates the view.
    """

    _esm = esm("positional.js")  # the shared prelude + positional.js
    _css = CSS

    d_model = traitlets.Int(64).tag(sync=True)
    max_len = traitlets.Int(100).tag(sync=True)
    base = traitlets.Float(10000.0).tag(sync=True)
    dims = traitlets.List(traitlets.Int(), default_value=[4, 5, 6, 7]).tag(sync=True)
    positions = traitlets.List(traitlets.Int(), default_value=[22, 60]).tag(sync=True)
    max_d_model = traitlets.Int(MAX_D_MODEL).tag(sync=True)
    max_max_len = traitlets.Int(MAX_LEN).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)

    def __init__(self, d_model: int = 64, max_len: int = 100, base: float = 10000.0,
                 dims: Sequence[int] | None = None, positions: Sequence[int] | None = None, *, title: str = "",
                 **kwargs):
        super().__init__(**kwargs)
        with self.hold_sync():
            self.title = title
            self.d_model, self.max_len, self.base = d_model, max_len, base
            if dims is None:  # a fast pair and a slower pair, as far as d_model allows
                dims = [d for d in (4, 5, 6, 7) if d < self.d_model] or [0, 1]
            if positions is None:  # the seed figure compares positions 22 and 60
                positions = (22, 60) if self.max_len > 60 else (self.max_len // 4, (3 * self.max_len) // 5)
            self.dims, self.positions = list(dims), list(positions)

    @traitlets.validate("d_model")
    def _check_d(self, proposal):
        d = _positive_int(proposal["value"], "d_model", 2)
        if d > MAX_D_MODEL:
            raise ValueError(f"d_model={d} is above the widget's limit {MAX_D_MODEL} (the browser recomputes "
                             f"P P^T on every slider move); use sinusoidal_encoding for larger models")
        return d

    @traitlets.validate("max_len")
    def _check_len(self, proposal):
        n = _positive_int(proposal["value"], "max_len", 2)
        if n > MAX_LEN:
            raise ValueError(f"max_len={n} is above the widget's limit {MAX_LEN}; use sinusoidal_encoding for "
                             f"longer ranges")
        return n

    @traitlets.validate("base")
    def _check_base(self, proposal):
        return _check_base(proposal["value"])

    @traitlets.validate("dims")
    def _check_dims(self, proposal):
        dims = [int(_positive_int(d, "each of dims", 0)) for d in proposal["value"]]
        if not 1 <= len(dims) <= 8:
            raise ValueError(f"dims must list 1 to 8 dimensions to draw, got {len(dims)}")
        bad = [d for d in dims if d >= self.d_model]
        if bad:
            raise ValueError(f"dims {bad} are out of range for d_model={self.d_model}; use 0..{self.d_model - 1}")
        return dims

    @traitlets.validate("positions")
    def _check_positions(self, proposal):
        pos = [int(_positive_int(p, "each of positions", 0)) for p in proposal["value"]]
        if len(pos) != 2:
            raise ValueError(f"positions must be two positions to compare, got {len(pos)}")
        bad = [p for p in pos if p >= self.max_len]
        if bad:
            raise ValueError(f"positions {bad} are out of range for max_len={self.max_len}; use 0..{self.max_len - 1}")
        return pos

    def encoding(self) -> np.ndarray:
        """The (max_len, d_model) matrix the browser shows for the current settings."""
        return sinusoidal_encoding(self.max_len, self.d_model, self.base)

    def to_figure(self):
        """Static matplotlib rendering of the three panels for the current settings: P and P P^T side by side, the
        chosen dimensions below them as curves told apart by colour (Okabe-Ito) and dash pattern; 7.5 in wide."""
        from matplotlib.figure import Figure

        P = self.encoding()  # (max_len, d_model)
        dims = [d for d in self.dims if d < self.d_model]
        pos = [p for p in self.positions if p < self.max_len]
        S = P @ P.T  # (max_len, max_len)
        fig = Figure(figsize=(7.5, 6.2), layout="constrained")
        ax = fig.subplot_mosaic([["P", "S"], ["curves", "curves"]], height_ratios=[1.1, 1])
        a1, a2, a3 = ax["P"], ax["curves"], ax["S"]
        im = a1.imshow(P, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
        a1.set_xlabel("dimension", fontsize=9)
        a1.set_ylabel("position p", fontsize=9)
        a1.set_title(f"P (d_model={self.d_model}, base={self.base:g})", fontsize=9)
        fig.colorbar(im, ax=a1, shrink=0.8)
        for j, d in enumerate(dims):
            kind = "sin" if d % 2 == 0 else "cos"
            a2.plot(P[:, d], lw=1.5, color=OKABE_ITO[j % len(OKABE_ITO)], ls=DASHES[j % len(DASHES)],
                    label=f"dim {d} ({kind}, i={d // 2})")
        for p in pos:
            a2.axvline(p, color="#555", ls="--", lw=0.8)
        a2.set_xlabel("position p", fontsize=9)
        a2.set_ylim(-1.1, 1.1)
        a2.legend(fontsize=8, loc="lower right", ncols=2)
        a2.set_title("chosen dimensions over positions (dashed lines: the two positions compared)", fontsize=9)
        im3 = a3.imshow(S, cmap="viridis", aspect="equal", interpolation="nearest")
        if len(pos) == 2:
            a3.plot([pos[1]], [pos[0]], marker="s", mfc="none", mec="#e4572e", ms=8)
        a3.set_xlabel("position q", fontsize=9)
        a3.set_ylabel("position p", fontsize=9)
        a3.set_title("P P^T: dot products depend on p - q", fontsize=9)
        fig.colorbar(im3, ax=a3, shrink=0.8)
        for a in (a1, a2, a3):
            a.tick_params(labelsize=8)
        if self.title:
            fig.suptitle(self.title, fontsize=10)
        return fig
