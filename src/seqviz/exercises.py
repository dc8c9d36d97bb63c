"""Coding exercises with a check the student can call (in the style of Neuromatch Academy's tutorials).

A chapter asks the reader to write one small function (a recurrent step, a mask, one step of a beam), then to call
``check_...(their_function)``. The check runs it on random inputs of several shapes, compares it with the package's
own implementation, and says what is wrong in words a student can act on: a wrong shape, a missing nonlinearity,
a transposed mask, probabilities added where log-probabilities belong. It prints its verdict and returns True or
False; it never raises on a wrong answer, so a notebook stays runnable while the exercise is unsolved (a function that
still raises ``NotImplementedError`` is reported as "not written yet").
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch

__all__ = ["check_elman_step", "check_gru_step", "check_causal_mask", "check_beam_step"]


def _verdict(ok: bool, message: str) -> bool:
    print(("✓ " if ok else "✗ ") + message)
    return ok


def _call(fn: Callable, *args):
    """(result, None) or (None, a message saying why the call failed)."""
    if not callable(fn):
        return None, f"expected a function, got {type(fn).__name__}"
    try:
        return fn(*args), None
    except NotImplementedError:
        return None, f"{getattr(fn, '__name__', 'the function')} is not written yet: replace the `raise " \
                     f"NotImplementedError` with your code"
    except Exception as e:                                         # the student's bug, reported, not raised
        return None, f"{getattr(fn, '__name__', 'the function')} raised {type(e).__name__}: {e}"


def _as_tensor(x, what: str):
    if isinstance(x, np.ndarray):
        x = torch.from_numpy(x)
    if not isinstance(x, torch.Tensor):
        return None, f"{what} should be a tensor, got {type(x).__name__}"
    return x, None


# ----------------------------------------------------------------------------------------------------------------
# Chapter 3: one step of the Elman network, (9.3)
# ----------------------------------------------------------------------------------------------------------------
def check_elman_step(fn: Callable) -> bool:
    """Check ``fn(x_t (B, d_in), h_prev (B, d_h), W (d_h, d_in), U (d_h, d_h)) -> h_t (B, d_h)`` against (9.3),
    h_t = tanh(U h_{t-1} + W x_t), on three random shapes (batched: row b of x_t and h_prev is one sequence)."""
    g = torch.Generator().manual_seed(0)
    for B, d_in, d_h in ((1, 3, 4), (5, 7, 2), (2, 6, 6)):
        x, h = torch.randn(B, d_in, generator=g), torch.randn(B, d_h, generator=g)
        W, U = torch.randn(d_h, d_in, generator=g), torch.randn(d_h, d_h, generator=g)
        got, err = _call(fn, x, h, W, U)
        if err:
            return _verdict(False, err)
        got, err = _as_tensor(got, "h_t")
        if err:
            return _verdict(False, err)
        want_a = h @ U.T + x @ W.T                                      # (B, d_h) the pre-activation
        want = torch.tanh(want_a)
        if tuple(got.shape) != (B, d_h):
            return _verdict(False, f"h_t has shape {tuple(got.shape)}, expected (B, d_h) = ({B}, {d_h}); W x_t with "
                                   f"a batch is x_t @ W.T")
        got = got.to(torch.float32)
        if torch.allclose(got, want, atol=1e-5):
            continue
        if torch.allclose(got, want_a, atol=1e-5):
            return _verdict(False, "h_t equals U h_{t-1} + W x_t: apply the activation g = tanh of (9.3)")
        if torch.allclose(got, torch.tanh(x @ W.T), atol=1e-5):
            return _verdict(False, "h_t ignores h_{t-1}: the recurrence is what makes it an RNN (U h_{t-1})")
        return _verdict(False, f"h_t differs from tanh(U h_(t-1) + W x_t) for B={B}, d_in={d_in}, d_h={d_h} "
                               f"(largest difference {float((got - want).abs().max()):.3g})")
    return _verdict(True, "elman step correct: h_t = tanh(U h_(t-1) + W x_t) on three shapes")


# ----------------------------------------------------------------------------------------------------------------
# Chapter 4: one step of the GRU, with its traces (Cho et al. 2014, as seqviz.lstm.GRUCell places the reset gate)
# ----------------------------------------------------------------------------------------------------------------
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
            got, err = _call(fn, cell, x, h)
            if err:
                return _verdict(False, err)
            want_h, want = cell.forward_traced(x, h)
        if not (isinstance(got, (tuple, list)) and len(got) == 2 and isinstance(got[1], dict)):
            return _verdict(False, "return a pair (h_t, traces) with traces a dict {'r': r_t, 'z': z_t, 'n': n_t}")
        h_t, traces = got
        missing = [k for k in ("r", "z", "n") if k not in traces]
        if missing:
            return _verdict(False, f"the traces have no {', '.join(missing)}: return every gate, "
                                   f"{{'r': r_t, 'z': z_t, 'n': n_t}}")

        def pre(k, inp, state):                                     # U_k h_{t-1} + b_U_k + W_k x_t + b_W_k
            return (F.linear(state, getattr(cell, f"U_{k}"), getattr(cell, f"b_U_{k}"))
                    + F.linear(inp, getattr(cell, f"W_{k}"), getattr(cell, f"b_W_{k}")))

        with torch.no_grad():
            for k, name in (("r", "reset gate r_t"), ("z", "update gate z_t")):
                t, err = _as_tensor(traces[k], name)
                if err:
                    return _verdict(False, err)
                if tuple(t.shape) != (B, d_h):
                    return _verdict(False, f"{name} has shape {tuple(t.shape)}, expected (B, d_h) = ({B}, {d_h}); "
                                           f"W x_t with a batch is x_t @ W.T (or F.linear(x_t, W, b))")
                if torch.allclose(t.float(), want[k], atol=1e-5):
                    continue
                if torch.allclose(t.float(), torch.tanh(pre(k, x, h)), atol=1e-5) or torch.allclose(
                        t.float(), pre(k, x, h), atol=1e-5):
                    return _verdict(False, f"{name} must be squashed by the sigmoid σ into 0..1: it is a gate")
                if torch.allclose(t.float(), torch.sigmoid(h @ getattr(cell, f"U_{k}").T + x @ getattr(
                        cell, f"W_{k}").T), atol=1e-5):
                    return _verdict(False, f"{name} leaves out the biases b_W_{k} and b_U_{k}")
                return _verdict(False, f"{name} differs from σ(U_{k} h_(t-1) + W_{k} x_t) (with both biases) for "
                                       f"B={B}, d_in={d_in}, d_h={d_h}")
            n, err = _as_tensor(traces["n"], "candidate n_t")
            if err:
                return _verdict(False, err)
            if tuple(n.shape) != (B, d_h):
                return _verdict(False, f"candidate n_t has shape {tuple(n.shape)}, expected ({B}, {d_h})")
            n = n.float()
            r = want["r"]
            cho = torch.tanh(F.linear(x, cell.W_n, cell.b_W_n) + F.linear(r * h, cell.U_n, cell.b_U_n))
            if not torch.allclose(n, want["n"], atol=1e-5):
                if torch.allclose(n, cho, atol=1e-5):
                    return _verdict(False, "n_t applies r_t before U_n, as Cho et al. write it; GRUCell (like "
                                           "torch.nn.GRU and cuDNN) applies it after: tanh(W_n x_t + b_W_n + r_t ⊙ "
                                           "(U_n h_(t-1) + b_U_n))")
                if torch.allclose(n, torch.tanh(pre("n", x, h)), atol=1e-5):
                    return _verdict(False, "n_t ignores the reset gate: r_t scales what the candidate sees of "
                                           "h_(t-1), r_t ⊙ (U_n h_(t-1) + b_U_n)")
                return _verdict(False, "the candidate n_t differs from tanh(W_n x_t + b_W_n + r_t ⊙ (U_n h_(t-1) + "
                                       "b_U_n))")
            h_t, err = _as_tensor(h_t, "h_t")
            if err:
                return _verdict(False, err)
            if tuple(h_t.shape) != (B, d_h):
                return _verdict(False, f"h_t has shape {tuple(h_t.shape)}, expected ({B}, {d_h})")
            h_t, z = h_t.float(), want["z"]
            if torch.allclose(h_t, want_h, atol=1e-5):
                continue
            if torch.allclose(h_t, z * want["n"] + (1 - z) * h, atol=1e-5):
                return _verdict(False, "z_t and 1 - z_t are swapped: z_t is the share of the *old* state kept, "
                                       "h_t = (1 - z_t) ⊙ n_t + z_t ⊙ h_(t-1)")
            return _verdict(False, "h_t differs from (1 - z_t) ⊙ n_t + z_t ⊙ h_(t-1)")
    return _verdict(True, "GRU step correct: r_t, z_t, n_t and h_t equal GRUCell's on three shapes")


# ----------------------------------------------------------------------------------------------------------------
# The causal mask, SLP Fig. 9.17 and (9.31)
# ----------------------------------------------------------------------------------------------------------------
def check_causal_mask(fn: Callable) -> bool:
    """Check ``fn(T) -> (T, T) bool`` where entry [i, j] is True when query i may attend to key j (j <= i)."""
    from seqviz.attention import causal_mask

    for T in (4, 9, 1):
        got, err = _call(fn, T)
        if err:
            return _verdict(False, err)
        got, err = _as_tensor(got, "the mask")
        if err:
            return _verdict(False, err)
        want = torch.from_numpy(causal_mask(T))
        if tuple(got.shape) != (T, T):
            return _verdict(False, f"the mask for T={T} has shape {tuple(got.shape)}, expected (T, T)")
        if got.dtype != torch.bool:
            return _verdict(False, f"the mask has dtype {got.dtype}: make it bool (True = may attend), e.g. with "
                                   f"`.bool()` or a comparison")
        if torch.equal(got, want):
            continue
        if torch.equal(got, want.T):
            return _verdict(False, "the mask is transposed: row i is query i, column j is key j, and query i may "
                                   "see keys j <= i (the lower triangle)")
        if torch.equal(got, want & ~torch.eye(T, dtype=torch.bool)):
            return _verdict(False, "the diagonal is masked: a position may attend to itself (j = i)")
        if torch.equal(got, ~want):
            return _verdict(False, "True and False are swapped: True means 'may attend'")
        return _verdict(False, f"the mask for T={T} is not the lower triangle (j <= i)")
    return _verdict(True, "causal mask correct for T = 4, 9 and 1")


# ----------------------------------------------------------------------------------------------------------------
# Chapter 5: one step of beam search, by hand
# ----------------------------------------------------------------------------------------------------------------
def _beam_step_reference(scores: torch.Tensor, logp: torch.Tensor, k: int) -> list[tuple[int, int]]:
    total = scores[:, None] + logp                                       # (N, V) total log-probabilities
    top = torch.topk(total.flatten(), k).indices
    return [(int(i) // logp.shape[1], int(i) % logp.shape[1]) for i in top]


def check_beam_step(fn: Callable) -> bool:
    """Check ``fn(scores (N,), logp (N, V), k) -> [(row, token), ...]``: the k best continuations of N live
    hypotheses, best first, where ``scores`` are the hypotheses' log-probabilities so far and ``logp[n, w]`` the
    log-probability of token w after hypothesis n: the total is scores[n] + logp[n, w] (a sum of logs is the log of
    a product), ranked over all N x V candidates at once."""
    g = torch.Generator().manual_seed(1)
    cases, answers = [], []
    # a strong first hypothesis: the best continuations are not one per hypothesis
    for spread, (N, V, k) in zip((2.5, 0.3, 0.0), ((3, 5, 3), (4, 8, 2), (1, 6, 3))):
        scores = -torch.arange(N, dtype=torch.float64) * spread - torch.rand(N, generator=g, dtype=torch.float64)
        logp = torch.log_softmax(torch.randn(N, V, generator=g, dtype=torch.float64) * 2, dim=1)
        got, err = _call(fn, scores.clone(), logp.clone(), k)
        if err:
            return _verdict(False, err)
        try:
            got = [(int(r), int(w)) for r, w in got]
        except (TypeError, ValueError):
            return _verdict(False, f"return a list of (row, token) pairs, got {got!r:.80}")
        if len(got) != k:
            return _verdict(False, f"returned {len(got)} continuations for k = {k} (N={N}, V={V})")
        cases.append((scores, logp, k))
        answers.append(got)
    if all(got == _beam_step_reference(*case) for got, case in zip(answers, cases)):
        return _verdict(True, "beam step correct: totals are sums of log-probabilities, ranked over all "
                              "continuations")
    mistakes = [  # (what a common mistake returns, what to tell the student): reported when it explains every case
        (lambda s, l, k: _beam_step_reference(torch.zeros_like(s), s.exp()[:, None] + l.exp(), k),
         "probabilities were added: a sequence's probability is a product, so add log-probabilities "
         "(scores[n] + logp[n, w])"),
        (lambda s, l, k: _beam_step_reference(torch.zeros_like(s), l, k),
         "the hypotheses' scores so far were left out: the total is scores[n] + logp[n, w]"),
        (lambda s, l, k: sorted(((n, int(l[n].argmax())) for n in range(len(s))),
                                key=lambda c: -float(s[c[0]] + l[c]))[:k] if len(s) >= k else
         _beam_step_reference(s, l, k),
         "you kept each hypothesis's best next token: rank all N x V continuations together, so a strong "
         "hypothesis may keep several and a weak one none"),
    ]
    for mistake, advice in mistakes:
        if all(got == mistake(*case) for got, case in zip(answers, cases)):
            return _verdict(False, advice)
    for got, (scores, logp, k) in zip(answers, cases):
        want = _beam_step_reference(scores, logp, k)
        if got != want:
            if sorted(got) == sorted(want):
                return _verdict(False, "the right continuations in the wrong order: best (highest total) first")
            return _verdict(False, f"for N={len(scores)}, V={logp.shape[1]}, k={k} expected {want}, got {got}")
    raise AssertionError("unreachable")
