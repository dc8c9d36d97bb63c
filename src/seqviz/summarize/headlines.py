"""Writing headlines with a copy summarizer through ``seqviz.decode``, and looking at what it did.

- :class:`CopyBinding`: one article bound to a copy model, the decoder contract ``step(ids, state) -> (scores
  (B, V + n_oov), state)`` and ``reorder_state``; the scores are log p of the copy mixture over the article's
  extended vocabulary (log-probabilities are logits: softmax(log p) = p);
- :class:`HeadlineRules`: wraps any stepper: no repeated n-gram (Paulus et al. 2018), no </s> before a minimum,
  and (a hard prior) a first word from a given set;
- :func:`write_headline`: greedy or beam search (length normalisation ``alpha``: rank by log p / len^alpha);
- :func:`copy_trace`: per generated word, p_gen and the copy attention over the article (for the chapter's view);
- :func:`swap_test`: does the headline depend on the article? (own vs another article's reference).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import Tensor

from seqviz.decode import beam_search, generate
from seqviz.metrics import rouge

from seqviz.summarize.copy_models import _CopyModel
from seqviz.summarize.pointer import check_prior
from seqviz.summarize.words import SourceIds, WordTokenizer

__all__ = ["CopyBinding", "HeadlineRules", "write_headline", "write_headlines", "CopyTrace", "copy_trace", "SwapResult", "swap_test"]


def _prior_tensor(prior: Sequence[float] | None, source: SourceIds, dev) -> Tensor | None:
    """One article's prior as the head takes it, (1, S), checked before any decoding (pointer.check_prior)."""
    if prior is None:
        return None
    if len(prior) != len(source.ext):
        raise ValueError(f"one prior weight per article token: {len(prior)} for {len(source.ext)} tokens")
    w = torch.tensor([list(prior)], dtype=torch.float32, device=dev)              # (1, S)
    check_prior(w, torch.ones_like(w, dtype=torch.bool))
    return w


class CopyBinding:
    """A copy model bound to one article (:class:`SourceIds`); ``module`` is the model, so ``seqviz.decode``
    switches its mode. The state is the headline read so far (B, t): the decoder re-reads it each step (headlines are
    a dozen words; no key/value cache needed), while the article is read once, at the first step
    (:meth:`~seqviz.summarize.copy_models._CopyModel.read_article`), and each step scores only the last position."""

    def __init__(self, model: _CopyModel, source: SourceIds, prior: Sequence[float] | None = None):
        self.module = model
        dev = next(model.parameters()).device
        self.x = torch.tensor([source.ext], dtype=torch.long, device=dev)         # (1, S)
        self.mask = torch.ones_like(self.x, dtype=torch.bool)                      # (1, S)
        self.prior = _prior_tensor(prior, source, dev)                            # (1, S) or None
        self.n_ext = max(1, len(source.oovs))
        self.V = model.config.vocab_size
        self.memory = None                                                        # (1, S, d), read at the first step

    def step(self, ids: Tensor, state: Tensor | None) -> tuple[Tensor, Tensor]:
        ids = torch.where(ids >= self.V, torch.full_like(ids, 1), ids)            # a copied word is read as <unk>
        seq = ids if state is None else torch.cat([state, ids], 1)                # (B, t)
        B = seq.shape[0]
        prior = None if self.prior is None else self.prior.expand(B, -1)
        if self.memory is None:
            self.memory = self.module.read_article(self.x, self.mask)             # (1, S, d) or None (the LM)
        memory = None if self.memory is None else self.memory.expand(B, -1, -1)   # (B, S, d)
        p, _ = self.module.distribution(self.x.expand(B, -1), self.mask.expand(B, -1), seq, self.n_ext, prior,
                                        memory=memory, last=True)
        return torch.log(p[:, -1].clamp_min(1e-30)), seq                           # (B, V + n_ext)

    def reorder_state(self, state: Tensor, index: Tensor) -> Tensor:
        return state.index_select(0, index)


