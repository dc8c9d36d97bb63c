"""Look inside a trained transformer: the queries, keys and values each block's self-attention computes, (9.47).

``queries_keys_values(model, ids)`` runs the model's own blocks over one sequence and returns, for every layer, the
Q, K, V its attention took: what one query's attention is computed from, step by step, in the AttentionSteps
widget. Nothing is kept on the model: the projections are returned, as the attention weights are
(``TransformerLM.attention_weights``).

Shapes, batch first: L layers, H heads, T positions, d_k = d_model / H the per-head width.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor

from seqviz import evaluating
from seqviz._checks import _check_ids
from seqviz.attention import attention, causal_mask

from .layers import _check_span
from .lm import TransformerLM

__all__ = ["QKV", "queries_keys_values"]


@dataclass(frozen=True)
class QKV:
    """Every layer's queries, keys and values over one sequence, each (L, H, T, d_k), and whether the model's
    self-attention is causal (query i sees keys j <= i, SLP Fig. 9.17) or bidirectional."""

    q: Tensor
    k: Tensor
    v: Tensor
    causal: bool

    def attention(self, layer: int, head: int) -> tuple[Tensor, Tensor]:
        """(9.39) softmax(Q K^T / sqrt(d_k)) V of one head, with the model's mask: (output (T, d_k), weights (T, T))."""
        T = self.q.shape[2]
        mask = torch.from_numpy(causal_mask(T)) if self.causal else None           # (T, T) True = may attend
        return attention(self.q[layer, head], self.k[layer, head], self.v[layer, head], mask)


def _one_sequence(ids) -> Tensor:
    ids = torch.as_tensor(ids if isinstance(ids, Tensor) else list(ids)).long()
    if ids.dim() == 2 and ids.shape[0] == 1:
        ids = ids[0]                                                               # (1, T) -> (T,)
    if ids.dim() != 1 or ids.numel() == 0:
        raise ValueError(f"ids must be one sequence of token ids, shape (T,) or (1, T), got {tuple(ids.shape)}")
    return ids


@torch.no_grad()
def queries_keys_values(model, ids: Sequence[int] | Tensor) -> QKV:
    """Q, K, V (L, H, T, d_k) of every block of ``model`` over one sequence ``ids`` (T,) or (1, T), in eval mode
    (the caller's mode restored).

    A ``TransformerLM`` is run block by block: the input of block l's attention (the residual stream, after the
    block's LayerNorm in a pre-norm model) is projected by that attention's own ``project``, (9.47), and the block
    then runs as the model runs it. Any other model that offers ``queries_keys_values(ids, layer) -> (Q, K, V)``,
    each (H, T, d_k) (the BERT-style encoder does), is asked layer by layer.
    """
    ids = _one_sequence(ids)
    if isinstance(model, TransformerLM):
        c = model.config
        _check_ids(ids[None], c.vocab_size, "ids")
        _check_span(ids.numel(), 0, c.max_len)
        qs, ks, vs = [], [], []
        with evaluating(model):
            x = model.E(ids[None])                                                 # (1, T, d_model)
            if model.pos is not None:
                # SLP Fig. 9.20: the input is the word embedding plus the position embedding
                x = x + model.pos(ids.numel())                                     # (1, T, d_model) + (T, d_model)
            x = model.drop(x)
            for block in model.blocks:
                a_in = block.ln1(x) if block.norm == "pre" else x                  # what block.attn reads
                # (9.47) Q = X W^Q, K = X W^K, V = X W^V for every head at once
                Q, kv = block.attn.project(a_in)                                   # (1, H, T, d_k), KVCache
                qs.append(Q[0])
                ks.append(kv.K[0])
                vs.append(kv.V[0])
                x = block(x, causal=c.causal).y                                    # (1, T, d_model)
        return QKV(torch.stack(qs), torch.stack(ks), torch.stack(vs), bool(c.causal))   # L x (H, T, d_k)
    per_layer = getattr(model, "queries_keys_values", None)
    blocks = getattr(model, "blocks", None)
    if per_layer is None or blocks is None:
        raise TypeError(f"cannot read queries, keys and values from {type(model).__name__}: pass a "
                        f"seqviz.transformer.TransformerLM, or a model with blocks and a queries_keys_values(ids, "
                        f"layer) method")
    got = [per_layer(ids, layer) for layer in range(len(blocks))]                 # L x 3 x (H, T, d_k)
    q, k, v = (torch.stack([g[n] for g in got]) for n in range(3))                # (L, H, T, d_k) each
    return QKV(q, k, v, bool(getattr(getattr(model, "config", None), "causal", False)))
