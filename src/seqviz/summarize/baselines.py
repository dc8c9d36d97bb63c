"""Chapter 8's targets, before any model: baselines a reviewer would ask for and oracles that bound what a method can
reach (the chapter's §8.1). Every function returns one headline (a str) per article body.

- :func:`lead_baseline` (the first k words), :func:`choose_lead_k` (k picked on validation), :func:`first_sentence`,
  :func:`random_sentence_baseline`;
- unsupervised extraction: :func:`centroid_sentence` (the sentence nearest the article's tf-idf centroid, Radev et
  al. 2004) and :func:`textrank_sentence` (PageRank over the sentences' similarity graph, Mihalcea & Tarau 2004);
- oracles, which read the reference: :func:`best_sentence_oracle`, :func:`best_window_oracle` (the best k-word
  window), :func:`compression_oracle` (the best subsequence of the first n words: the ceiling of extractive
  compression) and :func:`copy_only_oracle` (the reference's words that occur in the first n words, in the
  reference's order: the ceiling of a model that can only copy from the context it reads).
"""
from __future__ import annotations

import math
import random
import re
from collections import Counter
from typing import Sequence

import numpy as np

from seqviz.metrics import _f, _lcs, rouge_corpus, rouge_tokenize

__all__ = ["headline_length", "lead_baseline", "choose_lead_k", "split_sentences", "first_sentence",
           "random_sentence_baseline", "IdfTable", "centroid_sentence", "textrank_sentence",
           "best_sentence_oracle", "best_window_oracle", "compression_oracle", "copy_only_oracle"]


def headline_length(articles) -> int:
    """The mean headline length in words over ``articles`` (the training split), rounded: lead-k's default k."""
    n = [len(a.headline.split()) for a in articles]
    if not n:
        raise ValueError("no articles to measure headlines on")
    return max(1, round(float(np.mean(n))))


def _check_k(k, what: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"{what} must be a positive int (words to keep), got {k!r}")
    return int(k)


def lead_baseline(article: str, k: int) -> str:
    """The lead: the article's first ``k`` words (split at white space)."""
    return " ".join(article.split()[:_check_k(k)])


def choose_lead_k(articles, ks: Sequence[int] = range(1, 21)) -> tuple[int, dict[int, float]]:
    """The k of lead-k with the best ROUGE-L on ``articles`` (a validation split, never the test split it is then
    reported on): (best k, {k: ROUGE-L})."""
    refs = [a.headline for a in articles]
    if not refs:
        raise ValueError("no articles to choose k on")
    curve = {int(k): rouge_corpus(refs, [lead_baseline(a.body, k) for a in articles])["rougeL"] for k in ks}
    return max(curve, key=curve.get), curve


_SENT_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’]))\s+|\n+")


def split_sentences(text: str) -> list[str]:
    """Sentences of a body: split after . ! ? (and a closing quote) before white space, and at every line break."""
    return [s.strip() for s in _SENT_END.split(text) if s and s.strip()]


def _sentences(article: str) -> list[str]:
    sents = split_sentences(article)
    if not sents:
        raise ValueError("the article has no sentence: extractive baselines need a non-empty article")
    return sents


def first_sentence(article: str) -> str:
    """The article's first sentence (news is written lead first)."""
    return _sentences(article)[0]


def random_sentence_baseline(articles: Sequence[str], seed: int = 0) -> list[str]:
    """One sentence of each article chosen uniformly at random by a generator seeded with ``seed``."""
    rng = random.Random(seed)
    out = []
    for a in articles:
        sents = _sentences(a)
        out.append(sents[rng.randrange(len(sents))])
    return out


