"""Chapter 6: the transformer, block by block (SLP 3rd ed. draft, ch. 9, (9.40)-(9.48)).

LayerNorm (9.42)-(9.45), multi-head attention (9.46)-(9.48) on top of chapter 5's ``attention`` (with a fused
``scaled_dot_product_attention`` path proven equal), the position-wise feed-forward layer, the block in SLP's post-norm
form (9.40)-(9.41) and the modern pre-norm form, learned and sinusoidal positions (Vaswani et al. 2017), and three
models: the decoder-only ``TransformerLM`` (causal, with a key/value cache for ``seqviz.decode``), the same network
without the causal mask as a masked LM (BERT, Devlin et al. 2019), and the ``EncoderDecoderTransformer``.

Shapes, batch first: B batch, T time (T_q queries, T_k keys), d_model model width, H heads, d_k = d_model / H the
per-head width, L layers, V vocabulary.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqviz.data.batches import Batch
from seqviz._checks import (IGNORE_INDEX, _IMPLS, _check_choice, _check_ids, _check_mask, _check_positive,
                            _check_targets)
from seqviz.attention import attention
from seqviz.decode import generate as decode_generate
from seqviz.decode import next_token_logits_by_step

__all__ = ["sinusoidal_encoding", "LayerNorm", "MultiHeadAttention", "AttnOut", "FeedForward", "TransformerBlock",
           "BlockOut", "LearnedPositions", "SinusoidalPositions", "TransformerConfig", "TransformerLM",
           "DecodeState", "mask_tokens", "masked_windows", "random_windows", "window_loss", "sliding_loss",
           "EncoderDecoderConfig", "EncoderDecoderTransformer", "EncDecState"]

_NORMS = ("post", "pre")
_POSITIONS = ("learned", "sinusoidal", "none")
_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _positive_int(x, name: str, lo: int = 1) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(x).__name__} {x!r}")
    if x < lo:
        raise ValueError(f"{name} must be >= {lo}, got {x}")
    return int(x)


def _check_base(base) -> float:
    if isinstance(base, bool) or not isinstance(base, (int, float, np.floating, np.integer)):
        raise TypeError(f"base must be a number, got {type(base).__name__} {base!r}")
    if not math.isfinite(base) or base <= 1:
        raise ValueError(f"base must be a finite number > 1 (the transformer uses 10000), got {base}")
    return float(base)


def sinusoidal_encoding(max_len: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """P (max_len, d_model): P[p, 2i] = sin(p / base^(2i/d)), P[p, 2i+1] = cos(p / base^(2i/d)).

    Dimension pair i turns at angular frequency w_i = base^(-2i/d): fast for the first dimensions, slow for the
    last. An odd ``d_model`` ends with a lone sine.
    """
    max_len = _positive_int(max_len, "max_len")
    d_model = _positive_int(d_model, "d_model")
    base = _check_base(base)
    p = np.arange(max_len, dtype=np.float64)[:, None]  # (max_len, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)  # (ceil(d/2),) the even dimension indices 2i
    angle = p / base ** (two_i / d_model)  # (max_len, ceil(d/2))
    P = np.empty((max_len, d_model), dtype=np.float64)
    P[:, 0::2] = np.sin(angle)
    P[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return P


# ----------------------------------------------------------------------------------------------------------------
# Layer normalisation (9.42)-(9.45)
# ----------------------------------------------------------------------------------------------------------------
class LayerNorm(nn.Module):
    """LayerNorm over the last axis, (9.42)-(9.45): centre and scale each vector, then gamma x_hat + beta.

    ``eps`` goes inside the square root of (9.43), as in torch.nn.LayerNorm, so a constant vector gives 0 not 0/0.
    impl="fused" runs F.layer_norm on the same gamma, beta (tested equal).
    """

    def __init__(self, d_model: int, eps: float = 1e-5, impl: str = "scratch"):
        super().__init__()
        _check_positive(d_model=d_model)
        _check_choice("impl", impl, _IMPLS)
        self.d_model, self.eps, self.impl = d_model, float(eps), impl
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: Tensor) -> Tensor:
        if x.shape[-1] != self.d_model:
            raise ValueError(f"LayerNorm({self.d_model}) got vectors of width {x.shape[-1]} (shape {tuple(x.shape)})")
        if self.impl == "fused":
            return F.layer_norm(x, (self.d_model,), self.gamma, self.beta, self.eps)
        # (9.42) mu = (1/d_h) sum_i x_i
        mu = x.mean(-1, keepdim=True)                                              # (..., 1)
        # (9.43) sigma = sqrt((1/d_h) sum_i (x_i - mu)^2)   (+ eps inside the root)
        sigma = torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + self.eps)     # (..., 1)
        # (9.44) x_hat = (x - mu) / sigma
        x_hat = (x - mu) / sigma
        # (9.45) LayerNorm = gamma x_hat + beta
        return self.gamma * x_hat + self.beta

    @torch.no_grad()
    def copy_from_torch(self, ln: nn.LayerNorm) -> "LayerNorm":
        """Take gamma, beta from a torch.nn.LayerNorm (its weight, bias)."""
        self.gamma.copy_(ln.weight)
        self.beta.copy_(ln.bias)
        self.eps = ln.eps
        return self


# ----------------------------------------------------------------------------------------------------------------
# Multi-head attention (9.46)-(9.48)
# ----------------------------------------------------------------------------------------------------------------
class AttnOut(NamedTuple):
    """What attention gives back: ``y`` (B, T_q, d_model); ``weights`` (B, H, T_q, T_k) only when asked;
    ``kv`` the keys and values (B, H, T_k, d_k) each, only when asked (the cache for the next decoding step)."""
    y: Tensor
    weights: Tensor | None
    kv: tuple[Tensor, Tensor] | None


def _check_key_padding_mask(mask, B: int, T_k: int, what: str) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        raise TypeError(f"{what} must be a bool tensor (True = a real token that may be attended to), got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if tuple(mask.shape) != (B, T_k):
        raise ValueError(f"{what} must have shape (B, T_k) = ({B}, {T_k}), one flag per key, got "
                         f"{tuple(mask.shape)}")
    if not bool(mask.any(-1).all()):
        raise ValueError(f"a row of {what} is all False: those queries could attend to nothing; drop empty "
                         f"sequences from the batch")
    return mask


class MultiHeadAttention(nn.Module):
    """Multi-head attention (9.46)-(9.48): H heads, each a scaled dot-product attention (9.39) on its own
    projections Q = X W_i^Q, K = X W_i^K, V = X W_i^V of width d_k = d_model / H; the heads are concatenated and
    mixed by W^O. Self-attention when ``context`` is None, cross-attention (queries from x, keys and values from
    ``context``, e.g. the encoder output) otherwise.

    The H per-head matrices W_i^Q (d_model, d_k) sit side by side in one (d_model, d_model) linear layer ``W_Q``
    (likewise W_K, W_V), so one matmul projects for every head; ``_split_heads`` cuts the result into heads.
    impl="scratch" calls chapter 5's ``attention`` function; impl="fused" calls
    ``torch.nn.functional.scaled_dot_product_attention`` (tested equal). Weights are computed, on the scratch path,
    only when ``need_weights=True``, and returned, never kept on the module.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True, impl: str = "fused"):
        super().__init__()
        _check_positive(d_model=d_model, num_heads=num_heads)
        if d_model % num_heads:
            divisors = [h for h in range(1, min(d_model, 16) + 1) if d_model % h == 0]
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}: each head gets "
                             f"d_k = d_model / H dimensions. Use a number of heads that divides d_model (e.g. "
                             f"{divisors}) or change d_model")
        _check_choice("impl", impl, _IMPLS)
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.d_model, self.H, self.d_k = d_model, num_heads, d_model // num_heads
        self.impl, self.dropout = impl, float(dropout)
        # (9.47) the H matrices W_i^Q (d_model, d_k) side by side; likewise W^K, W^V
        self.W_Q = nn.Linear(d_model, d_model, bias=bias)
        self.W_K = nn.Linear(d_model, d_model, bias=bias)
        self.W_V = nn.Linear(d_model, d_model, bias=bias)
        # (9.46) W^O (H d_k, d_model) mixes the concatenated heads
        self.W_O = nn.Linear(d_model, d_model, bias=bias)
        self.attn_drop = nn.Dropout(dropout)

    def _split_heads(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.H, self.d_k).transpose(1, 2)                     # (B, T, d_model) -> (B, H, T, d_k)

    def _check_input(self, x, name: str) -> None:
        if not isinstance(x, Tensor) or not x.dtype.is_floating_point:
            raise TypeError(f"{name} must be a floating-point tensor (B, T, d_model), got "
                            f"{getattr(x, 'dtype', type(x).__name__)}")
        if x.dim() != 3 or x.shape[-1] != self.d_model or x.shape[1] == 0:
            raise ValueError(f"{name} must have shape (B, T, d_model={self.d_model}) with T >= 1, got "
                             f"{tuple(x.shape)}")

    def forward(self, x: Tensor, context: Tensor | None = None, key_padding_mask: Tensor | None = None,
                causal: bool = False, need_weights: bool = False, past_kv: tuple[Tensor, Tensor] | None = None,
                use_cache: bool = False) -> AttnOut:
        """x (B, T_q, d_model); context (B, T_k, d_model) for cross-attention; key_padding_mask (B, T_k) bool,
        True = a real key; causal: query i sees keys j <= i (counted after ``past_kv``'s T_past cached keys).
        ``past_kv``: cached (keys, values) (B, H, T_past, d_k) from earlier steps (self-attention: the new ones are
        appended; cross-attention: they are the context's and are reused). -> AttnOut(y, weights, kv)."""
        self._check_input(x, "x")
        B, T_q, _ = x.shape
        cross = context is not None
        if cross:
            self._check_input(context, "context")
            if context.shape[0] != B:
                raise ValueError(f"x has batch size {B} but context has {context.shape[0]}")
            if causal:
                raise ValueError("causal=True is for self-attention: a decoder's cross-attention may look at every "
                                 "encoder position")
        if not cross and self.impl == "fused":
            # (9.47) Q, K, V = X W_i^Q, X W_i^K, X W_i^V with one matmul: the three matrices stacked
            w = torch.cat([self.W_Q.weight, self.W_K.weight, self.W_V.weight])    # (3 d_model, d_model)
            b = None if self.W_Q.bias is None else torch.cat([self.W_Q.bias, self.W_K.bias, self.W_V.bias])
            q, k, v = map(self._split_heads, F.linear(x, w, b).split(self.d_model, -1))  # 3 x (B, H, T_q, d_k)
        else:
            # (9.47) Q = X W_i^Q for every head i at once
            q = self._split_heads(self.W_Q(x))                                    # (B, H, T_q, d_k)
        if cross and past_kv is not None:
            k, v = past_kv                                                        # the context's, computed once
        else:
            if cross or self.impl != "fused":
                src = context if cross else x
                # (9.47) K = X W_i^K, V = X W_i^V
                k = self._split_heads(self.W_K(src))                              # (B, H, T_new, d_k)
                v = self._split_heads(self.W_V(src))                              # (B, H, T_new, d_k)
            if past_kv is not None:
                if past_kv[0].shape[0] != B:
                    raise ValueError(f"the cache holds {past_kv[0].shape[0]} sequences but x has {B}")
                k = torch.cat([past_kv[0], k], dim=2)                             # (B, H, T_past + T_q, d_k)
                v = torch.cat([past_kv[1], v], dim=2)                             # (B, H, T_past + T_q, d_k)
        T_k = k.shape[2]
        mask = None                                                               # True = may attend
        if causal and not (T_q == 1):                                             # one new query sees every key
            # query i is at position T_past + i and sees keys j <= T_past + i (SLP Fig. 9.17)
            mask = torch.ones(T_q, T_k, dtype=torch.bool, device=x.device).tril(T_k - T_q)   # (T_q, T_k)
        if key_padding_mask is not None:
            kpm = _check_key_padding_mask(key_padding_mask, B, T_k, "key_padding_mask")[:, None, None, :]
            mask = kpm if mask is None else mask & kpm                            # (B, 1, T_q or 1, T_k)
        p = self.dropout if self.training else 0.0
        weights = None
        if self.impl == "scratch" or need_weights:
            # (9.48) head_i = SelfAttention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V   (9.39), chapter 5's function
            heads, weights = attention(q, k, v, mask)                             # (B, H, T_q, d_k), (B, H, T_q, T_k)
            if p > 0:
                heads = torch.matmul(self.attn_drop(weights), v)                  # dropout on the weights
        else:
            if mask is not None and mask.dim() == 4 and not bool(mask.any(-1).all()):
                raise ValueError("a query may attend to no key under this mask; give every query at least one key")
            fast_causal = causal and mask is not None and key_padding_mask is None and T_q == T_k
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=None if fast_causal else mask,
                                                   dropout_p=p, is_causal=fast_causal)   # (B, H, T_q, d_k)
        # (9.46) head_1 (+) ... (+) head_H: concatenate the heads along the width
        concat = heads.transpose(1, 2).reshape(B, T_q, self.d_model)              # (B, H, T_q, d_k) -> (B, T_q, d_model)
        # (9.46) MultiHeadAttn(X) = (head_1 (+) ... (+) head_H) W^O
        y = self.W_O(concat)                                                      # (B, T_q, d_model)
        return AttnOut(y, weights if need_weights else None, (k, v) if use_cache else None)

    @torch.no_grad()
    def copy_from_torch(self, mha: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Take the weights of a torch.nn.MultiheadAttention (same d_model and heads): its in_proj stacks W^Q, W^K,
        W^V (3 d_model, d_model); its out_proj is W^O."""
        if mha.embed_dim != self.d_model or mha.num_heads != self.H or not mha._qkv_same_embed_dim:
            raise ValueError(f"need a torch MultiheadAttention with embed_dim={self.d_model}, num_heads={self.H} "
                             f"and one width for q, k, v; got embed_dim={mha.embed_dim}, num_heads={mha.num_heads}")
        wq, wk, wv = mha.in_proj_weight.chunk(3)                                  # 3 x (d_model, d_model)
        for lin, w in ((self.W_Q, wq), (self.W_K, wk), (self.W_V, wv)):
            lin.weight.copy_(w)
        self.W_O.weight.copy_(mha.out_proj.weight)
        if self.W_Q.bias is not None:
            for lin, b in zip((self.W_Q, self.W_K, self.W_V), mha.in_proj_bias.chunk(3)):
                lin.bias.copy_(b)
            self.W_O.bias.copy_(mha.out_proj.bias)
        return self


# ----------------------------------------------------------------------------------------------------------------
# Feed-forward layer and the block (9.40)-(9.41)
# ----------------------------------------------------------------------------------------------------------------
class FeedForward(nn.Module):
    """The position-wise feed-forward layer, FFNN(x) = W_2 act(W_1 x + b_1) + b_2 (Vaswani et al. 2017, eq. 2),
    applied to each position alone; d_ff is usually 4 d_model."""

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu", dropout: float = 0.0, bias: bool = True):
        super().__init__()
        _check_positive(d_model=d_model, d_ff=d_ff)
        _check_choice("activation", activation, tuple(_ACTIVATIONS))
        self.activation = activation
        self.W_1 = nn.Linear(d_model, d_ff, bias=bias)
        self.W_2 = nn.Linear(d_ff, d_model, bias=bias)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        # FFNN(x) = W_2 act(W_1 x + b_1) + b_2
        return self.W_2(self.drop(_ACTIVATIONS[self.activation](self.W_1(x))))   # (B, T, d_ff) -> (B, T, d_model)


class BlockOut(NamedTuple):
    """A block's output ``y`` (B, T, d_model), its self-attention weights (B, H, T, T_k) and cross-attention weights
    (B, H, T, S) when asked, and its caches (self (k, v), cross (k, v) or None) when asked."""
    y: Tensor
    self_weights: Tensor | None
    cross_weights: Tensor | None
    cache: tuple | None


class TransformerBlock(nn.Module):
    """One transformer block. norm="post" is SLP's (9.40)-(9.41): z = LayerNorm(x + SelfAttn(x)),
    y = LayerNorm(z + FFNN(z)). norm="pre" (Xiong et al. 2020, GPT-2) normalises the input of each sublayer and
    leaves the residual stream untouched: z = x + SelfAttn(LayerNorm(x)), y = z + FFNN(LayerNorm(z)); it trains
    stably at higher learning rates. ``cross_attention=True`` adds the decoder's attention to an encoder's output
    between the two (Vaswani et al. 2017). Dropout (p = ``dropout``) on each sublayer's output, as in torch.
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int | None = None, dropout: float = 0.0,
                 norm: str = "post", activation: str = "relu", bias: bool = True, cross_attention: bool = False,
                 eps: float = 1e-5, impl: str = "fused"):
        super().__init__()
        _check_choice("norm", norm, _NORMS)
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.norm = norm
        self.attn = MultiHeadAttention(d_model, num_heads, dropout, bias, impl)
        self.ln1 = LayerNorm(d_model, eps, impl)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout, bias, impl) if cross_attention else None
        self.ln_cross = LayerNorm(d_model, eps, impl) if cross_attention else None
        self.ffn = FeedForward(d_model, d_ff, activation, dropout, bias)
        self.ln2 = LayerNorm(d_model, eps, impl)
        self.drop1, self.drop_cross, self.drop2 = nn.Dropout(dropout), nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None, causal: bool = False,
                memory: Tensor | None = None, memory_mask: Tensor | None = None, need_weights: bool = False,
                past: tuple | None = None, use_cache: bool = False) -> BlockOut:
        """x (B, T, d_model); key_padding_mask (B, T_k) True = real; memory (B, S, d_model) and memory_mask (B, S)
        for cross-attention; ``past`` the cache a previous call returned. -> BlockOut."""
        if (memory is None) != (self.cross_attn is None):
            raise ValueError("memory (the encoder output) must be given exactly when the block has cross-attention "
                             f"(this block has{'' if self.cross_attn is not None else ' no'} cross-attention)")
        past_self, past_cross = past if past is not None else (None, None)
        cross_w, cross_kv = None, None
        if self.norm == "post":
            a = self.attn(x, key_padding_mask=key_padding_mask, causal=causal, need_weights=need_weights,
                          past_kv=past_self, use_cache=use_cache)
            # (9.40) z = LayerNorm(x + SelfAttn(x))
            z = self.ln1(x + self.drop1(a.y))
            if self.cross_attn is not None:
                c = self.cross_attn(z, memory, memory_mask, need_weights=need_weights, past_kv=past_cross,
                                    use_cache=use_cache)
                z = self.ln_cross(z + self.drop_cross(c.y))
                cross_w, cross_kv = c.weights, c.kv
            # (9.41) y = LayerNorm(z + FFNN(z))
            y = self.ln2(z + self.drop2(self.ffn(z)))
        else:
            a = self.attn(self.ln1(x), key_padding_mask=key_padding_mask, causal=causal, need_weights=need_weights,
                          past_kv=past_self, use_cache=use_cache)
            # pre-norm: z = x + SelfAttn(LayerNorm(x))
            z = x + self.drop1(a.y)
            if self.cross_attn is not None:
                c = self.cross_attn(self.ln_cross(z), memory, memory_mask, need_weights=need_weights,
                                    past_kv=past_cross, use_cache=use_cache)
                z = z + self.drop_cross(c.y)
                cross_w, cross_kv = c.weights, c.kv
            # pre-norm: y = z + FFNN(LayerNorm(z))
            y = z + self.drop2(self.ffn(self.ln2(z)))
        return BlockOut(y, a.weights, cross_w, (a.kv, cross_kv) if use_cache else None)

    @torch.no_grad()
    def copy_from_torch(self, layer: nn.Module) -> "TransformerBlock":
        """Take the weights of a torch.nn.TransformerEncoderLayer (or DecoderLayer, for a block with
        cross-attention) of the same sizes; norm_first must match ``norm``."""
        want = nn.TransformerDecoderLayer if self.cross_attn is not None else nn.TransformerEncoderLayer
        if not isinstance(layer, want):
            raise TypeError(f"this block copies from a {want.__name__}, got {type(layer).__name__}")
        if layer.norm_first != (self.norm == "pre"):
            raise ValueError(f"norm={self.norm!r} needs norm_first={self.norm == 'pre'}, the layer has "
                             f"norm_first={layer.norm_first}")
        self.attn.copy_from_torch(layer.self_attn)
        self.ffn.W_1.load_state_dict(layer.linear1.state_dict())
        self.ffn.W_2.load_state_dict(layer.linear2.state_dict())
        self.ln1.copy_from_torch(layer.norm1)
        if self.cross_attn is not None:
            self.cross_attn.copy_from_torch(layer.multihead_attn)
            self.ln_cross.copy_from_torch(layer.norm2)
            self.ln2.copy_from_torch(layer.norm3)
        else:
            self.ln2.copy_from_torch(layer.norm2)
        return self


