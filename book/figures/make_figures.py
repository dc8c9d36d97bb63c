"""The book's architecture diagrams, drawn by matplotlib as SVG: ``python book/figures/make_figures.py [OUT_DIR]``.

One function per figure; each is labelled with the symbols and equation numbers of SLP 3rd ed. draft, ch. 9 (the
2020-21 drafts, see book/notation.md) or, where SLP has no number, with its source. The output is deterministic (fixed
``svg.hashsalt``, no date, text kept as text), so rerunning the script gives byte-identical files and a diff shows
only what changed. Colours are the Okabe-Ito palette (colour-blind safe), and every coloured part is also named in
text. The alt text and captions for the notebooks are in ``FIGURES`` below and in ``book/figures/README.md``.

Units: one unit of the drawing is one point (1/72 inch), so a font size and a box size read the same.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from xml.sax.saxutils import escape

import matplotlib
from matplotlib.figure import Figure as MplFigure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle
from matplotlib.path import Path as MPath
from matplotlib.textpath import text_to_path

HERE = Path(__file__).resolve().parent
FONT = ["DejaVu Sans", "Verdana"]  # what matplotlib lays text out with; the SVG names sans-serif as the last fallback
RC = {
    "svg.fonttype": "none",        # text stays <text>, not glyph paths: small, sharp, searchable
    "svg.hashsalt": "seqviz",      # fixed ids, so two runs give the same bytes
    "mathtext.fontset": "dejavusans",
    "font.family": "sans-serif",
    "font.sans-serif": FONT,
    "font.size": 10,
    "path.simplify": False,
}
FS = 10.0     # body text (points): 13 px at the page's width
FS_S = 8.5    # smallest text used anywhere

# Okabe & Ito (2008) colour-blind-safe palette, one role each, used in every figure.
INK = "#222222"
GREY = "#999999"
ROLE = {
    "sigma": "#56B4E9",     # sigmoid gates (sky blue)
    "tanh": "#E69F00",      # tanh candidate (orange)
    "state": "#0072B2",     # the LSTM cell state, recurrent state lines (blue)
    "attn": "#CC79A7",      # attention (reddish purple)
    "ffn": "#009E73",       # feed-forward (bluish green)
    "norm": "#F0E442",      # LayerNorm (yellow)
    "token": "#BBBBBB",     # tokens, embeddings (grey)
    "loss": "#D55E00",      # targets and loss (vermillion)
    "cell": "#F4F4F4",      # the background of a unit
}


def tint(hex_colour: str, white: float = 0.7) -> str:
    """hex_colour mixed with `white` parts of white: a fill light enough for black text on it."""
    rgb = [int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * white):02x}" for c in rgb)


def text_width(s: str, size: float, weight: str = "normal") -> float:
    """Width in points of s (mathtext where it is $...$), from the unhinted glyph outlines, as a browser draws it."""
    prop = FontProperties(family="sans-serif", size=size, weight=weight)
    return float(text_to_path.get_text_width_height_descent(s, prop, s.startswith("$"))[0])


@dataclass
class Box:
    cx: float
    cy: float
    w: float
    h: float

    @property
    def left(self): return self.cx - self.w / 2
    @property
    def right(self): return self.cx + self.w / 2
    @property
    def top(self): return self.cy + self.h / 2
    @property
    def bottom(self): return self.cy - self.h / 2


class Canvas:
    """A figure whose data units are points: (0, 0) bottom left, (w, h) top right."""

    def __init__(self, w: float, h: float):
        self.w, self.h = w, h
        self.fig = MplFigure(figsize=(w / 72, h / 72))   # no pyplot: no global state, no backend switch
        self.ax = self.fig.add_axes((0, 0, 1, 1))
        self.ax.set_xlim(0, w)
        self.ax.set_ylim(0, h)
        self.ax.axis("off")

    # ---- text ------------------------------------------------------------------------------------------------
    def text(self, x: float, y: float, s: str, ha: str = "center", va: str = "center", size: float = FS,
             color: str = INK, weight: str = "normal") -> float:
        """Draw s, where $...$ runs are mathtext and the rest plain text (kept whole, so "(9.27)" stays one string),
        aligned on one baseline. Returns the width. va: "center" | "baseline" | "top" | "bottom"."""
        # A browser drops the spaces at either end of a <text> and collapses runs of them inside, so those spaces
        # become measured gaps between separate pieces; single spaces inside a piece stay (and keep words together).
        pieces, widths = [], []
        for r in re.split(r"(\$[^$]+\$)", s):
            for p in ([r] if r.startswith("$") else re.split(r"(^ +| {2,}| +$)", r)):
                if not p:
                    continue
                pieces.append("" if p.startswith(" ") else p)
                widths.append(len(p) * 0.318 * size if p.startswith(" ") else text_width(p, size, weight))
        total = sum(widths)
        x0 = {"left": x, "center": x - total / 2, "right": x - total}[ha]
        base = {"baseline": y, "center": y - 0.36 * size, "top": y - 0.76 * size, "bottom": y + 0.24 * size}[va]
        for piece, w in zip(pieces, widths):
            if piece:
                self.ax.text(x0, base, piece, ha="left", va="baseline", fontsize=size, color=color,
                             fontweight=weight)
            x0 += w
        return total

    def lines(self, x: float, y: float, rows: list[str], size: float = FS, size2: float | None = None,
              gap: float = 1.25, **kw) -> None:
        """Several text rows centred as a block on y; rows after the first in size2 (default: size)."""
        n = len(rows)
        for k, row in enumerate(rows):
            self.text(x, y + (n - 1 - 2 * k) * gap * size / 2, row, size=size if k == 0 else (size2 or size), **kw)

    # ---- shapes ----------------------------------------------------------------------------------------------
    def box(self, cx: float, cy: float, w: float, h: float, rows: list[str] | str = (), role: str | None = None,
            fill: str | None = None, edge: str = INK, lw: float = 1.0, size: float = FS, size2: float | None = None,
            radius: float = 4.0, dashed: bool = False, z: float = 2) -> Box:
        """A rounded box centred on (cx, cy), filled with the tint of a role's colour, with text rows inside."""
        fc = fill if fill is not None else (tint(ROLE[role]) if role else "white")
        self.ax.add_patch(FancyBboxPatch((cx - w / 2, cy - h / 2), w, h, boxstyle=f"round,pad=0,rounding_size={radius}",
                                         fc=fc, ec=edge, lw=lw, ls="--" if dashed else "-", zorder=z))
        rows = [rows] if isinstance(rows, str) else list(rows)
        if rows:
            self.lines(cx, cy, rows, size=size, size2=size2)
        return Box(cx, cy, w, h)

    def rect(self, x0: float, y0: float, w: float, h: float, fc: str, ec: str | None = None, lw: float = 0.8,
             hatch: str | None = None, z: float = 2) -> None:
        self.ax.add_patch(Rectangle((x0, y0), w, h, fc=fc, ec=ec or fc, lw=lw, hatch=hatch, zorder=z))

    def op(self, cx: float, cy: float, sym: str, r: float = 8.5, fill: str = "white", size: float = 11) -> Box:
        """A round operator node: "⊙" (elementwise product), "+", "Σ", "×"."""
        self.ax.add_patch(Circle((cx, cy), r, fc=fill, ec=INK, lw=1.0, zorder=4))
        self.ax.text(cx, cy - 0.36 * size, sym, ha="center", va="baseline", fontsize=size, color=INK, zorder=5)
        return Box(cx, cy, 2 * r, 2 * r)

    def dot(self, x: float, y: float, color: str = INK) -> None:
        self.ax.add_patch(Circle((x, y), 2.2, fc=color, ec=color, lw=0, zorder=5))

    def arrow(self, *pts: tuple[float, float], color: str = INK, lw: float = 1.1, head: bool = True,
              dashed: bool = False, z: float = 3) -> None:
        """A polyline through pts with an arrowhead at the last point (endpoints are exact: nothing is shrunk)."""
        path = MPath(list(pts), [MPath.MOVETO] + [MPath.LINETO] * (len(pts) - 1))
        style = "-|>,head_length=5.5,head_width=2.8" if head else "-"
        self.ax.add_patch(FancyArrowPatch(path=path, arrowstyle=style, mutation_scale=1, color=color, lw=lw,
                                          ls="--" if dashed else "-", joinstyle="miter", capstyle="butt", zorder=z))

    def line(self, *pts, **kw) -> None:
        self.arrow(*pts, head=False, **kw)

    def brace(self, x0: float, x1: float, y: float, text: str, below: bool = True, size: float = FS) -> None:
        """A square bracket under (or over) x0..x1 at height y, with text beyond it."""
        d = -5 if below else 5
        self.line((x0, y - d), (x0, y), (x1, y), (x1, y - d), lw=0.9, color=GREY)
        self.text((x0 + x1) / 2, y + (-3 if below else 3), text, va="top" if below else "bottom", size=size)


