"""Chapter 8's "build it" checks (seqviz.exercises.ch8): SLP §9.9's δ training sequence and the pointer-generator's
mixture over the extended vocabulary. Each accepts right answers written the way a student would write them, rejects
the usual wrong answers with a message that names the mistake, and reports a function not written yet without
raising. The wrong answers and their messages are in seqviz.exercises.mistakes (tested in tests/test_exercises.py,
read by the graded assignments too); ``delta`` and ``mixture`` are its implementations with every switch right."""
from __future__ import annotations

import pytest
import torch

from seqviz.exercises import check_copy_distribution, check_delta_sequence
from seqviz.exercises.mistakes import _delta as delta, _mixture as mixture, _smoothed as smoothed

IGNORE = -100


def wrong(check, fn, says: str):
    """A wrong answer fails the check with an AssertionError whose message says ``says``."""
    with pytest.raises(AssertionError) as e:
        check(fn)
    assert says in str(e.value), str(e.value)


# ---- the δ training sequence ---------------------------------------------------------------------------------------
def test_delta_sequence_accepts_right_answers(capsys):
    assert check_delta_sequence(delta) and "✓ the δ sequences equal build_example's" in capsys.readouterr().out

    def with_tensors(article, summary, delim_id, eos_id):
        s = torch.tensor(article + [delim_id] + summary + [eos_id])
        y = s[1:].clone()
        y[:len(article)] = IGNORE
        return s[:-1], y

    assert check_delta_sequence(with_tensors)


def test_delta_sequence_reports_a_stub(capsys):
    def my_delta_example(article, summary, delim_id, eos_id):
        raise NotImplementedError

    assert check_delta_sequence(my_delta_example) is False
    out = capsys.readouterr().out
    assert "✗ my_delta_example is not written yet" in out and max(map(len, out.splitlines())) <= 78


# ---- the copy mixture ----------------------------------------------------------------------------------------------
def test_copy_distribution_accepts_right_answers(capsys):
    assert check_copy_distribution(mixture) and "✓ copy_distribution equals" in capsys.readouterr().out

    def with_loops(p_vocab, a, p_gen, src_ext, n_ext):                     # the sum over j written as a loop
        B, T, V = p_vocab.shape
        p = torch.cat([p_gen[..., None] * p_vocab, torch.zeros(B, T, n_ext, dtype=p_vocab.dtype)], -1)
        for b in range(B):
            for j, w in enumerate(src_ext[b].tolist()):
                p[b, :, w] += (1 - p_gen[b]) * a[b, :, j]
        return p

    def with_one_hot(p_vocab, a, p_gen, src_ext, n_ext):                   # a (B, T, S) @ one-hot (B, S, V + n)
        V = p_vocab.shape[-1]
        onehot = torch.nn.functional.one_hot(src_ext, V + n_ext).to(a.dtype)
        gen = torch.nn.functional.pad(p_gen[..., None] * p_vocab, (0, n_ext))
        return gen + (1 - p_gen)[..., None] * (a @ onehot)

    assert check_copy_distribution(with_loops) and check_copy_distribution(with_one_hot)


def test_copy_distribution_accepts_a_right_answer_in_float32(capsys):
    """Computed in float32 it differs from the float64 reference by float32 rounding (~1e-8): right at its precision."""
    assert check_copy_distribution(lambda p_vocab, a, p_gen, src, n: mixture(p_vocab.float(), a.float(),
                                                                             p_gen.float(), src, n))
    assert "✓ copy_distribution equals" in capsys.readouterr().out


def test_copy_distribution_rejects_a_near_miss():
    from seqviz.exercises.ch8 import _copy_cases, _copy_reference

    gaps = [float((smoothed(c["p_vocab"], c["a"], c["p_gen"], c["src_ext"], c["n_ext"]) - _copy_reference(c)).abs()
                  .max()) for c in _copy_cases()]
    assert 1e-5 < max(gaps) < 1e-3                # so a check loosened to atol 1e-3 (rtol 1e-2) would let it through
    wrong(check_copy_distribution, smoothed, "differs from the package's by up to")   # its two forms: in the registry


def test_copy_distribution_reports_a_stub(capsys):
    def my_copy_dist(p_vocab, a, p_gen, src_ext, n_ext):
        raise NotImplementedError

    assert check_copy_distribution(my_copy_dist) is False
    out = capsys.readouterr().out
    assert "✗ my_copy_dist is not written yet" in out and max(map(len, out.splitlines())) <= 78