# ----------------------------------------------------------------------------------------------------------------
# Positions
# ----------------------------------------------------------------------------------------------------------------
def _check_span(T: int, offset: int, max_len: int) -> None:
    if offset + T > max_len:
        raise ValueError(f"the sequence needs positions {offset}..{offset + T - 1}, but the position table has only "
                         f"max_len={max_len} rows: crop the input to its last {max_len} tokens, or build the model "
                         f"with a larger max_len")


class LearnedPositions(nn.Module):
    """Absolute position embeddings learned like word embeddings (SLP Fig. 9.20): one row per position."""

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        _check_positive(max_len=max_len, d_model=d_model)
        self.max_len = max_len
        self.P = nn.Embedding(max_len, d_model)

    def forward(self, T: int, offset: int = 0) -> Tensor:
        _check_span(T, offset, self.max_len)
        return self.P.weight[offset:offset + T]                                   # (T, d_model)


class SinusoidalPositions(nn.Module):
    """Fixed sine/cosine positions (Vaswani et al. 2017), the table of ``sinusoidal_encoding``; no parameters."""

    def __init__(self, max_len: int, d_model: int, base: float = 10000.0):
        super().__init__()
        self.max_len = _positive_int(max_len, "max_len")
        self.register_buffer("P", torch.from_numpy(sinusoidal_encoding(max_len, d_model, base)).float(),
                             persistent=False)                                     # (max_len, d_model)

    def forward(self, T: int, offset: int = 0) -> Tensor:
        _check_span(T, offset, self.max_len)
        return self.P[offset:offset + T]                                          # (T, d_model)


