"""What every n-gram model of chapter 1 shares: the config, input checks, the vocabulary, the queries of one context.

:class:`_NGramBase` fits the vocabulary and answers ``prob``, ``distribution``, ``next_token_logits``, ``top_next`` and
``generate`` for one context; a subclass (:class:`~seqviz.ngram.scratch.ScratchKN`,
:class:`~seqviz.ngram.lm.NGramLM`) counts and implements ``_log_distribution(h)``. Shapes: V is the vocabulary size.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import torch

from seqviz import decode
from seqviz._checks import _check_positive
from seqviz.data import Vocab

__all__ = ["NGramConfig", "SMOOTHINGS"]

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
