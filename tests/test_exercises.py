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


# ---- one rule on precision for every check (seqviz.exercises._base) ------------------------------------------------
def test_the_tolerance_is_the_coarser_dtypes():
    from seqviz.exercises._base import TOLERANCE, tolerance

    f32, f64 = torch.zeros(2), torch.zeros(2, dtype=torch.float64)
    assert tolerance(f32, f64) == tolerance(f64, f32) == TOLERANCE[torch.float32]
    assert tolerance(f64, f64) == tolerance(torch.zeros(2, dtype=torch.long), f64) == TOLERANCE[torch.float64]
    assert tolerance(f32.half(), f64) == TOLERANCE[torch.float16]
    assert TOLERANCE[torch.float64][0] < TOLERANCE[torch.float32][0] < TOLERANCE[torch.float16][0]


def test_close_judges_a_result_at_its_own_precision():
    from seqviz.exercises._base import close

    g = torch.Generator().manual_seed(0)
    want = 30 * torch.randn(4, 5, generator=g, dtype=torch.float64)
    assert close(want.float(), want) and close(want.clone(), want)                # float32 rounding: right
    assert not close(want + 1e-7, want)                                          # float64 is held to float64
    assert close((want + 1e-7).float(), want)                                    # ... float32 to float32
    assert not close(want.float() + 1e-3, want) and not close(want.float()[:3], want)
    got = want.float()                     # an entry near 0 of a result whose values reach ~40 (float32 errors ~1e-5)
    want[0, 0], got[0, 0] = 0.0, 1e-5
    assert close(got, want)                                                      # is not judged on its own size
    got[0, 0] = 1e-3
    assert not close(got, want)
    assert not close(torch.full((2,), float("nan")), torch.zeros(2))


def test_chapters_3_and_4_accept_a_right_answer_computed_in_float64(capsys):
    """Their inputs are float32; an answer computed in float64 is judged at float32's precision, the reference's."""
    import copy

    assert check_elman_step(lambda x, h, W, U: torch.tanh(h.double() @ U.double().T + x.double() @ W.double().T))
    assert "✓ elman step correct" in _said(capsys)
    assert check_gru_step(lambda cell, x, h: copy.deepcopy(cell).double().forward_traced(x.double(), h.double()))
    assert "✓ GRU step correct" in _said(capsys)


def test_the_rule_on_precision_lives_once():
    """No chapter's checks carry tolerances of their own: they call _base.close (and _base.differs for the message)."""
    from pathlib import Path

    import seqviz.exercises as ex

    for path in Path(ex.__file__).parent.glob("ch*.py"):
        text = path.read_text()
        for own in ("allclose", "isclose", "rtol", "atol", "assert_close"):
            assert own not in text, f"{path.name} uses {own}: compare with seqviz.exercises._base.close"