# ----------------------------------------------------------------------------------------------------------------
# The decoder-only language model (SLP 9.8, Figs. 9.21-9.22) and its masked-LM twin
# ----------------------------------------------------------------------------------------------------------------
@dataclass
class TransformerConfig:
    """Sizes of a transformer LM. Presets ``tiny`` (tests, CI) and ``full`` (more capacity, for a GPU or patience)."""

    vocab_size: int
    max_len: int = 128           # context: rows of the position table, the longest sequence the model reads
    d_model: int = 128           # model width (embeddings, residual stream)
    num_heads: int = 4           # H; each head has d_k = d_model / H
    num_layers: int = 2          # L blocks
    d_ff: int | None = None      # feed-forward width, default 4 d_model
    dropout: float = 0.0         # on embeddings, attention weights and each sublayer's output
    norm: str = "pre"            # "pre" (GPT-2, stable) or "post" (SLP's (9.40)-(9.41), the original)
    positions: str = "learned"   # "learned", "sinusoidal" or "none" (then the model cannot tell order)
    activation: str = "gelu"     # of the feed-forward layer: "gelu" or "relu"
    bias: bool = True            # biases in the linear layers
    tie_weights: bool = True     # (9.14)-(9.16) the output layer is E^T
    causal: bool = True          # True: a left-to-right LM (GPT); False: bidirectional, for a masked LM (BERT)
    impl: str = "fused"          # "fused" (SDPA, F.layer_norm) or "scratch" (chapter 5's attention, our LayerNorm)
    eps: float = 1e-5            # LayerNorm epsilon
    init_std: float = 0.02       # std of the initial weights: GPT-2's 0.02; small models on short runs learn their
                                 # attention sooner from a larger one (~1/sqrt(d_model))

    def __post_init__(self):
        _check_positive(vocab_size=self.vocab_size, max_len=self.max_len, d_model=self.d_model,
                        num_heads=self.num_heads, num_layers=self.num_layers)
        if isinstance(self.init_std, bool) or not isinstance(self.init_std, (int, float)) or not self.init_std > 0:
            raise ValueError(f"init_std must be a number > 0 (GPT-2 uses 0.02), got {self.init_std!r}")
        if self.d_ff is None:
            self.d_ff = 4 * self.d_model
        _check_positive(d_ff=self.d_ff)
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}: each head "
                             f"gets d_k = d_model / H dimensions; pick a number of heads that divides d_model")
        _check_choice("norm", self.norm, _NORMS)
        _check_choice("positions", self.positions, _POSITIONS)
        _check_choice("activation", self.activation, tuple(_ACTIVATIONS))
        _check_choice("impl", self.impl, _IMPLS)
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    @classmethod
    def tiny(cls, vocab_size: int, **kw):
        return cls(vocab_size, **{"max_len": 32, "d_model": 32, "num_heads": 2, "num_layers": 2, **kw})

    @classmethod
    def full(cls, vocab_size: int, **kw):
        return cls(vocab_size, **{"max_len": 256, "d_model": 256, "num_heads": 8, "num_layers": 6,
                                  "dropout": 0.1, **kw})