class HeadlineRules:
    """Wraps any stepper with two rules of headline decoding: a token that would repeat an n-gram already written
    gets -inf (``block_ngram`` n; n = 1: no word twice; None: off), the usual cure for the repetition loops of
    summarizers (Paulus et al. 2018), and ``eos_id`` gets -inf before ``min_words`` tokens. With ``first`` (a set of
    ids), the first output token must be one of them: every other token gets -inf at that step (a hard prior). The
    first ``skip`` ids read (the prompt) do not count. Its state is (the inner state, the ids read so far)."""

    def __init__(self, stepper, block_ngram: int | None = 1, min_words: int = 0, eos_id: int | None = None,
                 skip: int = 1, first=None):
        if block_ngram is not None and (isinstance(block_ngram, bool) or not isinstance(block_ngram, int)
                                        or block_ngram < 1):
            raise ValueError(f"block_ngram must be a positive int (1 = no repeated token) or None, got {block_ngram!r}")
        if min_words and eos_id is None:
            raise ValueError("min_words needs the eos_id it bars")
        self.inner, self.n, self.min_words, self.eos_id, self.skip = stepper, block_ngram, min_words, eos_id, skip
        self.first = None if first is None else sorted({int(i) for i in first})
        if self.first is not None and not self.first:
            raise ValueError("first must hold at least one token id (or be None: any first token)")
        self.module = getattr(stepper, "module", stepper if isinstance(stepper, torch.nn.Module) else None)

    def banned(self, row: Sequence[int]) -> set[int]:
        """Tokens barred after the output ``row``."""
        ban = {self.eos_id} if len(row) < self.min_words else set()
        n = self.n
        if n == 1:
            ban |= set(row)
        elif n is not None and len(row) >= n - 1:
            ctx = tuple(row[len(row) - n + 1:])
            ban |= {row[i + n - 1] for i in range(len(row) - n + 1) if tuple(row[i:i + n - 1]) == ctx}
        return ban

    def step(self, ids: Tensor, state):
        inner, hist = (None, ids) if state is None else (state[0], torch.cat([state[1], ids], 1))
        z, inner = self.inner.step(ids, inner)
        z = z.clone()
        for b, row in enumerate(hist[:, self.skip:].tolist()):
            if not row and self.first is not None:
                allowed = z[b, self.first].clone()
                z[b] = -math.inf
                z[b, self.first] = allowed
            ban = self.banned(row)
            if ban:
                z[b, sorted(ban)] = -math.inf
        return z, (inner, hist)

    def reorder_state(self, state, index: Tensor):
        return self.inner.reorder_state(state[0], index), state[1].index_select(0, index)


def write_headline(model: _CopyModel, tok: WordTokenizer, article: str, *, beam_size: int = 1, alpha: float = 1.0,
                   block_ngram: int | None = 1, min_words: int = 2, max_words: int | None = None,
                   punctuation: bool = False, prior: Sequence[float] | None = None,
                   lead_word: str | None = None) -> list[int]:
    """The extended ids of a headline for ``article`` (without </s>), through ``seqviz.decode``: beam search
    (``beam_size`` 1: greedy) ranking by log p / len^``alpha`` (length normalisation), with :class:`HeadlineRules`
    (n-gram blocking ``block_ngram``, </s> barred before ``min_words``), at most ``max_words`` words (default the
    model's ``max_summary``). Specials other than </s> are never written, nor (unless ``punctuation``) a token
    without a letter or digit other than "%" (an unbalanced quote is the ugliest failure). ``prior``: one weight per
    article token for the copy attention (bottom-up; :func:`~seqviz.summarize.compress.token_prior`).
    ``lead_word``: a word of the article (its first ``max_source`` words) that the headline must start with, a hard
    prior (:func:`~seqviz.summarize.compress.name_word` picks the selector's likeliest name)."""
    c = model.config
    max_words = max_words or c.max_summary
    if isinstance(max_words, bool) or not isinstance(max_words, int) or not 1 <= max_words <= c.max_summary:
        raise ValueError(f"max_words must be an int in [1, {c.max_summary}] (the model was trained on headlines "
                         f"of at most {c.max_summary} words), got {max_words!r}")
    source = tok.encode_source(article, c.max_source)
    binding = CopyBinding(model, source, prior)
    V = len(tok)
    first = None
    if lead_word is not None:
        words = tok.words(source.ext, source.oovs) if isinstance(lead_word, str) else []
        if not isinstance(lead_word, str) or lead_word.lower() not in words:
            raise ValueError(f"lead_word {lead_word!r} is not one of the article's first {c.max_source} words, which "
                             f"the model reads: give a word of the article (e.g. name_word of the selector's scores)")
        first = {source.ext[words.index(lead_word.lower())]}
    stepper = HeadlineRules(binding, block_ngram, min(min_words, max_words), tok.eos_id, first=first)
    never = [i for i in tok.special_ids if i != tok.eos_id] + list(range(V + len(source.oovs), V + binding.n_ext))
    if not punctuation:
        never += tok.punctuation_ids
    if beam_size == 1:
        ids = generate(stepper, [tok.bos_id], max_words + 1, greedy=True, stop_id=tok.eos_id, suppress_ids=never)
    else:
        ids = beam_search(stepper, [tok.bos_id], beam_size, max_words + 1, stop_id=tok.eos_id,
                          length_penalty=alpha, suppress_ids=never)[0][0]
    return ids[:-1] if ids and ids[-1] == tok.eos_id else ids[:max_words]


