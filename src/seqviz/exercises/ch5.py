"""Chapter 5's exercise check: one step of beam search, by hand."""
from __future__ import annotations

from typing import Callable

import torch

from seqviz.exercises._base import as_tensor, call, check, verdict

__all__ = ["check_beam_step"]


def _beam_step_reference(scores: torch.Tensor, logp: torch.Tensor, k: int) -> list[tuple[int, int]]:
    total = scores[:, None] + logp                                       # (N, V) total log-probabilities
    top = torch.topk(total.flatten(), k).indices
    return [(int(i) // logp.shape[1], int(i) % logp.shape[1]) for i in top]


@check
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
        got, err = call(fn, scores.clone(), logp.clone(), k)
        if err:
            return verdict(False, err)
        try:
            got = [(int(r), int(w)) for r, w in got]
        except (TypeError, ValueError):
            return verdict(False, f"return a list of (row, token) pairs, got {got!r:.80}")
        if len(got) != k:
            return verdict(False, f"returned {len(got)} continuations for k = {k} (N={N}, V={V})")
        cases.append((scores, logp, k))
        answers.append(got)
    if all(got == _beam_step_reference(*case) for got, case in zip(answers, cases)):
        return verdict(True, "beam step correct: sums of log-probabilities, all continuations ranked")
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
            return verdict(False, advice)
    for got, (scores, logp, k) in zip(answers, cases):
        want = _beam_step_reference(scores, logp, k)
        if got != want:
            if sorted(got) == sorted(want):
                return verdict(False, "the right continuations in the wrong order: best (highest total) first")
            return verdict(False, f"for N={len(scores)}, V={logp.shape[1]}, k={k} expected {want}, got {got}")
    raise AssertionError("unreachable")
