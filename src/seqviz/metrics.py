"""Evaluation in one place: exact match, BLEU (with a paired bootstrap), ROUGE.

BLEU is sacrebleu's (Papineni et al. 2002; Post 2018); ROUGE-1/2/L is Lin (2004) as Google's ``rouge-score``
computes it with its defaults (tested equal); the paired bootstrap is Koehn (2004).
"""
from __future__ import annotations

import re
from collections import Counter
from typing import NamedTuple, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from seqviz.data.batches import pad_batch

__all__ = ["exact_match", "bleu", "paired_bootstrap", "Score", "rouge_tokenize", "rouge", "rouge_corpus"]


# ----------------------------------------------------------------------------------------------------------------
# Exact match (chapter 5's dates)
# ----------------------------------------------------------------------------------------------------------------
def exact_match(model, src: list[list[int]], tgt: list[list[int]], pad_id: int, *,
                batch_size: int = 500, max_new_tokens: int | None = None) -> Tensor:
    """Greedy-decode every source with ``model.greedy(x, mask, max_new_tokens=...)`` (either encoder-decoder:
    ``seqviz.seq2seq.Seq2Seq`` or ``seqviz.transformer``'s) and compare with its target: bool (N,), True where the
    output is exactly right. ``max_new_tokens`` defaults to the longest target plus 5."""
    if len(src) != len(tgt) or not src:
        raise ValueError(f"need as many targets as sources (and at least one): {len(src)} vs {len(tgt)}")
    max_new_tokens = max_new_tokens or max(len(t) for t in tgt) + 5
    device = next(model.parameters()).device if isinstance(model, nn.Module) else torch.device("cpu")
    ok = []
    for i in range(0, len(src), batch_size):
        x, mask = pad_batch(src[i:i + batch_size], pad_id)                        # (B, S) x2
        out = model.greedy(x.to(device), mask.to(device), max_new_tokens=max_new_tokens)
        ok.extend(list(o) == list(g) for o, g in zip(out, tgt[i:i + batch_size]))
    return torch.tensor(ok, dtype=torch.bool)


# ----------------------------------------------------------------------------------------------------------------
# BLEU and the paired bootstrap
# ----------------------------------------------------------------------------------------------------------------
def _sacrebleu():
    """The sacrebleu module, or an ImportError that says how to install it."""
    try:
        import sacrebleu
    except ImportError:
        raise ImportError("BLEU needs sacrebleu: pip install -c requirements/constraints.txt sacrebleu "
                          "(it is in the dev extra)") from None
    return sacrebleu


def bleu(hypotheses: list[str], references: list[str]) -> float:
    """Corpus BLEU (sacrebleu, its default 13a tokenisation) of detokenised hypotheses against one reference each."""
    sacrebleu = _sacrebleu()
    if len(hypotheses) != len(references) or not hypotheses:
        raise ValueError(f"need one reference per hypothesis (and at least one): {len(hypotheses)} vs "
                         f"{len(references)}")
    return float(sacrebleu.corpus_bleu(hypotheses, [references]).score)


# sacrebleu has no public per-sentence statistics, so the bootstrap uses two private methods of its BLEU metric:
# ``BLEU._extract_corpus_statistics`` and ``BLEU._compute_score_from_stats``, as in sacrebleu 2.6.0 (pinned in
# requirements/constraints.txt). sacrebleu's own paired bootstrap (``sacrebleu.significance``) calls the same two, and
# tests/test_metrics.py checks ``paired_bootstrap`` against it, so an upgrade that changes them fails there first.
def _bleu_segment_stats(hypotheses: list[str], references: list[str]):
    """Per-sentence BLEU sufficient statistics, shape (N, 2 + 2 * 4): hypothesis length, reference length, matched
    n-grams for n = 1..4, hypothesis n-grams for n = 1..4 (sacrebleu's own, with ``bleu``'s settings), and the
    metric object that turns summed statistics into corpus BLEU."""
    metric = _sacrebleu().BLEU()                                # corpus_bleu's defaults: 13a, exp smoothing
    return np.asarray(metric._extract_corpus_statistics(hypotheses, [references]), dtype=np.int64), metric  # private


def _bleu_from_stats(metric, summed: np.ndarray) -> float:
    return float(metric._compute_score_from_stats([int(s) for s in summed]).score)                         # private


