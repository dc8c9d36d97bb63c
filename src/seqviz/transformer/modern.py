"""The transformer block as today's language models build it, beside SLP's (9.40)-(9.41) in ``layers``.

SmolLM2, Llama and most open models since 2023 keep SLP's block (attention, then a feed-forward layer, each with a
residual connection) and change four parts of it, each a small module here with its equation above the line:

- ``RMSNorm``      normalise by the root mean square only, no mean, no bias (Zhang & Sennrich 2019), instead of
                   LayerNorm (9.42)-(9.45); applied before each sublayer (pre-norm), as chapter 6's ``norm="pre"``;
- ``Rotary``       rotary position embeddings (RoPE, Su et al. 2021): positions enter by rotating each query and key,
                   not by adding P_t to the input (SLP 9.7.3), so q_i . k_j depends on i - j only;
- ``SwiGLU``       the feed-forward layer with a gate (Shazeer 2020): W_down (SiLU(x W_gate) * x W_up);
- ``GroupedQueryAttention`` multi-head attention (9.46)-(9.48) in which H query heads share H_kv < H key/value heads
                   (Ainslie et al. 2023): a smaller key/value cache for the same number of query heads.

``ModernBlock`` puts them together: h = x + GQA(RMSNorm(x)); y = h + SwiGLU(RMSNorm(h)). tests/test_modern.py shows
each module equal to its ``transformers`` counterpart (Llama's) with copied weights.

Shapes, batch first: B batch, T time, d width (d_model), H query heads, H_kv key/value heads, d_k = d / H.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqviz._checks import _IMPLS, _check_choice, _check_positive
from seqviz.attention import attention

from .layers import KVCache

__all__ = ["RMSNorm", "Rotary", "rotate_half", "SwiGLU", "GroupedQueryAttention", "ModernBlock", "ModernBlockOut"]


class RMSNorm(nn.Module):
    """RMSNorm(x) = g * x / sqrt(mean_i x_i^2 + eps), over the last dimension.

    LayerNorm (9.42)-(9.45) subtracts the mean and adds a bias; RMSNorm does neither (Zhang & Sennrich 2019): one
    statistic and one learned gain g (d,), as good in practice and cheaper."""

    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        _check_positive(d=d)
        self.eps = float(eps)
        self.g = nn.Parameter(torch.ones(d))

    def forward(self, x: Tensor) -> Tensor:
        # the statistic in float32 even for half-precision input, as Llama's implementation does
        ms = x.float().pow(2).mean(-1, keepdim=True)                              # (..., 1) mean of squares
        return self.g * (x.float() * torch.rsqrt(ms + self.eps)).to(x.dtype)      # (..., d)


def rotate_half(x: Tensor) -> Tensor:
    """(x_1, x_2) -> (-x_2, x_1) on the two halves of the last dimension: a 90-degree turn of each pair
    (x[j], x[j + d_k/2])."""
    x1, x2 = x.chunk(2, dim=-1)                                                   # 2 x (..., d_k/2)
    return torch.cat([-x2, x1], dim=-1)                                           # (..., d_k)


class Rotary(nn.Module):
    """Rotary position embeddings: RoPE(x, t) = x * cos(t theta) + rotate_half(x) * sin(t theta).

    Pair j of a head's d_k dimensions, (x[j], x[j + d_k/2]), is turned by the angle t * theta_j at position t, with
    theta_j = base^(-2j / d_k): fast turns for the first pairs, slow for the last (the same frequencies as the sines
    and cosines of SLP 9.7.3). Turning q_i by i theta and k_j by j theta leaves q_i . k_j a function of i - j: the
    attention score sees relative position, and nothing is added to the token embedding."""

    def __init__(self, d_k: int, base: float = 10000.0):
        super().__init__()
        _check_positive(d_k=d_k)
        if d_k % 2:
            raise ValueError(f"RoPE turns pairs of dimensions: the head width d_k must be even, got {d_k}")
        self.d_k, self.base = d_k, float(base)
        # theta_j = base^(-2j/d_k), j = 0 .. d_k/2 - 1
        inv_freq = 1.0 / self.base ** (torch.arange(0, d_k, 2, dtype=torch.float32) / d_k)   # (d_k/2,)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def angles(self, T: int, offset: int = 0, device=None) -> tuple[Tensor, Tensor]:
        """cos and sin of t theta for positions offset .. offset + T - 1 -> 2 x (T, d_k)."""
        t = torch.arange(offset, offset + T, dtype=torch.float32, device=device)  # (T,)
        freqs = torch.outer(t, self.inv_freq.to(device))                         # (T, d_k/2) t * theta_j
        emb = torch.cat([freqs, freqs], dim=-1)                                   # (T, d_k) the pair's angle twice
        return emb.cos(), emb.sin()

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x (B, H, T, d_k) at positions offset .. offset + T - 1 -> rotated, the same shape."""
        if x.shape[-1] != self.d_k:
            raise ValueError(f"expected heads of width d_k={self.d_k}, got {x.shape[-1]}")
        cos, sin = self.angles(x.shape[-2], offset, x.device)                     # (T, d_k) each
        return (x * cos.to(x.dtype) + rotate_half(x) * sin.to(x.dtype))          # (B, H, T, d_k)