class DecodeState(NamedTuple):
    """The state ``TransformerLM.step`` carries: ``ids`` (B, T_past) the tokens read so far (at most max_len), and
    ``kv`` one (keys, values) pair (B, H, T_past, d_k) per layer, the key/value cache."""
    ids: Tensor
    kv: tuple


def _init_weights(model: nn.Module, num_layers: int, std: float = 0.02) -> None:
    """GPT-2's initialisation: N(0, std = 0.02) for every linear layer and embedding, zero biases, and the layers that
    write into the residual stream (W^O, W_2) scaled down by sqrt(2 L) so the stream does not grow with depth."""
    for name, p in model.named_parameters():
        if p.dim() == 2:
            std_p = std / math.sqrt(2 * num_layers) if name.endswith(("W_O.weight", "W_2.weight")) else std
            nn.init.normal_(p, 0.0, std_p)
        elif name.endswith(".bias"):
            nn.init.zeros_(p)


class TransformerLM(nn.Module):
    """A decoder-only transformer language model (SLP 9.8, Fig. 9.21): x_t = E w_t + P_t, L blocks with causal
    self-attention, then y_t = softmax(E^T h_t) with weight tying (9.16). Every position is trained in parallel
    (teacher forcing); generation primes with a prefix and extends it (Fig. 9.22) through ``seqviz.decode``.

    With ``config.causal=False`` the same network reads in both directions: train it as a masked LM with
    :func:`mask_tokens` (BERT's objective); it cannot generate left to right.

    forward(idx (B, T), targets (B, T) | None, mask (B, T) | None, return_attention=False) -> (logits (B, T, V),
    loss) or, with return_attention, (logits, loss, weights (B, L, H, T, T)). For decoding:
    ``step(ids (B, t_new), state) -> (logits (B, V), state)`` with a key/value cache, ``reorder_state``, and
    ``next_token_logits(context) -> (V,)``.
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = c = config
        self.E = nn.Embedding(c.vocab_size, c.d_model)
        self.pos = {"learned": lambda: LearnedPositions(c.max_len, c.d_model),
                    "sinusoidal": lambda: SinusoidalPositions(c.max_len, c.d_model),
                    "none": lambda: None}[c.positions]()
        self.drop = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(c.d_model, c.num_heads, c.d_ff, c.dropout, c.norm, c.activation, c.bias, eps=c.eps,
                             impl=c.impl) for _ in range(c.num_layers))
        # pre-norm leaves the residual stream unnormalised: one last LayerNorm before the output layer (GPT-2)
        self.ln_f = LayerNorm(c.d_model, c.eps, c.impl) if c.norm == "pre" else nn.Identity()
        self.V = nn.Linear(c.d_model, c.vocab_size, bias=False)
        _init_weights(self, c.num_layers, c.init_std)
        if c.tie_weights:
            # (9.16) y_t = softmax(E^T h_t): one tensor, used twice (nn.Linear computes h V^T, so V = E here)
            self.V.weight = self.E.weight

    @property
    def impl(self) -> str:
        return self.config.impl

    @impl.setter
    def impl(self, value: str) -> None:
        """Switch every attention and LayerNorm between "scratch" and "fused" (same parameters)."""
        _check_choice("impl", value, _IMPLS)
        self.config.impl = value
        for m in self.modules():
            if isinstance(m, (MultiHeadAttention, LayerNorm)):
                m.impl = value

    def num_parameters(self) -> int:
        """Distinct parameters (a tied E counts once)."""
        return sum(p.numel() for p in self.parameters())

    def _run(self, idx: Tensor, key_padding_mask: Tensor | None, need_weights: bool, past: tuple | None,
             offset: int, use_cache: bool):
        B, T = idx.shape
        x = self.E(idx)                                                           # (B, T, d_model)
        if self.pos is not None:
            # SLP Fig. 9.20: the input is the word embedding plus the position embedding
            x = x + self.pos(T, offset)                                           # (B, T, d_model) + (T, d_model)
        elif offset + T > self.config.max_len:
            _check_span(T, offset, self.config.max_len)
        x = self.drop(x)
        weights, caches = [], []
        for l, block in enumerate(self.blocks):
            out = block(x, key_padding_mask=key_padding_mask, causal=self.config.causal, need_weights=need_weights,
                        past=None if past is None else (past[l], None), use_cache=use_cache)
            x = out.y
            weights.append(out.self_weights)
            caches.append(out.cache[0] if use_cache else None)
        h = self.ln_f(x)                                                          # (B, T, d_model)
        attn = torch.stack(weights, dim=1) if need_weights else None              # L x (B, H, T, T_k) -> (B, L, H, T, T_k)
        return h, attn, tuple(caches)

    def forward(self, idx: Tensor, targets: Tensor | None = None, mask: Tensor | None = None,
                return_attention: bool = False):
        c = self.config
        _check_ids(idx, c.vocab_size)
        B, T = idx.shape
        if T > c.max_len:
            _check_span(T, 0, c.max_len)
        if mask is not None:
            _check_mask(mask, (B, T))
        h, attn, _ = self._run(idx, mask, return_attention, None, 0, False)
        # y_t = softmax(E^T h_t): the logits; the softmax lives in the loss
        logits = self.V(h)                                                        # (B, T, V)
        loss = None
        if targets is not None:
            _check_targets(targets, (B, T), c.vocab_size)
            if not bool((targets != IGNORE_INDEX).any()):
                raise ValueError(f"every target is {IGNORE_INDEX} (ignored): nothing to score")
            # (9.12)-(9.13) L_CE = -log y_t[w_{t+1}], averaged over every scored position at once (teacher forcing)
            loss = F.cross_entropy(logits.reshape(B * T, c.vocab_size), targets.reshape(B * T),
                                   ignore_index=IGNORE_INDEX)                     # (B*T, V) vs (B*T,)
        return (logits, loss, attn) if return_attention else (logits, loss)

    @torch.no_grad()
    def attention_weights(self, idx: Tensor) -> Tensor:
        """Attention weights (L, H, T, T) of every layer and head for one sequence idx (T,) or (1, T), in eval mode:
        what the AttentionHeatmap widget takes."""
        idx = torch.as_tensor(idx)
        idx = idx.unsqueeze(0) if idx.dim() == 1 else idx
        was = self.training
        self.eval()
        try:
            _, _, attn = self(idx.long(), return_attention=True)                  # (1, L, H, T, T)
        finally:
            self.train(was)
        return attn[0]                                                            # (L, H, T, T)

    # -- incremental decoding (the seqviz.decode contract) -----------------------------------------------------
    def step(self, ids: Tensor, state: DecodeState | None = None) -> tuple[Tensor, DecodeState]:
        """Read ids (B, t_new) after ``state`` (None: the start) -> (logits (B, V) for the next token, state).

        Each layer's keys and values of the tokens read so far are cached, so a new token costs one position, not a
        re-run of the prefix. When the context would pass max_len, the model re-reads its last max_len tokens (the
        positions shift, so the cache is rebuilt): the same cropping ``next_token_logits`` does.
        """
        c = self.config
        if not c.causal:
            raise ValueError("this model is bidirectional (causal=False, a masked LM): every position sees the "
                             "future, so it cannot decode left to right; use a causal TransformerLM")
        _check_ids(ids, c.vocab_size, "ids")
        if state is not None and state.ids.shape[0] != ids.shape[0]:
            raise ValueError(f"the state holds {state.ids.shape[0]} sequences but ids has {ids.shape[0]}; use "
                             f"reorder_state to select rows")
        prev = ids[:, :0] if state is None else state.ids
        all_ids = torch.cat([prev, ids], dim=1)                                   # (B, T_past + t_new)
        if all_ids.shape[1] <= c.max_len and state is not None:
            h, _, kv = self._run(ids, None, False, state.kv, prev.shape[1], True)
        else:
            all_ids = all_ids[:, -c.max_len:]                                     # (B, <= max_len) the window
            h, _, kv = self._run(all_ids, None, False, None, 0, True)
        logits = self.V(h[:, -1])                                                 # (B, V)
        return logits, DecodeState(all_ids, kv)

    def reorder_state(self, state: DecodeState, index: Tensor) -> DecodeState:
        """Rows ``index`` (B',) of the state: ids (B', T_past), every cached key/value (B', H, T_past, d_k)."""
        kv = tuple((k.index_select(0, index), v.index_select(0, index)) for k, v in state.kv)
        return DecodeState(state.ids.index_select(0, index), kv)

    def next_token_logits(self, context_ids: Sequence[int] | Tensor) -> Tensor:
        """Logits (V,) for the token after ``context_ids`` (its last max_len tokens), in eval mode."""
        return next_token_logits_by_step(self, context_ids, max_context=self.config.max_len)

    def generate(self, prompt_ids: Sequence[int], max_new_tokens: int, **kw) -> list[int]:
        """Extend a prompt (SLP Fig. 9.22) with ``seqviz.decode.generate`` (greedy, temperature, top-k; keyword
        arguments pass through). Returns the new ids only."""
        return decode_generate(self, prompt_ids, max_new_tokens, **kw)          # through the key/value cache


def mask_tokens(ids: Tensor, mask_id: int, vocab_size: int, p: float = 0.15, generator: torch.Generator | None = None,
                keep: Sequence[int] = ()) -> tuple[Tensor, Tensor]:
    """BERT's masked-LM corruption (Devlin et al. 2019): choose each token with probability p; of the chosen, 80 %
    become ``mask_id``, 10 % a random token, 10 % stay. Returns (x (B, T) the corrupted input, y (B, T) the
    original ids at chosen positions and IGNORE_INDEX elsewhere). Ids in ``keep`` (padding, ...) are never chosen.
    """
    _check_ids(ids, vocab_size, "ids")
    if not 0 < p < 1:
        raise ValueError(f"p (the share of tokens to predict) must be in (0, 1), got {p}")
    if not 0 <= mask_id < vocab_size:
        raise ValueError(f"mask_id {mask_id} is not in the vocabulary [0, {vocab_size}); add a mask token first")
    u = torch.rand(ids.shape, generator=generator)                                # (B, T)
    chosen = u < p
    for k in keep:
        chosen &= ids != k
    r = torch.rand(ids.shape, generator=generator)                                # (B, T) which corruption
    rand_ids = torch.randint(vocab_size, ids.shape, generator=generator)          # (B, T)
    x = torch.where(chosen & (r < 0.8), torch.full_like(ids, mask_id), ids)
    x = torch.where(chosen & (r >= 0.8) & (r < 0.9), rand_ids, x)
    y = torch.where(chosen, ids, torch.full_like(ids, IGNORE_INDEX))
    return x, y


# ----------------------------------------------------------------------------------------------------------------
# Data for a context-window LM: random training windows, and the benchmark's evaluation over fixed windows
# ----------------------------------------------------------------------------------------------------------------
def random_windows(ids: Tensor, n_batches: int, batch_size: int, T: int, seed: int = 0) -> list[Batch]:
    """``n_batches`` Batches of ``batch_size`` windows of T tokens from random places of ``ids`` (1-D): x the
    window, y the same window shifted by one (the next token at every position, all trained in parallel: SLP
    Fig. 9.21). Seeded by ``seed`` alone, never the global RNG."""
    _check_positive(n_batches=n_batches, batch_size=batch_size, T=T)
    ids = torch.as_tensor(ids).long()
    if ids.dim() != 1 or ids.numel() < T + 1:
        raise ValueError(f"ids must be a 1-D sequence of more than T={T} token ids, got shape {tuple(ids.shape)}")
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(ids.numel() - T, (n_batches, batch_size), generator=g)   # (n, B)
    rows = ids[start[..., None] + torch.arange(T + 1)]                              # (n, B, T + 1)
    return [Batch(r[:, :-1], r[:, 1:]) for r in rows]                               # (B, T) each


def masked_windows(ids: Tensor, n_batches: int, batch_size: int, T: int, mask_id: int, vocab_size: int,
                   p: float = 0.15, seed: int = 0) -> list[Batch]:
    """Training data for a masked LM: ``random_windows`` of T tokens, each corrupted by :func:`mask_tokens` (15 %
    chosen; 80 % [MASK], 10 % random, 10 % kept): Batch(x the corrupted window, y the original ids at the chosen
    positions, IGNORE_INDEX elsewhere). Seeded by ``seed`` alone."""
    g = torch.Generator().manual_seed(seed + 1)
    return [Batch(*mask_tokens(b.x, mask_id, vocab_size, p=p, generator=g))
            for b in random_windows(ids, n_batches, batch_size, T, seed=seed)]


@torch.no_grad()
def window_loss(model: nn.Module, ids: Tensor, T: int, batch_size: int = 256) -> float:
    """Mean cross-entropy per token (nats) over non-overlapping windows of T tokens covering ``ids``: window k reads
    ids[kT : kT + T] and predicts ids[kT + 1 : kT + T + 1]; every position counts (the last window may be shorter).
    Each window starts with no context, so this is the loss of a model that sees at most T tokens."""
    _check_positive(T=T, batch_size=batch_size)
    ids = torch.as_tensor(ids).long()
    n = ids.numel() - 1                                                             # positions with a next token
    if ids.dim() != 1 or n < 1:
        raise ValueError(f"ids must be a 1-D sequence of at least 2 token ids, got shape {tuple(ids.shape)}")
    was = model.training
    model.eval()
    total = 0.0
    try:
        full = n // T
        x = ids[:full * T].view(full, T)                                            # (n_windows, T)
        y = ids[1:full * T + 1].view(full, T)                                       # (n_windows, T)
        for i in range(0, full, batch_size):
            logits, _ = model(x[i:i + batch_size])
            total += float(F.cross_entropy(logits.flatten(0, 1), y[i:i + batch_size].flatten(), reduction="sum"))
        if n > full * T:                                                            # the shorter last window
            logits, _ = model(ids[full * T:n][None])
            total += float(F.cross_entropy(logits[0], ids[full * T + 1:n + 1], reduction="sum"))
    finally:
        model.train(was)
    return total / n


@torch.no_grad()
def sliding_loss(model: nn.Module, ids: Tensor, T: int, stride: int | None = None, skip_target: int | None = None,
                 batch_size: int = 64) -> tuple[float, int]:
    """Mean cross-entropy per scored token (nats) over a long stream ``ids`` (1-D) read through windows of T tokens
    that start every ``stride`` tokens (default T // 2): the first window scores all its predictions, each later one
    only its last ``stride``, so every target is scored once and (after the first window) with at least T - stride
    tokens of context. Targets equal to ``skip_target`` (e.g. the ``<s>`` of ``sentence_stream``, only ever an input)
    are not scored. Returns (mean loss, number of scored targets); perplexity is exp(mean loss)."""
    _check_positive(T=T, batch_size=batch_size)
    stride = T // 2 if stride is None else stride
    if not isinstance(stride, int) or not 1 <= stride <= T:
        raise ValueError(f"stride must be an int in [1, T={T}], got {stride!r}")
    ids = torch.as_tensor(ids).long()
    n = ids.numel() - 1                                                             # positions with a next token
    if ids.dim() != 1 or n < 1:
        raise ValueError(f"ids must be a 1-D sequence of at least 2 token ids, got shape {tuple(ids.shape)}")
    starts = list(range(0, max(n - T, 0) + 1, stride))
    if starts[-1] + T < n:                                                          # cover the tail
        starts.append(n - T)
    was = model.training
    model.eval()
    total, count, done = 0.0, 0, 0                                                  # done: targets scored so far
    try:
        for i in range(0, len(starts), batch_size):
            chunk = starts[i:i + batch_size]
            L = min(T, n)
            s = torch.tensor(chunk)[:, None] + torch.arange(L)                      # (b, L) positions
            logits, _ = model(ids[s])                                               # (b, L, V)
            y = ids[s + 1].clone()                                                  # (b, L) next tokens
            for r, st in enumerate(chunk):                                          # score each target once
                y[r, :max(done - st, 0)] = IGNORE_INDEX
                done = max(done, st + L)
            if skip_target is not None:
                y[y == skip_target] = IGNORE_INDEX
            total += float(F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=IGNORE_INDEX,
                                           reduction="sum"))
            count += int((y != IGNORE_INDEX).sum())
    finally:
        model.train(was)
    if count == 0:
        raise ValueError("no target left to score (every target is skip_target)")
    return total / count, count


