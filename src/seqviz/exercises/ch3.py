"""Chapter 3's exercise check: one step of the Elman network, (9.3)."""
from __future__ import annotations

from typing import Callable

import torch

from seqviz.exercises._base import as_tensor, call, check, close, differs, verdict

__all__ = ["check_elman_step"]


@check
def check_elman_step(fn: Callable) -> bool:
    """Check ``fn(x_t (B, d_in), h_prev (B, d_h), W (d_h, d_in), U (d_h, d_h)) -> h_t (B, d_h)`` against (9.3),
    h_t = tanh(U h_{t-1} + W x_t), on three random shapes (batched: row b of x_t and h_prev is one sequence)."""
    g = torch.Generator().manual_seed(0)
    for B, d_in, d_h in ((1, 3, 4), (5, 7, 2), (2, 6, 6)):
        x, h = torch.randn(B, d_in, generator=g), torch.randn(B, d_h, generator=g)
        W, U = torch.randn(d_h, d_in, generator=g), torch.randn(d_h, d_h, generator=g)
        got, err = call(fn, x, h, W, U)
        if err:
            return verdict(False, err)
        got, err = as_tensor(got, "h_t")
        if err:
            return verdict(False, err)
        want_a = h @ U.T + x @ W.T                                      # (B, d_h) the pre-activation
        want = torch.tanh(want_a)
        if tuple(got.shape) != (B, d_h):
            return verdict(False, f"h_t has shape {tuple(got.shape)}, expected (B, d_h) = ({B}, {d_h}); W x_t with "
                                  f"a batch is x_t @ W.T")
        if close(got, want):
            continue
        if close(got, want_a):
            return verdict(False, "h_t equals U h_{t-1} + W x_t: apply the activation g = tanh of (9.3)")
        if close(got, torch.tanh(x @ W.T)):
            return verdict(False, "h_t ignores h_{t-1}: the recurrence is what makes it an RNN (U h_{t-1})")
        return verdict(False, differs(f"h_t for B={B}, d_in={d_in}, d_h={d_h}", got, want,
                                      "compare it with tanh(U h_(t-1) + W x_t) (9.3)"))
    return verdict(True, "elman step correct: h_t = tanh(U h_(t-1) + W x_t) on three shapes")
