"""Interpolated modified Kneser-Ney written as its equations (1.6)-(1.9): the version chapter 1 reads.

Dictionaries of token tuples, one query at a time; :class:`~seqviz.ngram.lm.NGramLM` is the fast twin that scores a
whole corpus, tested equal to this one to 1e-12. Equation numbers (1.x) are this book's chapter 1
(``notebooks/01_ngrams.ipynb``; SLP ch. 3; Chen & Goodman 1998).
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

from seqviz.data import Vocab
from seqviz.ngram.base import NGramConfig, _check_sentences, _NGramBase

__all__ = ["ScratchKN"]


def _modified_discounts(cp: np.ndarray) -> np.ndarray:
    """(1.9) (D1, D2, D3+) from the count-of-counts n_r of the counts ``cp`` (Chen & Goodman 1998):

    Y = n1 / (n1 + 2 n2); D1 = 1 - 2Y n2/n1; D2 = 2 - 3Y n3/n2; D3+ = 3 - 4Y n4/n3.
    Tiny corpora can leave some n_r at zero; then we fall back to Ney's single D = Y, or to 0.75.
    """
    n1, n2, n3, n4 = (np.count_nonzero(cp == r) for r in (1, 2, 3, 4))
    if n1 and n2 and n3 and n4:
        Y = n1 / (n1 + 2 * n2)
        D = np.array([1 - 2 * Y * n2 / n1, 2 - 3 * Y * n3 / n2, 3 - 4 * Y * n4 / n3])
        if np.all(D > 0) and np.all(D <= [1, 2, 3]):
            return D
    Y = n1 / (n1 + 2 * n2) if n1 and n2 else 0.75
    return np.full(3, Y)


class ScratchKN(_NGramBase):
    """Interpolated modified Kneser-Ney written as its equations (1.6)-(1.9): dictionaries of counts, one query at
    a time (Kneser & Ney 1995; Chen & Goodman 1998).

    The scratch twin of ``NGramLM(smoothing="kn")``, as the RNN has a scratch and a fused path: the same model (same
    config, boundaries, vocabulary and discounts), tested equal to it to 1e-12, with the same ``prob`` /
    ``distribution`` / ``next_token_logits`` / ``generate``. It is a class of its own rather than an ``impl=``
    switch because it shares no tables with the fast model: it counts for itself, in tuples of tokens, where
    ``NGramLM`` ranks n-grams into integer ids to score a whole corpus at once. Use it to read the estimator (and
    check the fast one): a next-word distribution costs V * n dict look-ups, and PTB takes it several times as long
    (``bench/bench_ngram.py``).

    >>> ScratchKN(n=3).fit(sentences).prob("cat", ["the"])   # == NGramLM(n=3).fit(sentences).prob("cat", ["the"])
    """

    def __init__(self, config: NGramConfig | None = None, **overrides):
        super().__init__(config, **overrides)
        if self.config.smoothing != "kn":
            raise ValueError(f"ScratchKN is Kneser-Ney only, got smoothing={self.config.smoothing!r}; "
                             "NGramLM implements every smoothing")

    def fit(self, sentences: Sequence[Sequence[str]], vocab: Vocab | None = None) -> "ScratchKN":
        """Count every m-gram (m = 1..n) of the padded sentences, then the tables (1.7)-(1.9) :meth:`p_kn` reads."""
        sentences = self._fit_vocab(sentences, vocab)
        n, bos, eos = self.n, self.vocab.itos[self.vocab.bos_id], self.vocab.itos[self.vocab.eos_id]
        # C(w_1..w_m), m = 1..n: how often each m-gram ends at a predicted position (n-1 <s> before, one </s> after)
        C = Counter()
        for s in sentences:
            padded = [bos] * (n - 1) + self.vocab.decode(self._encode_text(s)) + [eos]  # unknown words -> <unk>
            for i in range(n - 1, len(padded)):
                for m in range(1, n + 1):
                    C[tuple(padded[i - m + 1:i + 1])] += 1
        # (1.7) Kneser & Ney (1995): c'(h w) = C(h w) at the top order, below it N1+(. h w) = |{v : C(v h w) > 0}|:
        # every distinct (m+1)-gram adds 1 to its last m tokens
        self.cp = Counter({g: k for g, k in C.items() if len(g) == n})
        self.cp.update(g[1:] for g in C if len(g) > 1)
        # (1.9) Chen & Goodman (1998): D_1, D_2, D_3+ of order m from the count-of-counts n_r of its c'
        self.D = {m: self.discounts[m - 1] if self.discounts is not None else  # or the discount of the config
                  _modified_discounts(np.array([k for g, k in self.cp.items() if len(g) == m]))
                  for m in range(1, n + 1)}
        self.total, freed = Counter(), Counter()
        for g, k in self.cp.items():  # the m-gram g = h w: context h = g[:-1], word w = g[-1]
            self.total[g[:-1]] += k                      # sum_v c'(h v)
            freed[g[:-1]] += self.discount(len(g), k)    # D_1 N_1(h .) + D_2 N_2(h .) + D_3+ N_3+(h .)
        # (1.8) Chen & Goodman (1998): gamma(h) = (D_1 N_1(h .) + D_2 N_2(h .) + D_3+ N_3+(h .)) / sum_v c'(h v)
        self.gamma = {h: freed[h] / self.total[h] for h in self.total}
        self.discounts_used = np.array([self.D[m] for m in range(1, n + 1)])  # (n, 3), as NGramLM reports them
        return self

    def discount(self, m: int, k: int) -> float:
        """D(c') of (1.6) at order m for a count c' = k: 0 if the m-gram is unseen, else D_1, D_2 or D_3+ (1.9)."""
        return 0.0 if k == 0 else float(self.D[m][min(k, 3) - 1])

    def p_kn(self, w: str, h: tuple[str, ...]) -> float:
        """(1.6) P_KN(w | h) for one token w after a context h of 0..n-1 tokens, recursively down to 1/V."""
        # the lower order P_KN(w | h'), h' = h without its oldest token; below the unigrams the uniform 1/V
        lower = self.p_kn(w, h[1:]) if h else 1.0 / self.V_pred
        if h not in self.total:  # h never preceded a prediction: nothing was discounted, the lower order answers
            return lower
        k = self.cp[h + (w,)]  # c'(h w), 0 if never seen
        # (1.6) Chen & Goodman (1998): P_KN(w | h) = max(c'(h w) - D(c'), 0) / sum_v c'(h v) + gamma(h) P_KN(w | h')
        return max(k - self.discount(len(h) + 1, k), 0.0) / self.total[h] + self.gamma[h] * lower

    def logprobs(self, sentences: Sequence[Sequence[str]]) -> np.ndarray:
        """log P_KN(w_i | w_{i-n+1:i-1}) for every prediction (each word, then one </s>), as NGramLM.logprobs; (N,)."""
        self._check_fitted()
        n, bos, eos = self.n, self.vocab.itos[self.vocab.bos_id], self.vocab.itos[self.vocab.eos_id]
        p = []
        for s in _check_sentences(sentences, "evaluation text"):
            padded = [bos] * (n - 1) + self.vocab.decode(self._encode_text(s)) + [eos]
            p += [self.p_kn(padded[i], tuple(padded[i - n + 1:i])) for i in range(n - 1, len(padded))]
        with np.errstate(divide="ignore"):
            return np.log(np.array(p))

    def _log_distribution(self, h: np.ndarray) -> np.ndarray:
        """log P_KN(w | h) for every w in the vocabulary, (V,); h is a padded history of n-1 ids."""
        self._check_fitted()
        h = tuple(self.vocab.decode(h))
        p = np.array([self.p_kn(w, h) if ok else 0.0 for w, ok in zip(self.vocab.itos, self.predictable)])  # (V,)
        with np.errstate(divide="ignore"):
            return np.log(p)

    def __repr__(self) -> str:
        fitted = f"V={self.V_pred:,} predictable tokens" if self.vocab is not None else "not fitted"
        return f"ScratchKN(n={self.n}, interpolated Kneser-Ney from dictionaries, {fitted})"
