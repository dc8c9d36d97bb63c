"""Chapter 6's exercise checks: the causal mask (SLP Fig. 9.17, (9.31)), and two "build it" exercises, multi-head
attention (9.46)-(9.48) and SLP's post-norm transformer block (9.40)-(9.41), each compared with the package's own
module on random inputs of several shapes."""
from __future__ import annotations

import math
from typing import Callable

import torch

from seqviz.exercises._base import as_tensor, call, check, close, differs, verdict

__all__ = ["check_causal_mask", "check_multi_head_attention", "check_transformer_block"]


@check
def check_causal_mask(fn: Callable) -> bool:
    """Check ``fn(T) -> (T, T) bool`` where entry [i, j] is True when query i may attend to key j (j <= i)."""
    from seqviz.attention import causal_mask

    for T in (4, 9, 1):
        got, err = call(fn, T)
        if err:
            return verdict(False, err)
        got, err = as_tensor(got, "the mask")
        if err:
            return verdict(False, err)
        want = torch.from_numpy(causal_mask(T))
        if tuple(got.shape) != (T, T):
            return verdict(False, f"the mask for T={T} has shape {tuple(got.shape)}, expected (T, T)")
        if got.dtype != torch.bool:
            return verdict(False, f"the mask has dtype {got.dtype}: make it bool (True = may attend), e.g. with "
                                  f"`.bool()` or a comparison")
        if torch.equal(got, want):
            continue
        if torch.equal(got, want.T):
            return verdict(False, "the mask is transposed: row i is query i, column j is key j, and query i may "
                                  "see keys j <= i (the lower triangle)")
        if torch.equal(got, want & ~torch.eye(T, dtype=torch.bool)):
            return verdict(False, "the diagonal is masked: a position may attend to itself (j = i)")
        if torch.equal(got, ~want):
            return verdict(False, "True and False are swapped: True means 'may attend'")
        return verdict(False, f"the mask for T={T} is not the lower triangle (j <= i)")
    return verdict(True, "causal mask correct for T = 4, 9 and 1")


def _diagnose(outputs: list, cases: list, right: Callable, mistakes: list, what: str, shape: Callable) -> bool:
    """The verdict on a student's ``outputs``, one per case: right when each equals ``right(case)``; else the first
    of ``mistakes`` (a function of the case that gives what the mistake computes, and its advice) that explains every
    case; else where the first wrong output differs."""
    for got, case in zip(outputs, cases):
        if tuple(got.shape) != shape(case):
            return verdict(False, f"{what} for {case['name']} has shape {tuple(got.shape)}, expected "
                                  f"{shape(case)} (B, T, d_model)")
    wants = [right(case) for case in cases]
    if all(close(got, want) for got, want in zip(outputs, wants)):
        return True
    for mistake, advice in mistakes:
        if all(close(got, mistake(case)) for got, case in zip(outputs, cases)):
            return verdict(False, advice)
    got, want, case = next((g, w, c) for g, w, c in zip(outputs, wants, cases) if not close(g, w))
    return verdict(False, differs(f"{what} for {case['name']}", got, want,
                                  "compare your steps with the equations one by one"))


def _outputs(fn: Callable, cases: list, args: Callable, what: str):
    """The student's output (detached, in the dtype it was computed in: the precision it is judged at) for every
    case, or the message that says why there is none."""
    outputs = []
    for case in cases:
        got, err = call(fn, *args(case))
        if err:
            return None, err
        got, err = as_tensor(got, what)
        if err:
            return None, err
        outputs.append(got.detach())
    return outputs, None


# ----------------------------------------------------------------------------------------------------------------
# Build it: multi-head attention (9.46)-(9.48)
# ----------------------------------------------------------------------------------------------------------------
def _mha(case, split=True, merge=True, scale="d_k", axis=-1, mask="right", W_O=True, transposed=False):
    """Multi-head self-attention computed step by step, right or with one mistake (what a mistake computes)."""
    X, (W_Q, W_K, W_V, W_Oc), H, causal = case["X"], case["W"], case["H"], case["causal"]
    if transposed:
        W_Q, W_K, W_V, W_Oc = W_Q.T, W_K.T, W_V.T, W_Oc.T
    B, T, d = X.shape
    d_k = d // H

    def heads(M):                                                  # (B, T, d) -> (B, H, T, d_k)
        return M.view(B, T, H, d_k).transpose(1, 2) if split else M.reshape(B, H, T, d_k)

    Q, K, V = heads(X @ W_Q), heads(X @ W_K), heads(X @ W_V)       # (9.47)
    S = Q @ K.transpose(-1, -2)                                    # (B, H, T, T)
    S = S / {"d_k": math.sqrt(d_k), "d_model": math.sqrt(d), None: 1.0}[scale]   # (9.37)
    if causal and mask != "none":
        allowed = torch.ones(T, T, dtype=torch.bool).tril()
        S = S.masked_fill(~(allowed.T if mask == "transposed" else allowed), float("-inf"))
    A = torch.softmax(S, dim=axis)                                 # (9.39)
    Y = A @ V                                                      # (B, H, T, d_k): every head (9.48)
    concat = Y.transpose(1, 2).reshape(B, T, d) if merge else Y.reshape(B, T, d)
    return concat @ W_Oc if W_O else concat                        # (9.46)


