"""The exercise checks accept a right answer and name the usual mistakes (seqviz.exercises)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from seqviz.exercises import check_beam_step, check_causal_mask, check_elman_step


def _said(capsys) -> str:
    return capsys.readouterr().out


def test_elman_step(capsys):
    def right(x, h, W, U):
        return torch.tanh(h @ U.T + x @ W.T)

    def todo(x, h, W, U):
        raise NotImplementedError

    assert check_elman_step(right) and "✓" in _said(capsys)
    assert not check_elman_step(todo) and "not written yet" in _said(capsys)
    assert not check_elman_step(lambda x, h, W, U: h @ U.T + x @ W.T) and "activation" in _said(capsys)
    assert not check_elman_step(lambda x, h, W, U: torch.tanh(x @ W.T)) and "ignores h_{t-1}" in _said(capsys)
    assert not check_elman_step(lambda x, h, W, U: torch.tanh(h @ U + x @ W.T)) and "differs" in _said(capsys)
    assert not check_elman_step(lambda x, h, W, U: torch.tanh(U @ h + W @ x)) and "raised" in _said(capsys)


def test_causal_mask(capsys):
    assert check_causal_mask(lambda T: torch.ones(T, T).tril().bool()) and "✓" in _said(capsys)
    assert check_causal_mask(lambda T: np.tril(np.ones((T, T), dtype=bool)))            # numpy is fine too
    _said(capsys)
    assert not check_causal_mask(lambda T: torch.ones(T, T).triu().bool()) and "transposed" in _said(capsys)
    assert not check_causal_mask(lambda T: torch.ones(T, T).tril(-1).bool()) and "diagonal" in _said(capsys)
    assert not check_causal_mask(lambda T: torch.ones(T, T).tril()) and "dtype" in _said(capsys)
    assert not check_causal_mask(lambda T: ~torch.ones(T, T).tril().bool()) and "swapped" in _said(capsys)
    assert not check_causal_mask(lambda T: torch.ones(T, T + 1).bool()) and "shape" in _said(capsys)


def test_beam_step(capsys):
    def right(scores, logp, k):
        total = (scores[:, None] + logp).flatten()
        return [(int(i) // logp.shape[1], int(i) % logp.shape[1]) for i in torch.topk(total, k).indices]

    def added_probabilities(scores, logp, k):
        total = (scores.exp()[:, None] + logp.exp()).flatten()
        return [(int(i) // logp.shape[1], int(i) % logp.shape[1]) for i in torch.topk(total, k).indices]

    def no_history(scores, logp, k):
        return right(torch.zeros_like(scores), logp, k)

    def per_row(scores, logp, k):                        # each hypothesis's best token (when there are k of them)
        if len(scores) < k:
            return right(scores, logp, k)
        best = [(n, int(logp[n].argmax())) for n in range(len(scores))]
        return sorted(best, key=lambda c: -float(scores[c[0]] + logp[c]))[:k]

    assert check_beam_step(right) and "✓" in _said(capsys)
    assert not check_beam_step(added_probabilities) and "log-probabilities" in _said(capsys)
    assert not check_beam_step(no_history) and "scores so far" in _said(capsys)
    assert not check_beam_step(per_row) and ("all N x V" in _said(capsys))
    assert not check_beam_step(lambda s, l, k: right(s, l, k)[::-1]) and "order" in _said(capsys)
    assert not check_beam_step(lambda s, l, k: 7) and "list of (row, token)" in _said(capsys)


@pytest.mark.parametrize("check", [check_elman_step, check_causal_mask, check_beam_step])
def test_not_a_function(check, capsys):
    assert not check(42) and "expected a function" in _said(capsys)
