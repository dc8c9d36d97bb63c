"""The output layer and the cross-entropy in one pass, chunk by chunk: the same loss and gradients as
``F.cross_entropy(h @ W.T, y)``, without the (N, V) logits in memory at once.

With a word vocabulary the output layer dominates a small LM's step (PTB: 10,002 words scored at every position):
PyTorch's log-softmax over (2048, 10002) logits and its backward take longer than the rest of a 2-layer model. Here
the logits of ``chunk`` rows at a time stay in the CPU's cache; the softmax of each chunk is turned into the
gradient at once (softmax - one-hot, SLP (9.12)-(9.13)'s derivative), so the backward pass only scales what the
forward pass computed.
"""
from __future__ import annotations

import torch
from torch import Tensor

from seqviz._checks import IGNORE_INDEX


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h: Tensor, W: Tensor, y: Tensor, chunk: int):
        scored = y != IGNORE_INDEX                                                # (N,)
        n = int(scored.sum())
        dh = torch.empty_like(h) if ctx.needs_input_grad[0] else None
        dW = torch.zeros_like(W) if ctx.needs_input_grad[1] else None
        total = h.new_zeros(())
        rows = torch.arange(chunk, device=h.device)
        for i in range(0, h.shape[0], chunk):
            h_c, y_c, s_c = h[i:i + chunk], y[i:i + chunk].clamp_min(0), scored[i:i + chunk]
            # y_t = softmax(W h_t) for the chunk's rows
            p = torch.softmax(h_c @ W.t(), dim=-1)                                 # (c, V)
            # (9.12) L_CE = -log y_t[w_{t+1}], summed over the scored rows
            p_y = p.gather(1, y_c[:, None]).squeeze(1)                             # (c,)
            total -= torch.where(s_c, p_y.clamp_min(torch.finfo(p.dtype).tiny).log(), 0).sum()
            # dL/dz = y_t - onehot(w_{t+1}) on scored rows, 0 elsewhere
            p[rows[:len(y_c)], y_c] -= 1
            p.mul_(s_c[:, None])
            if dh is not None:
                torch.mm(p, W, out=dh[i:i + chunk])                               # (c, V) @ (V, d)
            if dW is not None:
                dW.addmm_(p.t(), h_c)                                             # (V, c) @ (c, d)
        ctx.save_for_backward(dh, dW)
        ctx.n = max(n, 1)
        return total / ctx.n

    @staticmethod
    def backward(ctx, grad):
        dh, dW = ctx.saved_tensors
        s = grad / ctx.n
        return (None if dh is None else dh * s, None if dW is None else dW * s, None, None)


def linear_cross_entropy(h: Tensor, W: Tensor, y: Tensor, chunk: int = 64) -> Tensor:
    """Mean cross-entropy of the logits ``h @ W.T`` against ``y``: h (N, d), W (V, d), y (N,) with IGNORE_INDEX
    where nothing is scored. Equal to ``F.cross_entropy(h @ W.T, y, ignore_index=IGNORE_INDEX)`` (tested)."""
    if h.dim() != 2 or W.dim() != 2 or h.shape[1] != W.shape[1] or y.shape != h.shape[:1]:
        raise ValueError(f"need h (N, d), W (V, d) and y (N,); got h {tuple(h.shape)}, W {tuple(W.shape)}, "
                         f"y {tuple(y.shape)}")
    if not bool((y != IGNORE_INDEX).any()):
        raise ValueError(f"every target is {IGNORE_INDEX} (ignored): nothing to score")
    return _LinearCrossEntropy.apply(h, W, y, chunk)
