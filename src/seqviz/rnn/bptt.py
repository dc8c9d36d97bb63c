"""Backpropagation through time written out by hand (no autograd), and the gradient-norm-by-distance measurements
of the vanishing gradient problem. Shapes: B batch, T time, d_in, d_h, V vocabulary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqviz._checks import IGNORE_INDEX, _check_ids, _check_targets
from .elman import ElmanCell

if TYPE_CHECKING:
    from .lm import RNNLM

__all__ = ["BPTTGrads", "elman_bptt", "rnnlm_manual_gradients", "grad_norm_by_distance", "lm_grad_norm_by_distance"]


@dataclass
class BPTTGrads:
    """Gradients of a loss L for one Elman layer, from `elman_bptt`."""

    W: Tensor       # dL/dW (d_h, d_in)
    U: Tensor       # dL/dU (d_h, d_h)
    b_W: Tensor     # (d_h,)
    b_U: Tensor     # (d_h,)
    x: Tensor       # dL/dx_t (B, T, d_in)
    h: Tensor       # dL/dh_t (B, T, d_h), total: through y_t and through h_{t+1}
    h0: Tensor      # dL/dh_0 (B, d_h)


def elman_bptt(cell: ElmanCell, x: Tensor, h0: Tensor, dL_dy: Tensor) -> BPTTGrads:
    """Backpropagation through time for one Elman layer, written out (no autograd).

    x (B, T, d_in), h0 (B, d_h); dL_dy (B, T, d_h) is the gradient arriving at each output h_t from above (e.g.
    from V and the softmax). Runs the forward pass, then walks back from t = T: the error at h_t is what comes from
    its own output plus what comes back from h_{t+1} through U.
    """
    with torch.no_grad():
        B, T, _ = x.shape
        hs = [h0]
        for t in range(T):
            hs.append(cell(x[:, t], hs[-1]))                                      # hs[t+1] = h_t, (B, d_h)
        dW, dU = torch.zeros_like(cell.W), torch.zeros_like(cell.U)
        db = torch.zeros(cell.d_h, dtype=x.dtype, device=x.device)
        dx, dh = torch.zeros_like(x), torch.zeros_like(dL_dy)
        from_next = torch.zeros_like(h0)                                          # dL/dh_t via h_{t+1}, (B, d_h)
        for t in reversed(range(T)):
            h_t, h_prev = hs[t + 1], hs[t]
            dh[:, t] = dL_dy[:, t] + from_next
            # a_t = U h_{t-1} + W x_t ; h_t = g(a_t): tanh' = 1 - h_t^2, relu' = [a_t > 0] = [h_t > 0]
            g_prime = 1 - h_t ** 2 if cell.nonlinearity == "tanh" else (h_t > 0).to(h_t.dtype)
            da = dh[:, t] * g_prime                                               # dL/da_t (B, d_h)
            dW += da.T @ x[:, t]                                                  # (d_h, d_in)
            dU += da.T @ h_prev                                                   # (d_h, d_h)
            db += da.sum(0)
            dx[:, t] = da @ cell.W                                                # (B, d_in)
            from_next = da @ cell.U                                               # dL/dh_{t-1} (B, d_h)
        return BPTTGrads(W=dW, U=dU, b_W=db, b_U=db.clone(), x=dx, h=dh, h0=from_next)


def _softmax_ce_backward(h: Tensor, V: nn.Linear, targets: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Mean cross-entropy of softmax(V h_t) against targets, and its gradients (loss, dV, dV_bias, dL/dh)."""
    B, T, d_h = h.shape
    logits = V(h)                                                                 # (B, T, V)
    keep = (targets != IGNORE_INDEX)                                              # (B, T)
    n = keep.sum()
    log_p = logits.log_softmax(-1)                                                # (B, T, V)
    safe = targets.clamp_min(0)
    loss = -(log_p.gather(-1, safe[..., None])[..., 0] * keep).sum() / n
    # d(-log softmax(z)[w]) / dz = softmax(z) - onehot(w), averaged over the n scored positions
    dz = (log_p.exp() - F.one_hot(safe, logits.shape[-1]).to(h.dtype)) * keep[..., None] / n  # (B, T, V)
    dz2, h2 = dz.reshape(B * T, -1), h.reshape(B * T, d_h)                        # (B*T, V), (B*T, d_h)
    return loss, dz2.T @ h2, dz2.sum(0), dz @ V.weight                            # dV (V, d_h), (V,), (B, T, d_h)


