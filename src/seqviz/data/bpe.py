"""Byte-pair encoding (BPE) subwords, learned from a training text (Sennrich, Haddow & Birch, 2016).

Learning: start from characters, count every adjacent pair of symbols inside words (weighted by word frequency),
merge the most frequent pair into one new symbol, and repeat ``num_merges`` times. Encoding a word replays the merges
in the order they were learned, so a rare word splits into pieces the model knows ("unhappiness" -> "un" "happ"
"iness"), and a word never seen still encodes, down to single characters.

One departure from the paper, for a clean round trip: instead of an end-of-word marker ``</w>``, a word carries the
single space before it (" the", as GPT-2's BPE does, Radford et al., 2019), so the pieces of any text concatenate
back to exactly that text: ``"".join(bpe.encode(text)) == text``. Merges never cross a word boundary.

``ByteLevelBPE`` (below) is the same merge loop on bytes, with merges a pretrained model learned: SmolLM2's,
read from its GGUF file (``ByteLevelBPE.from_gguf``), equal to the reference tokenizer's ids
(tests/test_smollm2_tokenizer.py).
"""
from __future__ import annotations

import heapq
import re
import unicodedata
from collections import Counter, defaultdict
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

__all__ = ["BPE", "pretokenize", "ByteLevelBPE", "bytes_to_unicode", "pretokenize_bytelevel",
           "BYTE_LEVEL_PRETOKENIZERS"]

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


# ================================================================================================================
# Byte-level BPE: the tokenizer of a pretrained model (GPT-2's scheme; SmolLM2's merges, read from its GGUF file)
# ================================================================================================================
# The BPE above learns merges over characters. A model pretrained elsewhere comes with its merges already learned,
# over *bytes*: every text is first UTF-8 encoded, so no character is ever unknown (Radford et al., 2019). Three
# steps differ from chapter 7's BPE, the merge loop (``BPE._encode_word``) is the same:
#   1. pre-tokenize with the model's own rule (digits one by one, then GPT-2's regular expression);
#   2. write each pre-token's UTF-8 bytes as printable characters, one per byte (GPT-2's byte-to-unicode table:
#      the space becomes "Ġ", the newline "Ċ"), the alphabet the merges are written in;
#   3. replay the file's merges by rank, then look every piece up in the file's vocabulary.

def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's table from the 256 byte values to printable characters: the 188 printable Latin-1 bytes stand for
    themselves, the other 68 (controls, the space, 0x7F-0xA0, 0xAD) are shifted to U+0100 onwards in byte order."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, shifted = {b: chr(b) for b in keep}, 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + shifted)
            shifted += 1
    return dict(sorted(table.items()))


_BYTE_TO_SYMBOL = bytes_to_unicode()
_SYMBOL_TO_BYTE = {s: b for b, s in _BYTE_TO_SYMBOL.items()}

# Unicode's White_Space property: what \s means in the Oniguruma expressions the reference tokenizers run (Python's
# own \s adds U+001C-U+001F, which are not white space there)
_WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


@lru_cache(maxsize=None)
def _category_class(major: str) -> str:
    """The body of a regex character class holding every code point whose Unicode general category starts with
    ``major`` ("L": letters, \\p{L}; "N": numbers, \\p{N}), which Python's ``re`` cannot name; built on first use."""
    ranges, start = [], None
    for cp in range(0x110001):
        inside = cp <= 0x10FFFF and unicodedata.category(chr(cp))[0] == major
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            ranges.append(f"\\U{start:08x}" if start == cp - 1 else f"\\U{start:08x}-\\U{cp - 1:08x}")
            start = None
    return "".join(ranges)


@lru_cache(maxsize=None)
def _bytelevel_res() -> tuple[re.Pattern, re.Pattern]:
    L, N, S = _category_class("L"), _category_class("N"), _WHITE_SPACE
    digit = re.compile(f"([{N}])")
    # GPT-2's expression (Radford et al., 2019): contractions | letters | numbers | other symbols, each with the one
    # space before it | white space not followed by a word (its last space goes to the word) | trailing white space
    gpt2 = re.compile(f"'s|'t|'re|'ve|'m|'ll|'d| ?[{L}]+| ?[{N}]+| ?[^{S}{L}{N}]+|[{S}]+(?![^{S}])|[{S}]+")
    return digit, gpt2


#: the pre-tokenizers a GGUF file's ``tokenizer.ggml.pre`` may name that this module implements
BYTE_LEVEL_PRETOKENIZERS = ("smollm", "gpt2")


