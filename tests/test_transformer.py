"""seqviz.transformer: every layer equals its torch reference with copied weights; the LM's invariants (causality,
permutation equivariance without positions, KV-cache decoding = full-prefix decoding); bad input -> clear errors."""
import numpy as np
import pytest
import torch
from torch import nn

from seqviz._checks import IGNORE_INDEX
from seqviz.transformer import (DecodeState, LayerNorm, LearnedPositions, MultiHeadAttention, SinusoidalPositions,
                                TransformerBlock, TransformerConfig, TransformerLM, mask_tokens, sinusoidal_encoding)

TOL = 1e-5


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _padding(lengths, T):
    return torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]             # (B, T) True = real


# -- LayerNorm ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("impl", ["scratch", "fused"])
def test_layernorm_equals_torch(impl):
    ref = nn.LayerNorm(12)
    with torch.no_grad():
        ref.weight.copy_(_rand(12, seed=1))
        ref.bias.copy_(_rand(12, seed=2))
    ln = LayerNorm(12, impl=impl).copy_from_torch(ref)
    x = _rand(3, 5, 12) * 4 + 2
    torch.testing.assert_close(ln(x), ref(x), atol=TOL, rtol=0)


def test_layernorm_normalises_and_rejects_wrong_width():
    y = LayerNorm(16)(_rand(4, 16) * 10 + 3)
    torch.testing.assert_close(y.mean(-1), torch.zeros(4), atol=1e-5, rtol=0)
    torch.testing.assert_close(y.std(-1, unbiased=False), torch.ones(4), atol=1e-3, rtol=0)
    with pytest.raises(ValueError, match="width 8"):
        LayerNorm(16)(_rand(2, 8))


# -- multi-head attention -----------------------------------------------------------------------------------------
def _mha_pair(d=16, H=4, bias=True, seed=0):
    torch.manual_seed(seed)
    ref = nn.MultiheadAttention(d, H, bias=bias, batch_first=True)
    with torch.no_grad():                                                         # non-zero biases, no symmetry
        for p in ref.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    return ref


@pytest.mark.parametrize("impl", ["scratch", "fused"])
@pytest.mark.parametrize("masks", ["none", "padding", "causal", "both"])
def test_mha_equals_torch_self_attention(impl, masks):
    ref = _mha_pair()
    mha = MultiHeadAttention(16, 4, impl=impl).copy_from_torch(ref)
    x = _rand(3, 7, 16)
    kpm = _padding([7, 4, 2], 7) if masks in ("padding", "both") else None
    causal = masks in ("causal", "both")
    attn_mask = torch.ones(7, 7, dtype=torch.bool).triu(1) if causal else None   # torch: True = blocked
    want, want_w = ref(x, x, x, key_padding_mask=None if kpm is None else ~kpm, attn_mask=attn_mask,
                       average_attn_weights=False)
    got = mha(x, key_padding_mask=kpm, causal=causal, need_weights=True)
    torch.testing.assert_close(got.y, want, atol=TOL, rtol=0)
    torch.testing.assert_close(got.weights, want_w, atol=TOL, rtol=0)
    y_fast = mha(x, key_padding_mask=kpm, causal=causal).y                         # no weights: the impl's own path
    torch.testing.assert_close(y_fast, want, atol=TOL, rtol=0)


@pytest.mark.parametrize("impl", ["scratch", "fused"])
def test_mha_equals_torch_cross_attention(impl):
    ref = _mha_pair(seed=3)
    mha = MultiHeadAttention(16, 4, impl=impl).copy_from_torch(ref)
    x, mem = _rand(2, 5, 16, seed=1), _rand(2, 9, 16, seed=2)
    kpm = _padding([9, 6], 9)
    want, want_w = ref(x, mem, mem, key_padding_mask=~kpm, average_attn_weights=False)
    got = mha(x, mem, key_padding_mask=kpm, need_weights=True)
    torch.testing.assert_close(got.y, want, atol=TOL, rtol=0)
    torch.testing.assert_close(got.weights, want_w, atol=TOL, rtol=0)
    assert got.weights.shape == (2, 4, 5, 9)
    assert float(got.weights[1, :, :, 6:].detach().abs().max()) == 0.0                   # padded keys get weight 0


