"""Chapter 8's "build it" checks: SLP §9.9's δ training sequence (Fig. 9.24) and the pointer-generator's mixture
over the extended vocabulary (See et al. 2017), each compared with the package's own code on random inputs of
several shapes (``seqviz.summarize.build_example``, ``seqviz.summarize.pointer.copy_distribution``)."""
from __future__ import annotations

import random
from typing import Callable

import torch

from seqviz._checks import IGNORE_INDEX
from seqviz.exercises._base import as_tensor, call, check, close, differs, verdict

__all__ = ["check_delta_sequence", "check_copy_distribution"]


# ----------------------------------------------------------------------------------------------------------------
# Build it: the δ training sequence of SLP §9.9, x_1..x_m δ y_1..y_n </s>, the loss on the summary only
# ----------------------------------------------------------------------------------------------------------------
def _delta_reference(article: list[int], summary: list[int], delim_id: int, eos_id: int) -> tuple[list, list]:
    """The package's example for the pair, nothing cut: (input, targets)."""
    from seqviz.summarize import build_example

    m, n = len(article), len(summary)
    ex = build_example(article, summary, delim_id, eos_id, max_len=m + n + 1, loss_on="summary", max_summary=n)
    return list(ex.x), list(ex.y)


def _as_ids(v, what: str):
    """A list of ints from a list, tuple, array or tensor of ints; or None and why not."""
    if isinstance(v, torch.Tensor):
        v = v.tolist()
    elif hasattr(v, "tolist"):
        v = v.tolist()
    if not isinstance(v, (list, tuple)) or not all(isinstance(i, int) and not isinstance(i, bool) for i in v):
        return None, f"{what} should be a list of token ids (ints), got {v!r:.80}"
    return list(v), None


def _delta_mistake(x: list, y: list, article: list, summary: list, delim: int, eos: int) -> str:
    """What is wrong with (x, y) for one pair: the usual mistakes first, then where it differs."""
    m, n = len(article), len(summary)
    s = article + [delim] + summary + [eos]
    want_x, want_y = s[:-1], [IGNORE_INDEX] * m + s[m + 1:]
    if delim not in x:
        return ("δ is missing: the sequence is x_1..x_m δ y_1..y_n </s>, with delim_id between the article and the "
                "summary, so the model knows where the article ends")
    k = next((i for i, t in enumerate(y) if t != IGNORE_INDEX), len(y))           # the first scored position
    if len(x) == len(y) and k < len(y) and y[k:] == x[k:]:
        return ("the targets are not shifted: y[i] is the token *after* x[i] (y = s[1:]), so the target at δ's "
                "position is y_1, not δ")
    if eos not in x + y:
        return ("</s> is missing: the last target is eos_id (after y_n), so the model learns where a summary stops")
    if x == s:
        return ("the input holds </s> too: the LM reads s[:-1] and predicts s[1:] (nothing is predicted after "
                "</s>), so x = x_1..x_m δ y_1..y_n")
    if len(x) != len(y):
        return (f"the input has {len(x)} tokens and the targets {len(y)}: y is x shifted by one, y[i] = s[i + 1], "
                f"one target per input position")
    if x != want_x:
        i = next(i for i, (a, b) in enumerate(zip(x, want_x)) if a != b) if len(x) == len(want_x) else None
        where = f" (first difference at position {i})" if i is not None else ""
        return f"the input should be x_1..x_m δ y_1..y_n, the sequence without its last token{where}"
    if y == s[1:]:
        return ("the loss is on the article too: the targets at the article's positions (before δ) must be "
                "IGNORE_INDEX; only y_1..y_n </s> are scored, since the article is given, not predicted")
    if IGNORE_INDEX not in y:
        return "no target is IGNORE_INDEX: the article's targets must not be scored (loss on the summary only)"
    if k != m and y[k:] == s[k + 1:]:
        return (f"the loss mask is off by one: the first scored target is y_1, predicted at δ's position "
                f"(index m = {m} of x, 0-based); yours starts at index {k}")
    i = next(i for i, (a, b) in enumerate(zip(y, want_y)) if a != b)
    return f"the target at position {i} is {y[i]}, the package's is {want_y[i]} (IGNORE_INDEX = {IGNORE_INDEX})"