def pretokenize_bytelevel(text: str, pre: str = "smollm") -> list[str]:
    """Split text into the units byte-level BPE merges within, as the model's tokenizer does.

    ``"gpt2"``: GPT-2's regular expression. ``"smollm"`` (SmolLM2; the same rule as its tokenizer.json's
    ``Digits(individual_digits=True)`` then ``ByteLevel``, and llama.cpp's): every digit alone first, then GPT-2's
    expression on the text between digits. ``"".join(pretokenize_bytelevel(text)) == text``.
    """
    if not isinstance(text, str):
        raise TypeError(f"expected text as str, got {type(text).__name__}")
    if pre not in BYTE_LEVEL_PRETOKENIZERS:
        raise ValueError(f"unknown pre-tokenizer {pre!r}; implemented: {BYTE_LEVEL_PRETOKENIZERS}")
    digit, gpt2 = _bytelevel_res()
    if pre == "gpt2":
        return gpt2.findall(text)
    out: list[str] = []
    for i, part in enumerate(digit.split(text)):   # odd positions hold the digits the split kept
        if i % 2:
            out.append(part)
        elif part:
            out.extend(gpt2.findall(part))
    return out


class ByteLevelBPE(BPE):
    """A pretrained byte-level BPE tokenizer: ``encode(text) -> ids``, ``decode(ids) -> text``.

    ``tokens`` is the vocabulary (id -> token, written in GPT-2's byte alphabet), ``merges`` the learned merges in
    rank order, ``specials`` the ids of control tokens (``<|im_start|>``...), which ``encode`` recognises in the text
    only with ``allow_special=True``. Build it from a GGUF file with :meth:`from_gguf`.
    """

    def __init__(self, tokens: Sequence[str], merges: Iterable[tuple[str, str]], *, pre: str = "smollm",
                 specials: Iterable[int] = (), bos_id: int | None = None, eos_id: int | None = None,
                 pad_id: int | None = None, unk_id: int | None = None, chat_template: str | None = None):
        super().__init__(merges)
        if pre not in BYTE_LEVEL_PRETOKENIZERS:
            raise ValueError(f"unknown pre-tokenizer {pre!r}; implemented: {BYTE_LEVEL_PRETOKENIZERS}")
        self.tokens: list[str] = list(tokens)
        if not self.tokens or not all(isinstance(t, str) and t for t in self.tokens):
            raise ValueError("tokens must be a non-empty list of non-empty strings")
        self.vocab: dict[str, int] = {t: i for i, t in enumerate(self.tokens)}
        if len(self.vocab) != len(self.tokens):
            dup = next(t for t in self.tokens if self.tokens.count(t) > 1)
            raise ValueError(f"the vocabulary lists {dup!r} twice")
        for a, b in self.merges:
            if a not in self.vocab or b not in self.vocab or a + b not in self.vocab:
                raise ValueError(f"merge {a!r} + {b!r} uses or makes a token outside the vocabulary")
        self.pre = pre
        self.specials: dict[str, int] = {}
        for i in specials:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self.tokens):
                raise ValueError(f"special token id {i!r} is outside the vocabulary of {len(self.tokens)}")
            self.specials[self.tokens[i]] = i
        for name, i in (("bos_id", bos_id), ("eos_id", eos_id), ("pad_id", pad_id), ("unk_id", unk_id)):
            if i is not None and (isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self.tokens)):
                raise ValueError(f"{name} {i!r} is outside the vocabulary of {len(self.tokens)}")
        self.bos_id, self.eos_id, self.pad_id, self.unk_id = bos_id, eos_id, pad_id, unk_id
        self.chat_template = chat_template
        # specials as one alternation, longest first (leftmost-longest, as the reference's added-token matcher)
        self._special_re = (re.compile("|".join(map(re.escape, sorted(self.specials, key=len, reverse=True))))
                            if self.specials else None)
        self._ids_cache: dict[str, tuple[int, ...]] = {}

    # -- reading a GGUF file -------------------------------------------------------------------------------------
    @classmethod
    def from_gguf(cls, path) -> "ByteLevelBPE":
        """The tokenizer a GGUF model file (a path, or a ``gguf.GGUFReader`` already open) stores in its
        ``tokenizer.*`` metadata (llama.cpp's format): tokens, merges, token types (type 3, control, marks a special
        token), the pre-tokenizer's name, the bos/eos/pad/unk ids and the chat template. Raises ``ValueError``
        naming the field that is missing or not supported."""
        from seqviz.data.gguf_file import gguf_name, open_gguf

        reader = open_gguf(path)  # a path, or a gguf.GGUFReader the caller has already opened
        path = gguf_name(path)

        def strings(f):
            return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

        meta: dict[str, object] = {}
        for name, f in reader.fields.items():
            if not name.startswith("tokenizer."):
                continue
            if name in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges"):
                meta[name] = strings(f)
            elif name == "tokenizer.ggml.token_type":
                meta[name] = [int(f.parts[i][0]) for i in f.data]
            else:
                meta[name] = f.contents()
        return cls.from_metadata(meta, source=str(path))

    @classmethod
    def from_metadata(cls, meta: Mapping[str, object], source: str = "the metadata") -> "ByteLevelBPE":
        """Build from GGUF ``tokenizer.*`` fields given as a mapping (field name -> value), as :meth:`from_gguf`
        reads them."""
        def need(name):
            if name not in meta:
                raise ValueError(f"{source} has no field {name!r}: it holds no byte-level BPE tokenizer")
            return meta[name]

        model = need("tokenizer.ggml.model")
        if model != "gpt2":
            raise ValueError(f"{source}: tokenizer.ggml.model is {model!r}; ByteLevelBPE reads byte-level BPE "
                             f"tokenizers ('gpt2'), not SentencePiece ('llama') or others")
        pre = need("tokenizer.ggml.pre")
        if pre not in BYTE_LEVEL_PRETOKENIZERS:
            raise ValueError(f"{source}: tokenizer.ggml.pre is {pre!r}; implemented pre-tokenizers: "
                             f"{BYTE_LEVEL_PRETOKENIZERS}")
        tokens = list(need("tokenizer.ggml.tokens"))
        types = list(need("tokenizer.ggml.token_type"))
        if len(types) != len(tokens):
            raise ValueError(f"{source}: tokenizer.ggml.token_type has {len(types)} entries for {len(tokens)} tokens")
        merges = []
        for m in need("tokenizer.ggml.merges"):
            pair = tuple(m.split(" "))
            if len(pair) != 2:
                raise ValueError(f"{source}: tokenizer.ggml.merges holds {m!r}, not two tokens split by one space")
            merges.append(pair)

        def opt_id(name):
            v = meta.get(name)
            return None if v is None else int(v)

        try:
            return cls(tokens, merges, pre=pre, specials=[i for i, t in enumerate(types) if t == 3],
                       bos_id=opt_id("tokenizer.ggml.bos_token_id"), eos_id=opt_id("tokenizer.ggml.eos_token_id"),
                       pad_id=opt_id("tokenizer.ggml.padding_token_id"),
                       unk_id=opt_id("tokenizer.ggml.unknown_token_id"),
                       chat_template=meta.get("tokenizer.chat_template"))
        except ValueError as e:
            raise ValueError(f"{source}: {e}") from e

    # -- text -> ids -----------------------------------------------------------------------------------------------
    def _word_ids(self, word: str) -> tuple[int, ...]:
        ids = self._ids_cache.get(word)
        if ids is not None:
            return ids
        symbols = "".join(_BYTE_TO_SYMBOL[b] for b in word.encode("utf-8"))
        missing = [s for s in symbols if s not in self.vocab]
        if missing:
            raise ValueError(f"{word!r} holds byte 0x{_SYMBOL_TO_BYTE[missing[0]]:02x}, which this vocabulary lacks "
                             f"(it never met that byte in training), so the text cannot be encoded; remove or "
                             f"replace the character")
        ids = tuple(self.vocab[p] for p in self._encode_word(symbols))   # chapter 7's merge loop, by rank
        if len(self._ids_cache) < 100_000:
            self._ids_cache[word] = ids
        return ids

    def _chunks(self, text: str, allow_special: bool):
        """(text, None) pieces between special tokens and (token, id) for each special one found."""
        if not allow_special or self._special_re is None:
            yield text, None
            return
        at = 0
        for m in self._special_re.finditer(text):
            yield text[at:m.start()], None
            yield m.group(), self.specials[m.group()]
            at = m.end()
        yield text[at:], None

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Token ids of ``text``. Special tokens typed in the text (``<|im_end|>``) become their one id only with
        ``allow_special=True`` (for prompts the program builds, such as :meth:`apply_chat_template`'s); otherwise
        they are spelled out like any text, so a user's text cannot forge a control token."""
        if not isinstance(text, str):
            raise TypeError(f"expected text as str, got {type(text).__name__}")
        ids: list[int] = []
        for chunk, special in self._chunks(text, allow_special):
            if special is not None:
                ids.append(special)
                continue
            for word in pretokenize_bytelevel(chunk, self.pre):
                ids.extend(self._word_ids(word))
        return ids

    def tokenize(self, text: str, *, allow_special: bool = False) -> list[str]:
        """The tokens of ``text`` as the vocabulary writes them ("Ġworld": a space, then "world")."""
        return [self.tokens[i] for i in self.encode(text, allow_special=allow_special)]

    # -- ids -> text -----------------------------------------------------------------------------------------------
    def _check_ids(self, ids) -> list[int]:
        if isinstance(ids, str):
            raise TypeError("decode takes token ids; got a str (encode it first)")
        if hasattr(ids, "tolist"):  # a tensor or an array
            ids = ids.tolist()
        ids = list(ids)
        bad = [i for i in ids if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self.tokens)]
        if bad:
            raise ValueError(f"token id {bad[0]!r} is not an int in [0, {len(self.tokens)})")
        return ids

    def decode_bytes(self, ids, *, skip_special: bool = False) -> bytes:
        """The UTF-8 bytes the ids stand for (a generated prefix may end inside a character)."""
        ids = self._check_ids(ids)
        out = bytearray()
        for i in ids:
            t = self.tokens[i]
            if t in self.specials and self.specials[t] == i:
                if not skip_special:
                    out += t.encode("utf-8")
            else:
                out += bytes(_SYMBOL_TO_BYTE[s] for s in t)
        return bytes(out)

    def decode(self, ids, *, skip_special: bool = False) -> str:
        """The text the ids stand for: ``decode(encode(text)) == text``. Bytes that do not form a whole character
        (a generation cut inside one) decode to U+FFFD; special tokens are written out unless ``skip_special``."""
        return self.decode_bytes(ids, skip_special=skip_special).decode("utf-8", errors="replace")

    # -- chat ------------------------------------------------------------------------------------------------------
    def apply_chat_template(self, messages: Sequence[Mapping[str, str]], add_generation_prompt: bool = True) -> str:
        """The prompt the model was instruction-tuned on (ChatML): each message as ``<|im_start|>role\\n`` content
        ``<|im_end|>\\n``; a default system message first when the conversation has none; with
        ``add_generation_prompt`` the opening of the assistant's turn. Encode it with ``allow_special=True``.

        Written by hand for the ChatML template SmolLM2's file holds (checked, so another file's template is
        refused rather than rendered wrongly); the system message's text is read from the file's template.
        """
        system = _chatml_default_system(self.chat_template)
        if isinstance(messages, (str, Mapping)) or not isinstance(messages, Sequence):
            raise TypeError("messages must be a list of {'role': ..., 'content': ...} dicts")
        if not messages:
            raise ValueError("cannot apply the chat template to an empty conversation: give at least one message")
        out = []
        for k, m in enumerate(messages):
            if not (isinstance(m, Mapping) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)):
                raise TypeError(f"message {k} must be a dict with str 'role' and 'content', got {m!r}")
            if k == 0 and m["role"] != "system":
                out.append(f"<|im_start|>system\n{system}<|im_end|>\n")
            out.append(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n")
        if add_generation_prompt:
            out.append("<|im_start|>assistant\n")
        return "".join(out)

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    def __repr__(self) -> str:
        return (f"ByteLevelBPE({len(self.tokens):,} tokens, {len(self.merges):,} merges, pre={self.pre!r}, "
                f"{len(self.specials)} special)")


# The Jinja template this module renders by hand (SmolLM2's, as its GGUF file stores it), with the default system
# message cut out: apply_chat_template checks a file's template against it before rendering
_CHATML_TEMPLATE = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
                    "{{ '<|im_start|>system\nSYSTEM<|im_end|>\n' }}{% endif %}"
                    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
                    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


def _chatml_default_system(template: str | None) -> str:
    if template is None:
        raise ValueError("this tokenizer has no chat template (the file has no tokenizer.chat_template field)")
    head, _, tail = _CHATML_TEMPLATE.partition("SYSTEM")
    if not (template.startswith(head) and template.endswith(tail) and len(template) > len(head) + len(tail)):
        raise ValueError("the file's tokenizer.chat_template is not the ChatML template (SmolLM2's) that "
                         "apply_chat_template renders; render it with jinja2 instead")
    system = template[len(head):len(template) - len(tail)]
    if "'" in system or "{" in system:
        raise ValueError("the default system message of the file's chat template is not a plain string")
    return system
