"""Byte-pair encoding (BPE) subwords, learned from a training text (Sennrich, Haddow & Birch, 2016).

Learning: start from characters, count every adjacent pair of symbols inside words (weighted by word frequency),
merge the most frequent pair into one new symbol, and repeat ``num_merges`` times. Encoding a word replays the merges
in the order they were learned, so a rare word splits into pieces the model knows ("unhappiness" -> "un" "happ"
"iness"), and a word never seen still encodes, down to single characters.

One departure from the paper, for a clean round trip: instead of an end-of-word marker ``</w>``, a word carries the
single space before it (" the", as GPT-2's BPE does, Radford et al., 2019), so the pieces of any text concatenate
back to exactly that text: ``"".join(bpe.encode(text)) == text``. Merges never cross a word boundary.
"""
from __future__ import annotations

import heapq
import re
from collections import Counter, defaultdict
from typing import Iterable

__all__ = ["BPE", "pretokenize"]

# a word with the one space before it, or a run of whitespace (the last space of a run before a word goes to the word)
_PRETOKEN_RE = re.compile(r" ?[^\s]+|\s+(?!\S)|\s+")


def pretokenize(text: str) -> list[str]:
    """Split text into the units BPE merges within: words with their leading space, and whitespace runs.

    ``"".join(pretokenize(text)) == text`` for every string.
    """
    if not isinstance(text, str):
        raise TypeError(f"expected text as str, got {type(text).__name__}")
    return _PRETOKEN_RE.findall(text)


def _merge_word(word: tuple[str, ...], pair: tuple[str, str], new: str) -> tuple[str, ...]:
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == pair[0] and word[i + 1] == pair[1]:
            out.append(new)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


class BPE:
    """A learned list of merges; ``encode(text) -> pieces`` and ``decode(pieces) -> text``.

    Build one with :meth:`learn`. ``merges`` is the ordered list of pairs (rank 0 merged first).
    """

    def __init__(self, merges: Iterable[tuple[str, str]]):
        self.merges: list[tuple[str, str]] = [tuple(m) for m in merges]
        for m in self.merges:
            if len(m) != 2 or not all(isinstance(s, str) and s for s in m):
                raise ValueError(f"each merge must be a pair of non-empty strings, got {m!r}")
        self.ranks: dict[tuple[str, str], int] = {m: r for r, m in enumerate(self.merges)}
        self._cache: dict[str, tuple[str, ...]] = {}

    @classmethod
    def learn(cls, texts: Iterable[str] | str, num_merges: int, min_freq: int = 2) -> "BPE":
        """Learn up to ``num_merges`` merges from ``texts`` (a string or an iterable of strings).

        Stops early when no pair occurs at least ``min_freq`` times. Ties between equally frequent pairs go to the
        pair that sorts first, so learning is deterministic.
        """
        if isinstance(num_merges, bool) or not isinstance(num_merges, int) or num_merges < 0:
            raise ValueError(f"num_merges must be a non-negative int, got {num_merges!r}")
        if isinstance(min_freq, bool) or not isinstance(min_freq, int) or min_freq < 1:
            raise ValueError(f"min_freq must be a positive int, got {min_freq!r}")
        if isinstance(texts, str):
            texts = [texts]
        freq: Counter = Counter()
        for t in texts:
            freq.update(pretokenize(t))
        if not freq:
            raise ValueError("cannot learn BPE from no text: give at least one non-empty string")
        words = [tuple(w) for w in freq]                       # each word as a tuple of symbols (characters first)
        counts = [freq[w] for w in freq]
        pairs: Counter = Counter()                             # pair -> weighted count over all words
        where: dict[tuple[str, str], set[int]] = defaultdict(set)   # pair -> indices of the words that hold it
        for i, w in enumerate(words):
            for p in zip(w, w[1:]):
                pairs[p] += counts[i]
                where[p].add(i)
        heap = [(-n, p) for p, n in pairs.items()]            # max-heap of counts; stale entries are skipped
        heapq.heapify(heap)
        merges: list[tuple[str, str]] = []
        while len(merges) < num_merges and heap:
            # the most frequent pair (ties: the smallest pair), Sennrich et al. (2016), Algorithm 1
            neg, pair = heapq.heappop(heap)
            n = pairs.get(pair, 0)
            if n != -neg:
                # a stale entry: counts of old pairs only fall, so re-file it under its current count
                if n > 0:
                    heapq.heappush(heap, (-n, pair))
                continue
            if n < min_freq:
                break
            merges.append(pair)
            new = pair[0] + pair[1]
            grown: set[tuple[str, str]] = set()                # pairs holding the new symbol: the only ones that grow
            for i in list(where[pair]):
                old = words[i]
                merged = _merge_word(old, pair, new)
                if merged == old:
                    continue
                for p in zip(old, old[1:]):                    # remove the word's old pairs ...
                    pairs[p] -= counts[i]
                    if pairs[p] <= 0:
                        del pairs[p]
                    where[p].discard(i)
                for p in zip(merged, merged[1:]):              # ... and add its new ones
                    pairs[p] += counts[i]
                    where[p].add(i)
                words[i] = merged
                grown.update(p for p in zip(merged, merged[1:]) if new in p)
            pairs.pop(pair, None)
            where.pop(pair, None)
            for p in grown:
                if p in pairs:
                    heapq.heappush(heap, (-pairs[p], p))
        return cls(merges)

    def _encode_word(self, word: str) -> tuple[str, ...]:
        if word in self._cache:
            return self._cache[word]
        symbols = tuple(word)
        while len(symbols) > 1:
            # replay merges in learned order: the adjacent pair with the lowest rank goes first
            ranked = [(self.ranks.get(p, len(self.ranks)), p) for p in zip(symbols, symbols[1:])]
            rank, pair = min(ranked)
            if rank == len(self.ranks):
                break
            symbols = _merge_word(symbols, pair, pair[0] + pair[1])
        if len(self._cache) < 100_000:
            self._cache[word] = symbols
        return symbols

    def encode(self, text: str) -> list[str]:
        """Pieces of ``text``: every word split into learned subwords; ``"".join(pieces) == text``."""
        return [piece for word in pretokenize(text) for piece in self._encode_word(word)]

    @staticmethod
    def decode(pieces: Iterable[str]) -> str:
        """The text the pieces came from: their concatenation."""
        pieces = list(pieces)
        bad = [p for p in pieces if not isinstance(p, str)]
        if bad:
            raise TypeError(f"pieces must be strings, got {type(bad[0]).__name__}; map ids to pieces first "
                            f"(vocab.itos[i])")
        return "".join(pieces)

    @property
    def symbols(self) -> list[str]:
        """Every symbol a merge creates, in the order learned (characters not included)."""
        return [a + b for a, b in self.merges]

    def __len__(self) -> int:
        return len(self.merges)

    def __repr__(self) -> str:
        return f"BPE({len(self.merges)} merges: {self.merges[:5]}...)"
