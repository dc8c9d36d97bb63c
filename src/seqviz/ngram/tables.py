"""The fast model's count tables: every m-gram of the training stream as an integer id, looked up by binary search.

The m-gram ending at each position gets an id, built order by order as the rank of the pair (id of its first m-1
tokens, last token) among all pairs (``np.unique``), so lookups are ``np.searchsorted`` over sorted int64 keys and no
Python dict is touched per token. Shapes: L positions of the padded stream, W words, S sentences, G m-grams of one
order, C contexts of that order (the (m-1)-grams), V the vocabulary size.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["Order", "find", "padded_stream", "count_orders", "ids_of_stream", "gram_id"]


def find(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Index of each key in ``sorted_keys``, -1 where absent (negative keys mean 'no such context')."""
    if len(keys) > 4096:  # sorted needles let each binary search start where the last ended: ~4x faster
        order = np.argsort(keys)
        j = np.empty(len(keys), np.int64)
        j[order] = np.searchsorted(sorted_keys, keys[order])
    else:
        j = np.searchsorted(sorted_keys, keys)
    j = np.minimum(j, len(sorted_keys) - 1)
    return np.where((keys >= 0) & (sorted_keys[j] == keys), j, -1)


class Order:
    """Count tables of one order m: every m-gram window seen in training, keyed by (id of its m-1 prefix, word)."""

    def __init__(self, m: int, keys: np.ndarray, count: np.ndarray, n_contexts: int, V: int):
        self.m = m
        self.keys = keys                    # (G,) sorted int64: prefix_id * V + word (m = 1: the word id)
        self.count = count                  # (G,) int64: times the m-gram ended at a predicted position
        self.ctx = keys // V if m > 1 else np.zeros(len(keys), np.int64)   # (G,) id of the context (m-1)-gram
        self.word = keys % V                # (G,)
        # C(h) = sum_w C(h w): how often each context preceded a prediction
        self.total = np.bincount(self.ctx, weights=count, minlength=n_contexts)  # (C,)
        self.a = self.gamma = None          # filled in by the estimator (KN: alpha and gamma; backoff: see there)


def padded_stream(ids: np.ndarray, lens: np.ndarray, n: int, bos_id: int, eos_id: int):
    """The sentences' word ids (W,) of lengths ``lens`` (S,), each padded with n-1 <s> and closed by one </s>:
    tok (L,) ids, pos (L,) index inside the padded sentence, pred (L,) True where a token is predicted."""
    padded = lens + n                            # n-1 <s>, the words, one </s>
    starts = np.concatenate([[0], np.cumsum(padded)[:-1]])   # (S,)
    L = int(padded.sum())
    tok = np.full(L, bos_id, np.int64)          # (L,)
    pos = np.arange(L) - np.repeat(starts, padded)
    word_start = np.repeat(starts + n - 1, lens)  # (W,)
    tok[word_start + (np.arange(len(ids)) - np.repeat(np.cumsum(lens) - lens, lens))] = ids
    tok[starts + n - 1 + lens] = eos_id
    return tok, pos, tok != bos_id


def count_orders(tok: np.ndarray, pos: np.ndarray, pred: np.ndarray, n: int, V: int):
    """Count every m-gram (m = 1..n) ending at a predicted position of the stream: (orders, suffixes), where
    ``suffixes[m - 1]`` (G,) is the id of each m-gram's last m-1 tokens (None for m = 1)."""
    orders: list[Order] = []
    suffixes: list[np.ndarray | None] = [None]
    ids_prev = tok  # id of the 1-gram ending at each position is the token id itself
    for m in range(1, n + 1):
        if m == 1:
            keys, ids = np.arange(V, dtype=np.int64), tok
        else:
            idx = np.flatnonzero(pos >= m - 1)            # positions whose m-token window lies in the sentence
            keys, inv = np.unique(ids_prev[idx - 1] * V + tok[idx], return_inverse=True)
            ids = np.full(len(tok), -1, np.int64)         # (L,)
            ids[idx] = inv
            suffix = np.empty(len(keys), np.int64)        # (G,) id of the m-gram's last m-1 tokens
            suffix[inv] = ids_prev[idx]
            suffixes.append(suffix)
        n_ctx = len(orders[-1].keys) if m > 1 else 1
        count = np.bincount(ids[pred], minlength=len(keys))
        orders.append(Order(m, keys, count, n_ctx, V))
        ids_prev = ids
    return orders, suffixes


def ids_of_stream(orders: list[Order], tok: np.ndarray, pos: np.ndarray, V: int) -> list[np.ndarray]:
    """For each order m, the id of the m-gram ending at every position (L,), -1 if never seen in training."""
    out, ids = [], tok
    for m, o in enumerate(orders, start=1):
        if m > 1:
            nxt = np.full(len(tok), -1, np.int64)
            idx = np.flatnonzero(pos >= m - 1)
            prev = ids[idx - 1]
            nxt[idx] = find(o.keys, np.where(prev >= 0, prev * V + tok[idx], -1))
            ids = nxt
        out.append(ids)
    return out


def gram_id(orders: list[Order], ids: Sequence[int], V: int) -> int:
    """The id of one m-gram of token ids in the order-m table, -1 if it was never seen."""
    c = -1
    for j, t in enumerate(ids):
        c = int(t) if j == 0 else int(find(orders[j].keys, np.array([c * V + int(t)]))[0])
        if c < 0:
            return -1
    return c
