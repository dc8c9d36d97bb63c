"""seqviz.transformer.layers: every layer equals its torch reference with copied weights (LayerNorm, multi-head
attention, blocks vs nn.TransformerEncoderLayer / DecoderLayer); the KVCache: cached attention equals attention over
the whole prefix; positions; the parameter names a committed checkpoint relies on; bad input -> clear errors."""
import numpy as np
import pytest
import torch
from torch import nn

from seqviz.transformer import (BlockCache, KVCache, LayerNorm, LearnedPositions, MultiHeadAttention,
                                SinusoidalPositions, TransformerBlock, TransformerConfig, TransformerLM,
                                sinusoidal_encoding)

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


def test_mha_forward_is_its_three_steps():
    """project -> attend -> merge_heads is forward; the projections are x W^Q, x W^K, x W^V cut into heads."""
    torch.manual_seed(4)
    mha = MultiHeadAttention(12, 3).eval()
    x = _rand(2, 5, 12, seed=6)
    Q, kv = mha.project(x)
    assert isinstance(kv, KVCache) and Q.shape == kv.K.shape == kv.V.shape == (2, 3, 5, 4)   # (B, H, T, d_k)
    torch.testing.assert_close(kv.K[:, 1], mha.W_K(x)[..., 4:8], atol=1e-6, rtol=0)          # head 1's columns
    torch.testing.assert_close(Q[:, 2], mha.W_Q(x)[..., 8:12], atol=1e-6, rtol=0)
    heads, w = mha.attend(Q, kv.K, kv.V, causal=True, need_weights=True)
    torch.testing.assert_close(mha.merge_heads(heads), mha(x, causal=True).y, atol=TOL, rtol=0)
    assert float(w.detach().triu(1).abs().max()) == 0.0


def test_mha_weights_only_when_asked_and_never_stored():
    mha = MultiHeadAttention(8, 2)
    out = mha(_rand(1, 3, 8))
    assert out.weights is None and out.cache is None
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
    cache = mha(_rand(2, 3, 16), use_cache=True).cache
    with pytest.raises(ValueError, match="the cache holds 2 sequences but x has 3"):
        mha(_rand(3, 1, 16), cache=cache)


# -- the key/value cache ------------------------------------------------------------------------------------------
def test_kv_cache_append_and_index_select():
    K, V = _rand(2, 3, 4, 5, seed=1), _rand(2, 3, 4, 5, seed=2)                   # (B, H, T_k, d_k)
    kv = KVCache(K, V)
    longer = kv.append(_rand(2, 3, 1, 5, seed=3), _rand(2, 3, 1, 5, seed=4))
    assert kv.length == 4 and longer.length == 5 and torch.equal(longer.K[:, :, :4], K)
    picked = longer.index_select(torch.tensor([1, 1, 0]))
    assert torch.equal(picked.V[0], longer.V[1]) and torch.equal(picked.V[2], longer.V[0])
    assert picked.K.shape == (3, 3, 5, 5)
    with pytest.raises(ValueError, match="the cache holds 2 sequences but the new keys have 3"):
        kv.append(_rand(3, 3, 1, 5), _rand(3, 3, 1, 5))
    both = BlockCache(kv, KVCache(V, K)).index_select(torch.tensor([1]))
    assert torch.equal(both.self_attn.K[0], K[1]) and torch.equal(both.cross_attn.K[0], V[1])
    assert BlockCache(kv).index_select(torch.tensor([0])).cross_attn is None


@pytest.mark.parametrize("impl", ["scratch", "fused"])
def test_cached_attention_equals_attention_over_the_whole_prefix(impl):
    """Self-attention fed one chunk at a time through its cache gives the rows of one causal pass over everything;
    cross-attention reuses the context's cached keys and values."""
    torch.manual_seed(5)
    mha = MultiHeadAttention(16, 4, impl=impl).eval()
    x = _rand(2, 7, 16, seed=7)
    full = mha(x, causal=True).y                                                  # (2, 7, 16)
    out = mha(x[:, :3], causal=True, use_cache=True)                              # a prompt of 3
    rows, cache = [out.y], out.cache
    for t in range(3, 7):
        out = mha(x[:, t:t + 1], causal=True, cache=cache, use_cache=True)
        rows.append(out.y)
        cache = out.cache
    torch.testing.assert_close(torch.cat(rows, 1), full, atol=TOL, rtol=0)
    assert cache.length == 7
    mem = _rand(2, 4, 16, seed=8)
    first = mha(x[:, :2], mem, use_cache=True)
    again = mha(x[:, 2:5], mem * 0, cache=first.cache)                            # the cache, not the context
    torch.testing.assert_close(again.y, mha(x[:, 2:5], mem).y, atol=TOL, rtol=0)


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
    # through its caches, one target token at a time: the same rows
    out = block(x[:, :1], causal=True, memory=mem, memory_mask=mpad, use_cache=True)
    rows = [out.y]
    for t in range(1, 5):
        out = block(x[:, t:t + 1], causal=True, memory=mem, memory_mask=mpad, cache=out.cache, use_cache=True)
        rows.append(out.y)
    assert isinstance(out.cache, BlockCache) and out.cache.self_attn.length == 5 and out.cache.cross_attn.length == 7
    torch.testing.assert_close(torch.cat(rows, 1), want, atol=TOL, rtol=0)


def test_block_copy_rejects_mismatched_norm():
    ref = nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True, norm_first=True)
    with pytest.raises(ValueError, match="norm_first"):
        TransformerBlock(8, 2, 16, norm="post").copy_from_torch(ref)


def test_parameter_names_are_the_checkpoints():
    """The state_dict keys a committed checkpoint (seqviz.summarize's bbc_lm.pt) was saved under: renaming a layer
    would make it unloadable."""
    lm = TransformerLM(TransformerConfig.tiny(11, num_layers=1))
    assert sorted(lm.state_dict()) == sorted(
        ["E.weight", "pos.P.weight", "ln_f.gamma", "ln_f.beta", "V.weight"]
        + [f"blocks.0.{name}" for name in (
            "attn.W_Q.weight", "attn.W_Q.bias", "attn.W_K.weight", "attn.W_K.bias", "attn.W_V.weight",
            "attn.W_V.bias", "attn.W_O.weight", "attn.W_O.bias", "ln1.gamma", "ln1.beta", "ffn.W_1.weight",
            "ffn.W_1.bias", "ffn.W_2.weight", "ffn.W_2.bias", "ln2.gamma", "ln2.beta")])


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
