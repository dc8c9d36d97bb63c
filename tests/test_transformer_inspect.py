"""seqviz.transformer.inspect: the queries, keys and values a TransformerLM's blocks compute, returned on request.

They must be the ones the model attends with: chapter 6's ``attention`` (§6.1) on them gives the model's own attention
weights (every layer and head, pre- and post-norm, causal and bidirectional, learned and sinusoidal positions), and
merging the heads with W^O gives the attention sublayer's output. Nothing is left on the model.
"""
import pytest
import torch

from seqviz.attention import attention
from seqviz.transformer import TransformerConfig, TransformerLM
from seqviz.transformer.inspect import QKV, queries_keys_values


def _lm(**kw):
    torch.manual_seed(0)
    return TransformerLM(TransformerConfig.tiny(23, **kw))


@pytest.mark.parametrize("kw", [dict(norm="pre"), dict(norm="post"), dict(causal=False),
                                dict(positions="sinusoidal", norm="post"), dict(dropout=0.3)])
def test_qkv_reproduce_the_models_attention_in_every_layer_and_head(kw):
    model = _lm(**kw).train()                                                     # dropout: eval mode inside
    ids = torch.randint(23, (11,), generator=torch.Generator().manual_seed(2))
    qkv = queries_keys_values(model, ids)
    c = model.config
    L, H, d_k = c.num_layers, c.num_heads, c.d_model // c.num_heads
    assert isinstance(qkv, QKV) and qkv.q.shape == qkv.k.shape == qkv.v.shape == (L, H, 11, d_k)
    assert qkv.causal == c.causal
    want = model.attention_weights(ids)                                           # (L, H, T, T)
    assert model.training                                                         # the caller's mode restored
    for layer in range(L):
        for head in range(H):
            _, w = qkv.attention(layer, head)                                     # (T, T)
            torch.testing.assert_close(w, want[layer, head], atol=1e-6, rtol=0)
    if c.causal:
        assert torch.equal(want[0, 0].triu(1), torch.zeros(11, 11))


def test_merged_heads_are_the_attention_sublayers_output():
    model = _lm(norm="post").eval()
    ids = torch.randint(23, (1, 9), generator=torch.Generator().manual_seed(3))
    qkv = queries_keys_values(model, ids)
    with torch.no_grad():
        x = model.E(ids) + model.pos(9)                                           # block 0's input (1, T, d_model)
        want = model.blocks[0].attn(x, causal=True).y                             # (1, T, d_model)
        heads = torch.stack([qkv.attention(0, h)[0] for h in range(qkv.q.shape[1])])[None]   # (1, H, T, d_k)
        got = model.blocks[0].attn.merge_heads(heads)                             # (1, T, d_model)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=0)


def test_same_numbers_as_attention_on_the_projections_by_hand():
    model = _lm(norm="pre").eval()
    ids = torch.tensor([3, 1, 4, 1, 5])
    qkv = queries_keys_values(model, ids)
    with torch.no_grad():
        x = model.E(ids[None]) + model.pos(5)                                     # (1, T, d_model)
        blk = model.blocks[0]
        a = blk.ln1(x)                                                            # pre-norm: the attention's input
        H, d_k = blk.attn.H, blk.attn.d_k
        Q = blk.attn.W_Q(a).view(1, 5, H, d_k).transpose(1, 2)[0]                 # (1, T, d_model) -> (H, T, d_k)
        K = blk.attn.W_K(a).view(1, 5, H, d_k).transpose(1, 2)[0]
        V = blk.attn.W_V(a).view(1, 5, H, d_k).transpose(1, 2)[0]
    torch.testing.assert_close(qkv.q[0], Q, atol=1e-6, rtol=0)
    torch.testing.assert_close(qkv.k[0], K, atol=1e-6, rtol=0)
    torch.testing.assert_close(qkv.v[0], V, atol=1e-6, rtol=0)
    out, _ = attention(Q, K, V, torch.ones(5, 5, dtype=torch.bool).tril())
    torch.testing.assert_close(qkv.attention(0, 1)[0], out[1], atol=1e-6, rtol=0)


def test_nothing_is_stored_and_bad_input_is_named():
    model = _lm().eval()
    before = {n: dict(vars(m)) for n, m in model.named_modules()}
    queries_keys_values(model, [1, 2, 3])
    assert {n: dict(vars(m)).keys() for n, m in model.named_modules()} == {n: v.keys() for n, v in before.items()}
    with pytest.raises(ValueError, match=r"one sequence .* \(T,\) or \(1, T\)"):
        queries_keys_values(model, torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"\[0, 23\)|vocab"):
        queries_keys_values(model, [1, 99])
    with pytest.raises(ValueError, match="max_len"):
        queries_keys_values(model, list(range(20)) * 20)
    with pytest.raises(TypeError, match="TransformerLM"):
        queries_keys_values(torch.nn.Linear(2, 2), [1])


def test_a_model_with_its_own_per_layer_method_is_asked_layer_by_layer():
    class Encoder(torch.nn.Module):                                               # the BERT-style encoder's API
        def __init__(self):
            super().__init__()
            self.blocks = torch.nn.ModuleList([torch.nn.Identity(), torch.nn.Identity()])

        def queries_keys_values(self, ids, layer):
            T = len(ids)
            base = torch.arange(2 * T * 3, dtype=torch.float32).view(2, T, 3) + 100 * layer   # (H, T, d_k)
            return base, base + 1, base + 2

    qkv = queries_keys_values(Encoder(), [4, 5, 6, 7])
    assert qkv.q.shape == (2, 2, 4, 3) and not qkv.causal
    assert qkv.q[1, 0, 0, 0] == 100 and qkv.v[0, 1, 3, 2] == 2 * 4 * 3 - 1 + 2