class IdfTable:
    """Inverse document frequencies over a collection (the training bodies): idf(w) = log((N + 1) / (df(w) + 1)) + 1,
    the smoothed form, so a word never seen gets the largest weight and none gets 0."""

    def __init__(self, documents: Sequence[str]):
        docs = list(documents)
        if not docs:
            raise ValueError("IdfTable needs at least one document")
        self.n = len(docs)
        self.df = Counter(w for d in docs for w in set(rouge_tokenize(d)))

    def __call__(self, word: str) -> float:
        return math.log((self.n + 1) / (self.df.get(word, 0) + 1)) + 1

    def vector(self, text: str) -> dict[str, float]:
        """The unit-length tf-idf vector of ``text`` (a dict, words as rouge tokens)."""
        v = {w: c * self(w) for w, c in Counter(rouge_tokenize(text)).items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {w: x / norm for w, x in v.items()}


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    return sum(x * b.get(w, 0.0) for w, x in a.items())


def centroid_sentence(article: str, idf: IdfTable) -> str:
    """The sentence whose tf-idf vector is nearest (cosine) the whole article's: its most central sentence."""
    sents = _sentences(article)
    centre = idf.vector(article)
    return max(sents, key=lambda s: _cosine(idf.vector(s), centre))


def textrank_sentence(article: str, idf: IdfTable, damping: float = 0.85, iterations: int = 50) -> str:
    """TextRank: PageRank p = (1 - d)/n + d W^T p over the sentences, W the row-normalised tf-idf cosine
    similarities (no self loops); the sentence of highest rank."""
    sents = _sentences(article)
    vecs = [idf.vector(s) for s in sents]
    n = len(sents)
    W = np.array([[_cosine(vecs[i], vecs[j]) if i != j else 0.0 for j in range(n)] for i in range(n)])  # (n, n)
    W = W / np.maximum(W.sum(1, keepdims=True), 1e-12)
    p = np.full(n, 1.0 / n)
    for _ in range(iterations):
        p = (1 - damping) / n + damping * W.T @ p
    return sents[int(np.argmax(p))]


# ---------------------------------------------------------------------------------------------------------------
# Oracles: they read the reference, so they bound a family of methods rather than being one
# ---------------------------------------------------------------------------------------------------------------
def _rouge_l_against(reference: str):
    """text -> ROUGE-L F of ``text`` against ``reference`` (= ``rouge(reference, text)["rougeL"].fmeasure``), the
    reference tokenized once; a text sharing no token with it scores 0 without the LCS (the oracles try hundreds)."""
    ref = rouge_tokenize(reference)
    vocab = set(ref)

    def score(text: str) -> float:
        hyp = rouge_tokenize(text)
        if not ref or not hyp or vocab.isdisjoint(hyp):
            return 0.0
        lcs = _lcs(ref, hyp)
        return _f(lcs / len(hyp), lcs / len(ref))
    return score


def best_sentence_oracle(article: str, reference: str) -> str:
    """The article's sentence of highest ROUGE-L against the reference."""
    return max(_sentences(article), key=_rouge_l_against(reference))


def best_window_oracle(article: str, reference: str, k: int = 5) -> str:
    """The best ``k`` consecutive words of the article by ROUGE-L against the reference."""
    w = article.split()
    k = _check_k(k)
    if not w:
        raise ValueError("the article is empty")
    windows = [" ".join(w[i:i + k]) for i in range(max(1, len(w) - k + 1))]
    return max(windows, key=_rouge_l_against(reference))


def compression_oracle(article: str, reference: str, n_words: int = 60) -> str:
    """The longest common subsequence of the reference and the article's first ``n_words`` words (as rouge tokens,
    in article order): the best any keep/drop selector of those words can do under ROUGE-L."""
    art = rouge_tokenize(" ".join(article.split()[:_check_k(n_words, "n_words")]))
    ref = rouge_tokenize(reference)
    n, m = len(art), len(ref)
    D = np.zeros((n + 1, m + 1), dtype=np.int32)                                  # D[i, j] = LCS of art[i:], ref[j:]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            D[i, j] = D[i + 1, j + 1] + 1 if art[i] == ref[j] else max(D[i + 1, j], D[i, j + 1])
    i = j = 0
    out = []
    while i < n and j < m:
        if art[i] == ref[j]:
            out.append(art[i])
            i, j = i + 1, j + 1
        elif D[i + 1, j] >= D[i, j + 1]:
            i += 1
        else:
            j += 1
    return " ".join(out)


def copy_only_oracle(article: str, reference: str, n_words: int | None = 60) -> str:
    """The reference's words that occur in the article's first ``n_words`` words (None: anywhere), in the
    reference's order: what a model that can only copy from the context it reads could write at best."""
    words = article.split()
    ctx = set(rouge_tokenize(" ".join(words if n_words is None else words[:_check_k(n_words, "n_words")])))
    return " ".join(w for w in rouge_tokenize(reference) if w in ctx)
