"""Text to ids: tokenizers and the vocabulary (text -> tokens -> ids)."""
from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Sequence

import torch


# ----------------------------------------------------------------------------------------------------------------
# Tokenizers
# ----------------------------------------------------------------------------------------------------------------
_WORD_RE = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")


def _check_text(text) -> str:
    if not isinstance(text, str):
        raise TypeError(f"expected text as str, got {type(text).__name__}")
    return text


def char_tokenize(text: str) -> list[str]:
    """Characters, newlines included: the unit of a character-level LM."""
    return list(_check_text(text))


def word_tokenize(text: str, lower: bool = False) -> list[str]:
    """Words (with inner apostrophes) and single punctuation marks; whitespace dropped."""
    text = _check_text(text)
    return _WORD_RE.findall(text.lower() if lower else text)


def sentences(text: str, level: str = "word", lower: bool = False) -> list[list[str]]:
    """One token list per non-empty line.

    ``level``: ``"word"`` (``word_tokenize``), ``"space"`` (split on whitespace only, for text that is already
    tokenized such as PTB, where ``<unk>``, ``u.s.`` and ``n't`` must stay whole) or ``"char"``.
    """
    text = _check_text(text)
    split = {"word": lambda s: word_tokenize(s), "space": str.split, "char": list}.get(level)
    if split is None:
        raise ValueError(f"level must be 'word', 'space' or 'char', got {level!r}")
    out = []
    for line in text.split("\n"):
        line = line.strip()
        if line:
            out.append(split(line.lower() if lower else line))
    return out


# ----------------------------------------------------------------------------------------------------------------
# Vocabulary
# ----------------------------------------------------------------------------------------------------------------
class Vocab:
    """Token <-> id map. Specials come first (``<pad>`` = 0), then tokens by falling frequency, ties by text."""

    def __init__(self, itos: Sequence[str], unk: str | None = "<unk>", pad: str | None = "<pad>",
                 bos: str | None = "<s>", eos: str | None = "</s>"):
        itos = list(itos)
        if not itos:
            raise ValueError("a vocabulary needs at least one token")
        if len(set(itos)) != len(itos):
            dup = [t for t, c in Counter(itos).items() if c > 1][:5]
            raise ValueError(f"duplicate tokens in vocabulary: {dup}")
        self.itos: list[str] = itos
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(itos)}
        self.unk_id = self.stoi.get(unk) if unk is not None else None
        self.pad_id = self.stoi.get(pad) if pad is not None else None
        self.bos_id = self.stoi.get(bos) if bos is not None else None
        self.eos_id = self.stoi.get(eos) if eos is not None else None

    @classmethod
    def build(cls, tokens: Iterable[str] | Iterable[Sequence[str]], min_freq: int = 1, max_size: int | None = None,
              specials: Sequence[str] = ("<pad>", "<unk>", "<s>", "</s>")) -> "Vocab":
        """Count tokens (a flat list, or a list of token lists) and keep those seen at least ``min_freq`` times."""
        if min_freq < 1:
            raise ValueError(f"min_freq must be >= 1, got {min_freq}")
        if max_size is not None and max_size < 0:
            raise ValueError(f"max_size must be >= 0 or None, got {max_size}")
        if isinstance(tokens, str):
            raise TypeError("Vocab.build takes a list of tokens, not a string: tokenize first "
                            "(char_tokenize / word_tokenize)")
        counts: Counter = Counter()
        for item in tokens:
            if isinstance(item, str):
                counts[item] += 1
            else:
                counts.update(item)
        if not counts:
            raise ValueError("cannot build a vocabulary from no tokens (empty text?)")
        specials = list(dict.fromkeys(specials))
        kept = sorted((t for t, c in counts.items() if c >= min_freq and t not in specials),
                      key=lambda t: (-counts[t], t))
        if max_size is not None:
            kept = kept[:max_size]
        v = cls(specials + kept)
        v.counts = counts
        return v

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def __getitem__(self, token: str) -> int:
        try:
            return self.stoi[token]
        except KeyError:
            raise KeyError(f"token {token!r} is not in the vocabulary ({len(self)} tokens)") from None

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens: {self.itos[:8]}...)"

    def encode(self, tokens: Sequence[str], *, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Ids for tokens; unknown tokens become ``<unk>`` (an error if the vocabulary has none)."""
        if isinstance(tokens, str):
            raise TypeError("encode takes a list of tokens, not a string: tokenize first")
        ids = []
        for t in tokens:
            i = self.stoi.get(t, self.unk_id)
            if i is None:
                raise KeyError(f"unknown token {t!r} and this vocabulary has no <unk>; build it with '<unk>' "
                               "among the specials or filter the text")
            ids.append(i)
        if add_bos:
            if self.bos_id is None:
                raise ValueError("add_bos=True but the vocabulary has no <s>")
            ids.insert(0, self.bos_id)
        if add_eos:
            if self.eos_id is None:
                raise ValueError("add_eos=True but the vocabulary has no </s>")
            ids.append(self.eos_id)
        return ids

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Tokens for ids; an id outside ``0..len-1`` is an error, not a silent ``<unk>``."""
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.itos):
                raise ValueError(f"id {i} is outside the vocabulary (0..{len(self.itos) - 1})")
            out.append(self.itos[i])
        return out
