"""Chapter 6's "build it" checks (seqviz.exercises.ch6): multi-head attention (9.46)-(9.48) and SLP's post-norm
transformer block (9.40)-(9.41). Each accepts a right answer written the way a student would write it and reports a
function not written yet without raising; the usual wrong answers, and the message each must get, are in
seqviz.exercises.mistakes (tested in tests/test_exercises.py, read by the graded assignments too). ``mha`` and
``block`` are the registry's implementations with every switch at its right value."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from seqviz.attention import attention
from seqviz.exercises import check_multi_head_attention, check_transformer_block
from seqviz.exercises.mistakes import _block as block, _mha as mha


def wrong(check, fn, says: str):
    """A wrong answer fails the check with an AssertionError whose message says ``says``."""
    with pytest.raises(AssertionError) as e:
        check(fn)
    assert says in str(e.value), str(e.value)


# ---- multi-head attention ------------------------------------------------------------------------------------------
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
    from seqviz.exercises.mistakes import known_mistakes

    near = next(m for m in known_mistakes("check_multi_head_attention") if m.name == "near_miss_float32")
    with pytest.raises(AssertionError) as e:
        check_multi_head_attention(near.fn)
    said = str(e.value)
    assert "differs from the package's by up to 0.0001" in said and "close" in said and "float32" in said, said
    assert "compare your steps" not in said, said


def test_transformer_block_accepts_a_right_answer_in_float32(capsys):
    assert check_transformer_block(lambda x, b: block(x.float(), copy.deepcopy(b).float()))   # a float32 copy
    assert "✓ the post-norm block" in capsys.readouterr().out


def test_multi_head_attention_not_written_yet(capsys):
    def my_multi_head(X, W_Q, W_K, W_V, W_O, H, causal=False):
        raise NotImplementedError

    assert check_multi_head_attention(my_multi_head) is False
    assert "my_multi_head is not written yet" in capsys.readouterr().out


# ---- the transformer block -----------------------------------------------------------------------------------------
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


def test_transformer_block_not_written_yet(capsys):
    def my_block(x, block):
        raise NotImplementedError

    assert check_transformer_block(my_block) is False
    assert "my_block is not written yet" in capsys.readouterr().out


@pytest.mark.parametrize("check", [check_multi_head_attention, check_transformer_block])
def test_not_a_function(check):
    wrong(check, 42, "expected a function")
