"""Baselines a headline generator must beat: the article's first words (lead) and a random sentence of it."""
from __future__ import annotations

import random
import re
from typing import Sequence

import numpy as np

__all__ = ["headline_length", "lead_baseline", "split_sentences", "random_sentence_baseline"]


def headline_length(articles) -> int:
    """k for the lead baseline: the mean headline length in words over ``articles`` (the training split), rounded."""
    n = [len(a.headline.split()) for a in articles]
    if not n:
        raise ValueError("no articles to measure headlines on")
    return max(1, round(float(np.mean(n))))


def lead_baseline(article: str, k: int) -> str:
    """The lead: the article's first ``k`` words (split at white space)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int (words to keep), got {k!r}")
    return " ".join(article.split()[:k])


_SENT_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’]))\s+|\n+")


def split_sentences(text: str) -> list[str]:
    """Sentences of a body: split after . ! ? (and a closing quote) before white space, and at every line break."""
    return [s.strip() for s in _SENT_END.split(text) if s and s.strip()]


def random_sentence_baseline(articles: Sequence[str], seed: int = 0) -> list[str]:
    """One sentence of each article chosen uniformly at random by a generator seeded with ``seed``."""
    rng = random.Random(seed)
    out = []
    for a in articles:
        sents = split_sentences(a)
        if not sents:
            raise ValueError("an article has no sentence: the random-sentence baseline needs non-empty articles")
        out.append(sents[rng.randrange(len(sents))])
    return out
