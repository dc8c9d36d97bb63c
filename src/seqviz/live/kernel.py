"""The live models where a kernel runs: what the page's runtime (``seqviz.widgets`` ``static/live.js``) computes from
the exported graphs, computed here by the package itself, in PyTorch, on the same shipped checkpoints.

The widgets' live mode (``seqviz.widgets._live``) uses it twice: for the recorded example each live widget starts
from (computed when the chapter runs, stored in the page), and, where a kernel is attached (JupyterLab, Notebook,
VS Code, Colab), for every input the reader types, since no onnxruntime-web or export ships with the package. Input
is checked as the page checks it, with the same messages (tested against the page's): an empty input, characters
outside the model's vocabulary (named; the widget offers to drop them), text longer than the model reads (cropped,
and a note says so), a date in none of the forms the model was trained on (answered, with a note).

Models: ``char_lm`` (chapter 7's shipped character transformer), ``char_lstm`` (chapter 4's shipped character LSTM),
``dates`` (chapter 7's shipped date encoder-decoder); each is loaded once per process (SHA-256 checked).
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Sequence

import torch

from .limits import CROPS, crop_rule

__all__ = ["LIVE_MODELS", "LiveInputError", "Encoded", "encode_text", "char_lm", "char_lstm", "dates",
           "char_lm_forward", "char_lstm_trace", "generate_text", "date_format", "outside_formats_note",
           "dates_greedy", "dates_beam", "LSTM_MAX_CHARS"]

#: the models a live widget can run, and how the widgets name them
LIVE_MODELS = {"char_lm": "the shipped character transformer", "char_lstm": "the shipped character LSTM",
               "dates": "the shipped date encoder-decoder"}
#: the most characters the LSTM's live widget reads (the model itself has no limit; the widget draws every step)
LSTM_MAX_CHARS = CROPS["char_lstm"][1]


class LiveInputError(ValueError):
    """Input a live model cannot read, with a message for the reader; ``details`` as the page's LiveInputError has
    them (``unknown``: the characters outside the vocabulary; ``empty``: nothing left to read)."""

    def __init__(self, message: str, details: dict | None = None):
        super().__init__(message)
        self.details = dict(details or {})


@dataclass(frozen=True)
class Encoded:
    """Text as a model's ids: the characters kept, those dropped (outside the vocabulary), how many were cropped,
    and the notes the widget shows about it."""

    ids: list[int]
    chars: list[str]
    dropped: list[str]
    cropped: int
    notes: list[str]


def _shown(chars: Sequence[str]) -> str:
    """Characters as the page names them (JSON.stringify of each)."""
    return ", ".join(json.dumps(c, ensure_ascii=False) for c in chars)


def encode_text(text: str, stoi: dict[str, int], *, what: str = "the text", drop: bool = False,
                max_len: int | None = None, keep: str = "end", why: str | None = None) -> Encoded:
    """Text -> ids of a character vocabulary, as the page's ``encodeText``: characters outside it are an error naming
    them (or, with ``drop``, left out and named in a note); an empty result is an error; text longer than
    ``max_len`` is cropped to its last (``keep="end"``) or first (``"start"``) ``max_len`` characters, and a note
    says so, with ``why`` (default: the model reads at most that many)."""
    if not isinstance(text, str):
        raise LiveInputError(f"{what} must be text, got {type(text).__name__}")
    chars = list(text)
    if not chars:
        raise LiveInputError(f"{what} is empty: type at least one character", {"empty": True})
    unknown = list(dict.fromkeys(c for c in chars if c not in stoi))
    one = len(unknown) == 1
    if unknown and not drop:
        raise LiveInputError(f"the model does not know {'the character' if one else 'the characters'} "
                             f"{_shown(unknown)} (not in its vocabulary): drop {'it' if one else 'them'} or replace "
                             f"{'it' if one else 'them'}", {"unknown": unknown})
    notes = []
    if unknown:
        chars = [c for c in chars if c in stoi]
        notes.append(f"left out {_shown(unknown)}: not in the model's vocabulary")
        if not chars:
            raise LiveInputError(f"{what} has no character the model knows", {"unknown": unknown, "empty": True})
    cropped = 0
    if max_len is not None and len(chars) > max_len:
        cropped = len(chars) - max_len
        chars = chars[-max_len:] if keep == "end" else chars[:max_len]
        notes.append(f"cropped to its {'last' if keep == 'end' else 'first'} {max_len} characters "
                     f"({why or f'the model reads at most {max_len}'}); {cropped} left out")
    return Encoded(ids=[stoi[c] for c in chars], chars=chars, dropped=unknown, cropped=cropped, notes=notes)


def _cropped(model: str, context: int | None = None) -> dict:
    """encode_text's cropping arguments for ``model`` (seqviz.live.limits.crop_rule, which the export writes into the
    manifest the page reads)."""
    rule = crop_rule(model, context)
    return {"max_len": rule["max"], "keep": rule["keep"], "why": rule["why"]}


# ---- the models, loaded once per process ------------------------------------------------------------------------
@dataclass(frozen=True)
class LiveModel:
    model: torch.nn.Module
    itos: list[str]
    stoi: dict[str, int]
    extra: dict


@functools.cache
def char_lm() -> LiveModel:
    from seqviz.transformer.pretrained import load_char_lm

    model, itos, _ = load_char_lm()
    itos = list(itos)
    return LiveModel(model, itos, {c: i for i, c in enumerate(itos)}, {"context": model.config.max_len})


@functools.cache
def char_lstm() -> LiveModel:
    from seqviz.char_lstm import load_char_lstm

    model, vocab, _ = load_char_lstm()
    itos = list(vocab.itos)                                                       # a typed character is never
    return LiveModel(model, itos, {c: i for i, c in enumerate(itos)}, {})        # a special's text ("<unk>")


@functools.cache
def dates() -> LiveModel:
    from seqviz.transformer.pretrained import load_checkpoint

    from seqviz.data.tasks import date_patterns

    model, vocab, _ = load_checkpoint("dates_transformer")
    src, tgt = list(vocab["src"]), list(vocab["tgt"])
    return LiveModel(model, src, {c: i for i, c in enumerate(src)},
                     {"tgt_itos": tgt, "formats": {k: re.compile(p) for k, p in date_patterns().items()}})


# ---- the character transformer ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CharLMForward:
    """One forward pass over the (cropped) prompt: logits (T, V), attention (L, H, T, T), q, k, v (L, H, T, d_k)."""

    logits: torch.Tensor
    attention: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor


def char_lm_forward(text: str) -> tuple[Encoded, CharLMForward]:
    """The shipped character LM over ``text`` (its last 64 characters): what NextTokenDistribution,
    AttentionHeatmap and AttentionSteps draw."""
    from seqviz.transformer.inspect import queries_keys_values

    m = char_lm()
    enc = encode_text(text, m.stoi, what="the prompt", **_cropped("char_lm", m.extra["context"]))
    ids = torch.tensor([enc.ids])                                                 # (1, T)
    with torch.no_grad():
        logits, _, attn = m.model(ids, return_attention=True)                     # (1, T, V), (1, L, H, T, T)
    qkv = queries_keys_values(m.model, ids[0])                                    # (L, H, T, d_k) each
    return enc, CharLMForward(logits[0], attn[0], qkv.q, qkv.k, qkv.v)


def generate_text(text: str, n: int, *, greedy: bool = True, temperature: float = 1.0, top_k: int | None = None,
                  seed: int = 0) -> tuple[Encoded, str]:
    """``text`` followed by ``n`` characters from the shipped character LM (``seqviz.decode.generate``: greedy, or
    sampled from softmax(top_k(z) / T) with ``seed``; torch's draws, not the page's). Returns (the prompt as read,
    the prompt's text plus the new characters)."""
    from seqviz.decode import generate

    m = char_lm()
    enc = encode_text(text, m.stoi, what="the prompt")                            # the model crops as it steps
    new = generate(m.model, enc.ids, n, greedy=greedy, temperature=temperature, top_k=top_k, seed=seed)
    return enc, "".join(enc.chars) + "".join(m.itos[i] for i in new)


# ---- the character LSTM ------------------------------------------------------------------------------------------
def char_lstm_trace(text: str):
    """The shipped character LSTM over ``text`` (its first LSTM_MAX_CHARS characters) from the zero state:
    (Encoded, [LSTMTrace of each layer, fields (1, T, d_h)])."""
    m = char_lstm()
    enc = encode_text(text, m.stoi, what="the text", **_cropped("char_lstm"))
    return enc, m.model.trace(torch.tensor([enc.ids]))


# ---- the date encoder-decoder ------------------------------------------------------------------------------------
def date_format(text: str) -> str | None:
    """The name of the dates task's form ``text`` is written in (``seqviz.data.tasks.DATE_FORMATS``), or None."""
    return next((name for name, pattern in dates().extra["formats"].items() if pattern.match(text)), None)


def outside_formats_note(text: str) -> str:
    """What the widget says about a date in none of the training forms (the page says the same)."""
    return (f"\u201c{text}\u201d is in none of the {len(dates().extra['formats'])} forms the model was trained on "
            "(such as \u201c3rd of March 1999\u201d or \u201c03-MAR-99\u201d): it still answers, but it never learnt "
            "this one")


def _date_source(text: str) -> tuple[Encoded, torch.Tensor]:
    m = dates()
    enc = encode_text(text, m.stoi, what="the date", **_cropped("dates", m.model.config.max_len))
    notes = enc.notes if date_format("".join(enc.chars)) else enc.notes + [outside_formats_note("".join(enc.chars))]
    return Encoded(enc.ids, enc.chars, enc.dropped, enc.cropped, notes), torch.tensor([enc.ids])


def dates_greedy(text: str) -> tuple[Encoded, list[int], torch.Tensor]:
    """Greedy decoding of a typed date (``EncoderDecoderTransformer.greedy``): (source as read, output ids ending
    with </s> where reached, cross-attention (L, H, T_out, S) of the output)."""
    m = dates()
    enc, src = _date_source(text)
    ids, cross = m.model.greedy(src, return_attention=True)                       # cross (1, L, H, T_out, S)
    return enc, ids[0], cross[0]


def dates_beam(text: str, beam_size: int, length_penalty: float = 0.0):
    """Beam search over a typed date (``seqviz.decode.beam_search`` on the model's binding, with greedy's path):
    (source as read, hypotheses, BeamTrace)."""
    from seqviz.decode import beam_search

    m = dates()
    enc, src = _date_source(text)
    c = m.model.config
    hyps, trace = beam_search(m.model.bind(src), [c.bos_id], beam_size, c.max_len, stop_id=c.eos_id,
                              length_penalty=length_penalty, trace=True, with_greedy=True)
    return enc, hyps, trace
