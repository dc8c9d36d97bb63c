"""The transformer's layers, block by block (SLP 3rd ed. draft, ch. 9, (9.40)-(9.48)).

LayerNorm (9.42)-(9.45); multi-head attention (9.46)-(9.48) on the ``attention`` function of chapter 6, §6.1 (a fused
``scaled_dot_product_attention`` path is tested equal), with a ``KVCache`` of the keys and values already computed;
the position-wise feed-forward layer; the block, in SLP's post-norm form (9.40)-(9.41) and the modern pre-norm form;
learned and sinusoidal positions (Vaswani et al. 2017).

Shapes, batch first: B batch, T time (T_q queries, T_k keys), d_model model width, H heads, d_k = d_model / H the
per-head width.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqviz._checks import _IMPLS, _check_choice, _check_positive
from seqviz.attention import attention

__all__ = ["sinusoidal_encoding", "LayerNorm", "KVCache", "AttnOut", "MultiHeadAttention", "FeedForward",
           "BlockCache", "BlockOut", "TransformerBlock", "LearnedPositions", "SinusoidalPositions"]

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


def _init_weights(model: nn.Module, num_layers: int, std: float = 0.02) -> None:
    """GPT-2's initialisation: N(0, std = 0.02) for every linear layer and embedding, zero biases, and the layers that
    write into the residual stream (W^O, W_2) scaled down by sqrt(2 L) so the stream does not grow with depth."""
    for name, p in model.named_parameters():
        if p.dim() == 2:
            std_p = std / math.sqrt(2 * num_layers) if name.endswith(("W_O.weight", "W_2.weight")) else std
            nn.init.normal_(p, 0.0, std_p)
        elif name.endswith(".bias"):
            nn.init.zeros_(p)


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
# Multi-head attention (9.46)-(9.48) and its key/value cache
# ----------------------------------------------------------------------------------------------------------------
class KVCache(NamedTuple):
    """The keys K and values V (B, H, T_k, d_k) one attention layer has computed so far, (9.47) K = X W_i^K and
    V = X W_i^V for every head: a decoder that reads one more token computes only that token's, and appends them."""
    K: Tensor
    V: Tensor

    @property
    def length(self) -> int:
        """T_k, the number of positions cached."""
        return self.K.shape[2]

    def append(self, K: Tensor, V: Tensor) -> "KVCache":
        """The cache with new keys and values (B, H, t_new, d_k) after the old ones: (B, H, T_k + t_new, d_k)."""
        if K.shape[0] != self.K.shape[0]:
            raise ValueError(f"the cache holds {self.K.shape[0]} sequences but the new keys have {K.shape[0]}; "
                             f"select the cache's rows first (index_select)")
        return KVCache(torch.cat([self.K, K], dim=2), torch.cat([self.V, V], dim=2))   # (B, H, T_k + t_new, d_k)

    def index_select(self, index: Tensor) -> "KVCache":
        """Rows ``index`` (B',) of the cache (kept, duplicated or dropped, e.g. the beams that survive)."""
        index = index.to(self.K.device)
        return KVCache(self.K.index_select(0, index), self.V.index_select(0, index))   # (B', H, T_k, d_k)