def test_mha_scratch_equals_fused_with_gradients():
    torch.manual_seed(0)
    a = MultiHeadAttention(24, 3, impl="scratch")
    b = MultiHeadAttention(24, 3, impl="fused")
    b.load_state_dict(a.state_dict())
    x = _rand(2, 6, 24)
    ya, yb = a(x, causal=True).y, b(x, causal=True).y
    torch.testing.assert_close(ya, yb, atol=TOL, rtol=0)
    ya.square().sum().backward()
    yb.square().sum().backward()
    for pa, pb in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(pa.grad, pb.grad, atol=1e-4, rtol=1e-4)


def test_mha_weights_only_when_asked_and_never_stored():
    mha = MultiHeadAttention(8, 2)
    out = mha(_rand(1, 3, 8))
    assert out.weights is None and out.kv is None
    before = set(vars(mha))
    mha(_rand(1, 3, 8), need_weights=True)
    assert set(vars(mha)) == before


def test_mha_bad_input():
    with pytest.raises(ValueError, match="not divisible by num_heads=3"):
        MultiHeadAttention(16, 3)
    mha = MultiHeadAttention(16, 4)
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(B, T_k\) = \(2, 5\)"):
        mha(_rand(2, 5, 16), key_padding_mask=torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="bool tensor"):
        mha(_rand(2, 5, 16), key_padding_mask=torch.ones(2, 5))
    with pytest.raises(ValueError, match="d_model=16"):
        mha(_rand(2, 5, 12))
    with pytest.raises(ValueError, match="causal=True is for self-attention"):
        mha(_rand(2, 5, 16), _rand(2, 4, 16), causal=True)


# -- the block ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("impl", ["scratch", "fused"])
def test_block_equals_torch_encoder_layer(norm, activation, impl):
    torch.manual_seed(1)
    ref = nn.TransformerEncoderLayer(16, 4, dim_feedforward=40, dropout=0.0, activation=activation,
                                     batch_first=True, norm_first=(norm == "pre"))
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(torch.randn_like(p) * 0.1)                                      # LayerNorm gamma/beta not 1/0
    block = TransformerBlock(16, 4, 40, 0.0, norm, activation, impl=impl).copy_from_torch(ref)
    x = _rand(3, 6, 16)
    kpm = _padding([6, 3, 5], 6)
    causal = torch.ones(6, 6, dtype=torch.bool).triu(1)
    ref.train()                                                                   # dropout 0; avoids the fast path
    torch.testing.assert_close(block(x).y, ref(x), atol=TOL, rtol=0)
    want = ref(x, src_mask=causal, src_key_padding_mask=~kpm)
    torch.testing.assert_close(block(x, key_padding_mask=kpm, causal=True).y, want, atol=TOL, rtol=0)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_cross_block_equals_torch_decoder_layer(norm):
    torch.manual_seed(2)
    ref = nn.TransformerDecoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True,
                                     norm_first=(norm == "pre"))
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    block = TransformerBlock(16, 2, 32, 0.0, norm, "relu", cross_attention=True).copy_from_torch(ref)
    x, mem = _rand(2, 5, 16, seed=4), _rand(2, 7, 16, seed=5)
    mpad = _padding([7, 4], 7)
    want = ref(x, mem, tgt_mask=torch.ones(5, 5, dtype=torch.bool).triu(1), memory_key_padding_mask=~mpad)
    got = block(x, causal=True, memory=mem, memory_mask=mpad, need_weights=True)
    torch.testing.assert_close(got.y, want, atol=TOL, rtol=0)
    assert got.cross_weights.shape == (2, 2, 5, 7)


def test_block_copy_rejects_mismatched_norm():
    ref = nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True, norm_first=True)
    with pytest.raises(ValueError, match="norm_first"):
        TransformerBlock(8, 2, 16, norm="post").copy_from_torch(ref)


# -- positions ----------------------------------------------------------------------------------------------------
def test_sinusoidal_positions_are_the_widget_function():
    sp = SinusoidalPositions(50, 16)
    np.testing.assert_allclose(sp(10, offset=5).numpy(), sinusoidal_encoding(50, 16)[5:15], atol=1e-6)
    assert sinusoidal_encoding(3, 4)[1, 0] == pytest.approx(np.sin(1.0))
    assert sinusoidal_encoding(3, 4)[1, 3] == pytest.approx(np.cos(1.0 / 100.0))


def test_sequence_longer_than_position_table_is_an_error():
    with pytest.raises(ValueError, match="max_len=8"):
        LearnedPositions(8, 4)(9)
    m = TransformerLM(TransformerConfig.tiny(10, max_len=8))
    with pytest.raises(ValueError, match="crop the input to its last 8 tokens"):
        m(torch.zeros(1, 9, dtype=torch.long))
    for pos in ("sinusoidal", "none"):
        with pytest.raises(ValueError, match="max_len=8"):
            TransformerLM(TransformerConfig.tiny(10, max_len=8, positions=pos))(torch.zeros(1, 9, dtype=torch.long))