def layout_problems(c: Canvas, slack: float = 1.0) -> list[str]:
    """Text that overlaps other text or leaves the canvas: [] when the figure is clean. Extents are matplotlib's, in
    points, each shrunk by `slack` so that pieces of one label that touch do not count."""
    from matplotlib.backends.backend_agg import RendererAgg
    dpi = 720                                # fine enough that hinting does not widen small text
    renderer = RendererAgg(c.w * dpi / 72, c.h * dpi / 72, dpi)
    to_pt = 72 / dpi
    boxes = []
    for t in c.ax.texts:
        if not t.get_text().strip():
            continue
        e = t.get_window_extent(renderer, dpi=dpi)
        boxes.append((t.get_text(), e.x0 * to_pt + slack, e.y0 * to_pt + slack, e.x1 * to_pt - slack,
                      e.y1 * to_pt - slack))
    problems = [f"{s!r} leaves the canvas" for s, x0, y0, x1, y1 in boxes
                if x0 < 0 or y0 < 0 or x1 > c.w or y1 > c.h]
    for k, (s, x0, y0, x1, y1) in enumerate(boxes):
        for s2, u0, v0, u1, v1 in boxes[k + 1:]:
            if x0 < u1 and u0 < x1 and y0 < v1 and v0 < y1:
                problems.append(f"{s!r} overlaps {s2!r}")
    return problems


def _save(c: Canvas, path: Path, title: str, alt: str) -> None:
    """Write the SVG with no date and with <title>/<desc> (the alt text) as its first children."""
    c.fig.savefig(path, format="svg", metadata={"Date": None, "Creator": "seqviz book/figures/make_figures.py"})
    svg = path.read_text(encoding="utf-8")
    # mathtext names only DejaVu Sans: give it the same fallbacks as the plain text
    svg = re.sub(r"font-family: 'DejaVu Sans'(?=[;\"])", "font-family: 'DejaVu Sans', 'Verdana', sans-serif", svg)
    head, sep, rest = svg.partition('version="1.1">\n')
    if not sep:
        raise RuntimeError(f"unexpected SVG header from matplotlib {matplotlib.__version__} in {path}")
    svg = f'{head}version="1.1" role="img">\n <title>{escape(title)}</title>\n <desc>{escape(alt)}</desc>\n{rest}'
    path.write_text(svg, encoding="utf-8")


# ----------------------------------------------------------------------------------------------------------------
# Chapter 4: gated units
# ----------------------------------------------------------------------------------------------------------------
def _gate(c: Canvas, x: float, y: float, act: str, name: str, w: float = 68) -> Box:
    role = "sigma" if act == "σ" else "tanh"
    return c.box(x, y, w, 38, [act, name], role=role, size=FS + 1, size2=FS_S)


def _legend(c: Canvas, y: float, items: list[str]) -> None:
    """One row of key entries, spread over the width."""
    widths = [text_width(s.replace("$", ""), FS_S) for s in items]
    gap = (c.w - 20 - sum(widths)) / max(1, len(items) - 1)
    x = 10
    for s, w in zip(items, widths):
        c.text(x, y, s, ha="left", size=FS_S)
        x += w + gap


def lstm_cell() -> Canvas:
    """SLP Fig. 9.13: one LSTM unit as a computation graph, (9.22)-(9.29)."""
    c = Canvas(570, 304)
    y0 = 32                                   # everything above the key row
    yc, yb, yg = y0 + 228, y0 + 40, y0 + 92   # cell-state line, input bus, gate row
    c.box(280, y0 + 138, 450, 244, fill=ROLE["cell"], edge=GREY, radius=10, z=0)
    c.text(64, y0 + 248, "LSTM unit (SLP Fig. 9.13)", ha="left", va="center", size=FS_S, color="#555555")
    blue = ROLE["state"]
    # the cell state, along the top: c_{t-1} -> ⊙ f_t -> + j_t -> c_t
    k = c.op(150, yc, "⊙")
    plus = c.op(290, yc, "+")
    c.arrow((8, yc), (k.left, yc), color=blue, lw=2.2)
    c.text(30, yc + 10, "$c_{t-1}$", color=blue)
    c.arrow((k.right, yc), (plus.left, yc), color=blue, lw=2.2)
    c.text(220, yc + 11, "$k_t$  (9.23)")
    c.arrow((plus.right, yc), (562, yc), color=blue, lw=2.2)
    c.text(510, yc + 10, "$c_t$", color=blue, ha="left")
    c.text(350, yc + 11, "$c_t$  (9.27)")
    # the gates, fed by h_{t-1} and x_t
    xs = {"f": 150, "g": 245, "i": 335, "o": 450}
    f = _gate(c, xs["f"], yg, "σ", "forget")
    g = _gate(c, xs["g"], yg, "tanh", "candidate")
    i = _gate(c, xs["i"], yg, "σ", "add")
    o = _gate(c, xs["o"], yg, "σ", "output")
    c.arrow((8, yb), (95, yb))
    c.text(30, yb + 10, "$h_{t-1}$")
    c.arrow((95, 22), (95, yb), head=False)
    c.text(101, 30, "$x_t$", ha="left")
    c.line((95, yb), (xs["o"], yb))
    c.dot(95, yb)
    for x, b in zip(xs.values(), (f, g, i, o)):
        c.dot(x, yb)
        c.arrow((x, yb), (x, b.bottom))
    # f_t into k_t = c_{t-1} ⊙ f_t
    c.arrow((xs["f"], f.top), (xs["f"], k.bottom))
    c.text(xs["f"] + 6, yg + 70, "$f_t$  (9.22)", ha="left")
    # j_t = g_t ⊙ i_t, into c_t = j_t + k_t
    yj = yg + 72
    j = c.op(290, yj, "⊙")
    c.arrow((xs["g"], g.top), (xs["g"], yj), (j.left, yj))
    c.text(xs["g"] - 6, yg + 40, "$g_t$  (9.24)", ha="right")
    c.arrow((xs["i"], i.top), (xs["i"], yj), (j.right, yj))
    c.text(xs["i"] + 6, yg + 40, "$i_t$  (9.25)", ha="left")
    c.arrow((290, j.top), (290, plus.bottom))
    c.text(296, (j.top + plus.bottom) / 2, "$j_t$  (9.26)", ha="left")
    # h_t = o_t ⊙ tanh(c_t)
    xo = xs["o"]
    c.dot(xo, yc, color=blue)
    th = c.box(xo, yc - 38, 40, 20, "tanh", role="tanh", size=FS_S)
    c.arrow((xo, yc), (xo, th.top), color=blue, lw=1.4)
    yh = yg + 66
    h = c.op(xo, yh, "⊙")
    c.arrow((xo, th.bottom), (xo, h.top))
    c.arrow((xo, o.top), (xo, h.bottom))
    c.text(xo + 6, (o.top + h.bottom) / 2, "$o_t$  (9.28)", ha="left")
    c.arrow((h.right, yh), (562, yh), lw=1.6)
    c.text(510, yh + 11, "$h_t$  (9.29)", ha="left")
    _legend(c, 9, ["σ  sigmoid, 0…1", "tanh  −1…1", "⊙  elementwise product",
                    "each gate: act($U h_{t-1} + W x_t$), its own $U$, $W$"])
    return c


