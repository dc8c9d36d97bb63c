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

__all__ = ["check_elman_step", "check_causal_mask", "check_beam_step"]


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
