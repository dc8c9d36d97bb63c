"""Tokens for summarization: chapter 5's BPE pieces plus the specials, the delimiter δ of SLP §9.9 among them."""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import torch

from seqviz.data.bpe import BPE
from seqviz.data.text import Vocab

__all__ = ["DELIMITER", "SPECIALS", "SummaryTokenizer"]

#: the delimiter δ of SLP §9.9 between article and summary: one special token, never produced by BPE
DELIMITER = "<δ>"
SPECIALS = ("<pad>", "<unk>", "<s>", "</s>", DELIMITER)


class SummaryTokenizer:
    """BPE pieces <-> ids, with ``<pad>``, ``<unk>``, ``<s>``, ``</s>`` and the delimiter δ as specials.

    Why subwords: a word vocabulary of the BBC bodies has tens of thousands of types, most seen once, so names and
    numbers in a test article would be ``<unk>`` and a headline could never copy them; characters make every
    sequence about three times longer, and attention's cost grows with the square of the length. BPE keeps frequent
    words whole and spells rare ones from pieces (Sennrich et al. 2016).
    """

    def __init__(self, bpe: BPE, vocab: Vocab):
        missing = [s for s in SPECIALS if s not in vocab]
        if missing:
            raise ValueError(f"the vocabulary lacks the specials {missing}; build it with SummaryTokenizer.learn")
        self.bpe, self.vocab = bpe, vocab
        self.pad_id, self.unk_id = vocab.pad_id, vocab.unk_id
        self.eos_id, self.delim_id = vocab.eos_id, vocab[DELIMITER]
        self.special_ids = tuple(vocab[s] for s in SPECIALS)

    @classmethod
    def learn(cls, texts: Sequence[str], num_merges: int = 2000) -> "SummaryTokenizer":
        """Learn ``num_merges`` BPE merges from ``texts`` and a vocabulary of every piece they produce."""
        texts = list(texts)
        bpe = BPE.learn(texts, num_merges)
        pieces = Counter(p for t in texts for p in bpe.encode(t))
        return cls(bpe, Vocab.build(pieces.elements(), specials=SPECIALS))

    def __len__(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> list[int]:
        """Ids of the BPE pieces of ``text``; a piece outside the vocabulary becomes ``<unk>``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if DELIMITER in text:
            raise ValueError(f"the text contains the delimiter {DELIMITER!r}, which separates article from summary; "
                             f"remove or replace it before encoding (e.g. text.replace({DELIMITER!r}, ' '))")
        return self.vocab.encode(self.bpe.encode(text))

    def pieces(self, ids: Sequence[int]) -> list[str]:
        """The piece of every id (specials included), e.g. for a heatmap's labels."""
        return self.vocab.decode(ids)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` with the specials left out, stripped."""
        keep = [i for i in (ids.tolist() if isinstance(ids, torch.Tensor) else ids) if int(i) not in self.special_ids]
        return BPE.decode(self.vocab.decode(keep)).strip()

    def state(self) -> dict:
        """Plain lists (what ``torch.load(weights_only=True)`` reads back): the merges and the vocabulary."""
        return {"merges": [list(m) for m in self.bpe.merges], "itos": list(self.vocab.itos)}

    @classmethod
    def from_state(cls, state: dict) -> "SummaryTokenizer":
        return cls(BPE([tuple(m) for m in state["merges"]]), Vocab(state["itos"]))