def gru_cell() -> Canvas:
    """The GRU (Cho et al. 2014), as seqviz.lstm.GRUCell computes it: reset r_t, update z_t, candidate n_t."""
    c = Canvas(570, 366)
    y0 = 94                                   # room below for the equations
    yh, yb, yg = y0 + 228, y0 + 40, y0 + 92   # state line, input bus, gate row
    c.box(280, y0 + 138, 450, 244, fill=ROLE["cell"], edge=GREY, radius=10, z=0)
    c.text(64, y0 + 248, "GRU unit (Cho et al. 2014; no SLP number)", ha="left", va="center", size=FS_S,
           color="#555555")
    blue = ROLE["state"]
    # h_{t-1} along the top: z_t ⊙ h_{t-1} + (1 - z_t) ⊙ n_t -> h_t
    xj, xz, xn = 75, 330, 450
    zh = c.op(xz, yh, "⊙")
    plus = c.op(xn, yh, "+")
    c.arrow((8, yh), (zh.left, yh), color=blue, lw=2.2)
    c.text(30, yh + 10, "$h_{t-1}$", color=blue)
    c.dot(xj, yh, color=blue)
    c.arrow((zh.right, yh), (plus.left, yh), color=blue, lw=2.2)
    c.arrow((plus.right, yh), (562, yh), color=blue, lw=2.2)
    c.text(510, yh + 10, "$h_t$", color=blue, ha="left")
    # h_{t-1} and x_t feed the gates
    c.line((xj, yh), (xj, yb), color=blue, lw=1.4)
    c.arrow((100, y0 - 22), (100, yb), head=False)
    c.text(106, y0 - 14, "$x_t$", ha="left")
    c.line((xj, yb), (xn, yb))
    c.dot(100, yb)
    xs = {"z": 170, "r": 295, "n": xn}
    z = _gate(c, xs["z"], yg, "σ", "update")
    r = _gate(c, xs["r"], yg, "σ", "reset")
    n = _gate(c, xs["n"], yg, "tanh", "candidate")
    for x, b in zip(xs.values(), (z, r, n)):
        c.dot(x, yb)
        c.arrow((x, yb), (x, b.bottom))
    # r_t scales U_n h_{t-1} inside the candidate
    c.arrow((r.right, yg), (n.left, yg))
    c.text((r.right + n.left) / 2, yg + 9, "$r_t$")
    # z_t keeps the old state, 1 - z_t lets the candidate in
    yz = yg + 62
    c.line((xs["z"], z.top), (xs["z"], yz), (xz, yz))
    c.text(xs["z"] + 6, (z.top + yz) / 2, "$z_t$", ha="left")
    c.dot(xz, yz)
    c.arrow((xz, yz), (xz, zh.bottom))
    c.text(xz - 6, (yz + zh.bottom) / 2 + 4, r"$z_t \odot h_{t-1}$", ha="right")
    one = c.box(390, yz, 30, 18, "1−", size=FS_S)
    c.arrow((xz, yz), (one.left, yz))
    nz = c.op(xn, yz, "⊙")
    c.arrow((one.right, yz), (nz.left, yz))
    c.text(420, yz - 11, "$1 - z_t$", size=FS_S)
    c.arrow((xn, n.top), (xn, nz.bottom))
    c.text(xn + 6, (n.top + nz.bottom) / 2, "$n_t$", ha="left")
    c.arrow((xn, nz.top), (xn, plus.bottom))
    c.text(xn + 6, (nz.top + plus.bottom) / 2, r"$(1 - z_t) \odot n_t$", ha="left")
    # the four equations, in seqviz.lstm.GRUCell's order and names
    eqs = [(r"$r_t = \sigma(U_r h_{t-1} + W_r x_t)$", "reset gate"),
           (r"$z_t = \sigma(U_z h_{t-1} + W_z x_t)$", "update gate"),
           (r"$n_t = \tanh(W_n x_t + r_t \odot (U_n h_{t-1}))$", "candidate (torch.nn.GRU puts $r_t$ after $U_n$)"),
           (r"$h_t = (1 - z_t) \odot n_t + z_t \odot h_{t-1}$", "new state: no separate cell state")]
    for k, (eq, what) in enumerate(eqs):
        y = y0 - 38 - 16 * k
        c.text(40, y, eq, ha="left", size=FS - 0.5)
        c.text(305, y, what, ha="left", size=FS - 0.5)
    return c


# ----------------------------------------------------------------------------------------------------------------
# Chapter 5: the encoder-decoder, without and with attention
# ----------------------------------------------------------------------------------------------------------------
SRC = ["wir", "waschen", "unsere", "Katzen"]
TGT_IN = ["<s>", "we", "wash", "our", "cats"]
TGT_OUT = ["we", "wash", "our", "cats", "</s>"]
ENC_X = [62, 118, 174, 230]
DEC_X = [310, 366, 422, 478, 534]
Y_TOK, Y_STATE = 44, 112


def _rnn_row(c: Canvas, xs: list[float], tokens: list[str], names: list[str], role: str = "state",
             highlight: int | None = None) -> list[Box]:
    """Tokens under a row of recurrent states, left to right, each state feeding the next."""
    boxes = []
    for k, (x, tok, name) in enumerate(zip(xs, tokens, names)):
        c.text(x, Y_TOK, tok, va="center", size=FS)
        b = c.box(x, Y_STATE, 44, 30, name, role=role, lw=2.0 if k == highlight else 1.0)
        c.arrow((x, Y_TOK + 9), (x, b.bottom))
        if boxes:
            c.arrow((boxes[-1].right, Y_STATE), (b.left, Y_STATE), color=ROLE["state"])
        boxes.append(b)
    return boxes


def _encdec_base(c: Canvas, focus: int | None = None) -> tuple[list[Box], list[Box]]:
    enc = _rnn_row(c, ENC_X, SRC, [f"$h_{j + 1}$" for j in range(4)])
    dec = _rnn_row(c, DEC_X, TGT_IN, [f"$s_{t + 1}$" for t in range(5)], highlight=focus)
    c.brace(ENC_X[0] - 24, ENC_X[-1] + 24, Y_TOK - 12, "encoder (reads the source)", size=FS_S)
    c.brace(DEC_X[0] - 24, DEC_X[-1] + 24, Y_TOK - 12, "decoder (inputs: the previous word)", size=FS_S)
    return enc, dec


def encoder_decoder() -> Canvas:
    """The encoder-decoder without attention: the encoder's final state is the decoder's only view of the source."""
    c = Canvas(570, 218)
    enc, dec = _encdec_base(c)
    blue = ROLE["state"]
    c.arrow((enc[-1].right, Y_STATE), (dec[0].left, Y_STATE), color=blue, lw=3.2)
    xb = (enc[-1].right + dec[0].left) / 2
    c.line((xb, Y_STATE + 4), (xb - 10, Y_STATE + 44), color=GREY, lw=0.8)
    c.lines(xb - 14, Y_STATE + 56, ["the final state $h_4$ is the decoder's",
                                    "only view of the source"], size=FS_S, ha="right")
    soft = c.box((DEC_X[0] + DEC_X[-1]) / 2, dec[0].top + 24, DEC_X[-1] - DEC_X[0] + 48, 16, "softmax",
                 fill="white", edge=GREY, size=FS_S, radius=3)
    for b, tok in zip(dec, TGT_OUT):
        c.arrow((b.cx, b.top), (b.cx, soft.bottom))
        c.arrow((b.cx, soft.top), (b.cx, soft.top + 18))
        c.text(b.cx, soft.top + 28, tok)
    c.text(12, c.h - 12, "Encoder–decoder without attention (Sutskever et al. 2014)", ha="left", size=FS_S,
           color="#555555")
    return c