def write_headlines(model: _CopyModel, tok: WordTokenizer, articles: Sequence[str], selector=None,
                    name_first: bool = False, **kw) -> list[str]:
    """Readable headlines (:meth:`WordTokenizer.detokenize`) for article bodies, by :func:`write_headline` (keyword
    arguments pass through); with a fitted ``selector`` (:class:`~seqviz.summarize.compress.KeepDropRegression`),
    its p(keep) of each lead word is the copy attention's prior (bottom-up copy attention), and with ``name_first``
    each headline starts with the selector's likeliest name among the words the model reads (a hard prior;
    :func:`~seqviz.summarize.compress.name_word`; no constraint where there is none)."""
    from seqviz.summarize.compress import name_word, token_prior

    if name_first and selector is None:
        raise ValueError("name_first needs the selector whose scores pick the name: pass selector=")
    out = []
    S = model.config.max_source
    for body in articles:
        prior = lead = None
        if selector is not None:
            words, p = selector.scores(body)
            prior = token_prior(body, p, S)
            if name_first:
                source = tok.encode_source(body, S)
                read = set(tok.words(source.ext, source.oovs))          # the lead words the model reads
                kept = [k for k, w in enumerate(words) if w.lower() in read]
                lead = name_word([words[k] for k in kept], [p[k] for k in kept])
        ids = write_headline(model, tok, body, prior=prior, lead_word=lead, **kw)
        out.append(tok.detokenize(tok.words(ids, tok.encode_source(body, S).oovs), body))
    return out


@dataclass
class CopyTrace:
    """What the copy model did at each headline word: ``words`` the headline, ``article`` the article words it
    read, ``p_gen`` (T,) the probability of generating, ``a`` (T, S) the copy attention over the article,
    ``copied`` (T,) whether the word occurs among the article words read, ``copy_share`` (T,) the share of the
    word's probability p(y_t) that came by copying, (1 - p_gen) sum_{j: x_j = y_t} a_t[j] / p(y_t) (a word of the
    article can come both ways: p_gen alone does not say which way it came)."""
    words: list[str]
    article: list[str]
    p_gen: np.ndarray
    a: np.ndarray
    copied: np.ndarray
    copy_share: np.ndarray


@torch.no_grad()
def copy_trace(model: _CopyModel, tok: WordTokenizer, article: str, ids: Sequence[int],
               prior: Sequence[float] | None = None) -> CopyTrace:
    """Teacher-force the headline ``ids`` (extended, from :func:`write_headline`) and read the head's p_gen and a."""
    from seqviz import evaluating
    from .words import word_tokens

    if model.copy is None:
        raise ValueError("this model has no copy head (copy=False): nothing to trace")
    if not ids:
        raise ValueError("the headline is empty: write one first (write_headline)")
    source = tok.encode_source(article, model.config.max_source)
    dev = next(model.parameters()).device
    x = torch.tensor([source.ext], device=dev)                                    # (1, S)
    y = torch.tensor([[tok.bos_id] + list(ids[:-1])], device=dev)                 # (1, T) the decoder's input
    y = torch.where(y >= len(tok), torch.full_like(y, tok.unk_id), y)
    with evaluating(model):
        w = _prior_tensor(prior, source, dev)                                     # (1, S) or None
        p, out = model.distribution(x, torch.ones_like(x, dtype=torch.bool), y, max(1, len(source.oovs)), w)
    t = torch.tensor(list(ids), device=dev)                                       # (T,) the words written
    p_word = p[0].gather(1, t[:, None]).squeeze(1)                                # (T,) p(y_t)
    p_copy = (1 - out.p_gen[0]) * (out.a[0] * (x[0][None, :] == t[:, None])).sum(1)   # (T,) its copied part
    words = tok.words(ids, source.oovs)
    art = word_tokens(article)[:model.config.max_source]
    return CopyTrace(words, art, out.p_gen[0].cpu().numpy(), out.a[0].cpu().numpy(),
                     np.array([w in set(art) for w in words]), (p_copy / p_word).cpu().numpy())


@dataclass
class SwapResult:
    """The article-swap test: ``own`` mean ROUGE-L of each headline against its own article's reference,
    ``swapped`` against the reference of the article it was swapped with, ``changed`` the share of articles whose
    headline differs from the one written for the other article. A model that ignores its article has own ≈ swapped
    and changed ≈ 0."""
    own: float
    swapped: float
    changed: float


def swap_test(headlines: Sequence[str], references: Sequence[str], seed: int = 0) -> SwapResult:
    """Pair every article with another one (a random derangement drawn with ``seed``) and compare."""
    n = len(headlines)
    if n != len(references) or n < 2:
        raise ValueError(f"need one reference per headline and at least two articles, got {n} and {len(references)}")
    rng = random.Random(seed)
    perm = list(range(n))
    while any(i == p for i, p in enumerate(perm)):
        rng.shuffle(perm)
    own = np.mean([rouge(r, h)["rougeL"].fmeasure for r, h in zip(references, headlines)])
    swapped = np.mean([rouge(references[i], headlines[perm[i]])["rougeL"].fmeasure for i in range(n)])
    changed = np.mean([headlines[i] != headlines[perm[i]] for i in range(n)])
    return SwapResult(100 * float(own), 100 * float(swapped), float(changed))