@check
def check_delta_sequence(fn: Callable) -> bool:
    """Check ``fn(article, summary, delim_id, eos_id) -> (x, y)``: SLP §9.9's training example for one pair, the
    sequence s = x_1..x_m δ y_1..y_n </s> as a language model's input x = s[:-1] and next-token targets y = s[1:],
    with IGNORE_INDEX (-100) at the article's positions (the loss on the summary only: y_1..y_n </s> are scored).
    ``article`` and ``summary`` are lists of token ids. Compared with ``seqviz.summarize.build_example`` for five
    pairs of different lengths."""
    rng = random.Random(8)
    delim, eos = 3, 2
    cases = [([rng.randrange(5, 60) for _ in range(m)], [rng.randrange(5, 60) for _ in range(n)])
             for m, n in ((6, 3), (2, 1), (12, 5), (4, 7), (1, 2))]
    for article, summary in cases:
        got, err = call(fn, list(article), list(summary), delim, eos)
        if err:
            return verdict(False, err)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return verdict(False, f"return the pair (x, y), the input and the targets; got {got!r:.80}")
        x, err = _as_ids(got[0], "x (the input)")
        if err:
            return verdict(False, err)
        y, err = _as_ids(got[1], "y (the targets)")
        if err:
            return verdict(False, err)
        if (x, y) != _delta_reference(article, summary, delim, eos):
            return verdict(False, _delta_mistake(x, y, article, summary, delim, eos)
                           + f" [article of {len(article)}, summary of {len(summary)} tokens]")
    return verdict(True, "the δ sequences equal build_example's for 5 pairs")


# ----------------------------------------------------------------------------------------------------------------
# Build it: the pointer-generator's mixture over the extended vocabulary
# ----------------------------------------------------------------------------------------------------------------
def _copy_reference(case, swap: bool = False) -> torch.Tensor:
    """p (B, T, V + n_ext) as the package's copy_distribution computes it (``swap``: with p_gen and 1 - p_gen
    swapped, the usual mistake)."""
    from seqviz.summarize.pointer import CopyOut, copy_distribution

    p_vocab, a, p_gen = case["p_vocab"], case["a"], case["p_gen"]
    B, T, _ = p_vocab.shape
    out = CopyOut(a, torch.zeros(B, T, 1, dtype=a.dtype), 1 - p_gen if swap else p_gen)
    return copy_distribution(p_vocab.log(), out, case["src_ext"], case["n_ext"])        # softmax(log p) = p


def _copy_cases() -> list[dict]:
    """Random p_vocab, a, p_gen and articles with repeated words and article-only words (ids >= V)."""
    g = torch.Generator().manual_seed(8)
    cases = []
    for B, T, V, S, n_ext in ((2, 3, 7, 6, 2), (1, 1, 5, 4, 1), (3, 4, 11, 9, 3), (2, 2, 6, 8, 2)):
        p_vocab = torch.softmax(2 * torch.randn(B, T, V, generator=g, dtype=torch.float64), -1)
        a = torch.softmax(2 * torch.randn(B, T, S, generator=g, dtype=torch.float64), -1)
        p_gen = torch.rand(B, T, generator=g, dtype=torch.float64) * 0.8 + 0.1
        src = torch.randint(0, V + n_ext, (B, S), generator=g)
        for b in range(B):                                  # every row: a repeated word and an article-only word
            src[b, 0] = src[b, S - 1]
            src[b, 1] = V + b % n_ext
        cases.append({"p_vocab": p_vocab, "a": a, "p_gen": p_gen, "src_ext": src, "n_ext": n_ext,
                      "name": f"B={B}, T={T}, V={V}, S={S}, n_ext={n_ext}"})
    return cases