def encoder_decoder_attention() -> Canvas:
    """The encoder-decoder with attention at one decoder step t: scores, weights α_{t,j}, context c_t."""
    c = Canvas(570, 350)
    enc, dec = _encdec_base(c, focus=2)
    blue, pink = ROLE["state"], ROLE["attn"]
    c.arrow((enc[-1].right, Y_STATE), (dec[0].left, Y_STATE), color=blue, lw=1.4)
    # the weights α_{t,j} over the encoder states, as bars (t = 3: the decoder read "wash", is to write "our")
    alphas = [0.06, 0.14, 0.72, 0.08]
    base, scale = enc[0].top + 22, 60
    ysum = base + scale * max(alphas) + 70
    sigma = c.op(146, ysum, "Σ", r=10, fill=tint(pink, 0.5))
    for b, a in zip(enc, alphas):
        c.line((b.cx, b.top), (b.cx, base), color=GREY, lw=0.8)
        c.rect(b.cx - 9, base, 18, scale * a, fc=tint(pink, 0.35), ec=pink)
        c.text(b.cx, base + scale * a + 8, f"{a:.2f}", size=FS_S)
        x1, y1 = b.cx, base + scale * a + 16
        d = ((x1 - sigma.cx) ** 2 + (y1 - sigma.cy) ** 2) ** 0.5
        c.line((x1, y1), (sigma.cx + (x1 - sigma.cx) * 10 / d, sigma.cy + (y1 - sigma.cy) * 10 / d), color=pink,
               lw=0.6 + 4 * a)
    c.text(ENC_X[0] - 22, base + 12, r"$\alpha_{t,j}$", ha="right", color=INK)
    # the query s_t, compared with every h_j
    s = dec[2]
    yq = base + scale * max(alphas) + 14
    c.arrow((s.cx - 12, s.top), (s.cx - 12, yq), (enc[-1].right + 6, yq), color=pink, dashed=True, lw=1.2)
    c.lines((enc[-1].right + s.cx - 12) / 2, yq - 20, ["query $s_t$: score($s_t$, $h_j$)",
                                                      "for every $j$, softmax over $j$"], size=FS_S)
    # context c_t = Σ_j α_{t,j} h_j, combined with s_t (Luong et al. 2015), then the softmax
    comb = c.box(s.cx + 30, ysum, 150, 26, r"$\tilde h_t = \tanh(W_c\,[c_t; s_t])$", role="ffn")
    c.arrow((sigma.right, ysum), (comb.left, ysum), color=pink, lw=2.0)
    c.text((sigma.right + comb.left) / 2, ysum + 12, r"context $c_t = \Sigma_j\, \alpha_{t,j}\, h_j$")
    c.arrow((s.cx + 12, s.top), (s.cx + 12, comb.bottom))
    c.arrow((comb.cx, comb.top), (comb.cx, comb.top + 26))
    c.text(comb.cx, comb.top + 36, "softmax → our", size=FS)
    c.text(comb.right + 4, comb.bottom - 12, "step $t$ = 3", ha="right", size=FS_S, color="#555555")
    c.text(12, c.h - 12, "Encoder–decoder attention (Bahdanau et al. 2015; Luong et al. 2015)", ha="left",
           size=FS_S, color="#555555")
    return c


# ----------------------------------------------------------------------------------------------------------------
# Chapter 6: the transformer block and multi-head attention; chapter 7: training a transformer LM
# ----------------------------------------------------------------------------------------------------------------
def _block_column(c: Canvas, cx: float, pre: bool) -> None:
    """One transformer block, bottom to top, with its two residual paths; post-norm (SLP) or pre-norm."""
    y_in, step, w = 70, 44, 150
    ys = [y_in + 46 + step * k for k in range(6)]          # six stages
    sa = lambda y: c.box(cx, y, w, 24, "self-attention (multi-head)", role="attn", size=FS_S + 0.5)  # noqa: E731
    ff = lambda y: c.box(cx, y, w, 24, "feed-forward (FFNN)", role="ffn", size=FS_S + 0.5)  # noqa: E731
    ln = lambda y: c.box(cx, y, w - 40, 18, "LayerNorm", role="norm", size=FS_S + 0.5)  # noqa: E731
    add = lambda y: c.op(cx, y, "+")  # noqa: E731
    order = [ln, sa, add, ln, ff, add] if pre else [sa, add, ln, ff, add, ln]
    parts = [make(y) for make, y in zip(order, ys)]
    c.text(cx, y_in - 12, "$x_1 \\dots x_n$  (one row per position)", size=FS_S)
    yj1, yj2 = ys[0] - 24, parts[2].top + 7                  # where the residual paths leave
    c.arrow((cx, y_in - 4), (cx, parts[0].bottom))
    for a, b in zip(parts, parts[1:]):
        c.arrow((cx, a.top), (cx, b.bottom))
    c.arrow((cx, parts[-1].top), (cx, parts[-1].top + 24))
    c.text(cx, parts[-1].top + 34, "$y_1 \\dots y_n$", size=FS_S)
    xr = cx - w / 2 - 14
    for yj, k in ((yj1, 2 if pre else 1), (yj2, 5 if pre else 4)):
        c.dot(cx, yj)
        c.arrow((cx, yj), (xr, yj), (xr, ys[k]), (parts[k].left, ys[k]), color=ROLE["state"], lw=1.3)
    c.text(xr - 4, (yj1 + ys[2 if pre else 1]) / 2, "residual", ha="right", size=FS_S, color=ROLE["state"])
    c.text(cx + 6, yj2, "$z$" if pre else "$z$  (9.40)", ha="left")
    c.text(cx + 6, parts[-1].top + 12, "$y$" if pre else "$y$  (9.41)", ha="left")


def transformer_block() -> Canvas:
    """SLP Fig. 9.18 (post-norm, (9.40)-(9.41)) beside the pre-norm block that chapter 6 and GPT-2 also use."""
    c = Canvas(570, 424)
    for cx, pre in ((150, False), (430, True)):
        _block_column(c, cx, pre)
    c.text(150, c.h - 14, "post-norm: SLP Fig. 9.18", weight="bold")
    c.text(150, c.h - 30, 'seqviz: TransformerBlock(norm="post")', size=FS_S, color="#555555")
    c.text(430, c.h - 14, "pre-norm (Xiong et al. 2020; GPT-2)", weight="bold")
    c.text(430, c.h - 30, 'seqviz: TransformerBlock(norm="pre")', size=FS_S, color="#555555")
    c.line((290, 20), (290, c.h - 8), color=GREY, lw=0.6)
    post = ["$z$ = LayerNorm($x$ + SelfAttn($x$)) (9.40)", "$y$ = LayerNorm($z$ + FFNN($z$)) (9.41)"]
    pre = ["$z$ = $x$ + SelfAttn(LayerNorm($x$))", "$y$ = $z$ + FFNN(LayerNorm($z$))"]
    for cx, eqs in ((150, post), (430, pre)):
        for k, eq in enumerate(eqs):
            c.text(cx, 30 - 15 * k, eq, size=FS - 0.5)
    return c


