"""Chapter 7's "build it" check (seqviz.exercises.ch7): the distribution that sampling with a temperature and top-k
draws from. It accepts right answers written the ways a student would write them and reports a function not written
yet without raising; its usual wrong answers and their messages are in seqviz.exercises.mistakes (tested in
tests/test_exercises.py, read by the graded assignments too), whose ``_sampling`` with every switch right is the
right answer here."""
from __future__ import annotations

import pytest
import torch

from seqviz.decode import sample_next
from seqviz.exercises import check_sampling_distribution
from seqviz.exercises.mistakes import _sampling as sampling


def wrong(fn, says: str):
    """A wrong answer fails the check with an AssertionError whose message says ``says``."""
    with pytest.raises(AssertionError) as e:
        check_sampling_distribution(fn)
    assert says in str(e.value), str(e.value)


def test_accepts_right_answers(capsys):
    assert check_sampling_distribution(sampling)
    assert "✓ softmax(top_k(z) / T) equals the package's" in capsys.readouterr().out

    def masked(z, T, k):                                           # the others set to -inf, then one softmax
        kth = torch.topk(z, k).values[-1]
        return torch.softmax(torch.where(z >= kth, z, torch.tensor(float("-inf"))) / T, -1)

    def powered(z, T, k):                                          # p^(1/T) renormalised is softmax(z / T)
        p = torch.softmax(z, 0) ** (1 / T)
        out = torch.zeros_like(p)
        top = torch.topk(p, k)
        out[top.indices] = top.values
        return out / out.sum()

    def in_float32(z, T, k):
        return masked(z.float(), T, k)

    for fn in (masked, powered, in_float32):
        assert check_sampling_distribution(fn), fn.__name__


def test_other_wrong_answers():
    """The usual mistakes are in seqviz.exercises.mistakes (tests/test_exercises.py feeds each to the check); these
    are wrong answers no usual mistake explains."""
    wrong(lambda z, T, k: z.foo(), "raised AttributeError")
    wrong(lambda z, T, k: sampling(z, T, k) * 0.999 + 0.001 / z.numel(), "10 tokens have probability")


def test_reports_a_stub(capsys):
    def my_sampling_distribution(logits, temperature, top_k):
        raise NotImplementedError

    assert check_sampling_distribution(my_sampling_distribution) is False
    out = capsys.readouterr().out
    assert "✗ my_sampling_distribution is not written yet" in out and max(map(len, out.splitlines())) <= 78


def test_the_checked_distribution_is_what_sample_next_draws_from():
    """Drawing from the right answer with a seeded generator gives sample_next's tokens: the check's reference is
    the distribution the chapter's sampler uses."""
    z = 3 * torch.randn(30, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    ours = [int(torch.multinomial(sampling(z, 0.7, 6), 1, generator=g1)) for _ in range(200)]
    assert ours == [sample_next(z, 0.7, 6, g2) for _ in range(200)]
