"""The fast model's estimators over the count tables of :mod:`seqviz.ngram.tables`: MLE, add-k, backoff, Kneser-Ney.

Fitting fills each order's ``a`` (G,) and ``gamma`` (C,); :func:`probs` reads them for Q queries at once. The same
equations as :class:`~seqviz.ngram.scratch.ScratchKN` writes with dictionaries, numbered (1.x) as in this book's
chapter 1. Shapes: G m-grams of one order, C its contexts, Q queries.
"""
from __future__ import annotations

import numpy as np

from seqviz.ngram.scratch import _modified_discounts
from seqviz.ngram.tables import Order

__all__ = ["fit_kn", "fit_backoff", "probs"]


def fit_kn(orders: list[Order], suffixes: list, discounts: np.ndarray | None) -> np.ndarray:
    """Interpolated Kneser-Ney. For order m: (1.6) P_m(w|h) = max(c'(h w) - D(c'), 0) / sum_v c'(h v)
    + gamma(h) P_{m-1}(w|h'), (1.8) gamma(h) = (D1 N1(h.) + D2 N2(h.) + D3+ N3+(h.)) / sum_v c'(h v);
    c' is the raw count at the top order and (1.7) the continuation count N1+(. h w) below it (how many distinct
    words precede h w; with n-1 <s> of padding every lower-order n-gram has a left neighbour, as in NLTK).
    Below the unigrams lies the uniform distribution 1/V, so every word keeps some probability.
    ``discounts`` (n, 3) or None (estimated by (1.9)); returns the discounts used, (n, 3)."""
    n = len(orders)
    used = np.zeros((n, 3))
    for m in range(n, 0, -1):
        o = orders[m - 1]
        if m == n:
            cp = o.count
        else:
            hi = orders[m]
            # (1.7) c'(h w) = N1+(. h w): each distinct (m+1)-gram adds 1 to its last m tokens
            cp = np.bincount(suffixes[m][hi.count > 0], minlength=len(o.keys))
        D = discounts[m - 1] if discounts is not None else _modified_discounts(cp)
        used[m - 1] = D
        d_of = np.concatenate([[0.0], D])[np.minimum(cp, 3)]           # (G,) D(c'): 0, D1, D2, D3+
        denom = np.bincount(o.ctx, weights=cp, minlength=len(o.total))  # (C,)
        freed = np.bincount(o.ctx, weights=np.where(cp > 0, d_of, 0.0), minlength=len(o.total))
        safe = np.where(denom > 0, denom, 1.0)
        # (1.6) the discounted own-order term, and (1.8) the weight left for the lower order
        o.a = np.maximum(cp - d_of, 0.0) / safe[o.ctx]   # (G,)
        o.gamma = freed / safe                            # (C,)
    return used


def fit_backoff(orders: list[Order], suffixes: list, discounts: np.ndarray | None, V_pred: int) -> np.ndarray:
    """(1.5) Backoff with absolute discounting: P_m(w|h) = (C(h w) - D) / C(h) if C(h w) > 0, else
    alpha(h) P_{m-1}(w|h'), alpha(h) = (D N1+(h.) / C(h)) / (1 - sum_{w: C(h w) > 0} P_{m-1}(w|h')).
    D per order defaults to Ney's n1 / (n1 + 2 n2). A context followed by every one of the ``V_pred`` predictable
    words keeps its MLE. ``discounts`` (n,) or None; returns the discounts used, (n,)."""
    n = len(orders)
    used = np.zeros(n)
    for m in range(1, n + 1):
        o = orders[m - 1]
        seen = o.count > 0
        if discounts is not None:
            D = discounts[m - 1]
        else:
            n1, n2 = np.count_nonzero(o.count == 1), np.count_nonzero(o.count == 2)
            D = min(n1 / (n1 + 2 * n2), 0.95) if n1 and n2 else 0.75
        used[m - 1] = D
        n_seen = np.bincount(o.ctx[seen], minlength=len(o.total))                  # N1+(h .)
        d_ctx = np.where(n_seen >= V_pred, 0.0, D)                                   # (C,)
        safe = np.where(o.total > 0, o.total, 1.0)
        o.a = np.where(seen, (o.count - d_ctx[o.ctx]) / safe[o.ctx], 0.0)            # (G,) P for seen n-grams
        lower = (orders[m - 2].a[suffixes[m - 1]] if m > 1
                 else np.full(len(o.keys), 1.0 / V_pred))                            # P_{m-1}(w|h') if seen
        covered = np.bincount(o.ctx[seen], weights=lower[seen], minlength=len(o.total))
        freed = d_ctx * n_seen / safe
        room = 1.0 - covered
        o.gamma = np.where((freed > 0) & (room > 1e-12), freed / np.where(room > 1e-12, room, 1.0), 0.0)
    return used


def probs(orders: list[Order], ctx: list[np.ndarray], gram: list[np.ndarray], smoothing: str, k: float,
          V_pred: int) -> np.ndarray:
    """P(w | h) for Q queries, given per order m the context id ctx[m-1] (Q,) and n-gram id gram[m-1] (Q,) (-1 =
    unseen); ``k`` is add-k's pseudo-count, ``V_pred`` the number of predictable tokens. Returns (Q,)."""
    top = orders[-1]
    if smoothing in ("mle", "addk"):
        c, g = ctx[-1], gram[-1]
        num = np.where(g >= 0, top.count[np.maximum(g, 0)], 0).astype(float)
        den = np.where(c >= 0, top.total[np.maximum(c, 0)], 0.0)
        if smoothing == "addk":
            # (1.4) add-k: (C(h w) + k) / (C(h) + k V)
            return (num + k) / (den + k * V_pred)
        # (1.2) MLE: C(h w) / C(h); 0/0 (unseen context) is NaN
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    p = np.full(len(gram[0]), 1.0 / V_pred)  # order 0: uniform over the predictable vocabulary
    for o, c, g in zip(orders, ctx, gram):
        has_ctx = (c >= 0) & (o.total[np.maximum(c, 0)] > 0)
        a = np.where(g >= 0, o.a[np.maximum(g, 0)], 0.0)
        w = o.gamma[np.maximum(c, 0)]
        if smoothing == "kn":  # (1.6) interpolate with the lower order
            p = np.where(has_ctx, a + w * p, p)
        else:                  # (1.5) back off only for unseen n-grams (a > 0 exactly for seen ones)
            p = np.where(has_ctx, np.where(a > 0, a, w * p), p)
    return p