def multi_head_attention() -> Canvas:
    """SLP Fig. 9.19, (9.46)-(9.48): per-head projections W_i^Q, W_i^K, W_i^V, attention, concatenation, W^O."""
    c = Canvas(570, 362)
    lanes = [(296, "1"), (210, "2"), (100, "h")]
    yx = (lanes[0][0] + lanes[-1][0]) / 2
    xb = c.box(34, yx, 36, lanes[0][0] - lanes[-1][0] + 66, "$X$", role="token", size=FS + 1)
    xbus = 72
    c.line((xb.right, yx), (xbus, yx))
    c.line((xbus, lanes[-1][0] - 22), (xbus, lanes[0][0] + 22))
    c.dot(xbus, yx)
    att_boxes = []
    for y, i in lanes:
        att = c.box(246, y, 124, 66, ["SelfAttention", r"softmax$(QK^\top\!/√d_k)\,V$"], role="attn",
                    size=FS - 0.5, size2=FS_S)
        att_boxes.append(att)
        for dy, m in ((22, "Q"), (0, "K"), (-22, "V")):
            b = c.box(126, y + dy, 46, 18, f"$W_{i}^{m}$", role="token", size=FS_S + 0.5, radius=3)
            c.dot(xbus, y + dy)
            c.arrow((xbus, y + dy), (b.left, y + dy))
            c.arrow((b.right, y + dy), (att.left, y + dy))
            c.text((b.right + att.left) / 2, y + dy + 7, f"${m}$", size=FS_S)
        c.text(att.left - 4, y + 40, f"head {i}", ha="left", size=FS_S, color="#555555")
    c.text(246, (lanes[1][0] + lanes[2][0]) / 2 + 2, "⋮", size=FS + 4)
    c.text(126, (lanes[1][0] + lanes[2][0]) / 2 + 2, "⋮", size=FS + 4)
    cat = c.box(392, yx, 34, lanes[0][0] - lanes[-1][0] + 66, ["⊕"], fill="white", size=FS + 3)
    for att, (y, i) in zip(att_boxes, lanes):
        c.arrow((att.right, y), (cat.left, y))
        c.text((att.right + cat.left) / 2, y + 9, f"$head_{i}$", size=FS_S + 0.5)
    wo = c.box(448, yx, 44, 36, "$W^O$", role="token", size=FS)
    c.arrow((cat.right, yx), (wo.left, yx))
    c.arrow((wo.right, yx), (562, yx))
    c.text(566, yx + 12, "MultiHeadAttn($X$)", ha="right", size=FS_S)
    top = lanes[0][0] + 52
    c.text(126, top, "(9.47)", size=FS_S, color="#555555")
    c.text(246, top, "(9.48), (9.39)", size=FS_S, color="#555555")
    c.text(420, top, "concat, then $W^O$ (9.46)", size=FS_S, color="#555555")
    eqs = [r"(9.47)  per head $i$:  $Q = XW_i^Q$,  $K = XW_i^K$,  $V = XW_i^V$",
           r"(9.48)  $head_i$ = SelfAttention($Q$, $K$, $V$) = softmax$(QK^\top\!/√d_k)\,V$  (9.39)",
           r"(9.46)  MultiHeadAttn($X$) = ($head_1 \oplus \cdots \oplus head_h$) $W^O$"]
    for k, eq in enumerate(eqs):
        c.text(30, 44 - 15 * k, eq, ha="left", size=FS - 0.5)
    return c


def lm_training() -> Canvas:
    """SLP Fig. 9.21: a transformer LM in training; every position predicts the next token, the loss is averaged."""
    c = Canvas(570, 318)
    words = ["So", "long", "and", "thanks", "for", "all"]
    xs = [160, 245, 330, 415, 500]
    T = len(xs)
    y_tok, y_emb, y_blk, y_soft, y_tgt, y_loss = 22, 58, 116, 172, 206, 240
    rows = [(y_tok, "input: the gold words"), (y_emb, "embeddings + positions"), (y_blk, "transformer blocks"),
            (y_soft, "linear + softmax"), (y_tgt, "target: the next word"), (y_loss, "loss at each position")]
    for y, name in rows:
        c.text(8, y, name, ha="left", size=FS_S, color="#555555")
    blk = c.box((xs[0] + xs[-1]) / 2, y_blk, xs[-1] - xs[0] + 76, 44,
                ["causal self-attention + feed-forward, ×L", "position $t$ sees only $x_1 \\dots x_t$"],
                role="attn", size=FS - 0.5, size2=FS_S)
    red = ROLE["loss"]
    for t, x in enumerate(xs):
        c.text(x, y_tok, words[t])
        e = c.box(x, y_emb, 44, 18, f"$e_{t + 1}$", role="token", radius=3, size=FS_S + 0.5)
        c.arrow((x, y_tok + 8), (x, e.bottom))
        c.arrow((x, e.top), (x, blk.bottom))
        s = c.box(x, y_soft, 56, 18, "", fill="white", edge=INK, radius=3)
        c.text(x, y_soft, f"$\\hat y_{t + 1}$", size=FS_S + 0.5)
        c.arrow((x, blk.top), (x, s.bottom))
        c.arrow((x, s.top), (x, y_tgt - 9), color=red)
        c.text(x, y_tgt, words[t + 1], color=red, weight="bold")
        c.text(x, y_loss, f"$-\\log\\,\\hat y_{t + 1}[\\mathrm{{{words[t + 1]}}}]$", size=FS_S + 0.5)
    c.brace(xs[0] - 38, xs[-1] + 38, y_loss + 14, "", below=False)
    c.text((xs[0] + xs[-1]) / 2, y_loss + 34,
           r"$L_{CE} = (1/T)\, \Sigma_t -\log\, \hat y_t[w_{t+1}]$:  (9.13) at each position, averaged",
           size=FS)
    c.text(8, c.h - 12, "Training a transformer LM (SLP Fig. 9.21): teacher forcing, all T = "
           f"{T} positions at once", ha="left", size=FS_S, color="#555555")
    return c


def _stack(c: Canvas, cx: float, stages: list[tuple[str, str]], y0: float, side: int) -> list[Box]:
    """A column of sublayers bottom to top, each Add & Norm fed by a residual path (blue) from below the sublayer
    before it, drawn on the side ``side`` (-1 left, +1 right); returns the boxes."""
    w, step = 172, 33
    boxes = []
    for k, (text, role) in enumerate(stages):
        y = y0 + step * k
        boxes.append(c.box(cx, y, w - (40 if role == "norm" else 0), 18 if role == "norm" else 22, text, role=role,
                           size=FS_S + 0.5))
    for a, b in zip(boxes, boxes[1:]):
        c.arrow((cx, a.top), (cx, b.bottom))
    xr = cx + side * (w / 2 + 12)
    for k in range(0, len(boxes), 2):                     # each sublayer k and its Add & Norm k + 1
        sub, norm = boxes[k], boxes[k + 1]
        yj = sub.bottom - 7
        c.dot(cx, yj)
        edge = norm.left if side < 0 else norm.right
        c.arrow((cx, yj), (xr, yj), (xr, norm.cy), (edge, norm.cy), color=ROLE["state"], lw=1.2)
    return boxes