# -- the language model -------------------------------------------------------------------------------------------
def _lm(**kw):
    torch.manual_seed(0)
    return TransformerLM(TransformerConfig.tiny(23, **kw)).eval()


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_lm_is_causal(norm):
    m = _lm(norm=norm)
    x = torch.randint(23, (2, 12), generator=torch.Generator().manual_seed(1))
    x2 = x.clone()
    x2[:, 7:] = (x2[:, 7:] + 5) % 23                                              # change every token after t = 6
    a, b = m(x)[0], m(x2)[0]
    torch.testing.assert_close(a[:, :7], b[:, :7], atol=1e-6, rtol=0)
    assert (a[:, 7:] - b[:, 7:]).abs().max() > 1e-3


def test_bidirectional_model_sees_the_future():
    m = _lm(causal=False)
    x = torch.randint(23, (1, 10), generator=torch.Generator().manual_seed(1))
    x2 = x.clone()
    x2[0, 9] = (x2[0, 9] + 1) % 23
    assert (m(x)[0][0, 0] - m(x2)[0][0, 0]).abs().max() > 1e-4
    with pytest.raises(ValueError, match="cannot decode left to right"):
        m.step(x)


def test_without_positions_permutation_equivariant_with_them_not():
    perm = torch.randperm(10, generator=torch.Generator().manual_seed(3))
    x = torch.randint(23, (2, 10), generator=torch.Generator().manual_seed(2))
    m = _lm(positions="none", causal=False)
    torch.testing.assert_close(m(x[:, perm])[0], m(x)[0][:, perm], atol=1e-5, rtol=0)
    for pos in ("learned", "sinusoidal"):
        m = _lm(positions=pos, causal=False)
        with torch.no_grad():                                                     # learned rows start near 0
            if pos == "learned":
                m.pos.P.weight.normal_()
        assert (m(x[:, perm])[0] - m(x)[0][:, perm]).abs().max() > 1e-3


def test_lm_loss_matches_cross_entropy_and_weights_tied():
    m = _lm()
    assert m.V.weight is m.E.weight
    x = torch.randint(23, (2, 9), generator=torch.Generator().manual_seed(4))
    y = x.roll(-1, 1)
    y[1, 5:] = IGNORE_INDEX
    logits, loss = m(x, y)
    keep = y != IGNORE_INDEX
    want = torch.nn.functional.cross_entropy(logits[keep], y[keep])
    torch.testing.assert_close(loss, want)


def test_lm_scratch_equals_fused_and_attention_shape():
    m = _lm(norm="pre")
    x = torch.randint(23, (3, 11), generator=torch.Generator().manual_seed(5))
    fused = m(x)[0]
    m.impl = "scratch"
    logits, _, attn = m(x, return_attention=True)
    torch.testing.assert_close(logits, fused, atol=TOL, rtol=0)
    assert attn.shape == (3, 2, 2, 11, 11)                                        # (B, L, H, T, T)
    torch.testing.assert_close(attn.sum(-1), torch.ones(3, 2, 2, 11))
    assert float(attn.triu(1).abs().max()) == 0.0                                 # causal: nothing above the diagonal
    assert m.attention_weights(x[0]).shape == (2, 2, 11, 11)


def test_lm_padding_mask_leaves_real_positions_unchanged():
    m = _lm(causal=False)
    x = torch.randint(23, (1, 6), generator=torch.Generator().manual_seed(6))
    padded = torch.cat([x, torch.zeros(1, 3, dtype=torch.long)], 1)              # (1, 9)
    a = m(x)[0]
    b = m(padded, mask=_padding([6], 9))[0][:, :6]
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match=r"mask must have shape \(B, T\) = \(1, 9\)"):
        m(padded, mask=_padding([6], 8))


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_kv_cache_decoding_equals_full_prefix(positions):
    m = _lm(positions=positions, max_len=16)
    x = torch.randint(23, (2, 22), generator=torch.Generator().manual_seed(7))
    logits, state = m.step(x[:, :3])
    for t in range(3, 22):
        full = m(x[:, max(0, t - 16):t])[0][:, -1]                                # the last max_len tokens
        torch.testing.assert_close(logits, full, atol=1e-5, rtol=0)
        assert state.ids.shape[1] == min(t, 16)
        logits, state = m.step(x[:, t:t + 1], state)
    assert isinstance(state, DecodeState) and state.kv[0][0].shape == (2, 2, 16, 16)


