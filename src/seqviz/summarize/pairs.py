"""Training pairs for the copy summarizers: the task's (article, headline) pairs and self-supervised pairs cut from
the training bodies, which are pretraining that fits the task (Zhu et al. 2019's lead sentences; PEGASUS's gap
sentences, Zhang et al. 2020): a sentence is the target and the text around it, without it, the source, so a model
learns to write a short text that reuses the names and numbers of a longer one. Only training articles are read.
"""
from __future__ import annotations

import random
from typing import Iterator, Sequence

import torch

from seqviz._checks import IGNORE_INDEX
from seqviz.data.batches import Batch

from seqviz.summarize.baselines import split_sentences
from seqviz.summarize.words import WordTokenizer, word_tokens

__all__ = ["headline_pairs", "gap_sentence_pairs", "EncodedPair", "encode_pairs", "CopyBatches"]


def headline_pairs(articles) -> list[tuple[str, str]]:
    """(body, headline) of each article."""
    return [(a.body, a.headline) for a in articles]


def gap_sentence_pairs(articles, context_words: int = 80, min_words: int = 4, max_words: int = 45,
                       before: int = 2) -> list[tuple[str, str]]:
    """One pair per sentence of every body (of ``min_words``..``max_words`` words): the target is the sentence,
    the source the ``before`` sentences before it and those after it, without it, up to ``context_words`` words.
    Sentence 0 gives the lead pair (the rest of the body -> its first sentence)."""
    out = []
    for a in articles:
        sents = split_sentences(a.body)
        n_words = [len(word_tokens(s)) for s in sents]
        for i, s in enumerate(sents):
            if not min_words <= n_words[i] <= max_words:
                continue
            src, n = [], 0
            for j in [*range(max(0, i - before), i), *range(i + 1, len(sents))]:
                src.append(sents[j])
                n += n_words[j]
                if n >= context_words:
                    break
            if n >= 10:
                out.append((" ".join(src), s))
    return out


EncodedPair = tuple[list[int], list[int]]                                         # (source extended ids, targets)


def encode_pairs(tok: WordTokenizer, pairs: Sequence[tuple[str, str]], max_source: int,
                 max_summary: int, copy: bool = True) -> list[EncodedPair]:
    """Each pair as (the source's extended ids, the target's extended ids + </s>), with ``IGNORE_INDEX`` at the
    targets the copy models' loss leaves out: ``<unk>`` (in neither the vocabulary nor the article), and for a model
    without the copy head (``copy=False``) the article-only words too, which it cannot write. So a batch's targets
    that are not IGNORE_INDEX are the ones scored, and the trainer weights each batch's mean loss by them (the
    decoder still reads such a word, as ``<unk>``)."""
    out = []
    V = len(tok)
    for src, tgt in pairs:
        s = tok.encode_source(src, max_source)
        y = tok.encode_target(tgt, s.oovs, max_summary)
        y = [IGNORE_INDEX if i == tok.unk_id or (not copy and i >= V) else i for i in y]
        out.append((s.ext, y + [tok.eos_id]))
    return out


class CopyBatches:
    """Batches ``Batch(x (B, S) extended ids, y (B, T) targets, mask (B, S))`` of encoded pairs, shuffled by
    ``seed`` and the pass number (``set_epoch``): the order is a function of (seed, epoch) alone."""

    def __init__(self, pairs: Sequence[EncodedPair], batch_size: int, pad_id: int, seed: int = 0,
                 shuffle: bool = True):
        if not pairs:
            raise ValueError("no pairs to batch")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.pairs, self.batch_size, self.pad_id, self.seed, self.shuffle = list(pairs), batch_size, pad_id, seed, shuffle
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return -(-len(self.pairs) // self.batch_size)

    def __iter__(self) -> Iterator[Batch]:
        order = list(range(len(self.pairs)))
        if self.shuffle:
            random.Random(self.seed * 100_003 + self.epoch).shuffle(order)
        for i in range(0, len(order), self.batch_size):
            yield self.collate([self.pairs[j] for j in order[i:i + self.batch_size]])

    def collate(self, chunk: Sequence[EncodedPair]) -> Batch:
        S, T = max(len(s) for s, _ in chunk), max(len(t) for _, t in chunk)
        x = torch.full((len(chunk), S), self.pad_id, dtype=torch.long)               # (B, S)
        y = torch.full((len(chunk), T), IGNORE_INDEX, dtype=torch.long)              # (B, T)
        for b, (s, t) in enumerate(chunk):
            x[b, :len(s)] = torch.tensor(s)
            y[b, :len(t)] = torch.tensor(t)
        return Batch(x, y, x != self.pad_id)