# ----------------------------------------------------------------------------------------------------------------
# The encoder-decoder transformer (Vaswani et al. 2017; SLP 9.9)
# ----------------------------------------------------------------------------------------------------------------
@dataclass
class EncoderDecoderConfig:
    """Sizes of an encoder-decoder transformer; the target side's ``bos_id`` starts decoding and ``pad_id`` fills
    the decoder input where targets are IGNORE_INDEX. Presets ``tiny`` and ``full``."""

    src_vocab_size: int
    tgt_vocab_size: int
    bos_id: int                  # target-side <s>, the decoder's first input
    pad_id: int                  # target-side padding id (decoder input past </s>; never scored)
    max_len: int = 128           # longest source and longest target
    d_model: int = 128
    num_heads: int = 4
    num_layers: int = 2          # blocks on each side
    d_ff: int | None = None
    dropout: float = 0.0
    norm: str = "pre"
    positions: str = "learned"   # "learned" or "sinusoidal"
    activation: str = "gelu"
    bias: bool = True
    tie_weights: bool = True     # the decoder's output layer is its embedding matrix transposed
    impl: str = "fused"
    eps: float = 1e-5
    eos_id: int | None = None    # target-side </s>: greedy decoding stops there (None: always max_len steps)
    init_std: float = 0.02       # std of the initial weights (GPT-2's 0.02; a small model on a small task learns
                                 # its attention far sooner from ~1/sqrt(d_model), e.g. 0.1 at d_model = 64)

    def __post_init__(self):
        _check_positive(src_vocab_size=self.src_vocab_size, tgt_vocab_size=self.tgt_vocab_size,
                        max_len=self.max_len, d_model=self.d_model, num_heads=self.num_heads,
                        num_layers=self.num_layers)
        self.d_ff = 4 * self.d_model if self.d_ff is None else self.d_ff
        for name in ("bos_id", "pad_id") + (("eos_id",) if self.eos_id is not None else ()):
            v = getattr(self, name)
            if not isinstance(v, int) or not 0 <= v < self.tgt_vocab_size:
                raise ValueError(f"{name} must be a target-vocabulary id in [0, {self.tgt_vocab_size}), got {v!r}")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}: each head "
                             f"gets d_k = d_model / H dimensions; pick a number of heads that divides d_model")
        _check_choice("norm", self.norm, _NORMS)
        _check_choice("positions", self.positions, _POSITIONS[:2])
        _check_choice("activation", self.activation, tuple(_ACTIVATIONS))
        _check_choice("impl", self.impl, _IMPLS)
        if isinstance(self.init_std, bool) or not isinstance(self.init_std, (int, float)) or not self.init_std > 0:
            raise ValueError(f"init_std must be a number > 0 (GPT-2 uses 0.02), got {self.init_std!r}")

    @classmethod
    def tiny(cls, src_vocab_size: int, tgt_vocab_size: int, bos_id: int, pad_id: int, **kw):
        return cls(src_vocab_size, tgt_vocab_size, bos_id, pad_id,
                   **{"max_len": 32, "d_model": 32, "num_heads": 2, "num_layers": 1, **kw})

    @classmethod
    def full(cls, src_vocab_size: int, tgt_vocab_size: int, bos_id: int, pad_id: int, **kw):
        return cls(src_vocab_size, tgt_vocab_size, bos_id, pad_id,
                   **{"d_model": 256, "num_heads": 8, "num_layers": 3, "dropout": 0.1, **kw})


