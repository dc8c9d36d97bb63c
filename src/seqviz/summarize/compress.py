"""Supervised extractive compression (Filippova & Altun 2013): keep or drop each word of the article's lead.

Labels come for free from the pairs: a lead word is *kept* when it occurs in the headline (compared as ROUGE's
tokens, lowercased alphanumerics). A model scores every lead word; the headline is the ``k`` best distinct words in
article order. Two scorers, the same labels:

- :class:`WordFeatures` + :class:`KeepDropRegression`: a logistic regression on ten hand-made features (position,
  capitals, frequency, idf, the word's headline rate in training, ...): trains in a second;
- :class:`KeepDropHead`: SLP §9.9.1's recipe, a pretrained LM with a token-classification head (one logit per
  word, read at the word's last piece), fine-tuned on the labels.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqviz.metrics import rouge_tokenize

__all__ = ["LEAD_WORDS", "lead_words", "keep_drop_labels", "select_words", "name_word", "token_prior", "WordFeatures",
           "KeepDropRegression", "KeepDropHead", "train_keep_drop_head", "head_scores"]

#: words of the lead that a selector reads (BBC: 58 % of headline words occur in the first 60 words of the body)
LEAD_WORDS = 60


def lead_words(article: str, n_words: int = LEAD_WORDS) -> list[str]:
    """The article's first ``n_words`` words, the units a selector keeps or drops: the copy models' word tokens
    (``words.word_tokens``, "BA's" and "pre-tax" whole) that hold a letter or digit, in the article's spelling."""
    from seqviz.summarize.words import word_tokens

    if isinstance(n_words, bool) or not isinstance(n_words, int) or n_words < 1:
        raise ValueError(f"n_words must be a positive int, got {n_words!r}")
    return [w for w in word_tokens(article, lower=False) if any(ch.isalnum() for ch in w)][:n_words]


def keep_drop_labels(article: str, headline: str, n_words: int = LEAD_WORDS) -> tuple[list[str], list[int]]:
    """(lead words, labels): 1 = keep, where one of the word's ROUGE tokens is a headline token; 0 = drop.

    >>> keep_drop_labels("British Airways has blamed high fuel prices.", "High fuel prices hit BA's profits")
    (['British', 'Airways', 'has', 'blamed', 'high', 'fuel', 'prices'], [0, 0, 0, 0, 1, 1, 1])
    """
    if not isinstance(headline, str) or not rouge_tokenize(headline):
        raise ValueError(f"the headline has no word to compare with: {headline!r}")
    words = lead_words(article, n_words)
    if not words:
        raise ValueError("the article is empty: there is no lead word to label")
    head = set(rouge_tokenize(headline))
    return words, [int(any(t in head for t in rouge_tokenize(w))) for w in words]


def select_words(words: Sequence[str], scores: Sequence[float], k: int) -> str:
    """The ``k`` highest-scoring words, one per distinct ROUGE form (no "profits" twice), back in article order."""
    if len(words) != len(scores):
        raise ValueError(f"one score per word: {len(words)} words, {len(scores)} scores")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int (words to keep), got {k!r}")
    seen, keep = set(), []
    for i in np.argsort(-np.asarray(scores, dtype=float), kind="stable"):
        form = " ".join(rouge_tokenize(words[i]))
        if not form or form in seen:
            continue
        seen.add(form)
        keep.append(int(i))
        if len(keep) == k:
            break
    return " ".join(words[i] for i in sorted(keep))


#: capitalised words that are not names (a sentence's first word, pronouns, titles): never a headline's subject
FUNCTION_WORDS = frozenset("a an the in on at of to for by with from as and but or if when after before while this "
                           "that these those there it its he she his her they their we our you i mr mrs ms dr "
                           "however according".split())


def name_word(words: Sequence[str], scores: Sequence[float]) -> str | None:
    """The selector's likeliest *name* among the lead ``words`` (article spelling): the highest-scoring word that
    starts with a capital and is not a function word ("The", "He", "Mr"), or None when the lead holds none. A
    headline usually names its subject, and a capital is the cheapest sign of one.

    >>> name_word(["The", "Telegraph", "is", "axing", "jobs"], [0.2, 0.4, 0.01, 0.6, 0.5])
    'Telegraph'
    """
    if len(words) != len(scores):
        raise ValueError(f"one score per word: {len(words)} words, {len(scores)} scores")
    names = [(float(p), -i) for i, (w, p) in enumerate(zip(words, scores))
             if w[:1].isupper() and w.lower() not in FUNCTION_WORDS]
    return words[-max(names)[1]] if names else None


