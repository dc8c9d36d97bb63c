"""Chapter 1: n-gram language models — counting, smoothing, perplexity and sampling.

An n-gram model makes the Markov assumption P(w_i | w_<i) ~ P(w_i | w_{i-n+1:i-1}) and estimates that conditional
from counts. Four estimators share one set of count tables:

- ``"mle"``      relative frequency C(h w) / C(h); zero for unseen n-grams, undefined (NaN) for unseen contexts;
- ``"addk"``     add-k smoothing (C(h w) + k) / (C(h) + k V); ``"laplace"`` is k = 1;
- ``"backoff"``  normalised backoff with absolute discounting (Katz-style): seen n-grams keep (C - D) / C(h), the
                 mass freed goes to the next lower order, renormalised over the words the context has not seen.
                 (Stupid backoff, a fixed 0.4 per step, is *not* a distribution, so it is not offered.)
- ``"kn"``       interpolated Kneser-Ney; by default *modified* KN with three discounts per order estimated from
                 count-of-counts (Chen & Goodman 1999), lower orders built from continuation counts.

Sentence boundaries (the book's convention, as in SLP): every sentence is padded on the left with n-1 ``<s>``
(context only: ``<s>`` is never predicted) and closed with one ``</s>`` (predicted). A sentence of L words makes
L + 1 predictions, and perplexity averages over exactly those: N = sum of (L + 1) over sentences.

Two implementations of Kneser-Ney, as the RNN has a scratch and a fused one. ``ScratchKN`` is the estimator written
as its equations (dicts of token tuples, one query at a time) for reading; ``NGramLM`` is the fast one that scores a
whole corpus: the m-gram ending at each position gets an integer id, built order by order as the rank of the pair
(id of its first m-1 tokens, last token) among all pairs (``np.unique``), so lookups are ``np.searchsorted`` over
sorted int64 keys and no Python dict is touched per token. The two are tested equal to 1e-12.
Equation numbers: (9.1) perplexity P(w_1..w_N)^(-1/N), (9.2) the same with the chain rule expanded and (9.10) the
chain rule are SLP 3rd ed. draft ch. 9; (1.x) number the n-gram formulas (SLP ch. 3; Chen & Goodman 1999) in this
book's chapter 1, ``notebooks/01_ngrams.ipynb``.
Logs are natural logs. Shapes: V is the vocabulary size, Q a number of queries.
"""
from __future__ import annotations

import copy
import itertools
import warnings
from collections import Counter
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import torch

from . import decode
from ._checks import _check_positive
from .data import Vocab

__all__ = ["NGramConfig", "NGramLM", "ScratchKN", "SMOOTHINGS"]

SMOOTHINGS = ("mle", "addk", "laplace", "backoff", "kn")


@dataclass
class NGramConfig:
    """How to build an n-gram LM. ``NGramConfig.tiny()`` for CI, ``NGramConfig.full()`` for the PTB result."""
    n: int = 3                      # order: condition on the previous n-1 tokens
    smoothing: str = "kn"           # one of SMOOTHINGS
    k: float = 1.0                  # add-k pseudo-count (addk only); "laplace" forces k = 1
    discount: float | Sequence[float] | None = None  # kn/backoff: None = estimated from count-of-counts;
    #                                 a float = one D for every order; kn also takes one D per order (unigram first)
    min_freq: int | None = None     # when fit() builds the vocabulary: rarer training words become <unk>;
    #                                 None = 1 if the text already has <unk> (a closed vocabulary such as PTB's),
    #                                 else 2: training singletons become <unk>, so <unk> is learned (see _fit_vocab)

    @classmethod
    def tiny(cls) -> "NGramConfig":
        return cls(n=3, smoothing="kn")

    @classmethod
    def full(cls) -> "NGramConfig":
        return cls(n=5, smoothing="kn")


