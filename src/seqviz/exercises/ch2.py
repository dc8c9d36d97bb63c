"""Chapter 2's exercise check: the fixed-window language model's forward pass, (2.1)-(2.3)."""
from __future__ import annotations

from typing import Callable

import torch

from seqviz.exercises._base import as_tensor, call, check, close, differs, verdict

__all__ = ["check_window_forward", "window_forward"]


def window_forward(idx, E, W, b1, U, b2, *, concat=True, reverse=False, act=torch.tanh, use_b1=True, softmax=True,
                   dim=-1):
    """(2.1)-(2.3) for a batch of windows: idx (B, n) word ids, oldest first -> y_hat (B, V). The keyword switches
    compute the typical mistakes the check names (the defaults are the right answer)."""
    rows = E[idx.flip(1) if reverse else idx]                       # (B, n, d): one embedding per window slot
    e = rows.reshape(rows.shape[0], -1) if concat else rows.sum(1)  # (2.1) (B, n d)
    h = act(e @ W.T + (b1 if use_b1 else 0))                        # (2.2) (B, d_h)
    z = h @ U.T + b2                                                # (B, V) the logits
    return torch.softmax(z, dim=dim) if softmax else z              # (2.3)


def _inputs(g: torch.Generator, B: int, n: int, V: int, d: int, d_h: int):
    idx = torch.randint(0, V, (B, n), generator=g)
    E, W = torch.randn(V, d, generator=g), torch.randn(d_h, n * d, generator=g) / (n * d) ** 0.5
    b1, U, b2 = torch.randn(d_h, generator=g), torch.randn(V, d_h, generator=g), torch.randn(V, generator=g)
    return idx, E, W, b1, U, b2


@check
def check_window_forward(fn: Callable) -> bool:
    """Check ``fn(idx (B, n), E (V, d), W (d_h, n d), b1 (d_h,), U (V, d_h), b2 (V,)) -> y_hat (B, V)`` against
    (2.1)-(2.3) with f = tanh: each row of idx is one window of word ids, oldest first; row b of y_hat is the
    distribution over the V words that follows window b."""
    g = torch.Generator().manual_seed(0)
    for B, n, V, d, d_h in ((4, 3, 11, 5, 7), (1, 2, 6, 3, 4), (6, 4, 9, 2, 5)):
        args = _inputs(g, B, n, V, d, d_h)
        got, err = call(fn, *args)
        if err:
            return verdict(False, err)
        got, err = as_tensor(got, "y_hat")
        if err:
            return verdict(False, err)
        if tuple(got.shape) != (B, V):
            hint = (" (you returned the hidden layer h: the output layer U h + b2 and the softmax follow)"
                    if tuple(got.shape) == (B, d_h) else "")
            return verdict(False, f"y_hat has shape {tuple(got.shape)}, expected (B, V) = ({B}, {V}){hint}")
        want = window_forward(*args)
        if close(got, want):
            continue
        mistakes = [
            (dict(softmax=False), "y_hat holds the logits U h + b2: apply the softmax of (2.3) so each row is a "
                                  "distribution over the V words"),
            (dict(dim=0), "the softmax ran over the batch (dim 0): each row, one window's scores over the V words, "
                          "must sum to one (dim -1)"),
            (dict(reverse=True), "the window's embeddings are concatenated newest first: (2.1) puts the oldest word "
                                 "w_(t-n) first, and W's first block of columns reads it"),
            (dict(act=lambda x: x), "h is W e + b1 with no nonlinearity: (2.2) applies f = tanh"),
            (dict(act=torch.sigmoid), "f is the sigmoid: this chapter's f in (2.2) is tanh"),
            (dict(use_b1=False), "the hidden layer's bias b1 of (2.2) is missing"),
        ]
        for switch, says in mistakes:
            if close(got, window_forward(*args, **switch)):
                return verdict(False, says)
        return verdict(False, differs(f"y_hat for B={B}, n={n}, V={V}", got, want,
                                      "compare your steps with (2.1)-(2.3)"))
    return verdict(True, "window forward pass correct: softmax(U tanh(W [E_w1; ...; E_wn] + b1) + b2) on three "
                         "shapes")