def test_reorder_state_selects_rows():
    m = _lm()
    x = torch.randint(23, (3, 5), generator=torch.Generator().manual_seed(8))
    _, state = m.step(x)
    idx = torch.tensor([2, 2, 0])
    logits, _ = m.step(torch.tensor([[1], [4], [5]]), m.reorder_state(state, idx))
    want, _ = m.step(torch.cat([x[idx], torch.tensor([[1], [4], [5]])], 1))
    torch.testing.assert_close(logits, want, atol=1e-5, rtol=0)


def test_next_token_logits_and_generate():
    m = _lm()
    ctx = [1, 2, 3, 4]
    torch.testing.assert_close(m.next_token_logits(ctx), m(torch.tensor([ctx]))[0][0, -1])
    a = m.generate(ctx, 5, temperature=0.8, top_k=5, seed=0)
    assert a == m.generate(ctx, 5, temperature=0.8, top_k=5, seed=0) and len(a) == 5
    assert m.generate(ctx, 3, greedy=True)[0] == int(m.next_token_logits(ctx).argmax())


def test_lm_bad_input():
    with pytest.raises(ValueError, match="not divisible by num_heads"):
        TransformerConfig(10, d_model=30, num_heads=4)
    m = _lm()
    with pytest.raises(ValueError, match=r"token id 23 .* \[0, 23\)"):
        m(torch.tensor([[1, 23]]))
    with pytest.raises(ValueError, match="targets must have shape"):
        m(torch.tensor([[1, 2]]), torch.tensor([[1, 2, 3]]))
    with pytest.raises(ValueError, match="norm must be one of"):
        TransformerConfig(10, norm="middle")
    with pytest.raises(ValueError, match="positions must be one of"):
        TransformerConfig(10, positions="rotary")


def test_lm_training_is_seeded_and_learns():
    def run():
        torch.manual_seed(0)
        m = TransformerLM(TransformerConfig.tiny(5))
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
        x = torch.tensor([[0, 1, 2, 3, 4] * 4])                                  # a cycle: fully predictable
        for _ in range(60):
            _, loss = m(x[:, :-1], x[:, 1:])
            opt.zero_grad()
            loss.backward()
            opt.step()
        return float(loss)
    a = run()
    assert a == run() and a < 0.1


def test_mask_tokens_80_10_10():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 50, (64, 256), generator=g)
    x, y = mask_tokens(ids, mask_id=0, vocab_size=50, generator=g, keep=(7,))
    chosen = y != IGNORE_INDEX
    assert 0.13 < chosen.float().mean() < 0.17
    assert not bool(chosen[ids == 7].any())
    assert torch.equal(y[chosen], ids[chosen])
    assert torch.equal(x[~chosen], ids[~chosen])
    masked = (x[chosen] == 0).float().mean()
    same = (x[chosen] == ids[chosen]).float().mean()
    assert 0.77 < masked < 0.83 and 0.08 < same < 0.13
    with pytest.raises(ValueError, match="mask_id 60"):
        mask_tokens(ids, 60, 50)


def test_random_windows_are_seeded_shifted_windows():
    from seqviz.transformer import random_windows
    ids = torch.arange(100) % 37
    a, b = random_windows(ids, 3, 4, 10, seed=5), random_windows(ids, 3, 4, 10, seed=5)
    assert all(torch.equal(p.x, q.x) for p, q in zip(a, b)) and a[0].x.shape == (4, 10)
    assert torch.equal(a[1].x[:, 1:], a[1].y[:, :-1])
    assert torch.equal(a[2].y, ids[(a[2].x[:, :1] + torch.arange(1, 11))])
    with pytest.raises(ValueError, match="more than T=10"):
        random_windows(torch.arange(5), 1, 1, 10)


def test_window_loss_counts_every_position_once():
    from seqviz.transformer import window_loss
    m = _lm(max_len=8)
    ids = torch.randint(23, (50,), generator=torch.Generator().manual_seed(9))
    total = 0.0
    for k in range(0, 49, 8):                                                     # windows 0-7, 8-15, ..., 48
        x, y = ids[k:min(k + 8, 49)], ids[k + 1:min(k + 9, 50)]
        total += float(torch.nn.functional.cross_entropy(m(x[None])[0][0], y, reduction="sum"))
    assert window_loss(m, ids, 8, batch_size=2) == pytest.approx(total / 49, rel=1e-6)