class SwiGLU(nn.Module):
    """FFN(x) = W_down (SiLU(W_gate x) * W_up x), SiLU(z) = z sigmoid(z).

    Chapter 6's FeedForward is W_2 act(W_1 x + b_1) + b_2; here a second projection W_up is multiplied in,
    element by element, as a learned gate (Shazeer 2020), and there are no biases."""

    def __init__(self, d: int, d_ff: int):
        super().__init__()
        _check_positive(d=d, d_ff=d_ff)
        self.W_gate = nn.Linear(d, d_ff, bias=False)
        self.W_up = nn.Linear(d, d_ff, bias=False)
        self.W_down = nn.Linear(d_ff, d, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.W_down(F.silu(self.W_gate(x)) * self.W_up(x))                 # (B, T, d_ff) -> (B, T, d)


class GroupedQueryAttention(nn.Module):
    """Multi-head attention (9.46)-(9.48) with H query heads and H_kv key/value heads, each shared by H / H_kv
    query heads (Ainslie et al. 2023). H_kv = H is SLP's multi-head attention; the keys and values (and the decoding
    cache) shrink by H / H_kv. Queries and keys are turned by RoPE before the scores; no biases.

    head_i = softmax(RoPE(Q_i) RoPE(K_g(i))^T / sqrt(d_k)) V_g(i), g(i) = floor(i / (H / H_kv));
    GQA(X) = (head_1 (+) ... (+) head_H) W^O.
    ``impl="scratch"`` calls chapter 6's ``attention`` function; ``"fused"`` torch's kernel (tested equal)."""

    def __init__(self, d: int, num_heads: int, num_kv_heads: int, rope_base: float = 10000.0, impl: str = "fused"):
        super().__init__()
        _check_positive(d=d, num_heads=num_heads, num_kv_heads=num_kv_heads)
        if d % num_heads or num_heads % num_kv_heads:
            raise ValueError(f"need d divisible by the query heads and query heads divisible by key/value heads; "
                             f"got d={d}, H={num_heads}, H_kv={num_kv_heads}")
        _check_choice("impl", impl, _IMPLS)
        self.d, self.H, self.H_kv, self.d_k = d, num_heads, num_kv_heads, d // num_heads
        self.impl = impl
        # (9.47) W^Q for the H query heads; W^K, W^V for the H_kv shared heads only
        self.W_Q = nn.Linear(d, self.H * self.d_k, bias=False)
        self.W_K = nn.Linear(d, self.H_kv * self.d_k, bias=False)
        self.W_V = nn.Linear(d, self.H_kv * self.d_k, bias=False)
        self.W_O = nn.Linear(self.H * self.d_k, d, bias=False)                    # (9.46) mixes the heads
        self.rope = Rotary(self.d_k, rope_base)

    def forward(self, x: Tensor, offset: int = 0, cache: KVCache | None = None, need_weights: bool = False,
                use_cache: bool = False) -> tuple[Tensor, Tensor | None, KVCache | None]:
        """x (B, T, d) at positions offset.. (after the ``cache``'s keys) -> (y (B, T, d), weights (B, H, T, T_k)
        or None, the cache of rotated keys and values (B, H_kv, T_k, d_k) when ``use_cache``)."""
        B, T, _ = x.shape
        Q = self.W_Q(x).view(B, T, self.H, self.d_k).transpose(1, 2)              # (B, H, T, d_k)
        K = self.W_K(x).view(B, T, self.H_kv, self.d_k).transpose(1, 2)           # (B, H_kv, T, d_k)
        V = self.W_V(x).view(B, T, self.H_kv, self.d_k).transpose(1, 2)           # (B, H_kv, T, d_k)
        Q, K = self.rope(Q, offset), self.rope(K, offset)                         # positions enter here
        kv = KVCache(K, V) if cache is None else cache.append(K, V)               # (B, H_kv, T_k, d_k)
        group = self.H // self.H_kv
        T_k = kv.K.shape[2]
        weights = None
        if self.impl == "scratch" or need_weights:
            # each key/value head serves `group` query heads: repeat it for them
            K_all = kv.K.repeat_interleave(group, dim=1)                          # (B, H, T_k, d_k)
            V_all = kv.V.repeat_interleave(group, dim=1)                          # (B, H, T_k, d_k)
            allowed = torch.ones(T, T_k, dtype=torch.bool, device=x.device).tril(T_k - T)   # (T, T_k) causal
            heads, weights = attention(Q, K_all, V_all, allowed)                  # (B, H, T, d_k), (B, H, T, T_k)
        else:
            # the fused kernel shares each key/value head among its query heads itself (enable_gqa), no copies
            mask = None if T == 1 else torch.ones(T, T_k, dtype=torch.bool, device=x.device).tril(T_k - T)
            heads = F.scaled_dot_product_attention(Q, kv.K, kv.V, attn_mask=mask, enable_gqa=True)  # (B, H, T, d_k)
        y = self.W_O(heads.transpose(1, 2).reshape(B, T, self.H * self.d_k))      # (B, H, T, d_k) -> (B, T, d)
        return y, weights, kv if use_cache else None


class ModernBlockOut(NamedTuple):
    """What a ``ModernBlock`` gives back: ``y`` (B, T, d); ``weights`` (B, H, T, T_k) when asked; ``cache``."""
    y: Tensor
    weights: Tensor | None
    cache: KVCache | None


class ModernBlock(nn.Module):
    """SLP's block (9.40)-(9.41) as Llama-style models write it: pre-norm with RMSNorm, GQA with RoPE, SwiGLU.

    h = x + GQA(RMSNorm_1(x));  y = h + SwiGLU(RMSNorm_2(h))."""

    def __init__(self, d: int, num_heads: int, num_kv_heads: int, d_ff: int, rope_base: float = 10000.0,
                 eps: float = 1e-5, impl: str = "fused"):
        super().__init__()
        self.norm1 = RMSNorm(d, eps)
        self.attn = GroupedQueryAttention(d, num_heads, num_kv_heads, rope_base, impl)
        self.norm2 = RMSNorm(d, eps)
        self.ffn = SwiGLU(d, d_ff)

    def forward(self, x: Tensor, offset: int = 0, cache: KVCache | None = None, need_weights: bool = False,
                use_cache: bool = False) -> ModernBlockOut:
        a, w, kv = self.attn(self.norm1(x), offset, cache, need_weights, use_cache)
        h = x + a                                                                 # (B, T, d) the residual stream
        y = h + self.ffn(self.norm2(h))                                           # (B, T, d)
        return ModernBlockOut(y, w, kv)