class AttnOut(NamedTuple):
    """What attention gives back: ``y`` (B, T_q, d_model); ``weights`` (B, H, T_q, T_k) only when asked; ``cache``
    the ``KVCache`` of every key and value attended to, only when asked (for the next decoding step)."""
    y: Tensor
    weights: Tensor | None
    cache: KVCache | None


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

    ``forward`` is three named steps: ``project`` (Q, K, V, with the cache), ``attend`` (every head at once) and
    ``merge_heads`` (concatenate, W^O). The H per-head matrices W_i^Q (d_model, d_k) sit side by side in one
    (d_model, d_model) linear layer ``W_Q`` (likewise W_K, W_V), so one matmul projects for every head.
    impl="scratch" calls chapter 6's ``attention`` function (§6.1); impl="fused" calls
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

    # -- step 1: projections, with the cache ---------------------------------------------------------------------
    def project(self, x: Tensor, context: Tensor | None = None,
                cache: KVCache | None = None) -> tuple[Tensor, KVCache]:
        """Queries of x (B, T_q, d_model) and every key and value to attend to: -> (Q (B, H, T_q, d_k), KVCache).

        Self-attention: the keys and values of x, after those in ``cache`` (the tokens read before). Cross-attention:
        those of ``context``, or ``cache`` as it is when given (the context's, computed on the first step)."""
        if cache is not None and cache.K.shape[0] != x.shape[0]:
            raise ValueError(f"the cache holds {cache.K.shape[0]} sequences but x has {x.shape[0]}; select the "
                             f"cache's rows first (index_select)")
        if context is None and self.impl == "fused":
            # (9.47) Q, K, V = X W_i^Q, X W_i^K, X W_i^V with one matmul: the three matrices stacked
            w = torch.cat([self.W_Q.weight, self.W_K.weight, self.W_V.weight])    # (3 d_model, d_model)
            b = None if self.W_Q.bias is None else torch.cat([self.W_Q.bias, self.W_K.bias, self.W_V.bias])
            Q, K, V = map(self._split_heads, F.linear(x, w, b).split(self.d_model, -1))  # 3 x (B, H, T_q, d_k)
        else:
            # (9.47) Q = X W_i^Q for every head i at once
            Q = self._split_heads(self.W_Q(x))                                    # (B, H, T_q, d_k)
            if context is not None and cache is not None:
                return Q, cache                                                   # the context's, computed once
            src = x if context is None else context
            # (9.47) K = X W_i^K, V = X W_i^V
            K = self._split_heads(self.W_K(src))                                  # (B, H, T_new, d_k)
            V = self._split_heads(self.W_V(src))                                  # (B, H, T_new, d_k)
        return Q, (KVCache(K, V) if cache is None else cache.append(K, V))        # (B, H, T_k, d_k) each

    # -- step 2: attend, every head at once ----------------------------------------------------------------------
    def attend(self, Q: Tensor, K: Tensor, V: Tensor, key_padding_mask: Tensor | None = None, causal: bool = False,
               need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        """(9.48) head_i = SelfAttention(Q, K, V) for every head: Q (B, H, T_q, d_k), K, V (B, H, T_k, d_k) ->
        (heads (B, H, T_q, d_k), weights (B, H, T_q, T_k) or None). ``causal``: query i is the (T_k - T_q + i)-th
        position and sees the keys up to it (SLP Fig. 9.17); key_padding_mask (B, T_k), True = a real key."""
        B, _, T_q, _ = Q.shape
        T_k = K.shape[2]
        allowed = None                                                            # True = may attend
        if causal and T_q > 1:                                                    # one new query sees every key
            allowed = torch.ones(T_q, T_k, dtype=torch.bool, device=Q.device).tril(T_k - T_q)   # (T_q, T_k)
        if key_padding_mask is not None:
            kpm = _check_key_padding_mask(key_padding_mask, B, T_k, "key_padding_mask")[:, None, None, :]
            allowed = kpm if allowed is None else allowed & kpm                   # (B, 1, T_q or 1, T_k)
        p = self.dropout if self.training else 0.0
        if self.impl == "scratch" or need_weights:
            # (9.48) head_i = SelfAttention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V   (9.39), §6.1's function
            heads, weights = attention(Q, K, V, allowed)                          # (B, H, T_q, d_k), (B, H, T_q, T_k)
            if p > 0:
                heads = torch.matmul(self.attn_drop(weights), V)                  # dropout on the weights
            return heads, weights
        if allowed is not None and allowed.dim() == 4 and not bool(allowed.any(-1).all()):
            raise ValueError("a query may attend to no key under this mask; give every query at least one key")
        fast_causal = causal and key_padding_mask is None and T_q == T_k > 1
        # (9.48) the same heads from torch's fused kernel (tested equal); dropout on the weights inside it
        heads = F.scaled_dot_product_attention(Q, K, V, attn_mask=None if fast_causal else allowed,
                                               dropout_p=p, is_causal=fast_causal)   # (B, H, T_q, d_k)
        return heads, None

    # -- step 3: merge the heads ---------------------------------------------------------------------------------
    def merge_heads(self, heads: Tensor) -> Tensor:
        """(9.46) MultiHeadAttn(X) = (head_1 (+) ... (+) head_H) W^O: heads (B, H, T_q, d_k) -> (B, T_q, d_model)."""
        B, _, T_q, _ = heads.shape
        # (9.46) head_1 (+) ... (+) head_H: concatenate the heads along the width
        concat = heads.transpose(1, 2).reshape(B, T_q, self.d_model)    # (B, H, T_q, d_k) -> (B, T_q, d_model)
        # (9.46) MultiHeadAttn(X) = (head_1 (+) ... (+) head_H) W^O
        return self.W_O(concat)                                                   # (B, T_q, d_model)

    def forward(self, x: Tensor, context: Tensor | None = None, key_padding_mask: Tensor | None = None,
                causal: bool = False, need_weights: bool = False, cache: KVCache | None = None,
                use_cache: bool = False) -> AttnOut:
        """x (B, T_q, d_model); context (B, T_k, d_model) for cross-attention; key_padding_mask (B, T_k) bool,
        True = a real key; causal: query i sees keys j <= i (counted after the ``cache``'s T_past keys).
        ``cache``: the KVCache an earlier call returned (self-attention: the new keys and values are appended;
        cross-attention: they are the context's and are reused). -> AttnOut(y, weights, cache)."""
        self._check_input(x, "x")
        if context is not None:
            self._check_input(context, "context")
            if context.shape[0] != x.shape[0]:
                raise ValueError(f"x has batch size {x.shape[0]} but context has {context.shape[0]}")
            if causal:
                raise ValueError("causal=True is for self-attention: a decoder's cross-attention may look at every "
                                 "encoder position")
        Q, kv = self.project(x, context, cache)                                   # (B, H, T_q, d_k), KVCache
        heads, weights = self.attend(Q, kv.K, kv.V, key_padding_mask, causal, need_weights)
        y = self.merge_heads(heads)                                               # (B, T_q, d_model)
        return AttnOut(y, weights if need_weights else None, kv if use_cache else None)

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


class BlockCache(NamedTuple):
    """A block's caches: its self-attention's keys and values of the tokens read so far (they grow by one each
    decoding step) and, in a decoder block, its cross-attention's keys and values of the encoder output (made on the
    first step and reused); None where the block has no such attention."""
    self_attn: KVCache | None
    cross_attn: KVCache | None = None

    def index_select(self, index: Tensor) -> "BlockCache":
        """Rows ``index`` (B',) of both caches."""
        return BlockCache(*(None if kv is None else kv.index_select(index) for kv in self))


class BlockOut(NamedTuple):
    """A block's output ``y`` (B, T, d_model), its self-attention weights (B, H, T, T_k) and cross-attention weights
    (B, H, T, S) when asked, and its ``BlockCache`` when asked."""
    y: Tensor
    self_weights: Tensor | None
    cross_weights: Tensor | None
    cache: BlockCache | None


class TransformerBlock(nn.Module):
    """One transformer block. norm="post" is SLP's (9.40)-(9.41): z = LayerNorm(x + SelfAttn(x)),
    y = LayerNorm(z + FFNN(z)). norm="pre" (Xiong et al. 2020, GPT-2) normalises the input of each sublayer and
    leaves the residual stream untouched: z = x + SelfAttn(LayerNorm(x)), y = z + FFNN(LayerNorm(z)); it trains
    stably at higher learning rates. ``cross_attention=True`` adds the decoder's attention to an encoder's output
    between the two (Vaswani et al. 2017). Dropout (p = ``dropout``) on each sublayer's output, as in torch; on the
    attention weights and inside the feed-forward layer too, unless ``attn_dropout`` / ``ffn_dropout`` say otherwise
    (GPT-2 has none inside the feed-forward layer; on a CPU every dropout mask costs a random draw per element).
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int | None = None, dropout: float = 0.0,
                 norm: str = "post", activation: str = "relu", bias: bool = True, cross_attention: bool = False,
                 eps: float = 1e-5, impl: str = "fused", attn_dropout: float | None = None,
                 ffn_dropout: float | None = None):
        super().__init__()
        _check_choice("norm", norm, _NORMS)
        d_ff = 4 * d_model if d_ff is None else d_ff
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        ffn_dropout = dropout if ffn_dropout is None else ffn_dropout
        self.norm = norm
        self.attn = MultiHeadAttention(d_model, num_heads, attn_dropout, bias, impl)
        self.ln1 = LayerNorm(d_model, eps, impl)
        self.cross_attn = (MultiHeadAttention(d_model, num_heads, attn_dropout, bias, impl) if cross_attention
                           else None)
        self.ln_cross = LayerNorm(d_model, eps, impl) if cross_attention else None
        self.ffn = FeedForward(d_model, d_ff, activation, ffn_dropout, bias)
        self.ln2 = LayerNorm(d_model, eps, impl)
        self.drop1, self.drop_cross, self.drop2 = nn.Dropout(dropout), nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None, causal: bool = False,
                memory: Tensor | None = None, memory_mask: Tensor | None = None, need_weights: bool = False,
                cache: BlockCache | None = None, use_cache: bool = False) -> BlockOut:
        """x (B, T, d_model); key_padding_mask (B, T_k) True = real; memory (B, S, d_model) and memory_mask (B, S)
        for cross-attention; ``cache`` the BlockCache a previous call returned. -> BlockOut."""
        if (memory is None) != (self.cross_attn is None):
            raise ValueError("memory (the encoder output) must be given exactly when the block has cross-attention "
                             f"(this block has{'' if self.cross_attn is not None else ' no'} cross-attention)")
        cache = BlockCache(None, None) if cache is None else cache
        c = None                                                                  # the cross-attention's output
        pre = self.norm == "pre"
        a = self.attn(self.ln1(x) if pre else x, key_padding_mask=key_padding_mask, causal=causal,
                      need_weights=need_weights, cache=cache.self_attn, use_cache=use_cache)
        if pre:
            # pre-norm: z = x + SelfAttn(LayerNorm(x))
            z = x + self.drop1(a.y)
        else:
            # (9.40) z = LayerNorm(x + SelfAttn(x))
            z = self.ln1(x + self.drop1(a.y))
        if self.cross_attn is not None:
            c = self.cross_attn(self.ln_cross(z) if pre else z, memory, memory_mask, need_weights=need_weights,
                                cache=cache.cross_attn, use_cache=use_cache)
            z = z + self.drop_cross(c.y) if pre else self.ln_cross(z + self.drop_cross(c.y))
        if pre:
            # pre-norm: y = z + FFNN(LayerNorm(z))
            y = z + self.drop2(self.ffn(self.ln2(z)))
        else:
            # (9.41) y = LayerNorm(z + FFNN(z))
            y = self.ln2(z + self.drop2(self.ffn(z)))
        return BlockOut(y, a.weights, None if c is None else c.weights,
                        BlockCache(a.cache, None if c is None else c.cache) if use_cache else None)

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
