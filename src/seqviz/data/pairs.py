"""Source/target pair tasks ready to train an encoder-decoder (chapters 5 and 7): vocabularies, batches, held-out
pairs as ids and as text.

- :func:`date_pairs`          the date-normalisation task of ``seqviz.data.tasks``, characters -> characters
- :func:`translation_pairs`   sentence pairs of a corpus (e.g. trans-de-en), BPE pieces -> BPE pieces
- :func:`pair_task`           any tokenised pairs -> a :class:`PairTask`

A model config is built from a task by the model's own config (``Seq2SeqConfig.for_task(task)``): data never imports
a model.
"""
from __future__ import annotations

from dataclasses import dataclass

from .batches import PairBatches
from .bpe import BPE
from .tasks import date_task
from .text import Vocab

__all__ = ["PairTask", "pair_task", "date_pairs", "translation_pairs"]


@dataclass
class PairTask:
    """A transduction task ready to train: vocabularies, training/validation batches, held-out pairs as ids.

    Targets end in </s> (the decoder must learn to stop); sources carry no markers.
    """
    src_vocab: Vocab                  # the source tokens (its length is a model's src_vocab_size)
    tgt_vocab: Vocab                  # the target tokens (its length is a model's tgt_vocab_size)
    train: PairBatches                # shuffled, bucketed by source length
    valid: PairBatches
    test_src: list[list[int]]         # held-out source ids
    test_tgt: list[list[int]]         # held-out target ids, each ending with </s>
    test_text: list[tuple[str, str]]  # the held-out pairs as text


def pair_task(train: list[tuple[list[str], list[str]]], valid, test, batch_size: int = 64, *, seed: int = 0,
              min_freq: int = 1, test_text=None) -> PairTask:
    """Vocabularies from the training pairs (lists of tokens) and batches of ids for each split; ``seed`` orders the
    training batches. ``test_text`` (default: the joined tokens) is what translations are scored against."""
    if not train:
        raise ValueError("no training pairs")
    sv = Vocab.build([s for s, _ in train], min_freq=min_freq)
    tv = Vocab.build([t for _, t in train], min_freq=min_freq)

    def ids(pairs):
        return ([sv.encode(list(s)) for s, _ in pairs], [tv.encode(list(t)) + [tv.eos_id] for _, t in pairs])

    tr = PairBatches(*ids(train), batch_size, sv.pad_id, shuffle=True, seed=seed, bucket=True)
    va = PairBatches(*ids(valid), 4 * batch_size, sv.pad_id)
    ts, tt = ids(test)
    text = test_text if test_text is not None else [("".join(s), "".join(t)) for s, t in test]
    return PairTask(sv, tv, tr, va, ts, tt, list(text))


def date_pairs(n_train: int = 6000, n_valid: int = 300, n_test: int = 500, batch_size: int = 64, *,
               seed: int = 0, forms=None) -> PairTask:
    """The date-normalisation task (``seqviz.data.tasks``) as characters -> characters, ready to train. ``seed``
    is the task's one seed: it draws the dates and orders the training batches."""
    t = date_task(n_train, n_valid, n_test, seed=seed, forms=forms)
    split = {k: [(list(e.source), list(e.target)) for e in v] for k, v in t.items()}
    return pair_task(split["train"], split["valid"], split["test"], batch_size, seed=seed,
                     test_text=[(e.source, e.target) for e in t["test"]])


def translation_pairs(corpus, num_merges: int = 4000, batch_size: int = 64, *, seed: int = 0,
                      max_tokens: int = 60, max_words: int | None = None) -> tuple[PairTask, dict]:
    """Sentence pairs (``SentencePair`` records of a Corpus, e.g. ``load_corpus("trans_de_en")``) as BPE pieces.

    One BPE per language is learned on its training side (Sennrich et al., 2016); pairs longer than ``max_tokens``
    pieces on either side are dropped from training only. ``max_words`` keeps, in every split (test included), only
    the pairs of at most that many words (split at whitespace) on each side: short sentences, a task a small model
    learns on a CPU. ``seed`` orders the training batches. Returns the task and ``{"src": BPE, "tgt": BPE}``.
    """
    if max_words is not None and (isinstance(max_words, bool) or not isinstance(max_words, int) or max_words < 1):
        raise ValueError(f"max_words must be a positive int (words per side) or None (no limit), got {max_words!r}")

    def short(pairs) -> list:
        pairs = list(pairs)
        if max_words is None:
            return pairs
        return [p for p in pairs if len(p.source.split()) <= max_words and len(p.target.split()) <= max_words]

    train = list(corpus.train)
    if not train or not hasattr(train[0], "source"):
        raise ValueError("translation_pairs needs a corpus of SentencePair records, such as trans_de_en")
    train = short(train)
    if not train:
        raise ValueError(f"no training pair has at most max_words={max_words} words on each side; raise max_words")
    bpe = {"src": BPE.learn((p.source for p in train), num_merges),
           "tgt": BPE.learn((p.target for p in train), num_merges)}

    def enc(pairs, drop_long: bool):
        out = [(bpe["src"].encode(p.source), bpe["tgt"].encode(p.target)) for p in pairs]
        return [(s, t) for s, t in out if not drop_long or (len(s) <= max_tokens and len(t) <= max_tokens)]

    test = short(corpus.test)
    task = pair_task(enc(train, True), enc(short(corpus.valid), False), enc(test, False), batch_size, seed=seed,
                     test_text=[(p.source, p.target) for p in test])
    return task, bpe
