"""Chapters 1 and 2's build-it checks accept right answers written as a student would write them (the known wrong
answers are in seqviz.exercises.mistakes, tested by tests/test_exercises.py), and the continuation probability they
teach is the package's own: Kneser-Ney's lowest order in seqviz.ngram."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from seqviz.exercises import check_continuation_prob, check_window_forward
from seqviz.exercises.ch1 import continuation_prob


def student_continuation(counts):
    contexts = Counter(w for (v, w), c in counts.items() if c > 0)
    types = sum(contexts.values())
    return {w: n / types for w, n in contexts.items()}


def student_window(idx, E, W, b1, U, b2):
    e = torch.cat([E[idx[:, k]] for k in range(idx.shape[1])], dim=1)   # (B, n d), oldest first
    h = torch.tanh(e @ W.T + b1)
    return torch.softmax(h @ U.T + b2, dim=-1)


def test_right_answers_pass(capsys):
    assert check_continuation_prob(student_continuation)
    assert check_window_forward(student_window)
    out = capsys.readouterr().out
    assert out.count("✓") == 2


def test_a_float64_window_answer_and_zero_entries_for_unseen_words_pass():
    assert check_window_forward(lambda *a: student_window(*(x.double() if x.is_floating_point() else x for x in a)))
    assert check_continuation_prob(lambda c: {**{v: 0.0 for v, _ in c}, **student_continuation(c)})


def test_numpy_and_tensor_scalars_are_numbers_judged_at_their_precision():
    """A NumPy float32 or a 0-d tensor is a number (the check once said "np.float32(0.0909) ... should be a
    number"), judged at float32's precision by the book's one rule (seqviz.exercises._base.close)."""
    assert check_continuation_prob(lambda c: {w: np.float32(p) for w, p in student_continuation(c).items()})
    assert check_continuation_prob(lambda c: {w: torch.tensor(p) for w, p in student_continuation(c).items()})
    with pytest.raises(AssertionError, match="should be a number"):
        check_continuation_prob(lambda c: {w: True for w in student_continuation(c)})


@pytest.mark.parametrize("check, fn, says", [
    (check_continuation_prob, lambda c: [1.0], "should be a dict"),
    (check_continuation_prob, lambda c: {w: "x" for w in student_continuation(c)}, "should be a number"),
    (check_window_forward, lambda idx, E, W, b1, U, b2: torch.tanh(torch.cat([E[idx[:, k]] for k in
                                                                               range(idx.shape[1])], 1) @ W.T + b1),
     "returned the hidden layer"),
    (check_window_forward, lambda *a: student_window(*a).numpy().tolist(), "should be a tensor"),
])
def test_malformed_answers_are_named(check, fn, says):
    with pytest.raises(AssertionError, match=says):
        check(fn)


def test_not_written_yet_is_reported_not_raised(capsys):
    def todo(*a):
        raise NotImplementedError

    assert check_continuation_prob(todo) is False and check_window_forward(todo) is False
    assert capsys.readouterr().out.count("not written yet") == 2


def test_the_reference_continuation_probability_is_the_packages_lowest_kneser_ney_order():
    """The exercise's P_cont is c'(w) / sum_v c'(v) of the package's Kneser-Ney (ScratchKN's unigram order, (1.7))."""
    from seqviz.ngram import ScratchKN

    sents = [s.split() for s in ("hong kong is big", "in hong kong", "the company said", "a company said it",
                                 "in the city", "of the city", "said the company")]
    kn = ScratchKN(n=2).fit(sents)
    bigrams = Counter()
    for s in sents:
        padded = ["<s>"] + [w if w in kn.vocab.stoi else "<unk>" for w in s] + ["</s>"]
        bigrams.update(zip(padded, padded[1:]))
    p = continuation_prob(bigrams)
    assert p == pytest.approx({g[0]: k / kn.total[()] for g, k in kn.cp.items() if len(g) == 1})
    # 'kong' follows one word (hong), 'the' four (<s>, in, of, said): their continuation probabilities are 1 : 4
    assert p["the"] == pytest.approx(4 * p["kong"]) and sum(p.values()) == pytest.approx(1.0)