def _find(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Index of each key in ``sorted_keys``, -1 where absent (negative keys mean 'no such context')."""
    if len(keys) > 4096:  # sorted needles let each binary search start where the last ended: ~4x faster
        order = np.argsort(keys)
        j = np.empty(len(keys), np.int64)
        j[order] = np.searchsorted(sorted_keys, keys[order])
    else:
        j = np.searchsorted(sorted_keys, keys)
    j = np.minimum(j, len(sorted_keys) - 1)
    return np.where((keys >= 0) & (sorted_keys[j] == keys), j, -1)


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


def _tokens(tokens, what: str) -> list[str]:
    if isinstance(tokens, str):
        raise TypeError(f"the {what} must be a list of tokens, not a string: e.g. {tokens.split()!r}")
    tokens = list(tokens)
    if not all(isinstance(t, str) for t in tokens):
        raise TypeError(f"the {what} must hold token strings, got {[type(t).__name__ for t in tokens][:5]}")
    return tokens


def _check_sentences(sentences, what: str) -> list[list[str]]:
    if isinstance(sentences, str):
        raise TypeError(f"the {what} must be a list of sentences (token lists), not one string: use "
                        "seqviz.data.sentences(text) or corpus.sentences('train')")
    sentences = list(sentences)
    if not sentences:
        raise ValueError(f"the {what} is empty: give at least one sentence")
    for s in sentences:
        if isinstance(s, str):
            raise TypeError(f"each sentence must be a list of tokens, got the string {s[:40]!r}; tokenize it "
                            "first (seqviz.data.word_tokenize / char_tokenize)")
    sentences = [s if isinstance(s, (list, tuple)) else list(s) for s in sentences]
    if not all(issubclass(t, str) for t in set(map(type, itertools.chain.from_iterable(sentences)))):
        bad = next(t for s in sentences for t in s if not isinstance(t, str))
        raise TypeError(f"sentences must hold token strings, got {type(bad).__name__} {bad!r}")
    return sentences


class _NGramBase:
    """What the fast and the scratch model share: the config checks, the vocabulary, and every query of one context
    (``prob``, ``distribution``, ``next_token_logits``, ``generate``, ...). A subclass fits counts and implements
    ``_log_distribution(h)``: log P(w | h) over the vocabulary, (V,), for a history h of n-1 ids padded with <s>."""

    def __init__(self, config: NGramConfig | None = None, **overrides):
        name = type(self).__name__
        if config is not None and not isinstance(config, NGramConfig):
            raise TypeError(f"the first argument is an NGramConfig, got {config!r}; for the order write "
                            f"{name}(n=...) or {name}(NGramConfig(n=...))")
        cfg = replace(config or NGramConfig(), **overrides)
        _check_positive(n=cfg.n)  # the order: 1 = unigram, 2 = bigram, ...
        if cfg.smoothing not in SMOOTHINGS:
            raise ValueError(f"unknown smoothing {cfg.smoothing!r}; choose one of {SMOOTHINGS}")
        if cfg.smoothing == "laplace":
            cfg = replace(cfg, smoothing="addk", k=1.0)
        if cfg.smoothing == "addk" and not (isinstance(cfg.k, (int, float)) and cfg.k > 0):
            raise ValueError(f"add-k needs k > 0 (k = 0 is plain MLE: use smoothing='mle'), got k={cfg.k!r}")
        if cfg.min_freq is not None and (isinstance(cfg.min_freq, bool) or not isinstance(cfg.min_freq, int)
                                         or cfg.min_freq < 1):
            raise ValueError(f"min_freq must be a positive integer (1 keeps every training word) or None (1 if the "
                             f"text already has <unk>, else 2), got {cfg.min_freq!r}")
        self.discounts = self._check_discount(cfg)  # (n, 3) for kn, (n,) for backoff, or None = estimate at fit
        self.config = cfg
        self.n = cfg.n
        self.vocab: Vocab | None = None

    @staticmethod
    def _check_discount(cfg: NGramConfig):
        d = cfg.discount
        if d is None or cfg.smoothing not in ("kn", "backoff"):
            return None
        if cfg.smoothing == "backoff":
            if not isinstance(d, (int, float)) or not 0 < d < 1:
                raise ValueError(f"backoff takes one discount 0 < D < 1 (or None to estimate it), got {d!r}")
            return np.full(cfg.n, float(d))
        try:
            per_order = np.full(cfg.n, float(d)) if isinstance(d, (int, float)) else np.asarray(d, dtype=float)
        except (TypeError, ValueError):
            per_order = None
        if per_order is None or per_order.shape != (cfg.n,) or np.any(per_order < 0) or np.any(per_order > 1):
            raise ValueError(f"kn discount must be one D in [0, 1] or {cfg.n} of them (unigram first), got {d!r}")
        return np.repeat(per_order[:, None], 3, axis=1)  # the same D for counts 1, 2 and 3+

    def _fit_vocab(self, sentences, vocab: Vocab | None) -> list[list[str]]:
        """Check the training sentences, build or check the vocabulary, mark what can be predicted."""
        sentences = _check_sentences(sentences, "training corpus")
        if not any(sentences):
            raise ValueError("the training corpus has no tokens (every sentence is empty): give it some text")
        if vocab is None:
            vocab = Vocab.build(sentences, min_freq=self.config.min_freq or 1)
            if self.config.min_freq is None and vocab.unk_id is not None and not vocab.counts[vocab.itos[vocab.unk_id]]:
                # Raw text: with every training word in the vocabulary, <unk> would never be seen in training and
                # each unknown test word would get only the uniform floor 1/V, dominating perplexity. So, as for a
                # closed vocabulary (SLP 3.3.1), words seen once become <unk> and the model learns how often, and
                # after which contexts, a word it does not know appears.
                vocab = Vocab.build(sentences, min_freq=2)
        if not isinstance(vocab, Vocab):
            raise TypeError(f"vocab must be a seqviz.data.Vocab, got {type(vocab).__name__}")
        if vocab.bos_id is None or vocab.eos_id is None:
            raise ValueError("the vocabulary needs <s> and </s> (Vocab.build adds them by default)")
        self.vocab = vocab
        self.V = len(vocab)
        self.predictable = np.ones(self.V, bool)  # (V,) words and </s> and <unk>; never <s> or <pad>
        self.predictable[[i for i in (vocab.bos_id, vocab.pad_id) if i is not None]] = False
        self.V_pred = int(self.predictable.sum())
        return sentences

    def _encode_text(self, tokens: list[str]) -> np.ndarray:
        """Ids of training or evaluation tokens, (W,); the boundary markers are the model's to add, not the text's."""
        ids = np.asarray(self._encode(tokens), dtype=np.int64)  # (W,)
        bad = np.isin(ids, [i for i in (self.vocab.bos_id, self.vocab.eos_id, self.vocab.pad_id) if i is not None])
        if bad.any():
            raise ValueError(f"sentences contain the marker {self.vocab.itos[ids[bad][0]]!r}; give plain token lists:"
                             " the model adds n-1 <s> before and one </s> after every sentence itself")
        return ids

    # ---------------------------------------------------------------------------------------------- one context
    def _history(self, context_ids: Sequence[int], strict: bool) -> np.ndarray:
        """The last n-1 ids of a history, padded on the left with <s>; a </s> starts a new sentence."""
        h = np.asarray(context_ids, dtype=np.int64).reshape(-1)  # (len,)
        if h.size and (h.min() < 0 or h.max() >= self.V):
            raise ValueError(f"context ids must lie in 0..{self.V - 1} (the vocabulary), got {h.tolist()[:10]}")
        eos = np.flatnonzero(h == self.vocab.eos_id)
        if eos.size:
            h = h[eos[-1] + 1:]  # after </s> a new sentence begins
        if self.vocab.pad_id is not None and np.any(h == self.vocab.pad_id):
            raise ValueError("<pad> cannot appear in a context")
        is_bos = h == self.vocab.bos_id
        if is_bos.any() and not np.all(is_bos[: np.flatnonzero(is_bos)[-1] + 1]):
            raise ValueError("<s> may only appear at the start of a context (it marks where the sentence began)")
        if strict and len(h) > self.n - 1:
            raise ValueError(f"a {self.n}-gram model conditions on at most {self.n - 1} previous tokens, got a "
                             f"context of {len(h)}; pass the last {self.n - 1} (the Markov assumption)"
                             + (" or an empty context" if self.n == 1 else ""))
        h = h[max(0, len(h) - (self.n - 1)):] if self.n > 1 else h[:0]
        return np.concatenate([np.full(self.n - 1 - len(h), self.vocab.bos_id, np.int64), h])

    def next_token_logits(self, context_ids: Sequence[int]) -> torch.Tensor:
        """log P(w | history) over the vocabulary, (V,) float64; the LM interface used by seqviz.decode.

        ``context_ids`` is the whole history; by the Markov assumption only its last n-1 ids matter.
        """
        self._check_fitted()
        return torch.from_numpy(self._log_distribution(self._history(context_ids, strict=False)))

    def distribution(self, context: Sequence[str] = (), temperature: float = 1.0) -> np.ndarray:
        """P(w | context) over ``self.vocab.itos``, (V,); with temperature T, (1.3): p^(1/T) renormalised."""
        lp = self._log_distribution(self._context(context))
        if temperature == 1.0:
            return np.exp(lp)
        return decode.softmax_with_temperature(lp, temperature).numpy()

    def prob(self, word: str, context: Sequence[str] = ()) -> float:
        """P(word | context), context = up to n-1 previous tokens (fewer: the sentence began there)."""
        return float(self.distribution(context)[self._word(word)])

    def logprob(self, word: str, context: Sequence[str] = ()) -> float:
        """log P(word | context) (natural log); -inf where the model gives zero probability."""
        return float(self._log_distribution(self._context(context))[self._word(word)])

    def top_next(self, context: Sequence[str] = (), k: int = 10, temperature: float = 1.0) -> list[tuple[str, float]]:
        """The k most probable next tokens and their probabilities, best first."""
        _check_positive(k=k)
        p = self.distribution(context, temperature)
        best = np.argsort(-p, kind="stable")[:k]
        return [(self.vocab.itos[i], float(p[i])) for i in best]

    def generate(self, prompt: Sequence[str] = (), max_new_tokens: int = 30, *, temperature: float = 1.0,
                 top_k: int | None = None, greedy: bool = False, stop_at_eos: bool = True,
                 seed: int | None = 0) -> list[str]:
        """Sample a continuation of ``prompt`` with :func:`seqviz.decode.generate` (temperature: p^(1/T)).

        Stops after ``</s>`` (kept) unless ``stop_at_eos=False``, in which case new sentences follow. The default
        ``seed=0`` repeats the same sample; ``seed=None`` draws from PyTorch's global random state.
        """
        self._check_fitted()
        ids = self._encode(_tokens(prompt, "prompt"))
        new = decode.generate(self.next_token_logits, ids, max_new_tokens, temperature=temperature, top_k=top_k,
                              greedy=greedy, stop_id=self.vocab.eos_id if stop_at_eos else None, seed=seed)
        return self.vocab.decode(new)

    # ---------------------------------------------------------------------------------------------- checks
    def _check_fitted(self):
        if self.vocab is None:
            raise ValueError("this model has not been fitted yet: call lm.fit(train_sentences) first")

    def _encode(self, tokens: list[str]) -> list[int]:
        stoi, unk = self.vocab.stoi, self.vocab.unk_id
        if unk is not None:
            return [stoi.get(t, unk) for t in tokens]
        missing = [t for t in tokens if t not in stoi]
        if missing:
            raise ValueError(f"unknown token(s) {missing[:5]} and the vocabulary has no <unk> to map them to; "
                             "build the vocabulary with '<unk>' among its specials or remove those tokens")
        return [stoi[t] for t in tokens]

    def _context(self, context: Sequence[str]) -> np.ndarray:
        self._check_fitted()
        return self._history(self._encode(_tokens(context, "context")), strict=True)

    def _word(self, word: str) -> int:
        if not isinstance(word, str):
            raise TypeError(f"word must be a token string, got {type(word).__name__}")
        i = self._encode([word])[0]
        if not self.predictable[i]:
            raise ValueError(f"{word!r} is never predicted: <s> only pads contexts and <pad> only pads batches")
        return i


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


class _Order:
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
        self._orders: list[_Order] = []

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
        n, V = self.n, self.V
        self.n_sentences, self.n_predictions = len(sentences), int(pred.sum())
        self._orders, suffixes = [], [None]
        ids_prev = tok  # id of the 1-gram ending at each position is the token id itself
        for m in range(1, n + 1):
            if m == 1:
                keys, ids = np.arange(V, dtype=np.int64), tok
            else:
                idx = np.flatnonzero(pos >= m - 1)            # positions whose m-token window lies in the sentence
                keys, inv = np.unique(ids_prev[idx - 1] * V + tok[idx], return_inverse=True)
                ids = np.full(len(tok), -1, np.int64)
                ids[idx] = inv
                suffix = np.empty(len(keys), np.int64)        # id of the m-gram's last m-1 tokens
                suffix[inv] = ids_prev[idx]
                suffixes.append(suffix)
            n_ctx = len(self._orders[-1].keys) if m > 1 else 1
            count = np.bincount(ids[pred], minlength=len(keys))
            self._orders.append(_Order(m, keys, count, n_ctx, V))
            ids_prev = ids
        self._suffixes = suffixes
        self._fit_estimator()
        return self

    def _fit_estimator(self):
        if self.config.smoothing == "kn":
            self._fit_kn(self._suffixes)
        elif self.config.smoothing == "backoff":
            self._fit_backoff(self._suffixes)

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
        flat = [t for s in sentences for t in s]
        ids = self._encode_text(flat)  # (W,)
        lens = np.fromiter((len(s) for s in sentences), np.int64, len(sentences))
        padded = lens + self.n                       # n-1 <s>, the words, one </s>
        starts = np.concatenate([[0], np.cumsum(padded)[:-1]])
        L = int(padded.sum())
        tok = np.full(L, self.vocab.bos_id, np.int64)
        pos = np.arange(L) - np.repeat(starts, padded)
        word_start = np.repeat(starts + self.n - 1, lens)
        tok[word_start + (np.arange(len(ids)) - np.repeat(np.cumsum(lens) - lens, lens))] = ids
        tok[starts + self.n - 1 + lens] = self.vocab.eos_id
        return tok, pos, tok != self.vocab.bos_id

    def _fit_kn(self, suffixes):
        """Interpolated Kneser-Ney. For order m: (1.6) P_m(w|h) = max(c'(h w) - D(c'), 0) / sum_v c'(h v)
        + gamma(h) P_{m-1}(w|h'), (1.8) gamma(h) = (D1 N1(h.) + D2 N2(h.) + D3+ N3+(h.)) / sum_v c'(h v);
        c' is the raw count at the top order and (1.7) the continuation count N1+(. h w) below it (how many distinct
        words precede h w; with n-1 <s> of padding every lower-order n-gram has a left neighbour, as in NLTK).
        Below the unigrams lies the uniform distribution 1/V, so every word keeps some probability."""
        n = self.n
        self.discounts_used = np.zeros((n, 3))
        for m in range(n, 0, -1):
            o = self._orders[m - 1]
            if m == n:
                cp = o.count
            else:
                hi = self._orders[m]
                # (1.7) c'(h w) = N1+(. h w): each distinct (m+1)-gram adds 1 to its last m tokens
                cp = np.bincount(suffixes[m][hi.count > 0], minlength=len(o.keys))
            D = self.discounts[m - 1] if self.discounts is not None else _modified_discounts(cp)
            self.discounts_used[m - 1] = D
            d_of = np.concatenate([[0.0], D])[np.minimum(cp, 3)]           # (G,) D(c'): 0, D1, D2, D3+
            denom = np.bincount(o.ctx, weights=cp, minlength=len(o.total))  # (C,)
            freed = np.bincount(o.ctx, weights=np.where(cp > 0, d_of, 0.0), minlength=len(o.total))
            safe = np.where(denom > 0, denom, 1.0)
            # (1.6) the discounted own-order term, and (1.8) the weight left for the lower order
            o.a = np.maximum(cp - d_of, 0.0) / safe[o.ctx]   # (G,)
            o.gamma = freed / safe                            # (C,)

    def _fit_backoff(self, suffixes):
        """(1.5) Backoff with absolute discounting: P_m(w|h) = (C(h w) - D) / C(h) if C(h w) > 0, else
        alpha(h) P_{m-1}(w|h'), alpha(h) = (D N1+(h.) / C(h)) / (1 - sum_{w: C(h w) > 0} P_{m-1}(w|h')).
        D per order defaults to Ney's n1 / (n1 + 2 n2). A context followed by every word keeps its MLE."""
        n = self.n
        self.discounts_used = np.zeros(n)
        for m in range(1, n + 1):
            o = self._orders[m - 1]
            seen = o.count > 0
            if self.discounts is not None:
                D = self.discounts[m - 1]
            else:
                n1, n2 = np.count_nonzero(o.count == 1), np.count_nonzero(o.count == 2)
                D = min(n1 / (n1 + 2 * n2), 0.95) if n1 and n2 else 0.75
            self.discounts_used[m - 1] = D
            n_seen = np.bincount(o.ctx[seen], minlength=len(o.total))                  # N1+(h .)
            d_ctx = np.where(n_seen >= self.V_pred, 0.0, D)                              # (C,)
            safe = np.where(o.total > 0, o.total, 1.0)
            o.a = np.where(seen, (o.count - d_ctx[o.ctx]) / safe[o.ctx], 0.0)            # (G,) P for seen n-grams
            lower = (self._orders[m - 2].a[suffixes[m - 1]] if m > 1
                     else np.full(len(o.keys), 1.0 / self.V_pred))                       # P_{m-1}(w|h') if seen
            covered = np.bincount(o.ctx[seen], weights=lower[seen], minlength=len(o.total))
            freed = d_ctx * n_seen / safe
            room = 1.0 - covered
            o.gamma = np.where((freed > 0) & (room > 1e-12), freed / np.where(room > 1e-12, room, 1.0), 0.0)

    # ---------------------------------------------------------------------------------------------- scoring
    def _probs(self, ctx: list[np.ndarray], gram: list[np.ndarray]) -> np.ndarray:
        """P(w | h) for Q queries, given per order m the context id ctx[m-1] and n-gram id gram[m-1] (-1 = unseen)."""
        s = self.config.smoothing
        top = self._orders[-1]
        if s in ("mle", "addk"):
            c, g = ctx[-1], gram[-1]
            num = np.where(g >= 0, top.count[np.maximum(g, 0)], 0).astype(float)
            den = np.where(c >= 0, top.total[np.maximum(c, 0)], 0.0)
            if s == "addk":
                # (1.4) add-k: (C(h w) + k) / (C(h) + k V)
                return (num + self.config.k) / (den + self.config.k * self.V_pred)
            # (1.2) MLE: C(h w) / C(h); 0/0 (unseen context) is NaN
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        p = np.full(len(gram[0]), 1.0 / self.V_pred)  # order 0: uniform over the predictable vocabulary
        for o, c, g in zip(self._orders, ctx, gram):
            has_ctx = (c >= 0) & (o.total[np.maximum(c, 0)] > 0)
            a = np.where(g >= 0, o.a[np.maximum(g, 0)], 0.0)
            w = o.gamma[np.maximum(c, 0)]
            if s == "kn":  # (1.6) interpolate with the lower order
                p = np.where(has_ctx, a + w * p, p)
            else:          # (1.5) back off only for unseen n-grams (a > 0 exactly for seen ones)
                p = np.where(has_ctx, np.where(a > 0, a, w * p), p)
        return p

    def _ids_of_stream(self, tok: np.ndarray, pos: np.ndarray) -> list[np.ndarray]:
        """For each order m, the id of the m-gram ending at every position (-1 if never seen in training)."""
        out, ids = [], tok
        for m, o in enumerate(self._orders, start=1):
            if m > 1:
                nxt = np.full(len(tok), -1, np.int64)
                idx = np.flatnonzero(pos >= m - 1)
                prev = ids[idx - 1]
                nxt[idx] = _find(o.keys, np.where(prev >= 0, prev * self.V + tok[idx], -1))
                ids = nxt
            out.append(ids)
        return out

    def logprobs(self, sentences: Sequence[Sequence[str]]) -> np.ndarray:
        """log P(w_i | w_{i-n+1:i-1}) for every prediction: each word, then one </s> per sentence; (N,)."""
        self._check_fitted()
        sentences = _check_sentences(sentences, "evaluation text")
        tok, pos, pred = self._stream(sentences)
        ids = self._ids_of_stream(tok, pos)
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
                c = t if j == 0 else _find(self._orders[j].keys, np.array([c * self.V + t]))[0]
                if c < 0:
                    break
            ctx.append(np.full(self.V, c, np.int64))
            gram.append(words if m == 1 else _find(o.keys, np.where(c >= 0, c * self.V + words, -1)))
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
        c = -1
        for j, t in enumerate(ids):
            c = int(t) if j == 0 else int(_find(self._orders[j].keys, np.array([c * self.V + int(t)]))[0])
            if c < 0:
                return -1
        return c

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
        ids = self._ids_of_stream(tok, pos)
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
