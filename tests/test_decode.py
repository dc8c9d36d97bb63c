"""seqviz.decode: temperature, top-k, greedy, sampling and beam search over a score function."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqviz.decode import beam_search, generate, sample_next, softmax_with_temperature, top_k_filter

logit_lists = st.lists(st.floats(-20, 20, allow_nan=False), min_size=1, max_size=30)


@settings(max_examples=80, deadline=None)
@given(logit_lists, st.floats(0.05, 20))
def test_temperature_softmax_is_a_distribution_and_equals_p_pow(z, T):
    p = softmax_with_temperature(z, T)
    assert math.isclose(float(p.sum()), 1.0, abs_tol=1e-9) and (p >= 0).all()
    # the same as p^(1/T) renormalised, where p = softmax(z)
    base = torch.softmax(torch.tensor(z, dtype=torch.float64), 0)
    q = base ** (1 / T)
    if torch.isfinite(q).all() and q.sum() > 1e-200:
        assert torch.allclose(p, q / q.sum(), atol=1e-8)


def test_numpy_temperature_is_a_number():
    assert torch.allclose(softmax_with_temperature([1.0, 2.0], np.float32(0.5)), softmax_with_temperature([1.0, 2.0], 0.5))


def test_temperature_extremes():
    z = torch.tensor([1.0, 3.0, 2.0])
    assert softmax_with_temperature(z, 1e-3).argmax() == 1 and softmax_with_temperature(z, 1e-3).max() > 0.999
    flat = softmax_with_temperature(z, 1e4)
    assert torch.allclose(flat, torch.full((3,), 1 / 3, dtype=torch.float64), atol=1e-3)
    # log-probabilities and logits give the same distribution
    assert torch.allclose(softmax_with_temperature(torch.log_softmax(z, 0), 0.7), softmax_with_temperature(z, 0.7))


def test_top_k_keeps_k_best():
    z = np.array([0.1, 5.0, 3.0, -1.0, 4.0])
    f = top_k_filter(z, 2)
    assert torch.isfinite(f).tolist() == [False, True, False, False, True]
    assert torch.equal(top_k_filter(z, None), torch.as_tensor(z, dtype=torch.float64))
    assert torch.isfinite(top_k_filter(z, 10)).all()
    gen = torch.Generator().manual_seed(0)
    draws = {sample_next(z, 5.0, top_k=2, generator=gen) for _ in range(200)}
    assert draws == {1, 4}


def _bigram_score_fn():
    # a tiny deterministic "LM" over 4 tokens: after token i, token (i+1) % 4 is most likely
    table = torch.log(torch.tensor([[0.1, 0.6, 0.2, 0.1],
                                    [0.1, 0.1, 0.7, 0.1],
                                    [0.1, 0.1, 0.1, 0.7],
                                    [0.5, 0.2, 0.2, 0.1]]))
    return lambda ctx: table[ctx[-1]]


def test_greedy_is_the_temperature_zero_limit():
    f = _bigram_score_fn()
    greedy = generate(f, [0], 8, greedy=True)
    assert greedy == [1, 2, 3, 0, 1, 2, 3, 0]
    cold = generate(f, [0], 8, temperature=1e-4, seed=3)
    assert cold == greedy


def test_sampling_is_seeded_and_stops():
    f = _bigram_score_fn()
    a = generate(f, [0], 30, temperature=1.5, seed=11)
    b = generate(f, [0], 30, temperature=1.5, seed=11)
    assert a == b and len(a) == 30
    stopped = generate(f, [2], 50, greedy=True, stop_id=0)
    assert stopped == [3, 0]  # the stop token is kept, nothing after it
    assert generate(f, [0], 0) == []


def test_sampling_frequencies_follow_temperature():
    z = torch.log(torch.tensor([0.7, 0.2, 0.1]))
    gen = torch.Generator().manual_seed(0)
    counts = np.bincount([sample_next(z, 1.0, generator=gen) for _ in range(4000)], minlength=3) / 4000
    assert np.allclose(counts, [0.7, 0.2, 0.1], atol=0.03)


def test_beam_search_beats_greedy_when_greedy_is_myopic():
    # greedy takes token 1 (p=.5) then is stuck with a flat tail; token 2 (p=.4) leads to a sure continuation
    def f(ctx):
        if len(ctx) == 1:
            return torch.log(torch.tensor([0.05, 0.5, 0.4, 0.05]))
        if ctx[1] == 1:
            return torch.log(torch.tensor([0.3, 0.25, 0.25, 0.2]))
        return torch.log(torch.tensor([0.97, 0.01, 0.01, 0.01]))
    greedy = generate(f, [3], 2, greedy=True)
    best, lp = beam_search(f, [3], beam_size=2, max_new_tokens=2)[0]
    assert greedy[0] == 1 and best == [2, 0]
    assert math.isclose(lp, math.log(0.4) + math.log(0.97), rel_tol=1e-6)
    # beam size 1 is greedy
    assert beam_search(f, [3], beam_size=1, max_new_tokens=2)[0][0] == greedy


def test_beam_search_stops_at_stop_id():
    f = _bigram_score_fn()
    out = beam_search(f, [2], beam_size=3, max_new_tokens=6, stop_id=0)
    ids, lp = out[0]
    assert ids == [3, 0] and math.isclose(lp, math.log(0.7 * 0.5), rel_tol=1e-6)
    assert len(out) <= 3 and all(o[1] <= lp + 1e-12 for o in out)


@pytest.mark.parametrize("bad, err", [(0.0, ValueError), (-1.0, ValueError), (float("nan"), TypeError),
                                      ("hot", TypeError)])
def test_bad_temperature(bad, err):
    with pytest.raises(err, match="temperature"):
        softmax_with_temperature([1.0, 2.0], bad)


def test_bad_scores_and_arguments():
    with pytest.raises(ValueError, match=r"shape \(V,\)"):
        softmax_with_temperature([[1.0, 2.0]], 1.0)
    with pytest.raises(ValueError, match="empty"):
        softmax_with_temperature([], 1.0)
    with pytest.raises(ValueError, match="NaN"):
        softmax_with_temperature([1.0, float("nan")], 1.0)
    with pytest.raises(ValueError, match="-inf"):
        softmax_with_temperature([-math.inf, -math.inf], 1.0)
    with pytest.raises(ValueError, match="top_k"):
        top_k_filter([1.0, 2.0], 0)
    f = _bigram_score_fn()
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate(f, [0], -1)
    with pytest.raises(ValueError, match="temperature"):
        generate(f, [0], 3, temperature=0)
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(f, [0], 0, 3)
