"""Training data for a context-window language model (chapters 7-8): random windows of a token stream, and BERT's
masked-LM corruption of them (Devlin et al. 2019).

- :func:`random_windows`  windows of T tokens from random places, each with its next-token targets (SLP Fig. 9.21)
- :func:`mask_tokens`     choose 15 % of the tokens; of those 80 % become [MASK], 10 % a random real token, 10 % stay
- :func:`masked_windows`  ``random_windows`` corrupted by ``mask_tokens``: a masked LM's training batches

Every function is seeded by its own ``seed`` or ``generator``, never the global random state.
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from seqviz._checks import IGNORE_INDEX, _check_ids, _check_positive

from .batches import Batch

__all__ = ["random_windows", "mask_tokens", "masked_windows"]


def random_windows(ids: Tensor, n_batches: int, batch_size: int, T: int, seed: int = 0) -> list[Batch]:
    """``n_batches`` Batches of ``batch_size`` windows of T tokens from random places of ``ids`` (1-D): x the
    window, y the same window shifted by one (the next token at every position, all trained in parallel: SLP
    Fig. 9.21). Seeded by ``seed`` alone, never the global RNG."""
    _check_positive(n_batches=n_batches, batch_size=batch_size, T=T)
    ids = torch.as_tensor(ids).long()
    if ids.dim() != 1 or ids.numel() < T + 1:
        raise ValueError(f"ids must be a 1-D sequence of more than T={T} token ids, got shape {tuple(ids.shape)}")
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(ids.numel() - T, (n_batches, batch_size), generator=g)   # (n, B)
    rows = ids[start[..., None] + torch.arange(T + 1)]                              # (n, B, T + 1)
    return [Batch(r[:, :-1], r[:, 1:]) for r in rows]                               # (B, T) each


def _real_ids(vocab_size: int, mask_id: int, special_ids: Sequence[int]) -> Tensor:
    """The ids a random replacement is drawn from: the vocabulary without [MASK] and the special ids."""
    special = {int(i) for i in special_ids}
    bad = sorted(i for i in special if not 0 <= i < vocab_size)
    if bad:
        raise ValueError(f"special_ids {bad} are not in the vocabulary [0, {vocab_size})")
    real = torch.tensor([i for i in range(vocab_size) if i != mask_id and i not in special], dtype=torch.long)
    if real.numel() == 0:
        raise ValueError(f"no real token left to draw: the vocabulary of {vocab_size} ids holds only [MASK] "
                         f"({mask_id}) and special_ids {sorted(special)}")
    return real


def mask_tokens(ids: Tensor, mask_id: int, vocab_size: int, p: float = 0.15, generator: torch.Generator | None = None,
                special_ids: Sequence[int] = ()) -> tuple[Tensor, Tensor]:
    """BERT's masked-LM corruption (Devlin et al. 2019): choose each token with probability p; of the chosen, 80 %
    become ``mask_id``, 10 % a random real token, 10 % stay. Returns (x (B, T) the corrupted input, y (B, T) the
    original ids at chosen positions and IGNORE_INDEX elsewhere).

    ``special_ids`` (padding, <s>, ...) are not real tokens: never chosen, and never drawn as the random token, nor is
    ``mask_id`` (the random token is uniform over the rest of [0, vocab_size)).
    """
    _check_ids(ids, vocab_size, "ids")
    if not 0 < p < 1:
        raise ValueError(f"p (the share of tokens to predict) must be in (0, 1), got {p}")
    if not 0 <= mask_id < vocab_size:
        raise ValueError(f"mask_id {mask_id} is not in the vocabulary [0, {vocab_size}); add a mask token first")
    real = _real_ids(vocab_size, mask_id, special_ids)                            # (n_real,)
    cpu = ids.cpu()
    u = torch.rand(cpu.shape, generator=generator)                                # (B, T)
    chosen = u < p
    for k in special_ids:
        chosen &= cpu != int(k)
    r = torch.rand(cpu.shape, generator=generator)                                # (B, T) which corruption
    rand_ids = real[torch.randint(real.numel(), cpu.shape, generator=generator)]  # (B, T) random real tokens
    x = torch.where(chosen & (r < 0.8), torch.full_like(cpu, mask_id), cpu)
    x = torch.where(chosen & (r >= 0.8) & (r < 0.9), rand_ids, x)
    y = torch.where(chosen, cpu, torch.full_like(cpu, IGNORE_INDEX))
    return x.to(ids.device), y.to(ids.device)


def masked_windows(ids: Tensor, n_batches: int, batch_size: int, T: int, mask_id: int, vocab_size: int,
                   p: float = 0.15, seed: int = 0, special_ids: Sequence[int] = ()) -> list[Batch]:
    """Training data for a masked LM: ``random_windows`` of T tokens, each corrupted by :func:`mask_tokens` (15 %
    chosen; 80 % [MASK], 10 % a random real token, 10 % kept): Batch(x the corrupted window, y the original ids at
    the chosen positions, IGNORE_INDEX elsewhere). Seeded by ``seed`` alone."""
    g = torch.Generator().manual_seed(seed + 1)
    return [Batch(*mask_tokens(b.x, mask_id, vocab_size, p=p, generator=g, special_ids=special_ids))
            for b in random_windows(ids, n_batches, batch_size, T, seed=seed)]