def token_prior(article: str, word_scores: Sequence[float], max_tokens: int, floor: float = 1e-3) -> list[float]:
    """The prior of bottom-up copy attention over the copy model's tokens of the article (its first ``max_tokens``
    ``words.word_tokens``): each of the first len(word_scores) lead words (:func:`lead_words`) gets its score, every
    other token (punctuation, words past the lead) ``floor``."""
    from seqviz.summarize.words import word_tokens

    out, k = [], 0
    for w in word_tokens(article, lower=False)[:max_tokens]:
        if any(ch.isalnum() for ch in w) and k < len(word_scores):
            out.append(float(word_scores[k]))
            k += 1
        else:
            out.append(floor)
    return out


class WordFeatures:
    """Ten features of each lead word, learned from the training pairs only:

    0 position / n_words, 1 log(1 + position), 2 starts with a capital, 3 a capital but not the first word,
    4 among the 100 most frequent body words, 5 log(1 + count in the whole body), 6 idf over training bodies,
    7 in the first sentence (for a word of one ROUGE token; "BA's" gets 0: chosen on validation, ROUGE-L 27.2 vs 26.5
    with every word compared at k = 5), 8 starts with a digit, 9 the logit of the word's headline rate: how often it was kept
    when it stood in a training lead (smoothed towards the overall rate; an article's own pair is left out when
    its features are computed for training).
    """

    NAMES = ("position", "log position", "capital", "capital, not first", "stopword", "log count in body", "idf",
             "in first sentence", "number", "headline rate (logit)")

    def __init__(self, train_articles, n_words: int = LEAD_WORDS):
        arts = list(train_articles)
        if not arts:
            raise ValueError("WordFeatures needs training articles")
        self.n_words = n_words
        self.n_docs = len(arts)
        self.df = Counter(w for a in arts for w in set(rouge_tokenize(a.body)))
        freq = Counter(w for a in arts for w in rouge_tokenize(a.body))
        self.stop = {w for w, _ in freq.most_common(100)}
        self.in_lead, self.in_head = Counter(), Counter()
        for a in arts:
            head = set(rouge_tokenize(a.headline))
            for f in set(self._forms(a.body)):
                self.in_lead[f] += 1
                self.in_head[f] += f in head
        self.base = sum(self.in_head.values()) / max(sum(self.in_lead.values()), 1)

    def _forms(self, body: str) -> list[str]:
        """The ROUGE tokens of the body's first ``n_words`` white-space words: the units the headline rate counts."""
        return rouge_tokenize(" ".join(body.split()[:self.n_words]))

    def __call__(self, article: str, headline: str | None = None) -> tuple[list[str], np.ndarray]:
        """(words, X (n, 10)); with the article's own ``headline`` (training), its pair is left out of feature 9."""
        from seqviz.summarize.baselines import split_sentences

        words = lead_words(article, self.n_words)
        body = Counter(rouge_tokenize(article))
        sents = split_sentences(article)
        first = set(rouge_tokenize(sents[0])) if sents else set()
        own_lead = set(self._forms(article)) if headline is not None else set()
        own_head = set(rouge_tokenize(headline)) if headline is not None else set()
        X = np.zeros((len(words), len(self.NAMES)))
        for i, w in enumerate(words):
            toks = rouge_tokenize(w)
            form = " ".join(toks)
            kept, seen = self.in_head[form], self.in_lead[form]
            if form in own_lead:                                                 # leave this article's pair out
                seen, kept = seen - 1, kept - (form in own_head)
            rate = (kept + 2 * self.base) / (seen + 2)
            cap = w[:1].isupper()
            X[i] = [i / self.n_words, math.log1p(i), cap, cap and i > 0,
                    form in self.stop, math.log1p(sum(body[t] for t in toks)),
                    math.log((self.n_docs + 1) / (self.df.get(form, 0) + 1)), form in first,
                    w[:1].isdigit(), math.log(rate / (1 - rate))]
        return words, X


class KeepDropRegression:
    """Logistic regression p(keep | x) = sigmoid(w^T x + b) on standardised :class:`WordFeatures`, fitted by L-BFGS
    on the training leads' labels."""

    def __init__(self, features: WordFeatures, l2: float = 1e-4):
        self.features, self.l2 = features, l2
        self.w = self.b = self.mu = self.sd = None

    def fit(self, train_articles) -> "KeepDropRegression":
        Xs, ys = [], []
        for a in train_articles:
            words, X = self.features(a.body, a.headline)
            ys.append(keep_drop_labels(a.body, a.headline, self.features.n_words)[1][:len(words)])
            Xs.append(X)
        X, y = np.concatenate(Xs), np.concatenate(ys).astype(np.float32)
        self.mu, self.sd = X.mean(0), X.std(0) + 1e-9
        Xt = torch.tensor((X - self.mu) / self.sd, dtype=torch.float32)           # (N, 10)
        yt = torch.tensor(y)
        w = torch.zeros(X.shape[1], requires_grad=True)
        b = torch.zeros(1, requires_grad=True)
        opt = torch.optim.LBFGS([w, b], max_iter=200)

        def closure():
            opt.zero_grad()
            loss = F.binary_cross_entropy_with_logits(Xt @ w + b, yt) + self.l2 * (w ** 2).sum()
            loss.backward()
            return loss

        opt.step(closure)
        self.w, self.b = w.detach().numpy(), float(b.detach())
        return self

    def scores(self, article: str) -> tuple[list[str], np.ndarray]:
        """(lead words, p(keep) for each)."""
        if self.w is None:
            raise RuntimeError("fit the regression first: KeepDropRegression(features).fit(train_articles)")
        words, X = self.features(article)
        return words, 1 / (1 + np.exp(-(((X - self.mu) / self.sd) @ self.w + self.b)))

    def headline(self, article: str, k: int = 5) -> str:
        return select_words(*self.scores(article), k)


