"""BERT's WordPiece tokenizer, from scratch: the text a pretrained BERT-style encoder reads (Devlin et al. 2019).

Two stages, as BERT's own tokenizer (and the ``tokenizer.json`` shipped with such models) has them:

1. **Basic tokenization** (normalise, then split): drop control characters and turn every whitespace character into a
   space; put spaces around CJK ideographs; strip accents (Unicode NFD, then drop the non-spacing marks: "café" ->
   "cafe"); lowercase; then split on whitespace and make every punctuation character a word of its own
   ("don't!" -> "don" "'" "t" "!").
2. **WordPiece**: each word becomes the *longest* prefix found in the vocabulary, then the longest piece of the rest
   that the vocabulary has with the continuation mark "##", and so on, greedily ("unaffable" -> "una" "##ffa"
   "##ble"); a word with a stretch no piece covers becomes [UNK] as a whole.

Unlike BPE (``seqviz.data.bpe``), WordPiece keeps no merge list: the vocabulary file (``vocab.txt``, one token a
line, the id is the line number) is the whole model. Special tokens written in the text ("[MASK]") are kept whole.
``encode`` adds BERT's frame: [CLS] sentence [SEP] (a second sentence follows with its own [SEP] and token type 1).
"""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import NamedTuple, Sequence

__all__ = ["WordPieceTokenizer", "Encoding", "basic_tokenize", "is_punctuation"]

_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# CJK Unified Ideographs and their extensions, the compatibility ideographs (BERT's list): one word per character
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
        (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def is_punctuation(ch: str) -> bool:
    """BERT's punctuation: every ASCII non-alphanumeric printable ("$", "+", "^" too) and Unicode's P* categories."""
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_control(ch: str) -> bool:
    # tab, newline and carriage return count as whitespace, not control
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK)


def _normalize(text: str, lowercase: bool, strip_accents: bool) -> str:
    # clean: drop NUL, the replacement character and control characters; every whitespace becomes one space
    text = "".join(" " if ch.isspace() else ch for ch in text
                   if ch != "\x00" and ch != "\ufffd" and not _is_control(ch))
    # CJK ideographs are words of one character each
    text = "".join(f" {ch} " if _is_cjk(ch) else ch for ch in text)
    if strip_accents:
        # "é" = "e" + U+0301 (a non-spacing mark, category Mn) under NFD: keep the letter, drop the mark
        text = "".join(ch for ch in unicodedata.normalize("NFD", text) if unicodedata.category(ch) != "Mn")
    if lowercase:
        text = "".join(ch.lower() for ch in text)  # character by character (a final "Σ" -> "σ", as BERT's does)
    return text


