"""Decoding from any language model: greedy, temperature, top-k sampling and beam search.

Everything here works over one small contract, a *score function*
``score_fn(context_ids: list[int]) -> (V,)`` returning logits or log-probabilities for the next token. Every LM in
the book, n-gram included, provides one (``model.next_token_logits``), so one decoder serves every chapter.
Log-probabilities are logits too (softmax of log p is p), so temperature means the same thing for both:
softmax(z / T) is p^(1/T) renormalised.
"""
from __future__ import annotations

import math
import numbers
from typing import Callable, Sequence

import numpy as np
import torch

from seqviz._checks import check_temperature as _check_temperature

__all__ = ["ScoreFn", "softmax_with_temperature", "top_k_filter", "sample_next", "generate", "beam_search"]

ScoreFn = Callable[[Sequence[int]], "torch.Tensor | np.ndarray"]


def _as_logits(logits) -> torch.Tensor:
    z = torch.as_tensor(np.asarray(logits) if not isinstance(logits, torch.Tensor) else logits)
    z = z.detach().to(torch.float64)
    if z.dim() != 1:
        raise ValueError(f"expected next-token scores of shape (V,), got {tuple(z.shape)}")
    if z.numel() == 0:
        raise ValueError("next-token scores are empty: the vocabulary has no tokens")
    if torch.isnan(z).any():
        raise ValueError("next-token scores contain NaN; check the model (e.g. a log of a negative number)")
    if not torch.isfinite(z).any():
        raise ValueError("every next-token score is -inf: the model gives no token any probability")
    return z


def softmax_with_temperature(logits, temperature: float = 1.0) -> torch.Tensor:
    """softmax(z / T) as float64: T < 1 sharpens the distribution, T > 1 flattens it, T = 1 leaves it."""
    z = _as_logits(logits)
    T = _check_temperature(temperature)
    return torch.softmax(z / T, dim=0)


def top_k_filter(logits, k: int | None) -> torch.Tensor:
    """Keep the k highest scores and set the rest to -inf (ties at the k-th score are kept)."""
    z = _as_logits(logits)
    if k is None:
        return z
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"top_k must be a positive int or None, got {k!r}")
    if k >= z.numel():
        return z
    kth = torch.topk(z, k).values[-1]
    return torch.where(z >= kth, z, torch.full_like(z, -math.inf))


def sample_next(logits, temperature: float = 1.0, top_k: int | None = None,
                generator: torch.Generator | None = None) -> int:
    """Draw one token id from softmax(top_k(z) / T)."""
    probs = softmax_with_temperature(top_k_filter(logits, top_k), temperature)
    return int(torch.multinomial(probs, 1, generator=generator).item())


def generate(score_fn: ScoreFn, prompt_ids: Sequence[int], max_new_tokens: int, *, temperature: float = 1.0,
             top_k: int | None = None, greedy: bool = False, stop_id: int | None = None,
             seed: int | None = None) -> list[int]:
    """Extend ``prompt_ids`` one token at a time; stops after ``stop_id`` (kept) or ``max_new_tokens``.

    ``greedy=True`` takes the arg-max each step (the T -> 0 limit of sampling). ``seed`` makes a sampled run
    repeatable without touching the global random state. Returns only the new ids.
    """
    if not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be a non-negative int, got {max_new_tokens!r}")
    context = [int(i) for i in prompt_ids]
    if not greedy:
        _check_temperature(temperature)
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    new: list[int] = []
    for _ in range(max_new_tokens):
        z = _as_logits(score_fn(context))
        nxt = int(torch.argmax(z).item()) if greedy else sample_next(z, temperature, top_k, gen)
        new.append(nxt)
        context.append(nxt)
        if stop_id is not None and nxt == stop_id:
            break
    return new


def beam_search(score_fn: ScoreFn, prompt_ids: Sequence[int], beam_size: int, max_new_tokens: int,
                stop_id: int | None = None, length_penalty: float = 0.0) -> list[tuple[list[int], float]]:
    """Keep the ``beam_size`` best continuations by total log-probability; return them best first.

    Scores are normalised with log_softmax, so logits and log-probs both work. A hypothesis that emits ``stop_id``
    is finished. Ranking divides the log-probability by ``len ** length_penalty`` (0 = plain sum, which favours
    short outputs; about 0.6-1.0 counters that). Returns ``(new_ids, logprob)`` pairs.
    """
    if not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_size must be a positive int, got {beam_size!r}")
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
    prompt = [int(i) for i in prompt_ids]

    def rank(item):
        ids, lp = item
        return lp / (max(len(ids), 1) ** length_penalty)

    beams: list[tuple[list[int], float]] = [([], 0.0)]
    finished: list[tuple[list[int], float]] = []
    for _ in range(max_new_tokens):
        candidates: list[tuple[list[int], float]] = []
        for ids, lp in beams:
            logp = torch.log_softmax(_as_logits(score_fn(prompt + ids)), dim=0)
            k = min(beam_size, int(torch.isfinite(logp).sum()))
            top = torch.topk(logp, k)
            for v, i in zip(top.values.tolist(), top.indices.tolist()):
                candidates.append((ids + [i], lp + v))
        candidates.sort(key=rank, reverse=True)
        beams = []
        for ids, lp in candidates:
            if stop_id is not None and ids[-1] == stop_id:
                finished.append((ids, lp))
            else:
                beams.append((ids, lp))
            if len(beams) == beam_size:
                break
        if not beams or len(finished) >= beam_size and rank(max(finished, key=rank)) >= rank(beams[0]):
            break
    return sorted(finished + beams, key=rank, reverse=True)[:beam_size]
