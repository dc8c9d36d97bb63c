"""More German -> English training pairs for the shipped translator (chapter 5), beside trans-de-en's example sentences.

- ``dictionary_phrase_pairs``: the Ding dictionary's own word and phrase pairs ("eine Leidenschaft für etw. haben ::
  to have a passion for sth."), from the same file as the example sentences. Every dictionary line that holds a
  validation or test sentence is left out whole, so nothing of a held-out line reaches training.
- ``load_ddtp_de_en``: Debian's human-translated package descriptions (DDTP), paired on (Package, Description-md5),
  then synopsis with synopsis, paragraph with paragraph and, where the counts match, sentence with sentence. A
  formulaic software register; it is training data only (the book never scores on it).

The DDTP files are fetched at install time by ``make ddtp`` (apt-get update into a private folder, with
``Acquire::Languages=de``), never committed; see ``../shared/data.md``.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from .corpora import CorpusUnavailableError, SentencePair, _data_root

__all__ = ["dictionary_phrase_pairs", "ddtp_pairs", "load_ddtp_de_en", "held_out_sources", "DDTP_DIR"]

#: where ``make ddtp`` writes Translation-de and Translation-en (unpacked), under the corpora folder
DDTP_DIR = Path("ddtp")

_ANNOTATION = re.compile(r"\{[^}]*\}|\[[^\]]*\]|<[^>]*>|\([^)]*\)|/[A-Za-z.]+/")
_SPACES = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-ZÄÖÜ0-9\"'])")


def _clean(segment: str) -> str:
    """A dictionary segment without its annotations ({f}, [Br.], <...>, (context), /ABBR/), spaces squeezed."""
    return _SPACES.sub(" ", _ANNOTATION.sub(" ", segment)).strip(" ,")


def dictionary_phrase_pairs(lines: Iterable[str], held_out: Iterable[str] = (), min_words: int = 2,
                            max_words: int = 12) -> list[SentencePair]:
    """Word and phrase pairs of trans-de-en lines ``de_1; de_1' | de_2 :: en_1; en_1' | en_2``: the ``|`` segments
    pair up, and within a segment the ``;`` alternatives pair up when both sides have as many (else the first with
    the first). Annotations are removed; a pair is kept when its English side has ``min_words`` to ``max_words``
    words, its German side 1 to ``max_words``, and neither holds a ``/`` alternative. A line that holds one of the
    ``held_out`` German sentences is skipped whole. Duplicates dropped, first occurrence kept."""
    held = set(held_out)
    seen: dict[tuple[str, str], None] = {}
    for line in lines:
        if line.startswith("#") or " :: " not in line:
            continue
        de, en = line.rstrip("\n").split(" :: ", 1)
        ds, es = [s.strip() for s in de.split(" | ")], [s.strip() for s in en.split(" | ")]
        if len(ds) != len(es) or any(d in held for d in ds):
            continue
        for d, e in zip(ds, es):
            da, ea = d.split("; "), e.split("; ")
            for d1, e1 in (zip(da, ea) if len(da) == len(ea) else [(da[0], ea[0])]):
                d1, e1 = _clean(d1), _clean(e1)
                if not d1 or not e1 or "/" in d1 + e1 or "|" in d1 + e1:
                    continue
                if 1 <= len(d1.split()) <= max_words and min_words <= len(e1.split()) <= max_words:
                    seen[(d1, e1)] = None
    return [SentencePair(d, e) for d, e in seen]


def _records(text: str, lang: str) -> dict[tuple[str, str], tuple[str, list[str]]]:
    """(Package, Description-md5) -> (synopsis, paragraphs) of one DDTP Translation-LANG file."""
    out = {}
    for block in text.split("\n\n"):
        package = md5 = None
        synopsis, body = None, []
        for line in block.split("\n"):
            if line.startswith("Package: "):
                package = line[9:].strip()
            elif line.startswith("Description-md5: "):
                md5 = line[17:].strip()
            elif line.startswith(f"Description-{lang}: "):
                synopsis = line.split(": ", 1)[1].strip()
            elif line.startswith(" ") and synopsis is not None:
                body.append(line[1:])
        if package and md5 and synopsis:
            paragraphs, current = [], []
            for line in body + ["."]:
                if line.strip() == ".":
                    if current:
                        paragraphs.append(" ".join(current))
                    current = []
                else:
                    current.append(line.strip())
            out[(package, md5)] = (synopsis, paragraphs)
    return out


def ddtp_pairs(de_text: str, en_text: str, min_words: int = 3, max_words: int = 25) -> list[SentencePair]:
    """German -> English pairs from DDTP's Translation-de and Translation-en texts: each description's synopsis, and
    its sentences where both sides have as many paragraphs and a paragraph as many sentences; both sides
    ``min_words`` to ``max_words`` words; duplicates dropped."""
    de, en = _records(de_text, "de"), _records(en_text, "en")
    seen: dict[tuple[str, str], None] = {}

    def keep(d: str, e: str):
        if min_words <= len(d.split()) <= max_words and min_words <= len(e.split()) <= max_words:
            seen[(d, e)] = None

    for key in sorted(de.keys() & en.keys()):
        (ds, dp), (es, ep) = de[key], en[key]
        keep(ds, es)
        if len(dp) != len(ep):
            continue
        for d, e in zip(dp, ep):
            d_sent, e_sent = _SENTENCE_END.split(d), _SENTENCE_END.split(e)
            if len(d_sent) == len(e_sent):
                for a, b in zip(d_sent, e_sent):
                    keep(a.strip(), b.strip())
    return [SentencePair(d, e) for d, e in seen]


@lru_cache(maxsize=None)
def load_ddtp_de_en() -> tuple[SentencePair, ...]:
    """DDTP's German -> English sentence pairs (a clear error when ``make ddtp`` has not fetched them)."""
    folder = _data_root() / DDTP_DIR
    files = [folder / "Translation-de", folder / "Translation-en"]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise CorpusUnavailableError(
            f"Debian's package-description translations are not here (missing {', '.join(missing)}). `make ddtp` "
            f"fetches them with apt-get (a few MB from the Debian mirror); or set SEQVIZ_DATA_DIR to a folder "
            f"holding {DDTP_DIR}/Translation-de and {DDTP_DIR}/Translation-en.")
    return tuple(ddtp_pairs(files[0].read_text(encoding="utf-8", errors="replace"),
                            files[1].read_text(encoding="utf-8", errors="replace")))


def held_out_sources(corpus) -> set[str]:
    """The German sides of a trans-de-en corpus's validation and test pairs (what phrase pairs must not come near)."""
    return {p.source for p in list(corpus.valid) + list(corpus.test)}