def basic_tokenize(text: str, lowercase: bool = True, strip_accents: bool | None = None) -> list[str]:
    """Stage 1: normalise ``text`` and split it into words on whitespace and around each punctuation character.

    ``strip_accents=None`` follows ``lowercase`` (BERT's uncased models do both, its cased models neither).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    strip_accents = lowercase if strip_accents is None else strip_accents
    words: list[str] = []
    for chunk in _normalize(text, lowercase, strip_accents).split():
        start = 0
        for i, ch in enumerate(chunk):
            if is_punctuation(ch):
                words += [chunk[start:i], ch] if i > start else [ch]
                start = i + 1
        if start < len(chunk):
            words.append(chunk[start:])
    return words


class Encoding(NamedTuple):
    """One encoded text: ``ids`` and ``tokens`` (T,) with BERT's frame, and ``type_ids`` (T,) (0 for the first
    sentence, 1 for the second)."""
    ids: list[int]
    tokens: list[str]
    type_ids: list[int]


class WordPieceTokenizer:
    """BERT's tokenizer: :func:`basic_tokenize`, then greedy longest-match-first WordPiece over ``vocab``.

    ``vocab``: the tokens in id order (``from_file`` reads a ``vocab.txt``). ``prefix``: the continuation mark of a
    piece inside a word; a word longer than ``max_chars`` characters is [UNK].
    """

    def __init__(self, vocab: Sequence[str], lowercase: bool = True, strip_accents: bool | None = None,
                 prefix: str = "##", max_chars: int = 100):
        vocab = list(vocab)
        if not vocab or not all(isinstance(t, str) and t for t in vocab):
            raise ValueError("vocab must be a non-empty sequence of non-empty token strings, in id order")
        self.token_to_id = {}
        for i, t in enumerate(vocab):
            self.token_to_id.setdefault(t, i)
        missing = [t for t in _SPECIALS if t not in self.token_to_id]
        if missing:
            raise ValueError(f"the vocabulary has no {', '.join(missing)}: a BERT vocabulary starts with its special "
                             f"tokens {', '.join(_SPECIALS)}; is this a BERT-style vocab.txt?")
        self.vocab = vocab
        self.lowercase, self.strip_accents = bool(lowercase), strip_accents
        self.prefix, self.max_chars = prefix, int(max_chars)
        self.unk, self.cls, self.sep, self.pad, self.mask = "[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"
        self.pad_id = self.token_to_id[self.pad]
        # special tokens typed in the text are matched first, on the raw text, and kept whole
        self._special_re = re.compile("(" + "|".join(map(re.escape, sorted(_SPECIALS, key=len, reverse=True))) + ")")

    @classmethod
    def from_file(cls, path: str | Path, **kwargs) -> "WordPieceTokenizer":
        """Read a ``vocab.txt`` (UTF-8, one token a line; a token's id is its line number, from 0)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no vocabulary file at {path}: a BERT-style model ships one as vocab.txt")
        lines = path.read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the newline after the last token
        return cls(lines, **kwargs)

    def __len__(self) -> int:
        return len(self.vocab)

    def __repr__(self) -> str:
        return f"WordPieceTokenizer({len(self)} tokens, lowercase={self.lowercase})"

    def wordpiece(self, word: str) -> list[str]:
        """Stage 2 on one word: the longest vocabulary prefix, then the longest "##" piece of the rest, and so on;
        [UNK] for the whole word if some stretch has no piece (or the word has more than ``max_chars`` characters)."""
        if len(word) > self.max_chars:
            return [self.unk]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:  # shrink from the right until the vocabulary has the piece
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.token_to_id:
                    break
                end -= 1
            if end == start:  # no piece starts here
                return [self.unk]
            pieces.append(piece)
            start = end
        return pieces

    def tokenize(self, text: str) -> list[str]:
        """The WordPiece tokens of ``text`` (no [CLS]/[SEP]); special tokens typed in the text stay whole."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        tokens: list[str] = []
        for part in self._special_re.split(text):
            if part in _SPECIALS:
                tokens.append(part)
            elif part:
                for word in basic_tokenize(part, self.lowercase, self.strip_accents):
                    tokens += self.wordpiece(word)
        return tokens

    def encode(self, text: str, pair: str | None = None) -> Encoding:
        """[CLS] text [SEP] (then pair [SEP], token type 1) -> Encoding(ids, tokens, type_ids)."""
        tokens = [self.cls, *self.tokenize(text), self.sep]
        type_ids = [0] * len(tokens)
        if pair is not None:
            second = [*self.tokenize(pair), self.sep]
            tokens += second
            type_ids += [1] * len(second)
        return Encoding([self.token_to_id[t] for t in tokens], tokens, type_ids)

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        bad = [i for i in ids if not 0 <= int(i) < len(self.vocab)]
        if bad:
            raise ValueError(f"token id {bad[0]} is outside the vocabulary [0, {len(self.vocab)})")
        return [self.vocab[int(i)] for i in ids]

    def decode(self, ids: Sequence[int], skip_special: bool = True) -> str:
        """Ids back to (normalised) text: pieces joined, "##" continuations glued to the word before."""
        toks = [t for t in self.convert_ids_to_tokens(ids) if not (skip_special and t in _SPECIALS)]
        return " ".join(toks).replace(" " + self.prefix, "")