class KeepDropHead(nn.Module):
    """A token-classification head on a pretrained LM (SLP §9.9.1): one logit per lead word, w^T h + b, where h is
    the LM's final state at the word's last piece (a causal LM has read the whole word there).

    ``lm`` is a :class:`~seqviz.transformer.TransformerLM` and ``tok`` the tokenizer it was trained with.
    """

    def __init__(self, lm: nn.Module, tok, d_model: int, n_words: int = LEAD_WORDS):
        super().__init__()
        self.lm, self.tok, self.n_words = lm, tok, n_words
        self.w = nn.Linear(d_model, 1)

    def encode(self, article: str, max_len: int) -> tuple[list[int], list[int], list[str]]:
        """(piece ids of the article's opening as the LM read it in pretraining, for each lead word (:func:`lead_words`)
        the index of the last piece of the white-space word holding it, the lead words that fit in ``max_len``)."""
        from seqviz.summarize.words import word_tokens

        ids, last, words = [], [], []
        for i, w in enumerate(article.split()):
            p = self.tok.encode((" " if i else "") + w)
            if len(ids) + len(p) > max_len or len(words) >= self.n_words:
                break
            ids += p
            for t in word_tokens(w, lower=False):
                if any(ch.isalnum() for ch in t) and len(words) < self.n_words:
                    last.append(len(ids) - 1)
                    words.append(t)
        if not words:
            raise ValueError("the article is empty: there is no lead word to score")
        return ids, last, words

    def forward(self, idx: Tensor, mask: Tensor | None = None) -> Tensor:
        """idx (B, T) -> keep logits (B, T) at every piece (read those at each word's last piece)."""
        h, _, _ = self.lm._run(idx, mask, False, None, 0, False)                  # (B, T, d) the final states
        return self.w(h).squeeze(-1)                                              # (B, T, d) -> (B, T)


def train_keep_drop_head(head: KeepDropHead, articles, steps: int = 300, batch_size: int = 16, lr: float = 1e-3,
                         seed: int = 0) -> list[float]:
    """Fine-tune the head and its LM on the keep/drop labels of ``articles`` (binary cross-entropy at each word's last
    piece), AdamW, ``steps`` batches of ``batch_size`` leads; returns the loss of every step. The LM is changed in
    place: pass a copy to keep the pretrained one."""
    import random

    arts = list(articles)
    if not arts:
        raise ValueError("no articles to train the head on")
    max_len = head.lm.config.max_len
    data = []
    for a in arts:
        ids, last, words = head.encode(a.body, max_len)
        labels = keep_drop_labels(a.body, a.headline, head.n_words)[1][:len(words)]
        data.append((ids, last, labels))
    rng = random.Random(seed)
    opt = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=0.01)
    pad = head.tok.pad_id
    losses, order = [], []
    head.train()
    for _ in range(steps):
        if len(order) < batch_size:
            order += rng.sample(range(len(data)), len(data))
        chunk, order = [data[i] for i in order[:batch_size]], order[batch_size:]
        T = max(len(ids) for ids, _, _ in chunk)
        idx = torch.full((len(chunk), T), pad, dtype=torch.long)                 # (B, T)
        y = torch.full((len(chunk), T), -1.0)                                     # (B, T) -1: not a word's end
        for b, (ids, last, labels) in enumerate(chunk):
            idx[b, :len(ids)] = torch.tensor(ids)
            y[b, last] = torch.tensor(labels, dtype=torch.float32)
        z = head(idx, idx != pad)                                                 # (B, T)
        loss = F.binary_cross_entropy_with_logits(z[y >= 0], y[y >= 0])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    head.eval()
    return losses


@torch.no_grad()
def head_scores(head: KeepDropHead, article: str) -> tuple[list[str], np.ndarray]:
    """(the lead words that fit the LM's context, p(keep) of each) from a trained :class:`KeepDropHead`."""
    from seqviz import evaluating

    ids, last, words = head.encode(article, head.lm.config.max_len)
    with evaluating(head):
        z = head(torch.tensor([ids]))[0]                                          # (T,)
    return words, torch.sigmoid(z[last]).numpy()