def _mha_package(case) -> torch.Tensor:
    """The package's MultiHeadAttention on the case's weights (its linear layers hold W^T)."""
    from seqviz.transformer import MultiHeadAttention

    X, Ws, H = case["X"], case["W"], case["H"]
    mha = MultiHeadAttention(X.shape[-1], H, bias=False, impl="scratch").double()
    with torch.no_grad():
        for lin, W in zip((mha.W_Q, mha.W_K, mha.W_V, mha.W_O), Ws):
            lin.weight.copy_(W.T)
        return mha(X, causal=case["causal"]).y


MHA_MISTAKES = [  # (what the mistake computes, what to tell the student)
    (lambda c: _mha(c, W_O=False),
     "W^O is missing: (9.46) multiplies the concatenated heads by W^O, (head_1 ⊕ ... ⊕ head_H) W^O"),
    (lambda c: _mha(c, scale=None),
     "the scores were not scaled: divide q_i · k_j by √d_k before the softmax (9.37), (9.39)"),
    (lambda c: _mha(c, scale="d_model"),
     "the scores were divided by √d_model: each head's queries and keys have d_k = d_model / H dimensions, so "
     "divide by √d_k (9.37)"),
    (lambda c: _mha(c, axis=-2),
     "the softmax ran over the wrong axis: each query's weights over the keys (the last axis of the scores) must "
     "sum to 1"),
    (lambda c: _mha(c, mask="none"),
     "the causal mask is missing: with causal=True query i may attend to keys j <= i only (Fig. 9.17)"),
    (lambda c: _mha(c, mask="transposed"),
     "the causal mask is transposed: query i (a row of the scores) may see keys j <= i, the lower triangle"),
    (lambda c: _mha(c, split=False),
     "the heads are not split correctly: view (B, T, d_model) as (B, T, H, d_k), then move H before T "
     "(.transpose(1, 2)); a plain reshape to (B, H, T, d_k) mixes positions into the heads"),
    (lambda c: _mha(c, merge=False),
     "the heads are not merged correctly: move T back before H (.transpose(1, 2)), then reshape to "
     "(B, T, d_model), so each position's row is head_1 ⊕ ... ⊕ head_H"),
    (lambda c: _mha(c, transposed=True),
     "the weight matrices are applied transposed: rows of X are positions, so Q = X W^Q is X @ W_Q (9.38)"),
]


@check
def check_multi_head_attention(fn: Callable) -> bool:
    """Check ``fn(X, W_Q, W_K, W_V, W_O, H, causal) -> Y``, multi-head self-attention (9.46)-(9.48).

    X (B, T, d_model); W_Q, W_K, W_V, W_O (d_model, d_model), applied as SLP writes them, Q = X W^Q (9.38). Head i
    uses columns i d_k ... (i + 1) d_k - 1 of W_Q, W_K, W_V (its W_i^Q, W_i^K, W_i^V, d_k = d_model / H) (9.47), and
    attends with the scaled dot product (9.39), under the causal mask when ``causal``; the heads, concatenated in
    order, are multiplied by W_O (9.46). Y (B, T, d_model). Compared with ``seqviz.transformer.MultiHeadAttention``
    holding the same weights, for four shapes."""
    g = torch.Generator().manual_seed(6)
    cases = []
    for B, T, d, H, causal in ((2, 5, 8, 2, False), (1, 6, 12, 3, True), (3, 4, 16, 4, True), (2, 3, 8, 1, True)):
        X = torch.randn(B, T, d, generator=g, dtype=torch.float64)
        W = tuple(torch.randn(d, d, generator=g, dtype=torch.float64) for _ in range(4))
        cases.append({"X": X, "W": W, "H": H, "causal": causal,
                      "name": f"B={B}, T={T}, d_model={d}, H={H}, causal={causal}"})
    outputs, err = _outputs(fn, cases, lambda c: (c["X"].clone(), *(w.clone() for w in c["W"]), c["H"], c["causal"]),
                            "the output")
    if err:
        return verdict(False, err)
    ok = _diagnose(outputs, cases, _mha_package, MHA_MISTAKES, "the output", lambda c: tuple(c["X"].shape))
    return ok and verdict(True, "multi-head attention equals MultiHeadAttention for 4 shapes, causal or not")


