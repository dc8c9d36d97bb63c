"""Chapter 6's "build it" checks (seqviz.exercises.ch6): multi-head attention (9.46)-(9.48) and SLP's post-norm
transformer block (9.40)-(9.41). Each accepts a right answer written the way a student would write it, rejects the
usual wrong answers with a message that names the mistake, and reports a function not written yet without raising."""
from __future__ import annotations

import copy
import math

import pytest
import torch
import torch.nn.functional as F

from seqviz.attention import attention
from seqviz.exercises import check_multi_head_attention, check_transformer_block


def wrong(check, fn, says: str):
    """A wrong answer fails the check with an AssertionError whose message says ``says``."""
    with pytest.raises(AssertionError) as e:
        check(fn)
    assert says in str(e.value), str(e.value)


# ---- multi-head attention ------------------------------------------------------------------------------------------
def mha(X, W_Q, W_K, W_V, W_O, H, causal, *, split="right", merge="right", scale=True, dim=-1, use_W_O=True,
        mask="right"):
    """A student's multi-head attention, written from scratch, with one switch per usual mistake."""
    B, T, d = X.shape
    d_k = d // H

    def heads(M):
        return M.view(B, T, H, d_k).transpose(1, 2) if split == "right" else M.reshape(B, H, T, d_k)

    Q, K, V = heads(X @ W_Q), heads(X @ W_K), heads(X @ W_V)
    scores = Q @ K.transpose(-1, -2) / (math.sqrt(d_k) if scale is True else scale)
    if causal and mask != "none":
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(future.T if mask == "transposed" else future, float("-inf"))
    out = torch.softmax(scores, dim=dim) @ V
    concat = out.transpose(1, 2).reshape(B, T, d) if merge == "right" else out.reshape(B, T, d)
    return concat @ W_O if use_W_O else concat


