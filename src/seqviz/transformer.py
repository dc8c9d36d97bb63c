"""Chapter 6: the transformer, block by block (SLP 3rd ed. draft, ch. 9, (9.40)-(9.48)).

Positions: the sinusoidal encoding of Vaswani et al. (2017), the reference the PositionalMatrix widget's JS is
tested against.

Shapes, batch first: B batch, T time, d_model model width, H heads, V vocabulary.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["sinusoidal_encoding"]


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
