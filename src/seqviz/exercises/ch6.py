"""Chapter 6's exercise check: the causal mask, SLP Fig. 9.17 and (9.31)."""
from __future__ import annotations

from typing import Callable

import torch

from seqviz.exercises._base import as_tensor, call, check, verdict

__all__ = ["check_causal_mask"]


@check
def check_causal_mask(fn: Callable) -> bool:
    """Check ``fn(T) -> (T, T) bool`` where entry [i, j] is True when query i may attend to key j (j <= i)."""
    from seqviz.attention import causal_mask

    for T in (4, 9, 1):
        got, err = call(fn, T)
        if err:
            return verdict(False, err)
        got, err = as_tensor(got, "the mask")
        if err:
            return verdict(False, err)
        want = torch.from_numpy(causal_mask(T))
        if tuple(got.shape) != (T, T):
            return verdict(False, f"the mask for T={T} has shape {tuple(got.shape)}, expected (T, T)")
        if got.dtype != torch.bool:
            return verdict(False, f"the mask has dtype {got.dtype}: make it bool (True = may attend), e.g. with "
                                  f"`.bool()` or a comparison")
        if torch.equal(got, want):
            continue
        if torch.equal(got, want.T):
            return verdict(False, "the mask is transposed: row i is query i, column j is key j, and query i may "
                                  "see keys j <= i (the lower triangle)")
        if torch.equal(got, want & ~torch.eye(T, dtype=torch.bool)):
            return verdict(False, "the diagonal is masked: a position may attend to itself (j = i)")
        if torch.equal(got, ~want):
            return verdict(False, "True and False are swapped: True means 'may attend'")
        return verdict(False, f"the mask for T={T} is not the lower triangle (j <= i)")
    return verdict(True, "causal mask correct for T = 4, 9 and 1")
