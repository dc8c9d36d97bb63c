"""One query's attention, computed in front of the reader: SLP 3rd ed. draft, ch. 9, (9.30)-(9.39).

Pick a query token i; the widget shows its query q_i, every key k_j, the products q_i * k_j and their sums, the dot
products q_i . k_j (9.35), scaled by 1/sqrt(d_k) (9.37), their softmax alpha_ij (9.31)-(9.32), the weighted values
alpha_ij v_j and their sum y_i (9.36), with the causal mask (9.31, j <= i) switched on or off.

Python checks q, k, v and packs them as float32 (float64 when they come as float64) bytes; ``static/attention_steps.js``
computes every number it shows from them, in the browser, so the widget also works in the static book. Those numbers
are what :meth:`AttentionSteps.compute` returns, which runs ``seqviz.attention.attention`` on the same q, k, v.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import anywidget
import numpy as np
import torch
import traitlets

from seqviz.attention import attention

from ._common import Described, CSS, check_finite, check_index, check_nonempty, check_tokens, esm, plain
from ._live import LiveMode

__all__ = ["AttentionSteps", "StepsData", "QueryAttention", "prepare_steps", "MAX_VALUES"]

MAX_VALUES = 400_000  # numbers in q, k and v together: about 1.6 MB as float32 (keep fewer layers or heads)


@dataclass(frozen=True)
class StepsData:
    """Checked inputs: ``q`` (L, H, T_q, d_k), ``k`` (L, H, T_k, d_k), ``v`` (L, H, T_k, d_v) as the browser gets
    them (float64 arrays of the float32 or float64 values sent), token lists, and each query's position among the
    keys (the causal mask lets query i see keys j <= query_positions[i])."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    query_tokens: list[str]
    key_tokens: list[str]
    query_positions: list[int]
    dtype: str  # "f4" or "f8": how q, k, v travel