# -- the encoder-decoder ------------------------------------------------------------------------------------------
def _encdec(**kw):
    from seqviz.transformer import EncoderDecoderConfig, EncoderDecoderTransformer
    torch.manual_seed(0)
    return EncoderDecoderTransformer(EncoderDecoderConfig.tiny(15, 12, bos_id=1, pad_id=0, **kw)).eval()


def test_encdec_padding_and_causality():
    m = _encdec(num_layers=2)
    src = torch.randint(2, 15, (1, 6), generator=torch.Generator().manual_seed(0))
    tgt = torch.randint(2, 12, (1, 5), generator=torch.Generator().manual_seed(1))
    padded = torch.cat([src, torch.zeros(1, 3, dtype=torch.long)], 1)
    a = m(src, tgt)[0]
    b = m(padded, tgt, mask=_padding([6], 9))[0]
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)                          # padding changes nothing
    tgt2 = tgt.clone()
    tgt2[0, 3] = (tgt2[0, 3] + 1) % 12
    c = m(src, tgt2)[0]                                                           # decoder input is shift_right(y)
    torch.testing.assert_close(a[:, :4], c[:, :4], atol=1e-6, rtol=0)
    assert (a[:, 4] - c[:, 4]).abs().max() > 1e-4
    _, _, attn = m(padded, tgt, mask=_padding([6], 9), return_attention=True)
    assert attn["cross"].shape == (1, 2, 2, 5, 9) and float(attn["cross"][..., 6:].detach().abs().max()) == 0.0
    with pytest.raises(ValueError, match=r"mask \(the source padding mask\) must have shape"):
        m(padded, tgt, mask=_padding([6], 8))


def test_encdec_cached_decoding_equals_full_pass_and_learns_to_copy():
    m = _encdec()
    src = torch.tensor([[3, 4, 5, 6, 7]])
    bound = m.bind(src)
    ids = torch.tensor([[1, 3, 4, 5]])
    logits, state = bound.step(ids[:, :2])
    logits, state = bound.step(ids[:, 2:3], bound.reorder_state(state, torch.tensor([0])))
    full = m(src, tgt_in=ids[:, :3])[0][:, -1]
    torch.testing.assert_close(logits, full, atol=1e-5, rtol=0)
    # a copy task: the decoder must read the source through cross-attention
    torch.manual_seed(0)
    m.train()
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(0)
    for _ in range(300):
        src = torch.randint(2, 12, (32, 6), generator=g)
        _, loss = m(src, src)                                                     # target = source (ids < 12)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(loss) < 0.3
    from seqviz.decode import generate
    import seqviz.decode as decode
    if hasattr(decode, "as_stepper"):
        out = generate(m.bind(torch.tensor([5, 9, 2, 7, 3, 11])), [1], 6, greedy=True)
        assert out == [5, 9, 2, 7, 3, 11]


def test_decode_through_the_cache_equals_rescoring_the_context():
    import seqviz.decode as decode
    if not hasattr(decode, "as_stepper"):
        pytest.skip("this seqviz.decode takes score functions only")
    m = _lm(max_len=8)                                                            # beams run past the window
    cached = decode.beam_search(m, [1, 2, 3], 3, 10)
    rescored = decode.beam_search(m.next_token_logits, [1, 2, 3], 3, 10)
    assert [ids for ids, _ in cached] == [ids for ids, _ in rescored]
    assert [lp for _, lp in cached] == pytest.approx([lp for _, lp in rescored], abs=1e-4)
    assert decode.generate(m, [4], 12, greedy=True) == decode.generate(m.next_token_logits, [4], 12, greedy=True)


