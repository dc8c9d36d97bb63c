"""``NGramLM``: the fast n-gram model of chapter 1, a thin facade over the count tables and the estimators.

It scores a whole corpus at once: :mod:`seqviz.ngram.tables` gives every m-gram of the training stream an integer id,
:mod:`seqviz.ngram.estimators` turns the counts into probabilities (MLE, add-k, backoff, Kneser-Ney), and the queries
of one context come from :class:`~seqviz.ngram.base._NGramBase`, shared with :class:`~seqviz.ngram.scratch.ScratchKN`.
Equation numbers: (9.1) perplexity, (9.2) the same with the chain rule expanded and (9.10) the chain rule are SLP 3rd
ed. draft ch. 9; (1.x) number the n-gram formulas in this book's chapter 1. Logs are natural logs. Shapes: V is the
vocabulary size, L positions of the padded stream, N predictions, Q queries.
"""
from __future__ import annotations

import copy
import warnings
from typing import Sequence

import numpy as np

from seqviz.data import Vocab
from seqviz.ngram import estimators, tables
from seqviz.ngram.base import NGramConfig, _check_sentences, _NGramBase, _tokens

__all__ = ["NGramLM"]


class NGramLM(_NGramBase):
    """An n-gram language model over a :class:`seqviz.data.Vocab`.

    >>> lm = NGramLM(n=3, smoothing="kn").fit(sentences)      # or NGramLM(NGramConfig.full())
    >>> lm.prob("cat", ["the"]); lm.perplexity(test_sentences); lm.generate(["the"], temperature=0.8, seed=0)

    Contexts are token lists, most recent last; fewer than n-1 tokens means the sentence began there (the model pads
    with ``<s>``). ``next_token_logits(context_ids)`` is the package's LM interface: it returns log-probabilities
    (V,) (``-inf`` for ``<s>`` and ``<pad>``), so :mod:`seqviz.decode` can sample from it.
    """

    def __init__(self, config: NGramConfig | None = None, **overrides):
        super().__init__(config, **overrides)
        self._orders: list[tables.Order] = []

    # ---------------------------------------------------------------------------------------------- fitting
    def fit(self, sentences: Sequence[Sequence[str]], vocab: Vocab | None = None) -> "NGramLM":
        """Count every m-gram (m = 1..n) of the padded training sentences and build the estimator.

        ``sentences``: token lists without boundary markers (e.g. ``corpus.sentences("train")``). ``vocab``: a
        closed vocabulary; without one it is built from the training text, always with ``<unk>``: by default
        (``min_freq=None``) every type if the text already has ``<unk>`` (PTB), else the words seen at least twice,
        so that training singletons become ``<unk>`` and the model learns to predict unknown words.
        """
        sentences = self._fit_vocab(sentences, vocab)
        tok, pos, pred = self._stream(sentences)
        self.n_sentences, self.n_predictions = len(sentences), int(pred.sum())
        self._orders, self._suffixes = tables.count_orders(tok, pos, pred, self.n, self.V)
        self._fit_estimator()
        return self

    def _fit_estimator(self):
        """Fill the tables' ``a`` and ``gamma`` for the configured smoothing (MLE and add-k read the counts alone)."""
        if self.config.smoothing == "kn":
            self.discounts_used = estimators.fit_kn(self._orders, self._suffixes, self.discounts)
        elif self.config.smoothing == "backoff":
            self.discounts_used = estimators.fit_backoff(self._orders, self._suffixes, self.discounts, self.V_pred)

    def with_smoothing(self, smoothing: str, **settings) -> "NGramLM":
        """The same counts under another estimator, without counting again: ``mle.with_smoothing("kn")``."""
        self._check_fitted()
        if "n" in settings or "min_freq" in settings:
            raise ValueError("with_smoothing keeps the counts, so n and min_freq cannot change: fit a new model")
        other = NGramLM(self.config, smoothing=smoothing, **{"discount": None, **settings})
        for name in ("vocab", "V", "predictable", "V_pred", "n_sentences", "n_predictions", "_suffixes"):
            setattr(other, name, getattr(self, name))
        other._orders = [copy.copy(o) for o in self._orders]  # shared count arrays, fresh estimator slots
        for o in other._orders:
            o.a = o.gamma = None
        other._fit_estimator()
        return other

    def _stream(self, sentences):
        """Encode and pad: tok (L,) ids, pos (L,) index inside the padded sentence, pred (L,) True = predicted."""
        ids = self._encode_text([t for s in sentences for t in s])  # (W,)
        lens = np.fromiter((len(s) for s in sentences), np.int64, len(sentences))  # (S,)
        return tables.padded_stream(ids, lens, self.n, self.vocab.bos_id, self.vocab.eos_id)

    # ---------------------------------------------------------------------------------------------- scoring
    def _probs(self, ctx: list[np.ndarray], gram: list[np.ndarray]) -> np.ndarray:
        """P(w | h) for Q queries, given per order m the context id ctx[m-1] and n-gram id gram[m-1] (-1 = unseen)."""
        return estimators.probs(self._orders, ctx, gram, self.config.smoothing, self.config.k, self.V_pred)

    def logprobs(self, sentences: Sequence[Sequence[str]]) -> np.ndarray:
        """log P(w_i | w_{i-n+1:i-1}) for every prediction: each word, then one </s> per sentence; (N,)."""
        self._check_fitted()
        sentences = _check_sentences(sentences, "evaluation text")
        tok, pos, pred = self._stream(sentences)
        ids = tables.ids_of_stream(self._orders, tok, pos, self.V)
        at = np.flatnonzero(pred)
        self._warn_untrained_unk(tok[at])
        ctx = [np.zeros(len(at), np.int64)] + [ids[m - 1][at - 1] for m in range(1, self.n)]
        gram = [ids[m][at] for m in range(self.n)]
        with np.errstate(divide="ignore"):
            return np.log(self._probs(ctx, gram))

    def _warn_untrained_unk(self, predicted: np.ndarray, limit: float = 0.01) -> None:
        """Warn when over ``limit`` of the predicted tokens (Q,) are <unk> but training never saw <unk>."""
        unk = self.vocab.unk_id
        if unk is None or self._orders[0].count[unk] > 0 or not len(predicted):
            return
        rate = float(np.mean(predicted == unk))
        if rate > limit:
            warnings.warn(f"{rate:.1%} of the evaluated tokens are unknown words (<unk>) but <unk> never occurs in "
                          "training, so each gets only the uniform floor 1/V and they dominate the perplexity; "
                          "fit with the default min_freq=None (training singletons become <unk>) or min_freq=2, or "
                          "a vocabulary whose rare training words are <unk>", stacklevel=3)

    def perplexity(self, sentences: Sequence[Sequence[str]]) -> float:
        """Perplexity (9.1) PP(W) = P(w_1..w_N)^(-1/N); with the chain rule expanded (9.2) and in logs,
        PP(W) = exp(-(1/N) sum_i log P(w_i | w_{i-n+1:i-1})), the exponential of the cross-entropy per prediction.

        N counts every word plus one </s> per sentence; the <s> padding is context only, never predicted.
        MLE gives inf when a test n-gram was never seen and NaN when a test context was never seen.
        """
        lp = self.logprobs(sentences)
        # (9.2) in logs: perplexity = exp of the mean negative log-probability per prediction
        return float(np.exp(-lp.mean()))

    def _log_distribution(self, h: np.ndarray) -> np.ndarray:
        """log P(w | h) for every w in the vocabulary, (V,); h is a padded history of n-1 ids."""
        words = np.arange(self.V, dtype=np.int64)
        ctx, gram = [], []
        for m, o in enumerate(self._orders, start=1):
            c = 0
            for j, t in enumerate(h[len(h) - (m - 1):] if m > 1 else []):  # id of the last m-1 tokens
                c = t if j == 0 else tables.find(self._orders[j].keys, np.array([c * self.V + t]))[0]
                if c < 0:
                    break
            ctx.append(np.full(self.V, c, np.int64))
            gram.append(words if m == 1 else tables.find(o.keys, np.where(c >= 0, c * self.V + words, -1)))
        p = self._probs(ctx, gram)
        if np.isnan(p).any():
            raise ValueError(f"the context {self.vocab.decode(h)} never occurs in training, so its MLE "
                             "distribution is 0/0 (undefined); use add-k, backoff or Kneser-Ney smoothing")
        p[~self.predictable] = 0.0
        with np.errstate(divide="ignore"):
            return np.log(p)

    def sentence_logprob(self, sentence: Sequence[str]) -> float:
        """The chain rule (9.10) under (1.1): log P(w_1..w_L </s>) = sum_i log P(w_i | w_{i-n+1:i-1})."""
        return float(self.logprobs([sentence]).sum())

    # ---------------------------------------------------------------------------------------------- counts
    def _gram_id(self, ids: Sequence[int]) -> int:
        return tables.gram_id(self._orders, ids, self.V)

    def count(self, ngram: Sequence[str]) -> int:
        """C(w_1..w_m) for m <= n: how often the m-gram ended at a predicted position in training."""
        ids = self._encode(_tokens(ngram, "n-gram"))
        if not 1 <= len(ids) <= self.n:
            raise ValueError(f"this model counts 1- to {self.n}-grams, got {len(ids)} tokens")
        g = self._gram_id(ids)
        return int(self._orders[len(ids) - 1].count[g]) if g >= 0 else 0

    def context_count(self, context: Sequence[str]) -> int:
        """C(h) = sum_w C(h w): how often the context h (m-1 < n tokens) preceded a prediction."""
        ids = self._encode(_tokens(context, "context"))
        if len(ids) >= self.n:
            raise ValueError(f"contexts of this model have at most {self.n - 1} tokens, got {len(ids)}")
        g = self._gram_id(ids) if ids else 0
        return int(self._orders[len(ids)].total[g]) if g >= 0 else 0

    def continuation_count(self, word: str) -> int:
        """(1.7) N1+(. w): how many distinct tokens (``<s>`` included) precede ``word`` in training; needs n >= 2."""
        self._check_fitted()
        if self.n < 2:
            raise ValueError("continuation counts need bigrams: fit a model with n >= 2")
        w = self._word(word)
        o = self._orders[1]
        return int(np.count_nonzero((o.word == w) & (o.count > 0)))

    def num_ngrams(self, m: int | None = None) -> int:
        """Distinct m-grams stored (seen ending at a predicted position); m defaults to n."""
        self._check_fitted()
        m = self.n if m is None else m
        if not 1 <= m <= self.n:
            raise ValueError(f"m must be in 1..{self.n}, got {m}")
        return int(np.count_nonzero(self._orders[m - 1].count))

    def unseen_rates(self, sentences: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
        """Sparsity, for m = 1..n: fraction of the text's m-grams never seen in training, and fraction whose
        (m-1)-token context was never seen (where MLE divides by zero). Both (n,), same predictions as logprobs."""
        self._check_fitted()
        tok, pos, pred = self._stream(_check_sentences(sentences, "evaluation text"))
        ids = tables.ids_of_stream(self._orders, tok, pos, self.V)
        at = np.flatnonzero(pred)
        gram_unseen, ctx_unseen = np.zeros(self.n), np.zeros(self.n)
        for m, o in enumerate(self._orders, start=1):
            g = ids[m - 1][at]
            gram_unseen[m - 1] = np.mean((g < 0) | (o.count[np.maximum(g, 0)] == 0))
            if m > 1:
                c = ids[m - 2][at - 1]
                ctx_unseen[m - 1] = np.mean((c < 0) | (o.total[np.maximum(c, 0)] == 0))
        return gram_unseen, ctx_unseen

    @property
    def nbytes(self) -> int:
        """Memory held by the count and probability tables."""
        arrays = [a for o in self._orders for a in (o.keys, o.count, o.ctx, o.word, o.total, o.a, o.gamma)]
        return sum(a.nbytes for a in arrays + self._suffixes if a is not None)

    def __repr__(self) -> str:
        c = self.config
        what = {"addk": f"add-{c.k:g}", "kn": "interpolated Kneser-Ney", "backoff": "backoff", "mle": "MLE"}
        if self.vocab is None:
            return f"NGramLM(n={c.n}, {what[c.smoothing]}, not fitted)"
        return (f"NGramLM(n={c.n}, {what[c.smoothing]}, V={self.V_pred:,} predictable tokens, "
                f"{self.n_sentences:,} sentences / {self.n_predictions:,} predictions, "
                f"{self.num_ngrams():,} distinct {c.n}-grams)")