def test_multi_head_attention_accepts_right_answers(capsys):
    assert check_multi_head_attention(mha) and "✓ multi-head attention equals" in capsys.readouterr().out

    def with_the_chapters_function(X, W_Q, W_K, W_V, W_O, H, causal):   # §6.1's attention, heads as a batch axis
        B, T, d = X.shape
        split = lambda M: M.view(B, T, H, d // H).transpose(1, 2)      # noqa: E731
        mask = torch.ones(T, T, dtype=torch.bool).tril() if causal else None
        y, _ = attention(split(X @ W_Q), split(X @ W_K), split(X @ W_V), mask)
        return y.transpose(1, 2).reshape(B, T, d) @ W_O

    def head_by_head(X, W_Q, W_K, W_V, W_O, H, causal):                 # (9.47)-(9.48) one head at a time
        d_k = X.shape[-1] // H
        cols = [slice(i * d_k, (i + 1) * d_k) for i in range(H)]
        heads = [F.scaled_dot_product_attention(X @ W_Q[:, c], X @ W_K[:, c], X @ W_V[:, c], is_causal=causal)
                 for c in cols]
        return torch.cat(heads, dim=-1) @ W_O                           # (9.46)

    assert check_multi_head_attention(with_the_chapters_function)
    assert check_multi_head_attention(head_by_head)


@pytest.mark.parametrize("mistake, says", [
    (dict(use_W_O=False), "W^O is missing"),
    (dict(scale=1.0), "not scaled"),
    (dict(dim=-2), "wrong axis"),
    (dict(mask="none"), "causal mask is missing"),
    (dict(mask="transposed"), "causal mask is transposed"),
    (dict(split="view"), "not split correctly"),
    (dict(merge="view"), "not merged correctly"),
])
def test_multi_head_attention_names_the_mistake(mistake, says):
    wrong(check_multi_head_attention, lambda *a: mha(*a, **mistake), says)


def test_multi_head_attention_other_mistakes():
    wrong(check_multi_head_attention, lambda X, *a: mha(X, *a, scale=math.sqrt(X.shape[-1])), "√d_model")
    wrong(check_multi_head_attention, lambda X, Q, K, V, O, H, c: mha(X, Q.T, K.T, V.T, O.T, H, c), "transposed")
    wrong(check_multi_head_attention, lambda X, *a: mha(X, *a)[:, -1], "shape")
    wrong(check_multi_head_attention, lambda X, *a: mha(X, *a) + 1e-3, "differs from the package's")
    wrong(check_multi_head_attention, lambda X, *a: "Y", "should be a tensor")
    wrong(check_multi_head_attention, lambda X, *a: X.foo(), "raised AttributeError")


def test_multi_head_attention_accepts_right_answers_in_float32(capsys):
    """Right answers computed in float32 are judged at float32's precision (they differ from the float64 reference
    by about 1e-6), and are told they are right, not to compare their steps with the equations."""
    def head_by_head_into_a_buffer(X, W_Q, W_K, W_V, W_O, H, causal):   # torch.zeros is float32 by default
        B, T, d = X.shape
        d_k = d // H
        concat = torch.zeros(B, T, d)
        for i in range(H):
            c = slice(i * d_k, (i + 1) * d_k)
            concat[..., c] = F.scaled_dot_product_attention(X @ W_Q[:, c], X @ W_K[:, c], X @ W_V[:, c],
                                                            is_causal=causal)
        return concat @ W_O.float()

    def in_float32(X, *a):
        return mha(X.float(), *(w.float() if torch.is_tensor(w) else w for w in a))

    for fn in (head_by_head_into_a_buffer, in_float32):
        assert fn(*_a_case()).dtype == torch.float32
        assert check_multi_head_attention(fn), fn.__name__
        out = capsys.readouterr().out
        assert "✓ multi-head attention equals" in out and "compare your steps" not in out


def _a_case():
    g = torch.Generator().manual_seed(0)
    return (torch.randn(2, 5, 8, generator=g, dtype=torch.float64),
            *(torch.randn(8, 8, generator=g, dtype=torch.float64) for _ in range(4)), 2, True)


def test_a_near_miss_is_told_it_is_close():
    """Off by 1e-4 in float32 (no rounding explains it): told it is close and to look for one small difference."""
    with pytest.raises(AssertionError) as e:
        check_multi_head_attention(lambda X, *a: mha(X.float(), *(w.float() if torch.is_tensor(w) else w for w in a))
                                   + 1e-4)
    said = str(e.value)
    assert "differs from the package's by up to 0.0001" in said and "close" in said and "float32" in said, said
    assert "compare your steps" not in said, said


def test_float32_mistakes_are_still_named():
    wrong(check_multi_head_attention, lambda X, *a: mha(X.float(), *(w.float() if torch.is_tensor(w) else w
                                                                     for w in a), use_W_O=False), "W^O is missing")
    wrong(check_transformer_block, lambda x, b: block(x.float(), copy.deepcopy(b).float(), residual=(False, True)),
          "around self-attention is missing")


def test_transformer_block_accepts_a_right_answer_in_float32(capsys):
    assert check_transformer_block(lambda x, b: block(x.float(), copy.deepcopy(b).float()))   # a float32 copy
    assert "✓ the post-norm block" in capsys.readouterr().out


def test_multi_head_attention_not_written_yet(capsys):
    def my_multi_head(X, W_Q, W_K, W_V, W_O, H, causal=False):
        raise NotImplementedError

    assert check_multi_head_attention(my_multi_head) is False
    assert "my_multi_head is not written yet" in capsys.readouterr().out


# ---- the transformer block -----------------------------------------------------------------------------------------
def block(x, b, *, residual=(True, True), where="post", act=torch.relu, swap=False):
    """A student's post-norm block from the parts of ``b``, with one switch per usual mistake."""
    ln1, ln2 = (b.ln2, b.ln1) if swap else (b.ln1, b.ln2)
    ffn = lambda h: b.ffn.W_2(act(b.ffn.W_1(h)))                        # noqa: E731
    if where == "pre":
        z = x + b.attn(ln1(x)).y
        return z + ffn(ln2(z))
    a = b.attn(x).y
    z = ln1(x + a) if residual[0] else ln1(a)                           # (9.40)
    return ln2(z + ffn(z)) if residual[1] else ln2(ffn(z))              # (9.41)


def test_transformer_block_accepts_right_answers(capsys):
    assert check_transformer_block(block) and "✓ the post-norm block" in capsys.readouterr().out

    def with_ffn_module(x, b):
        z = b.ln1(x + b.attn(x).y)
        return b.ln2(z + b.ffn(z))

    def by_hand(x, b):                                                  # FFN from the weight matrices themselves
        z = b.ln1(x + b.attn(x).y)
        h = torch.clamp(z @ b.ffn.W_1.weight.T + b.ffn.W_1.bias, min=0)
        return b.ln2(z + h @ b.ffn.W_2.weight.T + b.ffn.W_2.bias)

    assert check_transformer_block(with_ffn_module) and check_transformer_block(by_hand)


@pytest.mark.parametrize("mistake, says", [
    (dict(residual=(False, False)), "residual connections are missing"),
    (dict(residual=(False, True)), "around self-attention is missing"),
    (dict(residual=(True, False)), "around the feed-forward layer is missing"),
    (dict(where="pre"), "LayerNorm is in the wrong place"),
    (dict(swap=True), "LayerNorms are swapped"),
    (dict(act=lambda h: h), "no nonlinearity"),
    (dict(act=F.gelu), "GELU"),
])
def test_transformer_block_names_the_mistake(mistake, says):
    wrong(check_transformer_block, lambda x, b: block(x, b, **mistake), says)


def test_transformer_block_other_mistakes():
    def no_layernorm(x, b):
        z = x + b.attn(x).y
        return z + b.ffn(z)

    def ffn_of_x(x, b):
        z = b.ln1(x + b.attn(x).y)
        return b.ln2(z + b.ffn(x))

    wrong(check_transformer_block, no_layernorm, "LayerNorms are missing")
    wrong(check_transformer_block, ffn_of_x, "reads x")
    wrong(check_transformer_block, lambda x, b: block(x, b).mean(1), "shape")
    wrong(check_transformer_block, lambda x, b: block(x, b) * 1.01, "differs from the package's")


def test_transformer_block_not_written_yet(capsys):
    def my_block(x, block):
        raise NotImplementedError

    assert check_transformer_block(my_block) is False
    assert "my_block is not written yet" in capsys.readouterr().out


@pytest.mark.parametrize("check", [check_multi_head_attention, check_transformer_block])
def test_not_a_function(check):
    wrong(check, 42, "expected a function")