def paired_bootstrap(hyps_a: list[str], hyps_b: list[str], references: list[str], n: int = 1000,
                     seed: int = 0) -> dict:
    """Paired bootstrap resampling of corpus BLEU (Koehn, 2004): is system A better than system B on this test set?

    Draws ``n`` test sets of the same size from the sentences, with replacement (the same indices for both systems:
    paired), and scores A and B on each with corpus BLEU (``bleu``'s sacrebleu settings). Each sentence's n-gram
    counts are extracted once and summed per resample, so 1000 resamples of 600 sentences take well under a second.

    Returns ``{"delta": BLEU(A) - BLEU(B) on the full set, "ci95": (2.5th, 97.5th percentile of the resampled
    deltas), "p_value": share of resamples in which A does not beat B (delta <= 0), "n": n, "deltas": the n
    resampled deltas (array)}``. For the same seed the resamples are sacrebleu's (``sacrebleu.significance``,
    ``SACREBLEU_SEED=seed``); sacrebleu reports no interval for the difference and tests another statistic: its p is
    two-sided, the share of resamples whose |delta|, centred on its mean, exceeds the full set's |delta| (the two
    agree where the resampled deltas are symmetric about the full set's).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n is the number of bootstrap resamples, a positive int (1000 is usual), got {n!r}")
    if not (len(hyps_a) == len(hyps_b) == len(references)):
        raise ValueError(f"paired bootstrap needs the two systems' outputs for the same sentences, one reference "
                         f"each: got {len(hyps_a)} hypotheses of A, {len(hyps_b)} of B and {len(references)} "
                         f"references; pass lists of equal length, in the same sentence order")
    if not references:
        raise ValueError("paired bootstrap needs at least one sentence: got empty lists of hypotheses and references")
    stats_a, metric = _bleu_segment_stats(list(hyps_a), list(references))    # (N, 10)
    stats_b, _ = _bleu_segment_stats(list(hyps_b), list(references))         # (N, 10)
    N = len(references)
    rng = np.random.default_rng(seed)
    deltas = np.empty(n)
    for r in range(n):
        counts = np.bincount(rng.integers(0, N, size=N), minlength=N)          # (N,) how often each sentence is drawn
        deltas[r] = _bleu_from_stats(metric, counts @ stats_a) - _bleu_from_stats(metric, counts @ stats_b)
    delta = _bleu_from_stats(metric, stats_a.sum(0)) - _bleu_from_stats(metric, stats_b.sum(0))
    lo, hi = np.percentile(deltas, [2.5, 97.5])
    return {"delta": delta, "ci95": (float(lo), float(hi)), "p_value": float(np.mean(deltas <= 0)), "n": int(n),
            "deltas": deltas}


# ----------------------------------------------------------------------------------------------------------------
# ROUGE (Lin 2004), as Google's rouge-score computes it with its defaults (no stemmer)
# ----------------------------------------------------------------------------------------------------------------
class Score(NamedTuple):
    precision: float
    recall: float
    fmeasure: float


_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def rouge_tokenize(text: str) -> list[str]:
    """rouge-score's default tokens: lowercase, every run of characters other than a-z 0-9 becomes a space."""
    if not isinstance(text, str):
        raise TypeError(f"ROUGE compares strings, got {type(text).__name__}")
    return _NON_ALNUM.sub(" ", text.lower()).split()      # what is left between the spaces is all a-z 0-9


def _f(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def _rouge_n(ref: list[str], hyp: list[str], n: int) -> Score:
    r = Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
    h = Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
    overlap = sum(min(c, h[g]) for g, c in r.items())                             # clipped n-gram matches
    p, rc = overlap / max(sum(h.values()), 1), overlap / max(sum(r.values()), 1)
    return Score(p, rc, _f(p, rc))


def _lcs(a: list[str], b: list[str]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def rouge(reference: str, prediction: str) -> dict[str, Score]:
    """ROUGE-1, ROUGE-2 (clipped n-gram overlap) and ROUGE-L (longest common subsequence) of ``prediction``
    against ``reference``: {"rouge1", "rouge2", "rougeL"} -> Score(precision, recall, fmeasure)."""
    ref, hyp = rouge_tokenize(reference), rouge_tokenize(prediction)
    out = {"rouge1": _rouge_n(ref, hyp, 1), "rouge2": _rouge_n(ref, hyp, 2)}
    if ref and hyp:
        lcs = _lcs(ref, hyp)
        p, r = lcs / len(hyp), lcs / len(ref)
        out["rougeL"] = Score(p, r, _f(p, r))
    else:
        out["rougeL"] = Score(0.0, 0.0, 0.0)
    return out


def rouge_corpus(references: Sequence[str], predictions: Sequence[str]) -> dict[str, float]:
    """Mean F-measure (x 100) of each ROUGE type over pairs: {"rouge1", "rouge2", "rougeL"}."""
    if len(references) != len(predictions):
        raise ValueError(f"{len(references)} references but {len(predictions)} predictions: give one each")
    if not references:
        raise ValueError("no summaries to score")
    scores = [rouge(r, p) for r, p in zip(references, predictions)]
    return {k: 100 * float(np.mean([s[k].fmeasure for s in scores])) for k in ("rouge1", "rouge2", "rougeL")}
