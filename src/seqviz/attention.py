"""Chapter 5: attention. Score functions, soft lookup, encoder-decoder with attention, and self-attention
(SLP 3rd ed. draft, ch. 9, (9.30)-(9.39)).

Shapes, batch first: B batch, T_q query positions, T_k key positions, d_k key/query width, d_v value width.
"""
from __future__ import annotations

import numpy as np

__all__ = ["causal_mask"]


def causal_mask(tq: int, tk: int | None = None) -> np.ndarray:
    """(T_q, T_k) bool, True where query i may attend to key j (j <= i): the decoder's mask, SLP Fig. 9.17.

    Before the softmax the masked scores (the upper triangle) are set to -inf, so (9.31) sums over j <= i only.
    """
    tk = tq if tk is None else tk
    for name, n in (("tq", tq), ("tk", tk)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"{name} must be a positive int (a number of positions), got {n!r}")
    return np.tril(np.ones((int(tq), int(tk)), dtype=bool))