class EncDecState(NamedTuple):
    """The decoder's state: ``T_past`` target tokens read, the encoder's ``memory`` (B, S, d_model) and its
    ``memory_mask`` (B, S), and per layer (self (k, v), cross (k, v)) caches (B, H, ., d_k)."""
    T_past: int
    memory: Tensor
    memory_mask: Tensor | None
    kv: tuple


class EncoderDecoderTransformer(nn.Module):
    """Encoder-decoder transformer (Vaswani et al. 2017): a bidirectional encoder over the source, and a causal
    decoder whose blocks also attend to the encoder's output (cross-attention). Trained with teacher forcing:
    forward(src (B, S), targets (B, T), mask (B, S) source padding) -> (logits (B, T, V_tgt), loss), the decoder
    reading ``shift_right(targets)``, so it fits the trainer's default step over ``PairBatches``.

    Decoding: ``bind(src, mask)`` gives an object with ``step``/``reorder_state`` for ``seqviz.decode`` (the source
    is encoded once; its keys and values are cached in every cross-attention layer).
    """

    def __init__(self, config: EncoderDecoderConfig):
        super().__init__()
        self.config = c = config

        def positions():
            return (LearnedPositions(c.max_len, c.d_model) if c.positions == "learned"
                    else SinusoidalPositions(c.max_len, c.d_model))

        def blocks(cross):
            return nn.ModuleList(TransformerBlock(c.d_model, c.num_heads, c.d_ff, c.dropout, c.norm, c.activation,
                                                  c.bias, cross_attention=cross, eps=c.eps, impl=c.impl)
                                 for _ in range(c.num_layers))

        self.E_src, self.E_tgt = nn.Embedding(c.src_vocab_size, c.d_model), nn.Embedding(c.tgt_vocab_size, c.d_model)
        self.pos_src, self.pos_tgt = positions(), positions()
        self.drop = nn.Dropout(c.dropout)
        self.encoder, self.decoder = blocks(False), blocks(True)
        pre = c.norm == "pre"
        self.ln_enc = LayerNorm(c.d_model, c.eps, c.impl) if pre else nn.Identity()
        self.ln_dec = LayerNorm(c.d_model, c.eps, c.impl) if pre else nn.Identity()
        self.V = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)
        _init_weights(self, 2 * c.num_layers, c.init_std)
        if c.tie_weights:
            self.V.weight = self.E_tgt.weight

    def encode(self, src: Tensor, mask: Tensor | None = None, need_weights: bool = False):
        """src (B, S), mask (B, S) True = real -> (memory (B, S, d_model), weights (B, L, H, S, S) or None)."""
        c = self.config
        _check_ids(src, c.src_vocab_size, "src")
        if mask is not None:
            _check_key_padding_mask(mask, *src.shape, "mask (the source padding mask)")
        x = self.drop(self.E_src(src) + self.pos_src(src.shape[1]))                  # (B, S, d_model)
        weights = []
        for block in self.encoder:
            out = block(x, key_padding_mask=mask, need_weights=need_weights)
            x = out.y
            weights.append(out.self_weights)
        return self.ln_enc(x), (torch.stack(weights, 1) if need_weights else None)    # (B, L, H, S, S)

    def _decode(self, tgt_in: Tensor, memory: Tensor, memory_mask: Tensor | None, need_weights: bool,
                past: tuple | None, offset: int, use_cache: bool):
        y = self.drop(self.E_tgt(tgt_in) + self.pos_tgt(tgt_in.shape[1], offset))    # (B, T, d_model)
        self_w, cross_w, caches = [], [], []
        for l, block in enumerate(self.decoder):
            out = block(y, causal=True, memory=memory, memory_mask=memory_mask, need_weights=need_weights,
                        past=None if past is None else past[l], use_cache=use_cache)
            y = out.y
            self_w.append(out.self_weights)
            cross_w.append(out.cross_weights)
            caches.append(out.cache)
        return self.ln_dec(y), self_w, cross_w, tuple(caches)

    def forward(self, src: Tensor, targets: Tensor | None = None, mask: Tensor | None = None,
                tgt_in: Tensor | None = None, return_attention: bool = False):
        c = self.config
        if tgt_in is None:
            if targets is None:
                raise ValueError("give targets (teacher forcing reads shift_right(targets)) or tgt_in")
            from seqviz.data.batches import shift_right
            tgt_in = shift_right(targets, c.bos_id, c.pad_id)                        # (B, T)
        _check_ids(tgt_in, c.tgt_vocab_size, "tgt_in")
        if tgt_in.shape[0] != src.shape[0]:
            raise ValueError(f"src has {src.shape[0]} sequences but the target side has {tgt_in.shape[0]}")
        memory, enc_w = self.encode(src, mask, return_attention)
        h, self_w, cross_w, _ = self._decode(tgt_in, memory, mask, return_attention, None, 0, False)
        logits = self.V(h)                                                            # (B, T, V_tgt)
        loss = None
        if targets is not None:
            B, T = tgt_in.shape
            _check_targets(targets, (B, T), c.tgt_vocab_size)
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T),
                                   ignore_index=IGNORE_INDEX)                         # (B*T, V) vs (B*T,)
        if return_attention:
            return logits, loss, {"encoder": enc_w, "decoder": torch.stack(self_w, 1),
                                  "cross": torch.stack(cross_w, 1)}                   # (B, L, H, ., .) each
        return logits, loss

    def bind(self, src: Tensor, mask: Tensor | None = None) -> "_BoundDecoder":
        """A stepper for ``seqviz.decode`` that translates ``src`` (1, S) or (S,): the encoder runs once."""
        src = torch.as_tensor(src).long()
        src = src.unsqueeze(0) if src.dim() == 1 else src
        return _BoundDecoder(self, src, mask)


    @torch.no_grad()
    def greedy(self, src: Tensor, mask: Tensor | None = None, max_len: int = 50, return_attention: bool = False):
        """Batched greedy decoding with the key/value caches: src (B, S), mask (B, S) -> list of B id lists (without
        <s>, ending with </s> where ``config.eos_id`` was reached): the contract of ``seqviz.attention.exact_match``.
        With ``return_attention``, also the cross-attention weights (B, L, H, T_out, S) of the greedy outputs."""
        c = self.config
        _check_positive(max_len=max_len)
        src = torch.as_tensor(src).long()
        src = src.unsqueeze(0) if src.dim() == 1 else src
        was = self.training
        self.eval()
        try:
            dec = self.bind(src, mask)
            B = src.shape[0]
            y = torch.full((B, 1), c.bos_id, dtype=torch.long, device=src.device)   # (B, 1) <s>
            done = torch.zeros(B, dtype=torch.bool, device=src.device)
            state, out = None, []
            for _ in range(max_len):
                logits, state = dec.step(y, state)                                  # (B, V_tgt)
                y = logits.argmax(-1, keepdim=True)                                 # (B, 1)
                out.append(y)
                if c.eos_id is not None:
                    done |= y[:, 0] == c.eos_id
                    if bool(done.all()):
                        break
            ids = torch.cat(out, 1)                                                 # (B, T_out)
            weights = None
            if return_attention:
                tgt_in = torch.cat([torch.full((B, 1), c.bos_id, dtype=torch.long, device=src.device),
                                    ids[:, :-1]], 1)                                # (B, T_out) what the decoder read
                _, _, w = self(src, mask=mask, tgt_in=tgt_in, return_attention=True)
                weights = w["cross"]                                                # (B, L, H, T_out, S)
        finally:
            self.train(was)
        rows = ids.tolist()
        seqs = [r[:r.index(c.eos_id) + 1] if c.eos_id is not None and c.eos_id in r else r for r in rows]
        return (seqs, weights) if return_attention else seqs