def _copy_mistake(got: torch.Tensor, case) -> str:
    """The usual mistake that explains ``got`` for one case, else where it differs."""
    p_vocab, src, n_ext = case["p_vocab"], case["src_ext"], case["n_ext"]
    B, T, V = p_vocab.shape
    want = _copy_reference(case)
    if close(got, _copy_reference(case, swap=True)):
        return ("p_gen and 1 - p_gen are swapped: p_gen weighs the vocabulary distribution (generate), 1 - p_gen "
                "the copy attention (copy)")
    if close(got[..., :V], want[..., :V]) and close(got[..., V:], torch.zeros_like(want[..., V:])):
        return ("the extended ids are dropped: an article-only word (extended id V + k) gets its copy weight "
                "(1 - p_gen) a_t[j] at column V + k, or a name the vocabulary lacks can never be written")
    counts = torch.zeros(B, V + n_ext, dtype=torch.long)
    counts.scatter_add_(1, src, torch.ones_like(src))
    once = (counts <= 1)[:, None, :].expand(B, T, V + n_ext)                      # ids that occur at most once
    if close(got[once], want[once]) and bool((counts > 1).any()):
        return ("the attention is not summed over repeated words: a word at several article positions gets the "
                "sum of their weights, Σ_{j: x_j = w} a_t[j] (scatter_add_ or index_add_, not scatter_ or "
                "indexing, which keep one position's weight)")
    sums = got.sum(-1)
    if not close(sums, torch.ones_like(want.sum(-1))):
        return (f"p is not a distribution: its rows sum to {float(sums.min()):.3f}..{float(sums.max()):.3f}, not 1; "
                f"weigh P_vocab by p_gen and the copy attention by 1 - p_gen, and add them")
    return differs("p", got, want, "compare your steps with p(w) = p_gen P_vocab(w) + (1 - p_gen) "
                                   "Σ_{j: x_j = w} a_t[j]")


@check
def check_copy_distribution(fn: Callable) -> bool:
    """Check ``fn(p_vocab, a, p_gen, src_ext, n_ext) -> p``: the pointer-generator's next-word distribution over the
    extended vocabulary, p(w) = p_gen P_vocab(w) + (1 - p_gen) Σ_{j: x_j = w} a_t[j].

    p_vocab (B, T, V) the vocabulary distribution at each summary step, a (B, T, S) the copy attention over the
    article's S positions, p_gen (B, T), src_ext (B, S) each article position's extended id (V + k for the article's
    k-th word outside the vocabulary), n_ext the number of extended ids; p (B, T, V + n_ext). Compared with
    ``seqviz.summarize.pointer.copy_distribution`` for four shapes whose articles repeat a word and hold words
    outside the vocabulary."""
    cases = _copy_cases()
    for case in cases:
        got, err = call(fn, case["p_vocab"].clone(), case["a"].clone(), case["p_gen"].clone(), case["src_ext"].clone(),
                        case["n_ext"])
        if err:
            return verdict(False, err)
        got, err = as_tensor(got, "p")
        if err:
            return verdict(False, err)
        got = got.detach()                                  # judged at the precision it was computed in
        B, T, V = case["p_vocab"].shape
        n_ext = case["n_ext"]
        if tuple(got.shape) == (B, T, V):
            return verdict(False, f"p has shape {(B, T, V)}: the extended ids are dropped; p covers the extended "
                                  f"vocabulary, (B, T, V + n_ext), so an article-only word can be written "
                                  f"[{case['name']}]")
        if tuple(got.shape) != (B, T, V + n_ext):
            return verdict(False, f"p has shape {tuple(got.shape)}, expected (B, T, V + n_ext) = "
                                  f"{(B, T, V + n_ext)} [{case['name']}]")
        want = _copy_reference(case)
        if not close(got, want):
            return verdict(False, _copy_mistake(got, case) + f" [{case['name']}]")
    return verdict(True, "copy_distribution equals the package's for 4 shapes")
