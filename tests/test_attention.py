"""Chapters 5 and 6: attention maths (equal to scaled_dot_product_attention), score modules, and the lecture's worked
examples (seqviz.worked_examples: "We wash our cats", the seed's beam of 3)."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from seqviz.attention import (AdditiveScore, DotScore, GeneralScore, SoftAttention, attention, causal_mask,
                              masked_softmax)
from seqviz.worked_examples import SeedBeamScorer, beam_steps, we_wash_our_cats


def _qkv(*lead, tq=5, tk=7, dk=8, dv=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*lead, tq, dk, generator=g, dtype=torch.float64)
    k = torch.randn(*lead, tk, dk, generator=g, dtype=torch.float64)
    v = torch.randn(*lead, tk, dv, generator=g, dtype=torch.float64)
    return q, k, v


# ---------------------------------------------------------------------------------------------------------------
# attention == scaled_dot_product_attention
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lead", [(), (3,), (2, 4)])
def test_attention_equals_sdpa_unmasked(lead):
    q, k, v = _qkv(*lead)
    out, w = attention(q, k, v)
    ref = F.scaled_dot_product_attention(q, k, v)
    assert out.shape == (*lead, 5, 6) and w.shape == (*lead, 5, 7)
    assert torch.allclose(out, ref, atol=1e-6, rtol=0)


def test_attention_equals_sdpa_causal():
    q, k, v = _qkv(2, 3, tq=6, tk=6)
    out, w = attention(q, k, v, mask=torch.from_numpy(causal_mask(6)))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(out, ref, atol=1e-6, rtol=0)
    assert torch.all(w.triu(1) == 0)


def test_attention_equals_sdpa_padding_mask_float32():
    q, k, v = (t.float() for t in _qkv(3, tq=4, tk=7))
    lengths = torch.tensor([7, 3, 1])
    pad = torch.arange(7)[None, :] < lengths[:, None]       # (B, T_k)
    out, w = attention(q, k, v, mask=pad[:, None, :])
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, :])
    assert torch.allclose(out, ref, atol=1e-6, rtol=0)
    assert torch.all(w[1, :, 3:] == 0) and torch.all(w[2, :, 1:] == 0)


def test_attention_gradients_match_sdpa():
    q, k, v = (t.requires_grad_() for t in _qkv(2, tq=4, tk=5))
    attention(q, k, v, mask=torch.from_numpy(causal_mask(4, 5)))[0].square().sum().backward()
    grads = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    F.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(causal_mask(4, 5))).square().sum().backward()
    for a, t in zip(grads, (q, k, v)):
        assert torch.allclose(a, t.grad, atol=1e-6)


@given(tq=st.integers(1, 6), tk=st.integers(1, 6), dk=st.integers(1, 5), seed=st.integers(0, 10_000),
       data=st.data())
def test_weights_rows_sum_to_one_and_masked_are_zero(tq, tk, dk, seed, data):
    q, k, v = _qkv(2, tq=tq, tk=tk, dk=dk, dv=3, seed=seed)
    q = q * 10  # large scores: the softmax must still be exact 0 where masked
    bits = data.draw(st.lists(st.lists(st.booleans(), min_size=tk, max_size=tk), min_size=tq, max_size=tq))
    mask = torch.tensor(bits, dtype=torch.bool).reshape(tq, tk)
    mask[:, data.draw(st.integers(0, tk - 1))] = True        # every row may attend somewhere
    _, w = attention(q, k, v, mask=mask)
    assert torch.allclose(w.sum(-1), torch.ones(2, tq, dtype=torch.float64), atol=1e-12)
    assert torch.all(w[:, ~mask] == 0)
    assert torch.all(w >= 0)


# ---------------------------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------------------------
def test_bad_inputs_give_clear_errors():
    q, k, v = _qkv(2)
    with pytest.raises(ValueError, match="same width d_k"):
        attention(q, k[..., :3], v)
    with pytest.raises(ValueError, match="same length T_k"):
        attention(q, k, v[:, :4])
    with pytest.raises(ValueError, match="broadcast to the scores"):
        attention(q, k, v, mask=torch.ones(2, 7, dtype=torch.bool))
    with pytest.raises(ValueError, match="broadcast to the scores"):
        attention(q, k, v, mask=torch.ones(5, 6, dtype=torch.bool))
    with pytest.raises(ValueError, match="does not broadcast"):
        attention(q, k, v, mask=torch.ones(3, 5, 7, dtype=torch.bool))
    with pytest.raises(TypeError, match="bool tensor"):
        attention(q, k, v, mask=torch.ones(5, 7))
    m = torch.ones(5, 7, dtype=torch.bool)
    m[2] = False
    with pytest.raises(ValueError, match="all False"):
        attention(q, k, v, mask=m)
    with pytest.raises(ValueError, match="empty"):
        attention(q, k[:, :0], v[:, :0])
    with pytest.raises(ValueError, match="empty"):
        attention(q[:, :0], k, v)
    with pytest.raises(ValueError, match="leading"):
        attention(q, *_qkv(3)[1:])
    with pytest.raises(TypeError, match="floating-point"):
        attention(q.long(), k, v)


# ---------------------------------------------------------------------------------------------------------------
# the worked example "We wash our cats" (seed 003)
# ---------------------------------------------------------------------------------------------------------------
def test_we_wash_our_cats_numbers():
    e = we_wash_our_cats()
    assert e.raw.tolist() == [13, 24, 20, 12]
    assert torch.allclose(e.scaled, torch.tensor([1.625, 3.0, 2.5, 1.5], dtype=torch.float64))
    # the seed's slide rounds to 1.63, 3.0, 2.5, 1.5 and 0.12, 0.48, 0.29, 0.10 (the last is 0.107, rounded down)
    assert [math.floor(x * 100 + 0.5) / 100 for x in e.scaled.tolist()] == [1.63, 3.0, 2.5, 1.5]  # half up
    assert np.round(e.weights.numpy(), 3).tolist() == [0.121, 0.480, 0.291, 0.107]
    assert np.round(e.weights.numpy(), 2)[:3].tolist() == [0.12, 0.48, 0.29]
    v = torch.arange(8, dtype=torch.float64).reshape(4, 2)
    e2 = we_wash_our_cats(v)
    assert torch.allclose(e2.output, (e2.weights[:, None] * v).sum(0))
    # the causal row: "We" sees only itself
    assert e.causal_weights.tolist() == [1.0, 0.0, 0.0, 0.0]


# ---------------------------------------------------------------------------------------------------------------
# score functions as modules
# ---------------------------------------------------------------------------------------------------------------
def test_score_functions():
    torch.manual_seed(0)
    q, k = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    assert torch.allclose(DotScore()(q, k), torch.einsum("bqd,bkd->bqk", q, k))
    g = GeneralScore(4, 6)
    k6 = torch.randn(2, 5, 6)
    assert torch.allclose(g(q, k6), torch.einsum("bqd,de,bke->bqk", q, g.W_a.weight, k6), atol=1e-6)
    a = AdditiveScore(4, 6, d_attn=7)
    ref = torch.stack([torch.stack([a.v_a(torch.tanh(a.W_a(q[b, i]) + a.U_a(k6[b, j]))).squeeze()
                                    for j in range(5)]) for i in range(3) for b in range(2)])
    got = a(q, k6)                                              # (2, 3, 5)
    assert got.shape == (2, 3, 5)
    assert torch.allclose(got.permute(1, 0, 2).reshape(6, 5), ref, atol=1e-6)
    with pytest.raises(ValueError, match="widths to match"):
        DotScore(4, 6)


@pytest.mark.parametrize("kind", ["dot", "general", "additive"])
def test_soft_attention_context_is_weighted_sum(kind):
    torch.manual_seed(1)
    att = SoftAttention(kind, 4, 4)
    q, h = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    pad = torch.tensor([[True] * 5, [True, True, False, False, False]])
    ctx, w = att(q, h, mask=pad[:, None, :])
    assert torch.allclose(ctx, w @ h, atol=1e-6)
    assert torch.all(w[1, :, 2:] == 0)
    assert torch.allclose(w.sum(-1), torch.ones(2, 3))
    with pytest.raises(ValueError, match="score must be one of"):
        SoftAttention("cosine", 4, 4)


def test_masked_softmax_without_mask_is_softmax():
    s = torch.randn(3, 4)
    assert torch.equal(masked_softmax(s), torch.softmax(s, -1))


# ---------------------------------------------------------------------------------------------------------------
# beam search: seed 004's worked example
# ---------------------------------------------------------------------------------------------------------------
def _pct(scorer, beam):
    return [(scorer.decode(ids), round(100 * p)) for ids, p in beam]


def test_seed_beam_example_greedy_vs_beam():
    from seqviz.decode import beam_search, generate
    s = SeedBeamScorer()
    greedy = generate(s.next_token_logits, [s.bos], 10, greedy=True, stop_id=s.eos)
    assert s.decode(greedy) == "How will you </s>"
    best = beam_search(s.next_token_logits, [s.bos], 3, 10, stop_id=s.eos)[0]
    assert s.decode(best[0]) == "How are you </s>"
    steps = beam_steps(s, s.bos, 3, 10, stop_id=s.eos)
    assert _pct(s, steps[0]) == [("How", 75), ("What", 3), ("You", 1)]
    assert _pct(s, steps[1]) == [("How will", 27), ("How are", 24), ("How do", 12)]
    assert _pct(s, steps[2]) == [("How are you", 10), ("How do you", 8), ("How will you", 2)]
    assert _pct(s, steps[3]) == [("How do you do", 7), ("How are you </s>", 6), ("How are you doing", 3)]
    # beam width 1 is greedy
    one = beam_search(s.next_token_logits, [s.bos], 1, 10, stop_id=s.eos)[0][0]
    assert one == greedy
    # every distribution of the toy model sums to 1
    for ctx in list(s.TABLE) + [("x",)]:
        assert math.isclose(sum(s.probs(ctx).values()), 1.0)
