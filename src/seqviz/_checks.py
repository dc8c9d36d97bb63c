"""Checks and constants shared by every module: each error says what was wrong and what to do.

One definition of each: ``IGNORE_INDEX`` (targets that are not scored), the positive-int, choice, temperature,
token-id, target and padding-mask checks. Model modules, the trainer, the decoder and the widgets import them from here.
"""

from __future__ import annotations

import torch
from torch import Tensor

IGNORE_INDEX = -100  # target value that is not scored (as in F.cross_entropy)
_IMPLS = ("scratch", "fused")
_MERGES = ("concat", "sum", "mean")
_NONLINEARITIES = {"tanh": torch.tanh, "relu": torch.relu}


def check_temperature(temperature) -> float:
    """A sampling temperature: a real number > 0 (T -> 0 is greedy decoding, which has its own switch)."""
    import math
    import numbers
    if not isinstance(temperature, numbers.Real) or isinstance(temperature, bool) or math.isnan(temperature):
        raise TypeError(f"temperature must be a number, got {temperature!r}")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 (got {temperature}); for the most likely token use "
                         "greedy=True, which is the limit T -> 0")
    return float(temperature)


def _check_choice(name: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")


def _check_positive(**sizes: int) -> None:
    for name, n in sizes.items():
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"{name} must be a positive int, got {n!r}")


def _check_ids(idx, vocab_size: int, name: str = "idx") -> None:
    """Token ids: an integer tensor of shape (B, T), non-empty, every id in [0, vocab_size)."""
    if not isinstance(idx, Tensor):
        raise TypeError(f"{name} must be a torch tensor of token ids, got {type(idx).__name__}; "
                        f"use torch.tensor(ids, dtype=torch.long)")
    if idx.dtype.is_floating_point or idx.dtype.is_complex or idx.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {idx.dtype}; convert with .long()")
    if idx.dim() != 2:
        raise ValueError(f"{name} must have shape (B, T) = (batch, time), got shape {tuple(idx.shape)}; "
                         f"for a single sequence use {name}.unsqueeze(0)")
    if idx.numel() == 0:
        raise ValueError(f"empty batch: {name} has shape {tuple(idx.shape)}; give at least one sequence "
                         f"with at least one token")
    lo, hi = int(idx.min()), int(idx.max())
    if lo < 0 or hi >= vocab_size:
        bad = lo if lo < 0 else hi
        raise ValueError(f"token id {bad} in {name} is outside the vocabulary (ids must be in [0, {vocab_size})); "
                         f"encode text with the Vocab the model was built for (unknown words map to <unk>)")


def _check_targets(targets, shape: tuple, n_classes: int, where: Tensor | None = None) -> None:
    """Targets: integer tensor of `shape`, each a class id in [0, n_classes) or IGNORE_INDEX (where scored)."""
    if not isinstance(targets, Tensor):
        raise TypeError(f"targets must be a torch tensor of class ids, got {type(targets).__name__}")
    if targets.dtype.is_floating_point or targets.dtype == torch.bool:
        raise TypeError(f"targets must hold integer class ids, got dtype {targets.dtype}; convert with .long()")
    if tuple(targets.shape) != tuple(shape):
        raise ValueError(f"targets must have shape {tuple(shape)} to match the input, got {tuple(targets.shape)}")
    scored = targets if where is None else targets[where]
    bad = scored[(scored != IGNORE_INDEX) & ((scored < 0) | (scored >= n_classes))]
    if bad.numel():
        raise ValueError(f"target {int(bad[0])} is outside [0, {n_classes}) (use {IGNORE_INDEX} for positions "
                         f"that should not be scored)")


def _check_mask(mask, shape: tuple) -> Tensor:
    """Padding mask (B, T), True = real token, right-padded, at least one real token per row; returns lengths (B,)."""
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor (True = real token), got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}; pad_batch returns one")
    if tuple(mask.shape) != tuple(shape):
        raise ValueError(f"mask must have shape (B, T) = {tuple(shape)}, got {tuple(mask.shape)}")
    lengths = mask.sum(1)                                                         # (B,)
    if bool((lengths == 0).any()):
        row = int((lengths == 0).nonzero()[0])
        raise ValueError(f"row {row} of the batch has no real token (its mask is all False); drop empty sequences")
    positions = torch.arange(mask.shape[1], device=mask.device)                  # (T,)
    if not torch.equal(mask, positions[None, :] < lengths[:, None]):
        raise ValueError("mask must be right-padded (real tokens first, then padding), as pad_batch produces")
    return lengths
