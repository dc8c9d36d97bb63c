"""Small pure helpers shared by the widgets: turn tensors into checked float arrays and compact byte buffers.

Every check raises ``ValueError``/``TypeError`` saying what was wrong and what to pass instead, so a chapter author
sees "query_tokens has 7 entries but the attention has Tq=8 rows" rather than a blank widget.
"""
from __future__ import annotations

import functools
import pathlib
from typing import Sequence

import numpy as np

STATIC = pathlib.Path(__file__).parent / "static"
CSS = STATIC / "widgets.css"
PRELUDE = STATIC / "_prelude.js"
#: the live mode's view half (seqviz.widgets._live), in the modules of the widgets that can run a model live
LIVE_VIEW = STATIC / "_live.js"
#: the one seeded PRNG, in the live widgets' modules (before the live view) and in the live runtime's
RANDOM = STATIC / "_random.js"
LIVE_WIDGETS = ("next_token.js", "attention.js", "attention_steps.js", "lstm_gates.js", "beam_tree.js")
#: the live runtime (vendor/live/live.js in the built book), not widget modules
RUNTIME = ("live.js", "live_decode.js")


@functools.cache
def esm(name: str) -> str:
    """The ES module of one widget: the shared prelude (palettes, DOM and canvas helpers), the seeded PRNG and the live
    mode's view half for the widgets that have one (LIVE_WIDGETS), then ``static/name``.

    Each module is loaded on its own (in the static book from a blob: URL), so it cannot import a sibling file; the
    shared code is put in front of it here instead, read once per process.
    """
    widget = STATIC / name
    if not widget.is_file() or name.startswith("_") or name in RUNTIME:
        known = sorted(p.name for p in STATIC.glob("*.js") if not p.name.startswith("_") and p.name not in RUNTIME)
        raise FileNotFoundError(f"no widget module {widget}; the widget modules are {known}")
    parts = [PRELUDE] + ([RANDOM, LIVE_VIEW] if name in LIVE_WIDGETS else []) + [widget]
    return "\n".join(p.read_text(encoding="utf-8") for p in parts)


class Described:
    """The widget's plain-text form, which a notebook stores beside the widget: what a reader without the widget
    state (a repository preview, a text-only viewer) sees in its place, instead of an object's memory address."""

    def __repr__(self) -> str:
        title = getattr(self, "title", "") or ""
        return (f"[{type(self).__name__}{': ' + title if title else ''}: an interactive widget, drawn where "
                "the notebook runs or in the HTML book]")


def to_array(x, name: str) -> np.ndarray:
    """A float64 NumPy copy of a tensor/array/nested list; rejects strings, complex and non-numeric input."""
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be a tensor or array of numbers, got {type(x).__name__}")
    if hasattr(x, "detach"):  # torch.Tensor without importing torch
        x = x.detach().cpu().float().numpy()
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a tensor or array of numbers: {err}") from None
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise TypeError(f"{name} must hold numbers, got dtype {a.dtype}; pass a float tensor or array")
    if np.iscomplexobj(a):
        raise TypeError(f"{name} must be real, got complex dtype {a.dtype}")
    return a.astype(np.float64)


def check_nonempty(a: np.ndarray, name: str) -> None:
    if a.size == 0:
        raise ValueError(f"{name} is empty (shape {tuple(a.shape)}); pass at least one value along every axis")


def check_finite(a: np.ndarray, name: str, allow_neg_inf: bool = False) -> None:
    """NaN is always an error; +inf always; -inf only when allowed (log-probabilities of impossible tokens)."""
    if np.isnan(a).any():
        idx = tuple(int(i) for i in np.argwhere(np.isnan(a))[0])
        raise ValueError(f"{name} contains NaN (first at index {idx}); check the model output for overflow or 0/0")
    bad = np.isposinf(a) if allow_neg_inf else np.isinf(a)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        what = "+inf" if allow_neg_inf else "an infinite value"
        raise ValueError(f"{name} contains {what} (first at index {idx}); values must be finite")


def check_tokens(tokens, n: int, name: str, size_name: str) -> list[str]:
    """A list of exactly ``n`` strings (token text, shown in the browser as plain text)."""
    if isinstance(tokens, str):
        raise TypeError(f"{name} must be a list of token strings, not one string; split it first "
                        f"(e.g. seqviz.data.word_tokenize)")
    try:
        toks = list(tokens)
    except TypeError:
        raise TypeError(f"{name} must be a list of strings, got {type(tokens).__name__}") from None
    for i, t in enumerate(toks):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] is {type(t).__name__} {t!r}; every token must be a str "
                            f"(decode ids with Vocab.decode first)")
    if len(toks) != n:
        raise ValueError(f"{name} has {len(toks)} entries but {size_name} is {n}; pass one token per position")
    return toks


def quantize_uint8(a: np.ndarray, lo: float, hi: float) -> bytes:
    """Map [lo, hi] linearly onto 0..255 (round to nearest) and return the raw bytes, C order.

    The browser decodes value = lo + q / 255 * (hi - lo); the error is at most (hi - lo) / 510.
    """
    if not hi > lo:
        raise ValueError(f"quantisation range must have hi > lo, got [{lo}, {hi}]")
    q = np.rint((np.clip(a, lo, hi) - lo) / (hi - lo) * 255.0)
    return np.ascontiguousarray(q, dtype=np.uint8).tobytes()


def dequantize_uint8(buf: bytes, shape: Sequence[int], lo: float, hi: float) -> np.ndarray:
    """Inverse of :func:`quantize_uint8` (what the browser shows), for tests and static figures."""
    q = np.frombuffer(buf, dtype=np.uint8).astype(np.float64).reshape(tuple(shape))
    return lo + q / 255.0 * (hi - lo)


def check_index(value: int, n: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not 0 <= int(value) < n:
        raise ValueError(f"{name}={value} is out of range; it must be between 0 and {n - 1}")
    return int(value)


def visible(token: str) -> str:
    """Show a whitespace-only token (a character-level model's space or newline) with a visible symbol."""
    if token.strip():
        return token
    return token.replace(" ", "\u2423").replace("\n", "\u23ce").replace("\t", "\u21e5")


def plain(token: str) -> str:
    """Token text for matplotlib labels: whitespace made visible and ``$`` escaped so it is never mathtext."""
    return visible(token).replace("$", r"\$")
