"""How chapter 8 scores a headline generator: ROUGE against the references, the diagnostics that ROUGE hides
(sameness, words the article never said), and a paired bootstrap of a ROUGE-L gap (Koehn 2004's resampling, on
per-article ROUGE-L F, the statistic the chapter compares). No diagnostic counts ``<unk>``: the chapter's decoders
never write it (``write_headline`` and ``summarize`` bar every special but ``</s>``)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from seqviz.metrics import rouge, rouge_corpus, rouge_tokenize

__all__ = ["headline_diagnostics", "rouge_l_per_article", "rouge_bootstrap", "score_headlines"]


def headline_diagnostics(articles, headlines: Sequence[str]) -> dict:
    """``distinct``: different headlines; ``novel_word_share``: share of headline words (ROUGE tokens) absent from
    their article; ``heads_with_novel``: share of headlines with such a word; ``mean_words``: mean headline length in
    ROUGE tokens."""
    if len(articles) != len(headlines) or not headlines:
        raise ValueError(f"one headline per article (and at least one): {len(articles)} vs {len(headlines)}")
    novel = total = with_novel = 0
    for a, h in zip(articles, headlines):
        body = set(rouge_tokenize(a.body))
        words = rouge_tokenize(h)
        n = sum(w not in body for w in words)
        novel, total, with_novel = novel + n, total + len(words), with_novel + (n > 0)
    return {"distinct": len(set(headlines)), "novel_word_share": novel / max(total, 1),
            "heads_with_novel": with_novel / len(headlines), "mean_words": total / len(headlines)}


def rouge_l_per_article(references: Sequence[str], headlines: Sequence[str]) -> np.ndarray:
    """ROUGE-L F x 100 of each headline against its reference (their mean is ``rouge_corpus``'s rougeL)."""
    if len(references) != len(headlines):
        raise ValueError(f"one reference per headline: {len(references)} vs {len(headlines)}")
    return np.array([100 * rouge(r, h)["rougeL"].fmeasure for r, h in zip(references, headlines)])


def rouge_bootstrap(headlines_a: Sequence[str], headlines_b: Sequence[str], references: Sequence[str],
                    n: int = 1000, seed: int = 0) -> dict:
    """Paired bootstrap of mean ROUGE-L(A) - mean ROUGE-L(B): ``n`` resamples of the articles with replacement (the
    same for both systems). Returns {"delta", "ci95": (2.5th, 97.5th percentile), "p_value": share of resamples
    with delta <= 0, "n"}."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int (resamples), got {n!r}")
    if not (len(headlines_a) == len(headlines_b) == len(references)) or not references:
        raise ValueError(f"the two systems' headlines and the references must be equally long and non-empty: "
                         f"{len(headlines_a)}, {len(headlines_b)}, {len(references)}")
    d = rouge_l_per_article(references, headlines_a) - rouge_l_per_article(references, headlines_b)   # (N,)
    rng = np.random.default_rng(seed)
    N = len(d)
    deltas = np.array([d[rng.integers(0, N, N)].mean() for _ in range(n)])
    lo, hi = np.percentile(deltas, [2.5, 97.5])
    return {"delta": float(d.mean()), "ci95": (float(lo), float(hi)), "p_value": float(np.mean(deltas <= 0)),
            "n": int(n)}


def score_headlines(articles, headlines: Sequence[str]) -> dict:
    """ROUGE-1/2/L F x 100 against the articles' headlines, with :func:`headline_diagnostics`."""
    return {**rouge_corpus([a.headline for a in articles], list(headlines)),
            **headline_diagnostics(articles, headlines)}