class _BoundDecoder:
    """An encoder-decoder with its source fixed: ``step(ids (B, t_new), state) -> (logits (B, V), state)`` and
    ``reorder_state``; the first step encodes the source (repeated to B rows)."""

    def __init__(self, model: EncoderDecoderTransformer, src: Tensor, mask: Tensor | None):
        self.model, self.src, self.mask = model, src, mask

    def parameters(self):
        return self.model.parameters()

    def eval(self):
        self.model.eval()
        return self

    def train(self, mode: bool = True):
        self.model.train(mode)
        return self

    @property
    def training(self) -> bool:
        return self.model.training

    def step(self, ids: Tensor, state: EncDecState | None = None) -> tuple[Tensor, EncDecState]:
        m, c = self.model, self.model.config
        _check_ids(ids, c.tgt_vocab_size, "ids")
        if state is None:
            rows = torch.zeros(ids.shape[0], dtype=torch.long) if self.src.shape[0] == 1 else None
            src = self.src if rows is None else self.src[rows]                       # (B, S)
            mask = self.mask if self.mask is None or rows is None else self.mask[rows]
            memory, _ = m.encode(src, mask)
            state = EncDecState(0, memory, mask, None)
        h, _, _, kv = m._decode(ids, state.memory, state.memory_mask, False, state.kv, state.T_past, True)
        logits = m.V(h[:, -1])                                                        # (B, V)
        return logits, EncDecState(state.T_past + ids.shape[1], state.memory, state.memory_mask, kv)

    def reorder_state(self, state: EncDecState, index: Tensor) -> EncDecState:
        pick = lambda t: None if t is None else t.index_select(0, index)              # noqa: E731
        kv = tuple(tuple(None if p is None else (pick(p[0]), pick(p[1])) for p in layer) for layer in state.kv)
        return EncDecState(state.T_past, pick(state.memory), pick(state.memory_mask), kv)