# -- sliding_loss (the PTB rung's evaluation) ---------------------------------------------------------------------
def test_sliding_loss_scores_every_target_once():
    from seqviz.transformer import sliding_loss, window_loss
    m = _lm(max_len=8).requires_grad_(False)
    ids = torch.randint(0, 16, (33,), generator=torch.Generator().manual_seed(3))    # 32 targets = 4 windows of 8
    loss, n = sliding_loss(m, ids, 8, stride=8, batch_size=3)
    assert n == 32 and loss == pytest.approx(window_loss(m, ids, 8), rel=1e-6)   # stride T: the same windows
    # stride 2: every target after the first window is scored by the window whose last 2 positions hold it
    loss2, n2 = sliding_loss(m, ids, 8, stride=2, batch_size=5)
    total = float(torch.nn.functional.cross_entropy(m(ids[None, :8])[0][0], ids[1:9], reduction="sum"))
    for s in range(2, 26, 2):
        logits = m(ids[None, s:s + 8])[0][0]                                      # (8, V)
        total += float(torch.nn.functional.cross_entropy(logits[-2:], ids[s + 7:s + 9], reduction="sum"))
    assert n2 == 32 and loss2 == pytest.approx(total / 32, rel=1e-6)
    skipped, n3 = sliding_loss(m, ids, 8, skip_target=int(ids[5]))
    assert n3 == 32 - int((ids[1:] == ids[5]).sum())
    with pytest.raises(ValueError, match="stride must be an int in"):
        sliding_loss(m, ids, 8, stride=9)
    with pytest.raises(ValueError, match="no target left"):
        sliding_loss(m, torch.tensor([1, 2]), 8, skip_target=2)


# -- greedy decoding of the encoder-decoder (chapter 5's exact_match contract) ------------------------------------
def test_encdec_greedy_matches_stepwise_argmax_and_stops_at_eos():
    from seqviz.attention import exact_match
    from seqviz.transformer import EncoderDecoderConfig
    m = _encdec(eos_id=2)
    src = torch.randint(3, 15, (3, 5), generator=torch.Generator().manual_seed(4))
    out, cross = m.greedy(src, max_len=6, return_attention=True)
    for b in range(3):                                                            # rescoring the prefix each step
        ids = [1]
        for _ in range(6):
            ids.append(int(m(src[b:b + 1], tgt_in=torch.tensor([ids]))[0][0, -1].argmax()))
            if ids[-1] == 2:
                break
        assert out[b] == ids[1:]
    assert cross.shape == (3, 1, 2, len(max(out, key=len)), 5)
    torch.testing.assert_close(cross.sum(-1), torch.ones_like(cross.sum(-1)), atol=1e-5, rtol=0)
    ok = exact_match(m, src.tolist(), out, pad_id=0, max_len=6)                  # its own outputs: all right
    assert bool(ok.all())
    with pytest.raises(ValueError, match="eos_id must be a target-vocabulary id"):
        EncoderDecoderConfig.tiny(15, 12, bos_id=1, pad_id=0, eos_id=12)


def test_init_std_sets_the_initial_weights_and_rejects_bad_values():
    from seqviz.transformer import EncoderDecoderConfig, EncoderDecoderTransformer
    torch.manual_seed(0)
    lm = TransformerLM(TransformerConfig(200, max_len=16, d_model=64, num_layers=2, init_std=0.1))
    assert float(lm.E.weight.std()) == pytest.approx(0.1, rel=0.05)
    assert float(lm.blocks[0].attn.W_O.weight.std()) == pytest.approx(0.1 / 2, rel=0.1)   # / sqrt(2 L), L = 2
    ed = EncoderDecoderTransformer(EncoderDecoderConfig(30, 40, bos_id=1, pad_id=0, d_model=64, init_std=0.1))
    assert float(ed.E_tgt.weight.std()) == pytest.approx(0.1, rel=0.1)
    for bad in (0, -0.1, True, "0.1"):
        with pytest.raises(ValueError, match="init_std must be a number > 0"):
            TransformerConfig(10, init_std=bad)
        with pytest.raises(ValueError, match="init_std must be a number > 0"):
            EncoderDecoderConfig(10, 10, bos_id=1, pad_id=0, init_std=bad)


def test_masked_windows_are_mask_tokens_of_random_windows():
    from seqviz.transformer import masked_windows, random_windows
    ids = torch.randint(0, 20, (500,), generator=torch.Generator().manual_seed(0))
    batches = masked_windows(ids, 3, 16, 8, mask_id=20, vocab_size=21, seed=7)
    plain = random_windows(ids, 3, 16, 8, seed=7)
    for b, p in zip(batches, plain):
        chosen = b.y != IGNORE_INDEX
        assert torch.equal(b.y[chosen], p.x[chosen])                              # targets: the original ids
        assert torch.equal(b.x[~chosen], p.x[~chosen])                            # the rest untouched
        assert bool((b.x[chosen] == 20).any())
    again = masked_windows(ids, 3, 16, 8, mask_id=20, vocab_size=21, seed=7)
    assert all(torch.equal(a.x, b.x) and torch.equal(a.y, b.y) for a, b in zip(again, batches))
