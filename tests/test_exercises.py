"""The exercise checks accept a right answer, raise AssertionError naming the usual mistake for a wrong one, and
report a function not written yet without raising (seqviz.exercises)."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from seqviz.exercises import check_beam_step, check_causal_mask, check_elman_step, check_gru_step
from seqviz.exercises.mistakes import MISTAKES


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


def test_causal_mask(capsys):
    assert check_causal_mask(lambda T: torch.ones(T, T).tril().bool()) and "✓" in _said(capsys)
    assert check_causal_mask(lambda T: np.tril(np.ones((T, T), dtype=bool)))            # numpy is fine too
    _said(capsys)


def test_beam_step(capsys):
    from seqviz.exercises.mistakes import _beam

    assert check_beam_step(_beam) and "✓" in _said(capsys)


# ---- the known wrong answers (seqviz.exercises.mistakes, which the graded assignments' hidden tests read too) -------
@pytest.mark.parametrize("mistake", [m for ms in MISTAKES.values() for m in ms], ids=lambda m: f"{m.check}-{m.name}")
def test_each_known_mistake_is_rejected_with_its_message(mistake):
    from seqviz.exercises.mistakes import _check_fn

    wrong(_check_fn(mistake.check), mistake.fn, mistake.says)


def test_a_known_mistake_fails_its_hidden_test_and_no_right_answer_does(capsys):
    """hidden_test (an assignment's hidden test per named mistake) fails on that mistake, with its message, and
    passes a right answer and a function not written yet (the public check judges those)."""
    from seqviz.exercises.mistakes import _beam, hidden_test, known_mistakes

    for m in known_mistakes("check_beam_step"):
        if m.named:
            with pytest.raises(AssertionError, match=re.escape(m.what)):
                hidden_test("check_beam_step", m.name, m.fn)
            hidden_test("check_beam_step", m.name, _beam)
            hidden_test("check_beam_step", m.name, lambda *a: (_ for _ in ()).throw(NotImplementedError))
    assert known_mistakes("check_nothing_yet") == ()
    with pytest.raises(ValueError, match="check's name"):
        known_mistakes(check_beam_step)
    with pytest.raises(ValueError, match="no known mistake 'nope'"):
        hidden_test("check_beam_step", "nope", _beam)


def test_every_check_has_known_mistakes():
    """Each check the package exports has its typical mistakes in the registry (so its assignment question gets
    hidden tests, and its messages are tested)."""
    import seqviz.exercises as ex

    missing = [name for name in ex.__all__ if name.startswith("check_") and not MISTAKES.get(name)]
    assert not missing, f"no known mistakes in seqviz.exercises.mistakes.MISTAKES for {missing}"


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
