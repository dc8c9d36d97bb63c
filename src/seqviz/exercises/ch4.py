"""Chapter 4's exercise check: one step of the GRU with its traces (as seqviz.lstm.GRUCell places the reset gate)."""
from __future__ import annotations

from typing import Callable

import torch

from seqviz.exercises._base import as_tensor, call, check, close, verdict

__all__ = ["check_gru_step"]


@check
def check_gru_step(fn: Callable) -> bool:
    """Check ``fn(cell, x_t (B, d_in), h_prev (B, d_h)) -> (h_t, {"r": r_t, "z": z_t, "n": n_t})`` against
    ``cell.forward_traced`` of a ``seqviz.lstm.GRUCell`` (weights W_x, U_x and biases b_W_x, b_U_x of each gate x),
    on three random shapes, and name the first part that is wrong."""
    import torch.nn.functional as F

    from seqviz.lstm import GRUCell

    g = torch.Generator().manual_seed(4)
    for B, d_in, d_h in ((1, 3, 4), (5, 7, 2), (2, 6, 6)):
        with torch.random.fork_rng():                              # the caller's random state is left alone
            torch.manual_seed(int(torch.randint(1 << 30, (1,), generator=g)))
            cell = GRUCell(d_in, d_h)
        x, h = torch.randn(B, d_in, generator=g), torch.randn(B, d_h, generator=g).tanh()
        with torch.no_grad():
            got, err = call(fn, cell, x, h)
            if err:
                return verdict(False, err)
            want_h, want = cell.forward_traced(x, h)
        if not (isinstance(got, (tuple, list)) and len(got) == 2 and isinstance(got[1], dict)):
            return verdict(False, "return a pair (h_t, traces) with traces a dict {'r': r_t, 'z': z_t, 'n': n_t}")
        h_t, traces = got
        missing = [k for k in ("r", "z", "n") if k not in traces]
        if missing:
            return verdict(False, f"the traces have no {', '.join(missing)}: return every gate, "
                                  f"{{'r': r_t, 'z': z_t, 'n': n_t}}")

        def pre(k, inp, state):                                     # U_k h_{t-1} + b_U_k + W_k x_t + b_W_k
            return (F.linear(state, getattr(cell, f"U_{k}"), getattr(cell, f"b_U_{k}"))
                    + F.linear(inp, getattr(cell, f"W_{k}"), getattr(cell, f"b_W_{k}")))

        with torch.no_grad():
            for k, name in (("r", "reset gate r_t"), ("z", "update gate z_t")):
                t, err = as_tensor(traces[k], name)
                if err:
                    return verdict(False, err)
                if tuple(t.shape) != (B, d_h):
                    return verdict(False, f"{name} has shape {tuple(t.shape)}, expected (B, d_h) = ({B}, {d_h}); "
                                          f"W x_t with a batch is x_t @ W.T (or F.linear(x_t, W, b))")
                if close(t, want[k]):
                    continue
                if close(t, torch.tanh(pre(k, x, h))) or close(t, pre(k, x, h)):
                    return verdict(False, f"{name} must be squashed by the sigmoid σ into 0..1: it is a gate")
                if close(t, torch.sigmoid(h @ getattr(cell, f"U_{k}").T + x @ getattr(cell, f"W_{k}").T)):
                    return verdict(False, f"{name} leaves out the biases b_W_{k} and b_U_{k}")
                return verdict(False, f"{name} differs from σ(U_{k} h_(t-1) + W_{k} x_t) (with both biases) for "
                                      f"B={B}, d_in={d_in}, d_h={d_h}")
            n, err = as_tensor(traces["n"], "candidate n_t")
            if err:
                return verdict(False, err)
            if tuple(n.shape) != (B, d_h):
                return verdict(False, f"candidate n_t has shape {tuple(n.shape)}, expected ({B}, {d_h})")
            r = want["r"]
            cho = torch.tanh(F.linear(x, cell.W_n, cell.b_W_n) + F.linear(r * h, cell.U_n, cell.b_U_n))
            if not close(n, want["n"]):
                if close(n, cho):
                    return verdict(False, "n_t applies r_t before U_n, as Cho et al. write it; GRUCell (like "
                                          "torch.nn.GRU and cuDNN) applies it after: tanh(W_n x_t + b_W_n + r_t ⊙ "
                                          "(U_n h_(t-1) + b_U_n))")
                if close(n, torch.tanh(pre("n", x, h))):
                    return verdict(False, "n_t ignores the reset gate: r_t scales what the candidate sees of "
                                          "h_(t-1), r_t ⊙ (U_n h_(t-1) + b_U_n)")
                return verdict(False, "the candidate n_t differs from tanh(W_n x_t + b_W_n + r_t ⊙ (U_n h_(t-1) + "
                                      "b_U_n))")
            h_t, err = as_tensor(h_t, "h_t")
            if err:
                return verdict(False, err)
            if tuple(h_t.shape) != (B, d_h):
                return verdict(False, f"h_t has shape {tuple(h_t.shape)}, expected ({B}, {d_h})")
            z = want["z"]
            if close(h_t, want_h):
                continue
            if close(h_t, z * want["n"] + (1 - z) * h):
                return verdict(False, "z_t and 1 - z_t are swapped: z_t is the share of the *old* state kept, "
                                      "h_t = (1 - z_t) ⊙ n_t + z_t ⊙ h_(t-1)")
            return verdict(False, "h_t differs from (1 - z_t) ⊙ n_t + z_t ⊙ h_(t-1)")
    return verdict(True, "GRU step correct: r_t, z_t, n_t and h_t equal GRUCell's on three shapes")
