"""Chapters 5 and 6: attention maths. The causal mask, the masked softmax, scaled dot-product attention, and the score
modules of encoder-decoder attention (SLP 3rd ed. draft, ch. 9, (9.30)-(9.39)).

Chapter 6 teaches self-attention with ``attention`` (§6.1), and its transformer layers and the attention widget
import from here; the recurrent encoder-decoder that uses ``SoftAttention`` is ``seqviz.seq2seq``, the lecture's
worked examples are ``seqviz.worked_examples``.

Shapes, batch first: B batch, T_q query positions, T_k key positions, d_k key/query width, d_v value width.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor, nn

__all__ = ["causal_mask", "masked_softmax", "attention", "DotScore", "GeneralScore", "AdditiveScore",
           "SoftAttention"]


def causal_mask(tq: int, tk: int | None = None) -> np.ndarray:
    """(T_q, T_k) bool, True where query i may attend to key j (j <= i): the decoder's mask, SLP Fig. 9.17.

    Before the softmax the masked scores (the upper triangle) are set to -inf, so (9.31) sums over j <= i only.
    """
    tk = tq if tk is None else tk
    for name, n in (("tq", tq), ("tk", tk)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"{name} must be a positive int (a number of positions), got {n!r}")
    return np.tril(np.ones((int(tq), int(tk)), dtype=bool))


# ----------------------------------------------------------------------------------------------------------------
# Soft lookup: scores -> softmax over keys -> weighted sum of values
# ----------------------------------------------------------------------------------------------------------------
def _check_qkv(q, k, v) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch tensor, got {type(t).__name__}")
        if not t.dtype.is_floating_point:
            raise TypeError(f"{name} must be a floating-point tensor, got dtype {t.dtype}; convert with .float()")
        if t.dim() < 2:
            raise ValueError(f"{name} must have shape (..., T, d) with a time axis and a width axis, got shape "
                             f"{tuple(t.shape)}; for a single vector use {name}.unsqueeze(0)")
        if t.shape[-2] == 0 or t.shape[-1] == 0:
            raise ValueError(f"{name} is empty (shape {tuple(t.shape)}): attention needs at least one position "
                             f"and a width of at least 1")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"queries and keys must have the same width d_k to take dot products: q is (..., T_q, "
                         f"{q.shape[-1]}), k is (..., T_k, {k.shape[-1]}); project them to one width (W^Q, W^K)")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"keys and values must have the same length T_k (one value per key): k has "
                         f"{k.shape[-2]} positions, v has {v.shape[-2]}")
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(f"the leading (batch/head) dims of q {tuple(q.shape[:-2])}, k {tuple(k.shape[:-2])} "
                         f"and v {tuple(v.shape[:-2])} do not broadcast; give the same batch size") from None


def _check_attn_mask(mask, scores_shape: torch.Size) -> Tensor:
    if isinstance(mask, np.ndarray):
        mask = torch.from_numpy(mask)
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor (True = may attend), got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}")
    tq, tk = scores_shape[-2:]
    if mask.dim() < 2 or mask.shape[-1] != tk or mask.shape[-2] not in (1, tq):
        raise ValueError(f"mask must broadcast to the scores' shape (..., T_q, T_k) = {tuple(scores_shape)}, got "
                         f"{tuple(mask.shape)}; for a (B, T_k) padding mask pass mask[:, None, :], for a causal "
                         f"mask causal_mask(T_q, T_k)")
    try:
        full = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        full = None
    if full is None or full != scores_shape:
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' shape "
                         f"{tuple(scores_shape)} (..., T_q, T_k)")
    if not bool(mask.any(-1).all()):
        raise ValueError("a query row of the mask is all False: that query may attend to nothing, and its softmax "
                         "would be 0/0. Give every query at least one key (e.g. drop empty source sequences)")
    return mask


def masked_softmax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """(9.31)-(9.32) softmax over the last axis (keys), with masked scores set to -inf first: their weight is exactly 0."""
    if mask is not None:
        mask = _check_attn_mask(mask, scores.shape).to(scores.device)
        scores = scores.masked_fill(~mask, -math.inf)
    return torch.softmax(scores, dim=-1)


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, scale: float | None = None
              ) -> tuple[Tensor, Tensor]:
    """Scaled dot-product attention, (9.37)-(9.39): softmax(Q K^T / sqrt(d_k)) V, batch first, any leading dims.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> output (..., T_q, d_v), weights (..., T_q, T_k).
    ``mask`` (bool, broadcast to (..., T_q, T_k)) is True where a query may attend to a key. ``scale`` defaults to
    1/sqrt(d_k); 1.0 gives the unscaled dot product of (9.30)/(9.35). The transformer chapter reuses this function.
    """
    _check_qkv(q, k, v)
    d_k = q.shape[-1]
    scale = 1.0 / math.sqrt(d_k) if scale is None else float(scale)
    # (9.37)/(9.38) score(x_i, x_j) = q_i . k_j / sqrt(d_k), all pairs at once: (..., T_q, T_k)
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    # (9.31)-(9.32) alpha_ij = softmax_j(score(x_i, x_j)), masked keys get weight 0
    weights = masked_softmax(scores, mask)
    # (9.36)/(9.39) y_i = sum_j alpha_ij v_j: (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    output = torch.matmul(weights, v)
    return output, weights


# ----------------------------------------------------------------------------------------------------------------
# Score functions for encoder-decoder attention: query (..., T_q, d_q) x keys (..., T_k, d_k) -> (..., T_q, T_k)
# ----------------------------------------------------------------------------------------------------------------
class DotScore(nn.Module):
    """score(h_dec, h_enc) = h_dec . h_enc (Luong et al., 2015, "dot"): no parameters, widths must match."""

    def __init__(self, d_q: int | None = None, d_k: int | None = None):
        super().__init__()
        if d_q is not None and d_k is not None and d_q != d_k:
            raise ValueError(f"dot scores need the query and key widths to match, got d_q={d_q}, d_k={d_k}; "
                             f"use GeneralScore or AdditiveScore for different widths")

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        if query.shape[-1] != keys.shape[-1]:
            raise ValueError(f"dot scores need the query and key widths to match, got {query.shape[-1]} and "
                             f"{keys.shape[-1]}")
        return torch.matmul(query, keys.transpose(-2, -1))  # (..., T_q, d) @ (..., d, T_k) -> (..., T_q, T_k)


class GeneralScore(nn.Module):
    """score(h_dec, h_enc) = h_dec^T W_a h_enc (Luong et al., 2015, "general", bilinear)."""

    def __init__(self, d_q: int, d_k: int):
        super().__init__()
        self.W_a = nn.Linear(d_k, d_q, bias=False)

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        # W_a h_enc for every key: (..., T_k, d_q), then dot with each query -> (..., T_q, T_k)
        return torch.matmul(query, self.W_a(keys).transpose(-2, -1))


class AdditiveScore(nn.Module):
    """score(s, h_j) = v_a^T tanh(W_a s + U_a h_j) (Bahdanau, Cho & Bengio, 2015; Luong's "concat")."""

    def __init__(self, d_q: int, d_k: int, d_attn: int | None = None):
        super().__init__()
        d_attn = d_q if d_attn is None else d_attn
        self.W_a = nn.Linear(d_q, d_attn, bias=False)
        self.U_a = nn.Linear(d_k, d_attn, bias=True)
        self.v_a = nn.Linear(d_attn, 1, bias=False)

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        wq = self.W_a(query).unsqueeze(-2)   # (..., T_q, 1, d_attn)
        uk = self.U_a(keys).unsqueeze(-3)    # (..., 1, T_k, d_attn)
        return self.v_a(torch.tanh(wq + uk)).squeeze(-1)  # (..., T_q, T_k, 1) -> (..., T_q, T_k)


SCORES = {"dot": DotScore, "general": GeneralScore, "additive": AdditiveScore}


class SoftAttention(nn.Module):
    """Encoder-decoder attention: scores of one kind, softmax over source positions, context c_t = sum_j a_tj h_j."""

    def __init__(self, score: str, d_q: int, d_k: int, d_attn: int | None = None):
        super().__init__()
        if score not in SCORES:
            raise ValueError(f"score must be one of {', '.join(map(repr, SCORES))}; got {score!r}")
        self.kind = score
        self.score = (AdditiveScore(d_q, d_k, d_attn) if score == "additive" else SCORES[score](d_q, d_k))

    def forward(self, query: Tensor, keys: Tensor, values: Tensor | None = None, mask: Tensor | None = None
                ) -> tuple[Tensor, Tensor]:
        """query (..., T_q, d_q), keys (..., T_k, d_k), values (default keys), mask (..., T_q or 1, T_k) ->
        (context (..., T_q, d_v), weights (..., T_q, T_k))."""
        values = keys if values is None else values
        _check_qkv(query if self.kind == "dot" else keys, keys, values)
        if not isinstance(query, Tensor) or query.dim() < 2 or query.shape[-2] == 0:
            raise ValueError(f"query must be a non-empty tensor (..., T_q, d_q), got "
                             f"{tuple(query.shape) if isinstance(query, Tensor) else type(query).__name__}")
        scores = self.score(query, keys)            # (..., T_q, T_k)
        weights = masked_softmax(scores, mask)      # (..., T_q, T_k)
        return torch.matmul(weights, values), weights  # (..., T_q, d_v)
