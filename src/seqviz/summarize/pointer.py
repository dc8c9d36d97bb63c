"""The copy mechanism: a pointer-generator head any of the package's decoders can wear (See et al. 2017; the
switching generator-pointer of Nallapati et al. 2016).

At summary step t the decoder's state h_t attends over the article's positions (the copy attention a_t, one head,
scaled dot product of W_q h_t and W_k m_j), reads the context c_t = sum_j a_t[j] m_j, and mixes two distributions:

    p_gen = sigmoid(w^T [h_t; c_t] + b)
    p(w)  = p_gen p_vocab(w) + (1 - p_gen) sum_{j: x_j = w} a_t[j]

so a word of the article can be written even if the vocabulary lacks it: each article gets *extended ids*, V + k
for its k-th word outside the vocabulary (:class:`SourceIds`), and p is a distribution over V + n_oov ids.
The memory m is whatever the decoder can point at: the encoder's outputs in an encoder-decoder, the LM's own states
at the article's positions in SLP's decoder-only δ format.

Shapes: B batch, T summary positions, S article positions, V vocabulary, d = d_model.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor, nn

__all__ = ["CopyOut", "CopyHead", "copy_distribution", "copy_target_logprob", "check_prior"]


def check_prior(prior: Tensor, memory_mask: Tensor) -> None:
    """The rule for a bottom-up copy prior (B, S), checked wherever one enters: finite, non-negative weights, with a
    positive weight at one article position (where ``memory_mask`` is True) at least in every row. An all-zero row
    would switch copying off silently (the renormalised attention is all zeros); NaN spreads through the mixture."""
    if not isinstance(prior, Tensor) or prior.shape != memory_mask.shape:
        raise ValueError(f"prior must be weights of shape (B, S) = {tuple(memory_mask.shape)}, one per article token, "
                         f"got {tuple(prior.shape) if isinstance(prior, Tensor) else type(prior).__name__}")
    for bad, what in ((~torch.isfinite(prior), "NaN or inf"), (prior < 0, "a negative weight")):
        if bool(bad.any()):
            b, j = (int(i) for i in bad.nonzero()[0])
            raise ValueError(f"prior holds {what} ({float(prior[b, j])} at row {b}, article position {j}): pass "
                             f"finite weights >= 0, such as a selector's p(keep) of each token (token_prior)")
    dead = ~((prior > 0) & memory_mask.bool()).any(1)
    if bool(dead.any()):
        raise ValueError(f"row {int(dead.nonzero()[0])} of prior is zero at every article position: that would "
                         f"switch copying off; give at least one token a positive weight (token_prior keeps a floor "
                         f"of 1e-3 for every token), or pass prior=None for no prior")


class CopyOut(NamedTuple):
    """What the copy head computed at every summary position: ``a`` (B, T, S) the copy attention over the article,
    ``c`` (B, T, d) its context vector, ``p_gen`` (B, T) the probability of generating from the vocabulary."""
    a: Tensor
    c: Tensor
    p_gen: Tensor


class CopyHead(nn.Module):
    """a_t = softmax_j((W_q h_t) . (W_k m_j) / sqrt(d)) over the real article positions; c_t = sum_j a_t[j] m_j;
    p_gen = sigmoid(w^T [h_t; c_t] + b). forward(h (B, T, d), memory (B, S, d), memory_mask (B, S) True = an article
    token, prior (B, S) | None) -> CopyOut.

    ``prior``: bottom-up copy attention (Gehrmann et al. 2018): a content selector's weight for each article
    position (e.g. p(keep) of the keep/drop selector) multiplies a_t, which is renormalised: the head points at what
    the selector thinks a headline would keep. None: the head alone decides."""

    def __init__(self, d_model: int):
        super().__init__()
        if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model < 1:
            raise ValueError(f"d_model must be a positive int, got {d_model!r}")
        self.d_model = d_model
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.w_gen = nn.Linear(2 * d_model, 1)                                    # w and b of p_gen

    def forward(self, h: Tensor, memory: Tensor, memory_mask: Tensor, prior: Tensor | None = None) -> CopyOut:
        if h.dim() != 3 or memory.dim() != 3 or h.shape[0] != memory.shape[0] or h.shape[-1] != self.d_model \
                or memory.shape[-1] != self.d_model:
            raise ValueError(f"h must be (B, T, {self.d_model}) and memory (B, S, {self.d_model}), got "
                             f"{tuple(h.shape)} and {tuple(memory.shape)}")
        if memory_mask.shape != memory.shape[:2]:
            raise ValueError(f"memory_mask must be (B, S) = {tuple(memory.shape[:2])}, got {tuple(memory_mask.shape)}")
        if not bool(memory_mask.any(1).all()):
            raise ValueError("a row of memory_mask is all False: every article needs at least one token to copy from")
        scores = self.W_q(h) @ self.W_k(memory).transpose(1, 2) / math.sqrt(self.d_model)   # (B, T, S)
        scores = scores.masked_fill(~memory_mask[:, None, :], float("-inf"))
        a = scores.softmax(-1)                                                    # (B, T, S) the copy attention a_t
        if prior is not None:
            check_prior(prior, memory_mask)
            a = a * prior[:, None, :]                                             # (B, T, S) bottom-up: a_t[j] w_j
            a = a / a.sum(-1, keepdim=True).clamp_min(1e-12)                      # renormalised over the article
        c = a @ memory                                                            # (B, T, d) c_t = sum_j a_t[j] m_j
        # p_gen = sigmoid(w^T [h_t; c_t] + b)
        p_gen = torch.sigmoid(self.w_gen(torch.cat([h, c], -1))).squeeze(-1)     # (B, T, 2d) -> (B, T)
        return CopyOut(a, c, p_gen)


def _check_mix(vocab_logits: Tensor, out: CopyOut, src_ext: Tensor) -> None:
    B, T, _ = vocab_logits.shape
    if out.a.shape[:2] != (B, T) or out.p_gen.shape != (B, T):
        raise ValueError(f"copy attention {tuple(out.a.shape)} and p_gen {tuple(out.p_gen.shape)} must match the "
                         f"logits' (B, T) = {(B, T)}")
    if src_ext.shape != (B, out.a.shape[2]):
        raise ValueError(f"src_ext must be (B, S) = {(B, out.a.shape[2])}, got {tuple(src_ext.shape)}")


def copy_distribution(vocab_logits: Tensor, out: CopyOut, src_ext: Tensor, n_ext: int) -> Tensor:
    """p(w) = p_gen p_vocab(w) + (1 - p_gen) sum_{j: x_j = w} a_t[j] over the extended vocabulary:
    vocab_logits (B, T, V), src_ext (B, S) each article position's extended id -> p (B, T, V + n_ext), rows sum to 1."""
    _check_mix(vocab_logits, out, src_ext)
    B, T, V = vocab_logits.shape
    if int(src_ext.max()) >= V + n_ext:
        raise ValueError(f"src_ext holds id {int(src_ext.max())} but the extended vocabulary has V + n_ext = "
                         f"{V + n_ext} ids: pass n_ext = the largest number of article-only words in the batch")
    p_gen = out.p_gen.unsqueeze(-1)                                               # (B, T, 1)
    p = torch.zeros(B, T, V + n_ext, dtype=vocab_logits.dtype, device=vocab_logits.device)
    p[..., :V] = p_gen * vocab_logits.softmax(-1)                                 # p_gen p_vocab(w)
    # + (1 - p_gen) sum_{j: x_j = w} a_t[j]: scatter each position's weight onto its word's id
    p.scatter_add_(2, src_ext[:, None, :].expand(B, T, src_ext.shape[1]), (1 - p_gen) * out.a)
    return p


def copy_target_logprob(vocab_logits: Tensor, out: CopyOut, src_ext: Tensor, target: Tensor) -> Tensor:
    """log p(y_t) of the same mixture at the target ids only (B, T), without building the (B, T, V + n) tensor:
    what training needs. ``target`` holds extended ids; negative ids (ignored positions) give 0."""
    _check_mix(vocab_logits, out, src_ext)
    V = vocab_logits.shape[-1]
    t = target.clamp(min=0)
    in_vocab = t < V
    log_p_vocab = vocab_logits.log_softmax(-1)                                    # (B, T, V)
    p_vocab = log_p_vocab.gather(-1, torch.where(in_vocab, t, 0).unsqueeze(-1)).squeeze(-1).exp() * in_vocab
    p_copy = (out.a * (src_ext[:, None, :] == t[:, :, None])).sum(-1)              # (B, T) sum_{j: x_j = y_t} a_t[j]
    p = out.p_gen * p_vocab + (1 - out.p_gen) * p_copy
    return torch.where(target >= 0, torch.log(p.clamp_min(1e-12)), torch.zeros_like(p))