def encoder_decoder_transformer() -> Canvas:
    """Vaswani et al. 2017, Fig. 1: an encoder stack of N blocks (self-attention, feed-forward) and a decoder stack of
    N blocks (masked self-attention, cross-attention to the encoder's outputs, feed-forward), each sublayer with a
    residual path and Add & Norm; the decoder's linear layer and softmax give the next token."""
    c = Canvas(570, 392)
    ex, dx, y0 = 168, 410, 100
    enc = _stack(c, ex, [("self-attention (no mask)", "attn"), ("Add & Norm", "norm"),
                         ("feed-forward (FFNN)", "ffn"), ("Add & Norm", "norm")], y0, -1)
    dec = _stack(c, dx, [("masked self-attention (causal)", "attn"), ("Add & Norm", "norm"),
                         ("cross-attention", "attn"), ("Add & Norm", "norm"),
                         ("feed-forward (FFNN)", "ffn"), ("Add & Norm", "norm")], y0, +1)
    # the two stacks, each N blocks
    top_e, top_d = enc[-1].top + 10, dec[-1].top + 10
    c.box(ex, (y0 - 22 + top_e) / 2, 212, top_e - y0 + 22, fill=ROLE["cell"], edge=GREY, radius=10, z=0)
    c.box(dx, (y0 - 22 + top_d) / 2, 212, top_d - y0 + 22, fill=ROLE["cell"], edge=GREY, radius=10, z=0)
    c.text(ex - 112, (y0 + top_e) / 2 + 7, "N×", ha="right", size=FS + 1, weight="bold")
    c.text(ex - 112, (y0 + top_e) / 2 - 8, "encoder", ha="right", size=FS_S, color="#555555")
    c.text(dx + 112, (y0 + top_d) / 2 + 7, "×N", ha="left", size=FS + 1, weight="bold")
    c.text(dx + 112, (y0 + top_d) / 2 - 8, "decoder", ha="left", size=FS_S, color="#555555")
    # inputs: embeddings and positions (the dates of chapter 5)
    for x, words, label in ((ex, "19 March 2057", "source"), (dx, "<s> 2057-03-1", "target, shifted right")):
        emb = c.box(x, 52, 150, 20, "embedding + position", role="token", size=FS_S + 0.5, radius=3)
        c.text(x, 16, f"{label}:  {words}", size=FS_S + 0.5)
        c.arrow((x, 25), (x, emb.bottom))
        c.arrow((x, emb.top), (x, y0 - 11))
    # the encoder's outputs are the keys and values of every decoder block's cross-attention
    cross = dec[2]
    xm, ym = (ex + dx) / 2, top_e + 26
    c.line((ex, enc[-1].top), (ex, ym), color=ROLE["attn"], lw=1.8)
    c.arrow((ex, ym), (xm, ym), (xm, cross.cy), (cross.left, cross.cy), color=ROLE["attn"], lw=1.8)
    c.text(ex - 80, ym + 10, "encoder outputs: keys K, values V", size=FS_S, ha="left")
    c.text(dx - 6, cross.bottom - 8, "Q", ha="right", size=FS_S)
    # the output layer
    out = c.box(dx, top_d + 32, 150, 20, "linear + softmax", fill="white", edge=INK, size=FS_S + 0.5, radius=3)
    c.arrow((dx, dec[-1].top), (dx, out.bottom))
    c.arrow((dx, out.top), (dx, out.top + 16), color=ROLE["loss"])
    c.text(dx, out.top + 26, "next token:  2057-03-19 </s>", color=ROLE["loss"], size=FS_S + 0.5, weight="bold")
    c.text(12, c.h - 12, "Encoder–decoder transformer (Vaswani et al. 2017, Fig. 1)", ha="left", size=FS_S,
           color="#555555")
    c.text(12, c.h - 26, "Add & Norm: LayerNorm($x$ + sublayer($x$)), (9.40)–(9.41)", ha="left", size=FS_S,
           color="#555555")
    return c


# ----------------------------------------------------------------------------------------------------------------
# Chapter 8: summarization as language modelling, and copying
# ----------------------------------------------------------------------------------------------------------------
def summarization_delta() -> Canvas:
    """SLP Fig. 9.24: article x_1..x_m, the delimiter δ, summary y_1..y_n as one LM sequence; loss on the summary."""
    c = Canvas(570, 262)
    ins = ["$x_1$", "$x_2$", "…", "$x_m$", "δ", "$y_1$", "$y_2$", "…", "$y_n$"]
    outs = ["$x_2$", "$x_3$", "…", "δ", "$y_1$", "$y_2$", "$y_3$", "…", "</s>"]
    kinds = ["art"] * 4 + ["delim"] + ["sum"] * 4
    fill = {"art": tint(ROLE["token"], 0.5), "delim": tint(ROLE["norm"], 0.3), "sum": tint(ROLE["tanh"], 0.55)}
    xs = [46 + 60 * k for k in range(9)]
    y_in, y_lm, y_out = 96, 148, 202
    red = ROLE["loss"]
    lm = c.box((xs[0] + xs[-1]) / 2, y_lm, xs[-1] - xs[0] + 56, 30,
               "the transformer LM of chapter 7 (causal: each position sees only what is left of it)", role="attn",
               size=FS_S + 0.5)
    for k, (x, a, b, kind) in enumerate(zip(xs, ins, outs, kinds)):
        if a == "…":
            c.text(x, y_in, "…")
            c.text(x, y_out, "…", color=red if k > 4 else GREY)
            continue
        tok = c.box(x, y_in, 40, 24, a, fill=fill[kind], size=FS + 1 if a == "δ" else FS,
                    lw=1.8 if kind == "delim" else 1.0)
        c.arrow((x, tok.top), (x, lm.bottom))
        scored = k >= 4
        c.arrow((x, lm.top), (x, y_out - 10), color=red if scored else GREY)
        c.text(x, y_out, b, color=red if scored else GREY)
    c.brace(xs[0] - 22, xs[3] + 22, y_in - 20, "article $x_1 \\dots x_m$ (its first tokens)", size=FS_S)
    c.brace(xs[4] - 22, xs[4] + 22, y_in - 20, "delimiter", size=FS_S)
    c.brace(xs[5] - 22, xs[-1] + 22, y_in - 20, "summary $y_1 \\dots y_n$", size=FS_S)
    c.brace(xs[0] - 22, xs[3] + 22, y_out + 16, "targets, not scored", below=False, size=FS_S)
    c.brace(xs[4] - 22, xs[-1] + 22, y_out + 16, r"loss: mean of $-\log\, \hat y[\cdot]$ over these targets",
            below=False, size=FS_S)
    c.text(8, c.h - 12, "Summarization with a transformer LM (SLP Fig. 9.24)", ha="left", size=FS_S, color="#555555")
    c.text(8, 30, "training: one sequence $x_1 \\dots x_m$ δ $y_1 \\dots y_n$ </s> per pair, teacher forcing, "
           "the loss on the summary only", ha="left", size=FS_S)
    c.text(8, 14, "inference: the article and δ are the prompt; the LM writes $y_1, y_2, \\dots$ until </s>",
           ha="left", size=FS_S)
    return c


def _bars(c: Canvas, xs: list[float], labels: list[str], base: float, parts: list[list[float]], scale: float,
          styles: list[dict], width: float = 22) -> None:
    """Bars (stacked when parts has several rows) with their token below and their total above."""
    for k, (x, lab) in enumerate(zip(xs, labels)):
        y = base
        for row, st in zip(parts, styles):
            if row[k] > 0:
                c.rect(x - width / 2, y, width, scale * row[k], **st)
                y += scale * row[k]
        c.text(x, y + 7, f"{sum(r[k] for r in parts):.2f}".replace("0.", "."), size=FS_S)
        c.text(x, base - 10, lab, size=FS_S)
    c.line((xs[0] - width, base), (xs[-1] + width, base), color=GREY, lw=0.8)


