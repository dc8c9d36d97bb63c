"""Chapter 8's "build it" checks (seqviz.exercises.ch8): SLP §9.9's δ training sequence and the pointer-generator's
mixture over the extended vocabulary. Each accepts right answers written the way a student would write them, rejects
the usual wrong answers with a message that names the mistake, and reports a function not written yet without
raising."""
from __future__ import annotations

import pytest
import torch

from seqviz.exercises import check_copy_distribution, check_delta_sequence

IGNORE = -100


def wrong(check, fn, says: str):
    """A wrong answer fails the check with an AssertionError whose message says ``says``."""
    with pytest.raises(AssertionError) as e:
        check(fn)
    assert says in str(e.value), str(e.value)


# ---- the δ training sequence ---------------------------------------------------------------------------------------
def delta(article, summary, delim_id, eos_id, *, use_delim=True, use_eos=True, mask="right", shift=True,
          x_has_eos=False):
    """A student's δ example, with one switch per usual mistake."""
    s = list(article) + ([delim_id] if use_delim else []) + list(summary) + ([eos_id] if use_eos else [])
    m = len(article)
    x = s if x_has_eos else s[:-1]
    y = s[1:] if shift else s[:-1]
    if mask == "right":
        start = m if use_delim else m - 1                                   # the position that predicts y_1
        y = [IGNORE] * start + y[start:]
    elif mask == "late":
        y = [IGNORE] * (m + 1) + y[m + 1:]
    elif mask == "early":
        y = [IGNORE] * (m - 1) + y[m - 1:]
    return x, y


def test_delta_sequence_accepts_right_answers(capsys):
    assert check_delta_sequence(delta) and "✓ the δ sequences equal build_example's" in capsys.readouterr().out

    def with_tensors(article, summary, delim_id, eos_id):
        s = torch.tensor(article + [delim_id] + summary + [eos_id])
        y = s[1:].clone()
        y[:len(article)] = IGNORE
        return s[:-1], y

    assert check_delta_sequence(with_tensors)


@pytest.mark.parametrize("mistake, says", [
    (dict(mask="none"), "the loss is on the article too"),
    (dict(use_delim=False), "δ is missing"),
    (dict(use_eos=False), "</s> is missing"),
    (dict(mask="late"), "off by one"),
    (dict(mask="early"), "off by one"),
    (dict(shift=False), "not shifted"),
    (dict(x_has_eos=True), "the input holds </s> too"),
])
def test_delta_sequence_names_the_mistake(mistake, says):
    wrong(check_delta_sequence, lambda *a: delta(*a, **mistake), says)


def test_delta_sequence_other_wrong_answers():
    wrong(check_delta_sequence, lambda *a: delta(*a)[0], "return the pair (x, y)")
    wrong(check_delta_sequence, lambda *a: ([str(i) for i in delta(*a)[0]], delta(*a)[1]), "list of token ids")
    wrong(check_delta_sequence, lambda a, s, d, e: delta(s, a, d, e), "first difference")   # summary first
    wrong(check_delta_sequence, lambda *a: 1 / 0, "raised ZeroDivisionError")


def test_delta_sequence_reports_a_stub(capsys):
    def my_delta_example(article, summary, delim_id, eos_id):
        raise NotImplementedError

    assert check_delta_sequence(my_delta_example) is False
    out = capsys.readouterr().out
    assert "✗ my_delta_example is not written yet" in out and max(map(len, out.splitlines())) <= 78


# ---- the copy mixture ----------------------------------------------------------------------------------------------
def mixture(p_vocab, a, p_gen, src_ext, n_ext, *, swap=False, summed=True, ext=True, weigh_vocab=True):
    """A student's copy_distribution, with one switch per usual mistake."""
    B, T, V = p_vocab.shape
    g = 1 - p_gen if swap else p_gen
    p = torch.zeros(B, T, V + n_ext, dtype=p_vocab.dtype)
    p[..., :V] = g[..., None] * p_vocab if weigh_vocab else p_vocab
    copy = (1 - g)[..., None] * a                                           # (B, T, S)
    idx = src_ext[:, None, :].expand(B, T, src_ext.shape[1])
    if not ext:
        copy = copy * (idx < V)
    if summed:
        p.scatter_add_(2, idx, copy)
    else:                                                                   # one position's weight per word
        p = p + torch.zeros_like(p).scatter_(2, idx, copy)
    return p


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


@pytest.mark.parametrize("mistake, says", [
    (dict(swap=True), "p_gen and 1 - p_gen are swapped"),
    (dict(summed=False), "not summed over repeated words"),
    (dict(ext=False), "extended ids are dropped"),
    (dict(weigh_vocab=False), "not a distribution"),
])
def test_copy_distribution_names_the_mistake(mistake, says):
    wrong(check_copy_distribution, lambda *a: mixture(*a, **mistake), says)


def test_copy_distribution_other_wrong_answers():
    wrong(check_copy_distribution, lambda pv, *a: mixture(pv, *a)[..., :pv.shape[-1]], "extended ids are dropped")
    wrong(check_copy_distribution, lambda *a: mixture(*a).softmax(-1), "differs from the package's")
    wrong(check_copy_distribution, lambda *a: mixture(*a)[:, -1], "expected (B, T, V + n_ext)")
    wrong(check_copy_distribution, lambda *a: mixture(*a).tolist(), "should be a tensor")


def test_copy_distribution_accepts_a_right_answer_in_float32(capsys):
    """Computed in float32 it differs from the float64 reference by float32 rounding (~1e-8): right at its precision."""
    assert check_copy_distribution(lambda p_vocab, a, p_gen, src, n: mixture(p_vocab.float(), a.float(),
                                                                             p_gen.float(), src, n))
    assert "✓ copy_distribution equals" in capsys.readouterr().out


def smoothed(*args, eps=1e-4):
    """A near miss: p smoothed so that log p is never -inf (eps added to every id, then renormalised). Still a
    distribution, and within 1e-3 of the right p everywhere, but not p."""
    p = mixture(*args) + eps
    return p / p.sum(-1, keepdim=True)


def test_copy_distribution_rejects_a_near_miss():
    from seqviz.exercises.ch8 import _copy_cases, _copy_reference

    gaps = [float((smoothed(c["p_vocab"], c["a"], c["p_gen"], c["src_ext"], c["n_ext"]) - _copy_reference(c)).abs()
                  .max()) for c in _copy_cases()]
    assert 1e-5 < max(gaps) < 1e-3                # so a check loosened to atol 1e-3 (rtol 1e-2) would let it through
    wrong(check_copy_distribution, smoothed, "differs from the package's by up to")
    wrong(check_copy_distribution, smoothed, "close, but more than float64 rounding explains")
    wrong(check_copy_distribution, lambda *a: smoothed(*(t.float() if torch.is_tensor(t) and t.is_floating_point()
                                                          else t for t in a)), "float32 rounding")


def test_copy_distribution_reports_a_stub(capsys):
    def my_copy_dist(p_vocab, a, p_gen, src_ext, n_ext):
        raise NotImplementedError

    assert check_copy_distribution(my_copy_dist) is False
    out = capsys.readouterr().out
    assert "✗ my_copy_dist is not written yet" in out and max(map(len, out.splitlines())) <= 78