@dataclass(frozen=True)
class QueryAttention:
    """Every number the widget shows for one query of one head: q (d_k,), k (T_k, d_k), the products q * k_j
    (T_k, d_k), dots q . k_j (T_k,) (9.35), scaled dots / sqrt(d_k) (9.37), the mask (T_k,) (True = may attend),
    the softmax weights alpha (T_k,) (9.31)-(9.32), the weighted values alpha_j v_j (T_k, d_v) and their sum, the
    output y (d_v,) (9.36)/(9.39)."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    products: np.ndarray
    dots: np.ndarray
    scaled: np.ndarray
    mask: np.ndarray
    weights: np.ndarray
    weighted: np.ndarray
    output: np.ndarray


def _as_float(x, name: str) -> tuple[np.ndarray, bool]:
    """A float64 array of ``x`` and whether it came as float64 (then it travels as float64, exactly)."""
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be a tensor or array of numbers, got {type(x).__name__}")
    if isinstance(x, torch.Tensor):
        if not (x.dtype.is_floating_point or x.dtype in (torch.int32, torch.int64)):
            raise TypeError(f"{name} must hold real numbers, got dtype {x.dtype}")
        return x.detach().cpu().double().numpy(), x.dtype == torch.float64
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a tensor or array of numbers: {err}") from None
    if a.dtype == object or not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
        raise TypeError(f"{name} must hold real numbers, got dtype {a.dtype}")
    return a.astype(np.float64), a.dtype == np.float64


def _as_4d(a: np.ndarray, name: str, what: str) -> np.ndarray:
    if a.ndim == 2:
        return a[None, None]  # (T, d) -> (1, 1, T, d)
    if a.ndim == 3:
        return a[None]  # (H, T, d) -> (1, H, T, d)
    if a.ndim == 4:
        return a
    raise ValueError(f"{name} must have shape (T, {what}), (H, T, {what}) or (L, H, T, {what}); got rank {a.ndim} "
                     f"with shape {tuple(a.shape)}. For a batch, pick one example first, e.g. {name}[0].")


def prepare_steps(q, k, v, query_tokens: Sequence[str], key_tokens: Sequence[str] | None = None,
                  query_positions: Sequence[int] | None = None) -> StepsData:
    """Check queries, keys and values and their tokens; raise a clear error for anything the widget could not show.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) with the same leading (layer, head) axes; finite.
    ``key_tokens`` defaults to ``query_tokens`` (self-attention, T_q = T_k). ``query_positions`` defaults to
    0..T-1 for self-attention and to the last T_q key positions otherwise (a decoder's new queries after a cache).
    """
    arrays, doubles = {}, []
    for name, x, what in (("q", q, "d_k"), ("k", k, "d_k"), ("v", v, "d_v")):
        a, dbl = _as_float(x, name)
        a = _as_4d(a, name, what)
        check_nonempty(a, name)
        check_finite(a, name)
        arrays[name] = a
        doubles.append(dbl)
    q4, k4, v4 = arrays["q"], arrays["k"], arrays["v"]
    if q4.shape[:2] != k4.shape[:2] or k4.shape[:2] != v4.shape[:2]:
        raise ValueError(f"q, k and v must have the same (layers, heads) axes; got q {q4.shape[:2]}, "
                         f"k {k4.shape[:2]}, v {v4.shape[:2]} (shapes {q4.shape}, {k4.shape}, {v4.shape})")
    if q4.shape[3] != k4.shape[3]:
        raise ValueError(f"queries and keys must have the same width d_k to take dot products: q has d_k = "
                         f"{q4.shape[3]}, k has {k4.shape[3]}")
    if k4.shape[2] != v4.shape[2]:
        raise ValueError(f"keys and values must have the same length T_k (one value per key): k has {k4.shape[2]} "
                         f"positions, v has {v4.shape[2]}")
    n_values = q4.size + k4.size + v4.size
    if n_values > MAX_VALUES:
        raise ValueError(f"q, k and v hold {n_values:,} numbers, more than the widget sends ({MAX_VALUES:,}); "
                         f"keep fewer layers or heads (from_model(..., layers=[0], heads=[0, 1])) or a shorter text")
    Tq, Tk = q4.shape[2], k4.shape[2]
    if key_tokens is None:
        if Tq != Tk:
            raise ValueError(f"there are {Tq} queries and {Tk} keys (cross-attention, or a query after a cache), so "
                             f"key_tokens is needed: pass key_tokens with {Tk} entries")
        key_tokens = query_tokens
    qt = check_tokens(query_tokens, Tq, "query_tokens", "the number of queries T_q")
    kt = check_tokens(key_tokens, Tk, "key_tokens", "the number of keys T_k")
    if query_positions is None:
        query_positions = list(range(Tq)) if Tq == Tk else [Tk - Tq + i for i in range(Tq)]
    if isinstance(query_positions, (str, bytes)):
        raise TypeError("query_positions must be a list of ints, one per query")
    pos = list(query_positions)
    if len(pos) != Tq:
        raise ValueError(f"query_positions has {len(pos)} entries but there are T_q = {Tq} queries")
    for i, p in enumerate(pos):
        check_index(p, Tk, f"query_positions[{i}]")
    dtype = "f8" if all(doubles) else "f4"
    if dtype == "f4":  # what the browser will hold: float32 values
        q4, k4, v4 = (a.astype(np.float32).astype(np.float64) for a in (q4, k4, v4))
    return StepsData(q=q4, k=k4, v=v4, query_tokens=qt, key_tokens=kt, query_positions=[int(p) for p in pos],
                     dtype=dtype)


def _index_base(b) -> int:
    if isinstance(b, bool) or b not in (0, 1):
        raise ValueError(f"index_base must be 0 (count positions from 0, as Python) or 1 (from 1, as SLP's "
                         f"x_1 ... x_n), got {b!r}")
    return int(b)


def _pick(values, n: int, name: str) -> list[int]:
    if values is None:
        return list(range(n))
    if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
        values = [values]
    picked = [check_index(x, n, f"{name} entry") for x in values]
    if not picked or len(set(picked)) != len(picked):
        raise ValueError(f"{name} must list distinct indices among 0..{n - 1}, got {list(values)}")
    return picked


class AttentionSteps(Described, anywidget.AnyWidget, LiveMode):
    """One query's scaled dot-product attention, step by step, computed in the browser from q, k, v.

    ``AttentionSteps(q, k, v, tokens, key_tokens=None, query=0, causal=False)`` with q (T_q, d_k), k (T_k, d_k),
    v (T_k, d_v), or with leading (H,) or (L, H) axes for heads and layers (then layer/head selectors appear).
    Every one of the T_q queries is offered in the widget's query picker: pass all of them (q of every position) so
    a reader can choose any. ``index_base=1`` counts positions and subscripts from 1 (q_1 is the first query, as SLP
    writes x_1 ... x_n, and as a chapter's code may name it); the default 0 counts as Python indexes. The ``query``
    argument and trait are always Python indices (0 is the first query).
    ``AttentionSteps.from_model(model, ids, tokens)`` reads every layer's and head's q, k, v from a
    ``seqviz.transformer.TransformerLM`` (or the BERT-style encoder). Traits the view follows: ``query``, ``causal``,
    ``layer``, ``head``.

    ``AttentionSteps.live("char_lm", text, query=..., causal=True)``: every layer's and head's q, k, v of the shipped
    character transformer over ``text``, which the reader can replace by their own (the query then moves to the
    last character; see ``seqviz.widgets._live``).
    """

    _live_models = {"char_lm": "one query's attention, step by step"}

    _esm = esm("attention_steps.js")  # the shared prelude + attention_steps.js
    _css = CSS

    q = traitlets.Bytes(b"").tag(sync=True)  # little-endian float32 or float64 (see dtype), C order (L, H, T_q, d_k)
    k = traitlets.Bytes(b"").tag(sync=True)  # (L, H, T_k, d_k)
    v = traitlets.Bytes(b"").tag(sync=True)  # (L, H, T_k, d_v)
    dtype = traitlets.Enum(["f4", "f8"], default_value="f4").tag(sync=True)
    shape = traitlets.List(traitlets.Int(), default_value=[1, 1, 1, 1, 1, 1]).tag(sync=True)  # L, H, Tq, Tk, dk, dv
    query_tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    key_tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    query_positions = traitlets.List(traitlets.Int()).tag(sync=True)
    layer_ids = traitlets.List(traitlets.Int()).tag(sync=True)  # the model's layer number of each layer sent
    head_ids = traitlets.List(traitlets.Int()).tag(sync=True)
    query = traitlets.Int(0).tag(sync=True)
    causal = traitlets.Bool(False).tag(sync=True)
    layer = traitlets.Int(0).tag(sync=True)
    head = traitlets.Int(0).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    index_base = traitlets.Int(0).tag(sync=True)  # 0: positions and subscripts as Python counts; 1: as SLP does

    def __init__(self, q, k, v, query_tokens, key_tokens=None, *, query: int = 0, causal: bool = False,
                 layer: int = 0, head: int = 0, query_positions: Sequence[int] | None = None,
                 layer_ids: Sequence[int] | None = None, head_ids: Sequence[int] | None = None, title: str = "",
                 index_base: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.title = title
        self.index_base = _index_base(index_base)
        self.set_data(q, k, v, query_tokens, key_tokens, query_positions=query_positions, layer_ids=layer_ids,
                      head_ids=head_ids)
        self.query, self.causal, self.layer, self.head = query, causal, layer, head

    @classmethod
    def from_model(cls, model, ids, tokens: Sequence[str], *, layers: Sequence[int] | int | None = None,
                   heads: Sequence[int] | int | None = None, query: int | None = None, causal: bool | None = None,
                   **kwargs) -> "AttentionSteps":
        """Every chosen layer's and head's q, k, v of ``model`` over one sequence ``ids`` (T,) with its ``tokens``
        (read by ``seqviz.transformer.inspect.queries_keys_values``, in eval mode, never stored on the model).
        ``layers``/``heads`` keep some (default: all); ``query`` defaults to the last token; ``causal`` to the
        model's own mask."""
        from seqviz.transformer.inspect import queries_keys_values

        qkv = queries_keys_values(model, ids)
        L, H = qkv.q.shape[:2]
        ls, hs = _pick(layers, L, "layers"), _pick(heads, H, "heads")
        sel = (torch.tensor(ls)[:, None], torch.tensor(hs)[None, :])
        T = qkv.q.shape[2]
        return cls(qkv.q[sel], qkv.k[sel], qkv.v[sel], tokens, query=T - 1 if query is None else query,
                   causal=qkv.causal if causal is None else causal, layer_ids=ls, head_ids=hs, **kwargs)

    def set_data(self, q, k, v, query_tokens, key_tokens=None, *, query_positions: Sequence[int] | None = None,
                 layer_ids: Sequence[int] | None = None, head_ids: Sequence[int] | None = None) -> None:
        """Replace what is shown (checked as in :func:`prepare_steps`); the browser recomputes and redraws."""
        d = prepare_steps(q, k, v, query_tokens, key_tokens, query_positions)
        L, H, Tq, dk = d.q.shape
        Tk, dv = d.v.shape[2:]
        layer_ids = list(range(L)) if layer_ids is None else [int(i) for i in layer_ids]
        head_ids = list(range(H)) if head_ids is None else [int(i) for i in head_ids]
        if len(layer_ids) != L or len(head_ids) != H:
            raise ValueError(f"layer_ids/head_ids must name each of the {L} layers and {H} heads sent, got "
                             f"{layer_ids} and {head_ids}")
        self._data = d
        with self.hold_sync():
            self.dtype = d.dtype
            self.q, self.k, self.v = (np.ascontiguousarray(a, dtype="<" + d.dtype).tobytes() for a in (d.q, d.k, d.v))
            self.shape = [L, H, Tq, Tk, dk, dv]
            self.query_tokens, self.key_tokens, self.query_positions = d.query_tokens, d.key_tokens, d.query_positions
            self.layer_ids, self.head_ids = layer_ids, head_ids
            self.query = min(self.query, Tq - 1)
            self.layer = min(self.layer, L - 1)
            self.head = min(self.head, H - 1)

    @classmethod
    def _live_data(cls, spec, text, request):
        from seqviz.live.kernel import char_lm_forward

        enc, f = char_lm_forward(text)
        return (f.q, f.k, f.v, enc.chars), {}, {"notes": enc.notes, "status": f"read {len(enc.ids)} characters"}

    def _live_run(self, request):
        layer, head = self.layer_ids[self.layer], self.head_ids[self.head]       # the model's numbers shown
        reply = super()._live_run(request)                                       # every layer and head now
        self.layer, self.head = layer, head
        return reply

    def _live_shown(self, request, reply):
        self.query = self.shape[2] - 1                                           # the query that predicts next

    @classmethod
    def live(cls, model, text, *, group=None, options=None, layers: Sequence[int] | int | None = None,
             heads: Sequence[int] | int | None = None, **kwargs):
        """The live widget (see ``seqviz.widgets._live``); ``layers``/``heads`` keep only some of the recorded
        example's (its payload is stored in the page: 4 layers x 4 heads of 40-wide q, k, v over 28 characters are
        about 0.3 MB), while every run on the reader's input shows them all."""
        widget = super().live(model, text, group=group, options=options, **kwargs)
        if layers is not None or heads is not None:
            d = widget.data
            ls, hs = _pick(layers, d.q.shape[0], "layers"), _pick(heads, d.q.shape[1], "heads")
            sel = (np.array(ls)[:, None], np.array(hs)[None, :])
            widget.set_data(*(a[sel].astype(np.float32) for a in (d.q, d.k, d.v)), d.query_tokens,
                            d.key_tokens, layer_ids=ls, head_ids=hs)
        return widget

    @traitlets.validate("index_base")
    def _check_index_base(self, proposal):
        return _index_base(proposal["value"])

    @traitlets.validate("query")
    def _check_query(self, proposal):
        return check_index(proposal["value"], self.shape[2], "query")

    @traitlets.validate("layer")
    def _check_layer(self, proposal):
        return check_index(proposal["value"], self.shape[0], "layer")

    @traitlets.validate("head")
    def _check_head(self, proposal):
        return check_index(proposal["value"], self.shape[1], "head")

    @property
    def data(self) -> StepsData:
        """The checked q, k, v behind the widget (as the browser holds them)."""
        return self._data

    def compute(self, query: int | None = None, layer: int | None = None, head: int | None = None,
                causal: bool | None = None) -> QueryAttention:
        """Every number the widget shows for one query (default: the widget's current choices): the dot products
        and their scaling from q and k, the weights and the output from ``seqviz.attention.attention``."""
        d = self._data
        L, H, Tq, Tk, dk, dv = self.shape
        i = self.query if query is None else check_index(query, Tq, "query")
        l = self.layer if layer is None else check_index(layer, L, "layer")
        h = self.head if head is None else check_index(head, H, "head")
        causal = self.causal if causal is None else bool(causal)
        q, k, v = d.q[l, h, i], d.k[l, h], d.v[l, h]                 # (d_k,), (T_k, d_k), (T_k, d_v)
        mask = np.arange(Tk) <= d.query_positions[i] if causal else np.ones(Tk, dtype=bool)   # (T_k,)
        products = q[None, :] * k                                     # (T_k, d_k) q_i * k_j elementwise
        # (9.35) score(x_i, x_j) = q_i . k_j
        dots = products.sum(-1)                                       # (T_k,)
        # (9.37) scaled by 1 / sqrt(d_k)
        scaled = dots / math.sqrt(dk)
        # (9.31)-(9.32) and (9.36)/(9.39): chapter 6's function (§6.1), the same one every model of the book calls
        out, w = attention(torch.from_numpy(q)[None], torch.from_numpy(k), torch.from_numpy(v),
                           torch.from_numpy(mask)[None])              # (1, d_v), (1, T_k)
        weights = w[0].numpy()
        return QueryAttention(q=q, k=k, v=v, products=products, dots=dots, scaled=scaled, mask=mask,
                              weights=weights, weighted=weights[:, None] * v, output=out[0].numpy())

    def to_figure(self, query: int | None = None, layer: int | None = None, head: int | None = None,
                  causal: bool | None = None):
        """Static matplotlib rendering (for print/PDF): the scores before and after scaling, the softmax weights
        (masked keys hatched) and the weighted values with their sum y_i."""
        from matplotlib.figure import Figure

        r = self.compute(query, layer, head, causal)
        d = self._data
        i = self.query if query is None else query
        l = self.layer if layer is None else layer
        h = self.head if head is None else head
        Tk, dv = r.weighted.shape
        keys = [plain(t) for t in d.key_tokens]
        fig = Figure(figsize=(7.5, 1.8 + 0.2 * Tk), layout="constrained")
        a1, a2, a3 = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.2, 1.0, 1.4]})
        y = np.arange(Tk)
        a1.barh(y - 0.2, r.dots, height=0.4, color="#9bc9e0", label=r"$q_i \cdot k_j$ (9.35)")
        a1.barh(y + 0.2, r.scaled, height=0.4, color="#2a71b2", label=r"$/\sqrt{d_k}$ (9.37)")
        a1.axvline(0, color="black", lw=0.6)
        a1.legend(fontsize=8, loc="lower right")
        a1.set_title("scores", fontsize=9)
        a2.barh(y, r.weights, color="#3b528b")
        for j in np.flatnonzero(~r.mask):
            a2.barh(j, 1.0, color="none", edgecolor="#7a7a7a", hatch="///", lw=0)
        for j in range(Tk):
            a2.text(r.weights[j] + 0.01, j, "masked" if not r.mask[j] else f"{r.weights[j]:.3f}", va="center",
                    fontsize=8)
        a2.set_xlim(0, 1.35)
        a2.set_title(r"softmax weights $\alpha_{ij}$ (9.31)-(9.32)", fontsize=9)
        vmax = float(np.abs(d.v[l, h]).max()) or 1.0
        rows = np.vstack([r.weighted, r.output[None]])               # (T_k + 1, d_v)
        im = a3.imshow(rows, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto", interpolation="nearest")
        a3.axhline(Tk - 0.5, color="black", lw=1.2)
        a3.set_yticks(range(Tk + 1), [*keys, r"$y_i = \sum_j \alpha_{ij} v_j$"], fontsize=8)
        a3.set_xlabel("value dimension", fontsize=8)
        a3.set_title(r"weighted values $\alpha_{ij} v_j$ and their sum (9.36)", fontsize=9)
        fig.colorbar(im, ax=a3, shrink=0.8)
        for ax in (a1, a2):
            ax.set_yticks(y, keys, fontsize=8)
            ax.invert_yaxis()
        mask = "causal mask" if (self.causal if causal is None else causal) else "no mask"
        where = f"layer {self.layer_ids[l]}, head {self.head_ids[h]}, " if self.shape[0] * self.shape[1] > 1 else ""
        fig.suptitle(self.title or f"{where}query {i + self.index_base} \u201c{plain(d.query_tokens[i])}\u201d, {mask}",
                     fontsize=10)
        return fig
