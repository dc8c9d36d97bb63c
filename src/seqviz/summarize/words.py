"""Word-level tokens for the copy models, with per-article extended ids (See et al. 2017).

Words are lowercased (ROUGE compares lowercased tokens too, and a headline's capitals are not its article's:
"High fuel prices" vs "high fuel prices"); the article's own spelling comes back when a headline is shown
(:meth:`WordTokenizer.detokenize`). The vocabulary holds the training words seen at least ``min_count`` times;
every other article word gets an *extended id* V + k (its rank among the article's out-of-vocabulary words), so
the copy head can point at it and a headline can contain it. A headline word that is neither in the vocabulary
nor in its article is ``<unk>``: never a training target, never generated.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import NamedTuple, Sequence

from seqviz.data.text import Vocab

__all__ = ["WORD_SPECIALS", "word_tokens", "SourceIds", "WordTokenizer"]

#: <pad> <unk> <s> </s> and SLP's delimiter δ (ids 0-4)
WORD_SPECIALS = ("<pad>", "<unk>", "<s>", "</s>", "<δ>")
_WORD = re.compile(r"[A-Za-z0-9]+(?:[-.,'’][A-Za-z0-9]+)*|[£$%&]|[^\sA-Za-z0-9]")


def word_tokens(text: str, lower: bool = True) -> list[str]:
    """Words (letters/digits, with inner - . , ' kept: "BA's", "pre-tax", "3.5") and single punctuation marks;
    ``lower``: each token lowercased. The text is split as written, then lowercased, so both forms have the same
    tokens in the same places (lowercasing first would not: "İ" becomes two characters, the Kelvin sign an ASCII k)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    tokens = _WORD.findall(text)
    return [t.lower() for t in tokens] if lower else tokens


class SourceIds(NamedTuple):
    """An article as the copy model reads it: ``ids`` (vocabulary ids, ``<unk>`` for unknown words: what the
    embedding reads), ``ext`` (extended ids: V + k for the article's k-th unknown word: what the copy head writes),
    ``oovs`` (the unknown words in order of first occurrence)."""
    ids: list[int]
    ext: list[int]
    oovs: list[str]


class WordTokenizer:
    """Lowercased words <-> ids with the specials of :data:`WORD_SPECIALS` and per-article extended ids."""

    def __init__(self, vocab: Vocab):
        missing = [s for s in WORD_SPECIALS if s not in vocab]
        if missing:
            raise ValueError(f"the vocabulary lacks the specials {missing}: build it with WordTokenizer.learn")
        self.vocab = vocab
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = (vocab[s] for s in WORD_SPECIALS[:4])
        self.delim_id = vocab[WORD_SPECIALS[4]]
        self.special_ids = tuple(vocab[s] for s in WORD_SPECIALS)
        #: tokens with no letter or digit, "%" aside: headline decoding may bar them
        self.punctuation_ids = [i for i, w in enumerate(vocab.itos)
                                if i not in self.special_ids and w != "%" and not any(ch.isalnum() for ch in w)]

    @classmethod
    def learn(cls, texts: Sequence[str], min_count: int = 5) -> "WordTokenizer":
        """The words of ``texts`` (training bodies and headlines) seen at least ``min_count`` times."""
        if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
            raise ValueError(f"min_count must be a positive int, got {min_count!r}")
        counts = Counter(w for t in texts for w in word_tokens(t))
        if not counts:
            raise ValueError("no words to learn a vocabulary from")
        return cls(Vocab.build(counts.elements(), min_freq=min_count, specials=WORD_SPECIALS))

    def __len__(self) -> int:
        return len(self.vocab)

    def encode_source(self, text: str, max_len: int) -> SourceIds:
        """The first ``max_len`` words of an article as :class:`SourceIds`."""
        words = word_tokens(text)[:max_len]
        if not words:
            raise ValueError("the article is empty: there is nothing to summarise")
        V, oovs, ids, ext = len(self), [], [], []
        index: dict[str, int] = {}
        for w in words:
            i = self.vocab.stoi.get(w)
            if i is None:
                if w not in index:
                    index[w] = len(oovs)
                    oovs.append(w)
                ids.append(self.unk_id)
                ext.append(V + index[w])
            else:
                ids.append(i)
                ext.append(i)
        if all(i == self.unk_id for i in ids):
            raise ValueError(f"every word of the article is outside the vocabulary ({len(words)} words, e.g. "
                             f"{words[:3]}): the model has nothing it knows to read; is it English news text?")
        return SourceIds(ids, ext, oovs)

    def encode_target(self, text: str, oovs: Sequence[str], max_len: int) -> list[int]:
        """A headline's extended ids against its article's ``oovs`` (``<unk>`` for words in neither), cut to
        ``max_len`` words."""
        words = word_tokens(text)
        if not words:
            raise ValueError("the headline is empty: every training pair needs a headline of at least one word")
        index = {w: k for k, w in enumerate(oovs)}
        V = len(self)
        return [self.vocab.stoi.get(w, V + index[w] if w in index else self.unk_id) for w in words[:max_len]]

    def words(self, ids: Sequence[int], oovs: Sequence[str]) -> list[str]:
        """The words of extended ids (specials dropped)."""
        V = len(self)
        out = []
        for i in (int(x) for x in ids):
            if i in self.special_ids:
                continue
            if i >= V + len(oovs) or i < 0:
                raise ValueError(f"id {i} is outside this article's extended vocabulary (V + {len(oovs)} = "
                                 f"{V + len(oovs)})")
            out.append(self.vocab.itos[i] if i < V else oovs[i - V])
        return out

    @staticmethod
    def detokenize(words: Sequence[str], article: str | None = None) -> str:
        """A readable headline: each word as the article spells it ("ba's" -> "BA's"; lowercase when the article
        also writes it so, as sentence-initial capitals are not names), the first letter capitalised, no space
        before punctuation."""
        forms: dict[str, Counter] = {}
        for w in word_tokens(article, lower=False) if article else []:
            forms.setdefault(w.lower(), Counter())[w] += 1
        out = [w if w not in forms or w in forms[w] else forms[w].most_common(1)[0][0] for w in words]
        if out:
            out[0] = out[0][:1].upper() + out[0][1:]
        s = " ".join(out)
        s = re.sub(r" ([,.!?;:%)’'])", r"\1", s)
        return re.sub(r"([(£$]) ", r"\1", s)

    def state(self) -> dict:
        """Plain lists, what ``torch.load(weights_only=True)`` reads back."""
        return {"itos": list(self.vocab.itos)}

    @classmethod
    def from_state(cls, state: dict) -> "WordTokenizer":
        return cls(Vocab(state["itos"]))