def rnnlm_manual_gradients(model: "RNNLM", idx: Tensor, targets: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
    """Loss and gradients of a one-layer RNNLM, all by hand: softmax/V, then BPTT, then the embedding rows of E.

    Returns (loss, {parameter name: gradient}) with the names of model.named_parameters(). With weight tying,
    E collects two contributions, one as embedding and one as output layer (9.16).
    """
    cfg = model.config
    if cfg.num_layers != 1 or (model.training and cfg.dropout > 0):
        raise ValueError("rnnlm_manual_gradients covers one layer without dropout: use num_layers=1 and "
                         "dropout=0 (or call model.eval())")
    _check_ids(idx, cfg.vocab_size)
    _check_targets(targets, tuple(idx.shape), cfg.vocab_size)
    cell = model.rnn.cell(0)
    with torch.no_grad():
        # (9.6) e_t = E x_t
        e = model.E.weight[idx]                                                   # (B, T, d_emb)
        h, _ = model.rnn(e)                                                       # (B, T, d_h)
        loss, dV, dV_b, dL_dh = _softmax_ce_backward(h, model.V, targets)
        g = elman_bptt(cell, e, torch.zeros_like(h[:, 0]), dL_dh)
        dE = torch.zeros_like(model.E.weight).index_add_(0, idx.reshape(-1), g.x.reshape(-1, cfg.d_emb))
        if cfg.tie_weights:
            dE += dV                                                              # E^T is also the output layer
        grads = {"E.weight": dE, "rnn.cells.0.W": g.W, "rnn.cells.0.U": g.U,
                 "rnn.cells.0.b_W": g.b_W, "rnn.cells.0.b_U": g.b_U, "V.bias": dV_b}
        if not cfg.tie_weights:
            grads["V.weight"] = dV
    return loss, grads


def grad_norm_by_distance(cell: ElmanCell, x: Tensor, dL_dhT: Tensor, h0: Tensor | None = None) -> Tensor:
    """||dL_T/dh_t|| for a loss L_T that sees only h_T: entry k is distance T - t = k, mean over the batch. (T,)"""
    B, T, _ = x.shape
    h0 = torch.zeros(B, cell.d_h, dtype=x.dtype, device=x.device) if h0 is None else h0
    dL_dy = torch.zeros(B, T, cell.d_h, dtype=x.dtype, device=x.device)
    dL_dy[:, -1] = dL_dhT
    g = elman_bptt(cell, x, h0, dL_dy)
    return g.h.norm(dim=-1).mean(0).flip(0)                                       # (T,), index 0 = h_T itself


def lm_grad_norm_by_distance(model: "RNNLM", idx: Tensor, targets: Tensor) -> Tensor:
    """||dL_T/dh_t|| against T - t for a one-layer RNNLM, where L_T is the cross-entropy at the last position. (T,)"""
    if model.config.num_layers != 1:
        raise ValueError("lm_grad_norm_by_distance needs a one-layer model (num_layers=1)")
    _check_ids(idx, model.config.vocab_size)
    _check_targets(targets, tuple(idx.shape), model.config.vocab_size)
    with torch.no_grad():
        e = model.E.weight[idx]                                                   # (B, T, d_emb)
        h, _ = model.rnn(e)                                                       # (B, T, d_h)
        _, _, _, dL_dhT = _softmax_ce_backward(h[:, -1:], model.V, targets[:, -1:])
    return grad_norm_by_distance(model.rnn.cell(0), e, dL_dhT[:, 0] * idx.shape[0])