def pointer_generator() -> Canvas:
    """See et al. (2017): p_gen mixes the vocabulary distribution with the attention over the source (copying)."""
    c = Canvas(570, 366)
    blue, orange = ROLE["state"], ROLE["tanh"]
    gen = {"fc": tint(orange, 0.35), "ec": orange}
    copy = {"fc": tint(blue, 0.75), "ec": blue, "hatch": "////"}
    src, a = ["Germany", "beat", "Argentina", "2-0"], [0.05, 0.10, 0.80, 0.05]
    vocab, p_vocab = ["the", "win", "beat", "Germany", "2-0"], [0.30, 0.25, 0.10, 0.20, 0.15]
    p_gen, scale = 0.2, 72
    ext = vocab + ["Argentina"]
    gen_part = [p_gen * p for p in p_vocab] + [0.0]
    copy_part = [(1 - p_gen) * sum(ai for w, ai in zip(src, a) if w == v) for v in ext]
    # top left: copy distribution, top right: vocabulary distribution
    xs_src, xs_voc = [62, 122, 182, 242], [330, 380, 430, 480, 530]
    base = 246
    _bars(c, xs_src, src, base, [a], scale, [copy])
    _bars(c, xs_voc, vocab, base, [p_vocab], scale, [gen])
    c.text(152, base + 86, "copy: the attention $a_t$ over the source", size=FS - 0.5)
    c.text(430, base + 86, "generate: $p_{vocab}$ over the fixed vocabulary", size=FS - 0.5)
    # the switch
    sw = c.box(285, 184, 330, 26, r"$p_{gen} = \sigma(w^\top [h_t; c_t] + b)$" f"  = {p_gen}", role="sigma",
               size=FS - 0.5)
    c.arrow((100, base - 22), (100, 150), (200, 150), (200, 136), color=blue, lw=1.3)
    c.text(106, 160, r"$\times\,(1 - p_{gen})$", ha="left", size=FS_S + 0.5)
    c.arrow((470, base - 22), (470, 150), (370, 150), (370, 136), color=orange, lw=1.3)
    c.text(464, 160, r"$\times\, p_{gen}$", ha="right", size=FS_S + 0.5)
    # bottom: the final distribution over the extended vocabulary
    xs_ext = [160 + 46 * k for k in range(6)]
    _bars(c, xs_ext, ext, 38, [gen_part, copy_part], scale, [gen, copy])
    c.text(285, 122, r"$p(w) = p_{gen}\, p_{vocab}(w) + (1 - p_{gen}) \Sigma_{j:\, x_j = w}\, a_t[j]$", size=FS)
    c.text(xs_ext[-1] + 18, 88, "not in the vocabulary:", ha="left", size=FS_S)
    c.text(xs_ext[-1] + 18, 76, "only copying can write it", ha="left", size=FS_S)
    c.rect(470, 42, 12, 10, **gen)
    c.text(488, 47, "generated", ha="left", size=FS_S)
    c.rect(470, 26, 12, 10, **copy)
    c.text(488, 31, "copied", ha="left", size=FS_S)
    c.text(8, c.h - 12, 'Pointer-generator (See et al. 2017), one decoder step: the summary so far is "Germany beat"',
           ha="left", size=FS_S, color="#555555")
    return c


# ----------------------------------------------------------------------------------------------------------------
# The registry: what each figure is called, where it goes, its alt text and caption (README.md is written from it)
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Figure:
    name: str                       # file name without .svg
    title: str                      # the SVG's <title>
    draw: Callable[[], Canvas]
    chapter: str                    # the notebook it belongs in
    alt: str                        # what a reader who cannot see it needs (plain text: no $, no brackets)
    caption: str                    # MyST markdown, cites SLP's figure and equation numbers or the source


