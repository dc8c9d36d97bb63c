"""The exercise checks accept a right answer, raise AssertionError naming the usual mistake for a wrong one, and
report a function not written yet without raising (seqviz.exercises)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from seqviz.exercises import check_beam_step, check_causal_mask, check_elman_step, check_gru_step


def _said(capsys) -> str:
    return capsys.readouterr().out


def wrong(check, fn, says: str):
    """A wrong answer fails the check with an AssertionError whose message says ``says``."""
    with pytest.raises(AssertionError) as e:
        check(fn)
    assert says in str(e.value), str(e.value)


def test_elman_step(capsys):
    def right(x, h, W, U):
        return torch.tanh(h @ U.T + x @ W.T)

    def todo(x, h, W, U):
        raise NotImplementedError

    assert check_elman_step(right) and "✓" in _said(capsys)
    assert check_elman_step(todo) is False and "not written yet" in _said(capsys)  # reported, not raised
    wrong(check_elman_step, lambda x, h, W, U: h @ U.T + x @ W.T, "activation")
    wrong(check_elman_step, lambda x, h, W, U: torch.tanh(x @ W.T), "ignores h_{t-1}")
    wrong(check_elman_step, lambda x, h, W, U: torch.tanh(h @ U + x @ W.T), "differs")
    wrong(check_elman_step, lambda x, h, W, U: torch.tanh(U @ h + W @ x), "raised")


def test_causal_mask(capsys):
    assert check_causal_mask(lambda T: torch.ones(T, T).tril().bool()) and "✓" in _said(capsys)
    assert check_causal_mask(lambda T: np.tril(np.ones((T, T), dtype=bool)))            # numpy is fine too
    _said(capsys)
    wrong(check_causal_mask, lambda T: torch.ones(T, T).triu().bool(), "transposed")
    wrong(check_causal_mask, lambda T: torch.ones(T, T).tril(-1).bool(), "diagonal")
    wrong(check_causal_mask, lambda T: torch.ones(T, T).tril(), "dtype")
    wrong(check_causal_mask, lambda T: ~torch.ones(T, T).tril().bool(), "swapped")
    wrong(check_causal_mask, lambda T: torch.ones(T, T + 1).bool(), "shape")


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
    wrong(check_beam_step, added_probabilities, "log-probabilities")
    wrong(check_beam_step, no_history, "scores so far")
    wrong(check_beam_step, per_row, "all N x V")
    wrong(check_beam_step, lambda s, l, k: right(s, l, k)[::-1], "order")
    wrong(check_beam_step, lambda s, l, k: 7, "list of (row, token)")


@pytest.mark.parametrize("check", [check_elman_step, check_causal_mask, check_beam_step, check_gru_step])
def test_not_a_function(check):
    wrong(check, 42, "expected a function")


@pytest.mark.parametrize("check", [check_elman_step, check_causal_mask, check_beam_step, check_gru_step])
def test_a_function_not_written_yet_is_reported_and_an_autograder_assert_fails(check, capsys):
    def todo(*args):
        raise NotImplementedError

    assert check(todo) is False and "not written yet" in _said(capsys)
    with pytest.raises(AssertionError):
        assert check(todo)


def test_the_not_written_yet_report_fits_a_printed_line_for_a_long_name(capsys):
    """The report prints in the chapters' stored outputs: every line <= 78 characters, for a name as long as the
    chapters' longest stub (my_copy_distribution) and longer."""
    def my_very_long_copy_distribution_fn(*args):
        raise NotImplementedError

    assert check_gru_step(my_very_long_copy_distribution_fn) is False
    said = _said(capsys)
    assert "my_very_long_copy_distribution_fn is not written yet" in said and "raise NotImplementedError" in said
    assert max(map(len, said.splitlines())) <= 78, said