# ----------------------------------------------------------------------------------------------------------------
# Build it: SLP's post-norm transformer block (9.40)-(9.41)
# ----------------------------------------------------------------------------------------------------------------
def _block(case, residual1=True, residual2=True, norm="post", swap=False, act=torch.relu, ffn_reads_x=False):
    """SLP's block from the parts of ``case["block"]``, right or with one mistake."""
    blk, x = case["block"], case["x"]
    ln1, ln2 = (blk.ln2, blk.ln1) if swap else (blk.ln1, blk.ln2)
    ffn = lambda h: blk.ffn.W_2(act(blk.ffn.W_1(h)))                         # noqa: E731
    attn = lambda h: blk.attn(h).y                                           # noqa: E731
    with torch.no_grad():
        if norm == "pre":
            z = x + attn(ln1(x))
            return z + ffn(ln2(z))
        a = attn(x)
        if norm == "none":
            z = x + a
            return z + ffn(z)
        z = ln1(x + a if residual1 else a)                                   # (9.40)
        f = ffn(x if ffn_reads_x else z)
        return ln2(z + f if residual2 else f)                                # (9.41)


def _block_package(case) -> torch.Tensor:
    with torch.no_grad():
        return case["block"](case["x"]).y


BLOCK_MISTAKES = [
    (lambda c: _block(c, residual1=False, residual2=False),
     "the residual connections are missing: add each sublayer's input back before its LayerNorm, "
     "z = LayerNorm(x + SelfAttn(x)) (9.40), y = LayerNorm(z + FFN(z)) (9.41)"),
    (lambda c: _block(c, residual1=False),
     "the residual connection around self-attention is missing: (9.40) is z = LayerNorm(x + SelfAttn(x))"),
    (lambda c: _block(c, residual2=False),
     "the residual connection around the feed-forward layer is missing: (9.41) is y = LayerNorm(z + FFN(z))"),
    (lambda c: _block(c, norm="pre"),
     "LayerNorm is in the wrong place: that is the pre-norm block (x + SelfAttn(LayerNorm(x))); SLP's block "
     "(9.40)-(9.41) normalises after adding the residual, LayerNorm(x + SelfAttn(x))"),
    (lambda c: _block(c, norm="none"),
     "the LayerNorms are missing: (9.40) and (9.41) each end with a LayerNorm (block.ln1, block.ln2)"),
    (lambda c: _block(c, swap=True),
     "the two LayerNorms are swapped: block.ln1 follows self-attention (9.40), block.ln2 the feed-forward "
     "layer (9.41)"),
    (lambda c: _block(c, act=lambda h: h),
     "the feed-forward layer has no nonlinearity: FFN(z) = W_2 ReLU(W_1 z + b_1) + b_2; without the ReLU its "
     "two linear layers collapse into one linear map"),
    (lambda c: _block(c, act=torch.nn.functional.gelu),
     "the feed-forward layer uses GELU: this block's activation is ReLU (block.ffn.activation)"),
    (lambda c: _block(c, ffn_reads_x=True),
     "the feed-forward layer reads x: it reads z, the output of the attention sublayer (9.41)"),
]


@check
def check_transformer_block(fn: Callable) -> bool:
    """Check ``fn(x, block) -> y``, SLP's post-norm transformer block (9.40)-(9.41) written with the parts of
    ``block``, a ``seqviz.transformer.TransformerBlock(norm="post")``: ``block.attn(x).y`` is SelfAttn(x)
    (bidirectional), ``block.ln1`` and ``block.ln2`` are the two LayerNorms, ``block.ffn.W_1`` and ``block.ffn.W_2``
    the feed-forward layer's two linear layers, FFN(z) = W_2 ReLU(W_1 z + b_1) + b_2. x, y (B, T, d_model).
    Compared with the block's own forward pass for three shapes (LayerNorms with random gamma and beta, so that
    the two differ)."""
    from seqviz.transformer import TransformerBlock

    g = torch.Generator().manual_seed(7)
    cases = []
    for B, T, d, H, d_ff in ((2, 5, 8, 2, 32), (1, 3, 12, 3, 20), (3, 4, 16, 4, 64)):
        torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=g)))
        blk = TransformerBlock(d, H, d_ff=d_ff, norm="post", activation="relu").double().eval()
        with torch.no_grad():
            for ln in (blk.ln1, blk.ln2):
                ln.gamma.copy_(1 + 0.5 * torch.randn(d, generator=g, dtype=torch.float64))
                ln.beta.copy_(0.5 * torch.randn(d, generator=g, dtype=torch.float64))
        x = 2 * torch.randn(B, T, d, generator=g, dtype=torch.float64) + 1
        cases.append({"x": x, "block": blk, "name": f"B={B}, T={T}, d_model={d}, H={H}, d_ff={d_ff}"})
    outputs, err = _outputs(fn, cases, lambda c: (c["x"].clone(), c["block"]), "the block's output")
    if err:
        return verdict(False, err)
    ok = _diagnose(outputs, cases, _block_package, BLOCK_MISTAKES, "the block's output",
                   lambda c: tuple(c["x"].shape))
    return ok and verdict(True, "the post-norm block equals TransformerBlock(norm=\"post\") for 3 shapes")
