"""Chapter 1's exercise check: Kneser-Ney's continuation probability, the lowest order of (1.6)-(1.7)."""
from __future__ import annotations

import numbers
import random
from collections.abc import Mapping
from typing import Callable

import numpy as np
import torch

from seqviz.exercises._base import call, check, close, verdict

__all__ = ["check_continuation_prob", "continuation_prob"]


def continuation_prob(bigram_counts: Mapping[tuple[str, str], int]) -> dict[str, float]:
    """P_cont(w) = N1+(• w) / N1+(• •): the number of distinct words seen before w, over the number of distinct
    bigram types (a bigram counts when C(v w) > 0). The reference the check compares with."""
    before: dict[str, int] = {}
    types = 0
    for (v, w), c in bigram_counts.items():
        if c > 0:
            before[w] = before.get(w, 0) + 1
            types += 1
    return {w: n / types for w, n in before.items()}


def _examples() -> list[dict[tuple[str, str], int]]:
    """The chapter's example in miniature (*kong* is frequent but follows one word only), with a zero count that
    must not count, and three seeded random tables of counts."""
    kong = {("hong", "kong"): 30, ("in", "hong"): 12, ("in", "the"): 9, ("of", "the"): 14, ("said", "the"): 3,
            ("the", "company"): 8, ("a", "company"): 2, ("its", "company"): 1, ("especially", "the"): 1,
            ("the", "kong"): 0, ("of", "especially"): 1, ("said", "especially"): 2}
    out = [kong]
    rng = random.Random(0)
    words = [f"w{i}" for i in range(9)]
    for _ in range(3):
        out.append({(rng.choice(words), rng.choice(words)): rng.choice([0, 1, 1, 2, 3, 7, 20]) for _ in range(30)})
    return out


def _frequency(counts):                              # the usual mistake: how often w occurs, the MLE unigram
    total = sum(counts.values())
    freq: dict[str, float] = {}
    for (_, w), c in counts.items():
        freq[w] = freq.get(w, 0) + c / total
    return freq


def _following(counts):                              # distinct words *after* w instead of before it
    after: dict[str, int] = {}
    types = sum(1 for c in counts.values() if c > 0)
    for (v, _), c in counts.items():
        if c > 0:
            after[v] = after.get(v, 0) + 1
    return {v: n / types for v, n in after.items()}


def _with_zeros(counts):                             # bigrams with count 0 counted as seen
    before: dict[str, int] = {}
    for (_, w) in counts:
        before[w] = before.get(w, 0) + 1
    return {w: n / len(counts) for w, n in before.items()}


def _number(p) -> bool:
    """A real number: a Python or NumPy int/float, or a 0-d tensor (not a bool)."""
    if isinstance(p, bool) or isinstance(p, np.bool_):
        return False
    if isinstance(p, torch.Tensor):
        return p.ndim == 0 and (p.is_floating_point() or not p.dtype == torch.bool)
    return isinstance(p, numbers.Real)


def _same(got: Mapping[str, object], want: Mapping[str, float]) -> bool:
    """Whether two {word: probability} tables agree, by the book's one rule on precision (``_base.close``) at the
    precision of the reader's values (float32 values are judged as float32)."""
    keys = sorted(set(got) | set(want))
    g = torch.tensor([float(got.get(k, 0.0)) for k in keys], dtype=_dtype(got))
    return close(g, torch.tensor([want.get(k, 0.0) for k in keys], dtype=torch.float64))


def _dtype(got: Mapping[str, object]) -> torch.dtype:
    """float32 when any of the reader's values is a float32 (or coarser) scalar, else float64 (Python floats)."""
    low = any(isinstance(p, (np.float32, np.float16)) or (isinstance(p, torch.Tensor) and p.dtype in
              (torch.float32, torch.float16, torch.bfloat16)) for p in got.values())
    return torch.float32 if low else torch.float64


@check
def check_continuation_prob(fn: Callable) -> bool:
    """Check ``fn(bigram_counts) -> {word: P_cont(word)}`` against P_cont(w) = N1+(• w) / N1+(• •), with
    ``bigram_counts`` a dict {(previous word, word): count} (some counts may be 0). Words never seen after any word
    may be left out or given 0."""
    for k, counts in enumerate(_examples()):
        got, err = call(fn, dict(counts))
        if err:
            return verdict(False, err)
        if not isinstance(got, Mapping):
            return verdict(False, f"the result should be a dict {{word: probability}}, got {type(got).__name__}")
        bad = [w for w, p in got.items() if not _number(p)]
        if bad:
            return verdict(False, f"P_cont({bad[0]!r}) is {got[bad[0]]!r}; every value should be a number (a float, "
                                  f"a NumPy scalar or a 0-d tensor)")
        want = continuation_prob(counts)
        if _same(got, want):
            continue
        example = "the kong example" if k == 0 else f"random table {k}"
        if _same(got, _frequency(counts)):
            return verdict(False, f"on {example} your P_cont is each word's frequency C(w) / N, the MLE unigram: "
                                  f"Kneser-Ney counts how many *different* words w follows, N1+(• w), not how often "
                                  f"it occurs (kong is frequent but only ever follows hong)")
        if _same(got, _following(counts)):
            return verdict(False, f"on {example} you counted the distinct words that *follow* w, N1+(w •); the "
                                  f"continuation count is the number of distinct words *before* w, N1+(• w)")
        if _same(got, _with_zeros(counts)):
            return verdict(False, f"on {example} a bigram with count 0 counted as seen: a word v counts as a "
                                  f"context of w only if C(v w) > 0, and the same for the bigram types below")
        total = sum(float(p) for p in got.values())
        if not close(torch.tensor([total], dtype=_dtype(got)), torch.tensor([1.0], dtype=torch.float64)):
            return verdict(False, f"on {example} your probabilities sum to {total:.4g}, not 1: divide N1+(• w) by "
                                  f"N1+(• •), the number of distinct bigram types (not by the number of words)")
        w = max((w for w in set(got) | set(want)), key=lambda w: abs(float(got.get(w, 0.0)) - want.get(w, 0.0)))
        return verdict(False, f"on {example} P_cont({w!r}) is {float(got.get(w, 0.0)):.4g}, expected "
                              f"{want.get(w, 0.0):.4g} = N1+(• {w}) / N1+(• •)")
    return verdict(True, "continuation probability correct: N1+(• w) / N1+(• •) on the kong example and three "
                         "random tables")