FIGURES: list[Figure] = [
    Figure("lstm_cell", "An LSTM unit (SLP Fig. 9.13, (9.22)-(9.29))", lstm_cell,
           "04_lstm",
           "Diagram of one LSTM unit. Along the top, the cell state c_(t-1) is multiplied elementwise by the forget "
           "gate f_t, giving k_t, and the product j_t of the candidate g_t and the add gate i_t is added to it, giving "
           "the new cell state c_t. Below, four boxes compute the gates from h_(t-1) and x_t: forget gate f_t "
           "(sigmoid), candidate g_t (tanh), add gate i_t (sigmoid) and output gate o_t (sigmoid). The output h_t is "
           "o_t times tanh of c_t. Each symbol carries its SLP equation number, 9.22 to 9.29.",
           "One LSTM unit as a computation graph, after SLP Fig. 9.13: forget gate $f_t$ (9.22), "
           "$k_t = c_{t-1} \\odot f_t$ (9.23), candidate $g_t$ (9.24), add gate $i_t$ (9.25), "
           "$j_t = g_t \\odot i_t$ (9.26), $c_t = j_t + k_t$ (9.27), output gate $o_t$ (9.28) and "
           "$h_t = o_t \\odot \\tanh(c_t)$ (9.29). The cell state (blue) is changed only by a product and a sum."),
    Figure("gru_cell", "A GRU unit (Cho et al. 2014)", gru_cell,
           "04_lstm",
           "Diagram of one GRU unit. The state h_(t-1) runs along the top. An update gate z_t (sigmoid) keeps the "
           "share z_t of the old state and lets in the share 1 minus z_t of the candidate n_t; the candidate (tanh) "
           "reads x_t and the old state scaled by the reset gate r_t (sigmoid). Their sum is the new state h_t. "
           "The four equations are written below the diagram.",
           "One GRU unit {cite}`cho2014learning` as `seqviz.lstm.GRUCell` computes it (SLP has no number for it): "
           "reset gate $r_t$, update gate $z_t$, candidate $n_t$ and $h_t = (1 - z_t) \\odot n_t + z_t \\odot "
           "h_{t-1}$. Two gates and no separate cell state, against the LSTM's three gates and $c_t$ (9.22)–(9.29)."),
    Figure("encoder_decoder", "Encoder-decoder without attention", encoder_decoder,
           "05_attention",
           "Diagram of an encoder-decoder without attention. An encoder RNN reads the German words wir waschen "
           "unsere Katzen into states h_1 to h_4. A thick arrow passes only the final state h_4 to the decoder RNN, "
           "whose states s_1 to s_5 read the start symbol and the previous English words and, through a softmax, "
           "write we wash our cats and the end symbol.",
           "The encoder–decoder without attention {cite}`sutskever2014sequence`: the encoder's final state $h_4$ is "
           "all the decoder knows of the source. In training the decoder reads the gold previous word (teacher "
           "forcing); at inference, its own."),
    Figure("encoder_decoder_attention", "Encoder-decoder with attention", encoder_decoder_attention,
           "05_attention",
           "Diagram of an encoder-decoder with attention at one decoder step. The decoder state s_3, which has just "
           "read wash, is compared with each encoder state h_1 to h_4 by a score; a softmax turns the scores into "
           "weights 0.06, 0.14, 0.72 and 0.08, drawn as bars, the largest on unsere. The weighted sum of the encoder "
           "states is the context c_t, which is combined with s_t into h-tilde_t, and a softmax writes our.",
           "Encoder–decoder attention at one decoder step {cite}`bahdanau2015neural,luong2015effective`: the query "
           "$s_t$ is scored against every encoder state $h_j$, a softmax over $j$ gives $\\alpha_{t,j}$, the context "
           "is $c_t = \\sum_j \\alpha_{t,j} h_j$ and Luong's $\\tilde h_t = \\tanh(W_c[c_t; s_t])$ feeds the softmax. "
           "This $c_t$ is the attention context, not the LSTM cell state of (9.27)."),
    Figure("transformer_block", "Transformer block: post-norm (SLP Fig. 9.18) and pre-norm", transformer_block,
           "06_transformer",
           "Two transformer blocks side by side, each drawn bottom to top. Left, post-norm as in SLP: "
           "self-attention, add the residual, LayerNorm, giving z; feed-forward, add the residual, LayerNorm, giving "
           "y. Right, pre-norm: LayerNorm, self-attention, add the residual, giving z; LayerNorm, feed-forward, add "
           "the residual, giving y. The equations of each are written underneath.",
           "A transformer block, post-norm as in SLP Fig. 9.18 and (9.40)–(9.41), beside the pre-norm block "
           "{cite}`xiong2020layer` of GPT-2 {cite}`radford2019language`, which normalises each sublayer's input and "
           "leaves the residual path untouched (a pre-norm stack adds one LayerNorm after its last block). Both are "
           '`seqviz.transformer.TransformerBlock`, with `norm="post"` or `norm="pre"`.'),
    Figure("multi_head_attention", "Multi-head attention (SLP Fig. 9.19, (9.46)-(9.48))", multi_head_attention,
           "06_transformer",
           "Diagram of multi-head attention. The input X feeds h heads; each head projects X with its own matrices "
           "W_i^Q, W_i^K and W_i^V into Q, K and V and runs scaled dot-product self-attention, softmax of Q K "
           "transposed over the square root of d_k, times V. The head outputs are concatenated and multiplied by "
           "W^O. Equations 9.46 to 9.48 are written below.",
           "Multi-head self-attention, after SLP Fig. 9.19: each head $i$ has its own $W_i^Q, W_i^K, W_i^V$ (9.47) "
           "and computes $\\mathrm{head}_i = \\mathrm{SelfAttention}(Q, K, V)$ (9.48), (9.39); the heads are "
           "concatenated and projected by $W^O$ (9.46)."),
    Figure("lm_training", "Training a transformer LM (SLP Fig. 9.21)", lm_training,
           "07_transformer_lms",
           "Diagram of training a transformer language model. The input words So long and thanks for go through "
           "embeddings with positions, causal transformer blocks and a softmax at every position. Each position's "
           "target is the next word: long, and, thanks, for, all. Each position's loss is minus the log probability "
           "of its target, and the training loss is their average.",
           "Training a transformer language model, after SLP Fig. 9.21: teacher forcing, so every position predicts "
           "the next gold word at once, with the cross-entropy (9.13) at each position averaged over the $T$ "
           "positions."),
    Figure("encoder_decoder_transformer", "The encoder-decoder transformer (Vaswani et al. 2017, Fig. 1)",
           encoder_decoder_transformer, "07_transformer_lms",
           "Diagram of the encoder-decoder transformer. Left, the encoder: the source 19 March 2057 is embedded with "
           "positions and passes through N blocks of self-attention without a mask and a feed-forward layer, each "
           "followed by Add and Norm with a residual path. Right, the decoder: the target shifted right, starting "
           "with the start symbol, passes through N blocks of masked, causal self-attention, cross-attention and a "
           "feed-forward layer, each followed by Add and Norm. The encoder's outputs are the keys and values of "
           "every decoder block's cross-attention, whose queries come from the decoder. A linear layer and a softmax "
           "give the next token, 2057-03-19 and the end symbol.",
           "The encoder–decoder transformer, after {cite:t}`vaswani2017attention`, Fig. 1: $N$ encoder blocks of "
           "self-attention and feed-forward layer; $N$ decoder blocks of masked self-attention, **cross-attention** "
           "(queries from the decoder, keys and values from the encoder's last block) and feed-forward layer. Each "
           "sublayer has a residual path and LayerNorm, post-norm here as in (9.40)–(9.41); "
           "`seqviz.transformer.EncoderDecoderTransformer` is pre-norm by default, as chapter 6's figure shows."),
    Figure("summarization_delta", "Summarization with a transformer LM (SLP Fig. 9.24)", summarization_delta,
           "08_summarization",
           "Diagram of summarization with a transformer language model. One training sequence holds the article "
           "tokens x_1 to x_m, the delimiter delta and the summary tokens y_1 to y_n. The language model predicts "
           "the next token at every position, but only the predictions from delta on, of y_1 to y_n and the end "
           "symbol, are scored; the article's targets are greyed out.",
           "Summarization as language modelling, after SLP Fig. 9.24: the article, the delimiter $\\delta$ and the "
           "summary form one sequence; the loss is on the summary tokens only (`seqviz.summarize.build_example`, "
           "`loss_on=\"summary\"`); at inference the article and $\\delta$ are the prompt."),
    Figure("pointer_generator", "Pointer-generator copy mechanism (See et al. 2017)", pointer_generator,
           "08_summarization",
           "Diagram of the pointer-generator's copy mechanism at one decoder step. Top left, the attention over the "
           "source words Germany beat Argentina 2-0, with 0.80 on Argentina. Top right, the vocabulary distribution, "
           "which has no entry for Argentina. A gate p_gen of 0.2 weighs them: the final distribution is p_gen times "
           "the vocabulary distribution plus 1 minus p_gen times the attention, and gives Argentina 0.64, all of it "
           "copied.",
           "The pointer-generator's copy mechanism {cite}`see2017get` (no SLP number), as `seqviz.summarize.CopyHead` "
           "computes it: the switch $p_{gen} = \\sigma(w^\\top [h_t; c_t] + b)$, from the decoder state $h_t$ and the "
           "copy attention's context $c_t$, mixes the vocabulary distribution with the attention $a_t$ over the "
           "source, $p(w) = p_{gen}\\, p_{vocab}(w) + (1 - p_{gen}) \\sum_{j: x_j = w} a_t[j]$, so a word outside the "
           "vocabulary can still be written by copying it."),
]


README_HEAD = """# The book's figures

Architecture diagrams drawn by [`make_figures.py`](make_figures.py) (matplotlib, one function per figure), labelled
with the symbols and equation numbers of SLP 3rd ed. draft, ch. 9 (see `book/notation.md`). **Do not edit the SVGs by
hand**: change the script and run

    .venv/bin/python book/figures/make_figures.py

which rewrites every `*.svg` and this README. The SVGs are committed (small text sources the book renders, as d2l
does), so `make book` and a fresh clone need no extra step; `tests/test_figures.py` fails when the committed files are
not what the script makes. Output is deterministic: fixed `svg.hashsalt`, no date, text kept as `<text>` (not glyph
paths), so a diff shows only what changed. Colours are Okabe–Ito (colour-blind safe) and every coloured part is also
named in text: blue = recurrent/cell state and residual paths, sky blue = sigmoid gates, orange = tanh candidate and
generated probability, purple = attention, green = feed-forward, yellow = LayerNorm or the delimiter, vermillion =
targets and loss.

## Snippets for the notebooks

Paste into a markdown cell of the chapter named (paths are relative to `notebooks/`). Each SVG also carries its alt
text as `<title>`/`<desc>`.
"""


def write_readme(out_dir: Path) -> None:
    parts = [README_HEAD]
    for f in FIGURES:
        size = (out_dir / f"{f.name}.svg").stat().st_size
        parts.append(f"\n### `{f.name}.svg` (chapter `{f.chapter}`, {size / 1024:.0f} KB)\n\n````markdown\n"
                     f"![{f.alt}](../book/figures/{f.name}.svg)\n\n*{f.caption}*\n````\n")
    (out_dir / "README.md").write_text("".join(parts), encoding="utf-8")


def make_all(out_dir: Path = HERE) -> list[Path]:
    """Draw every figure into out_dir (and its README): returns the SVG paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    with matplotlib.rc_context():
        matplotlib.rcdefaults()              # whatever the caller's style, the same bytes (restored on exit)
        matplotlib.rcParams.update(RC)
        for f in FIGURES:
            path = out_dir / f"{f.name}.svg"
            c = f.draw()
            for problem in layout_problems(c):
                print(f"WARNING {f.name}: {problem}", file=sys.stderr)
            _save(c, path, f.title, f.alt)
            paths.append(path)
    write_readme(out_dir)
    return paths


if __name__ == "__main__":
    for p in make_all(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE):
        print(f"{p}  {p.stat().st_size / 1024:.1f} KB")
