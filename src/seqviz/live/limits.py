"""The live models' limits and cropping rules, written once: the export writes them into ``manifest.json`` (read by
the page's runtime, ``static/live.js``), ``.live()`` writes them into each widget's ``live_spec`` (read by the
widgets' views, ``static/_live.js`` and ``next_token.js``), and the kernel (``seqviz.live.kernel``, the widgets'
Python half) applies them from here. So the page and the kernel accept the same requests and read the same characters
of a long input.

- :data:`LIMITS`  the whole-number settings a reader can type: how many characters one request generates and the
  sampling seed (the page's PRNG takes a 32-bit unsigned seed, torch's generator any of those);
- :data:`CROPS`   per model, which end of an input longer than the model reads is kept (nanoGPT's rule for a language
  model: the last ``context`` characters; a date or the LSTM's drawn steps: the first ones) and how many
  (``None``: the model's own context, from its checkpoint).
"""
from __future__ import annotations

__all__ = ["LIMITS", "CROPS", "crop_rule", "limits"]

#: name -> [lowest, highest] whole number a request may give
LIMITS: dict[str, tuple[int, int]] = {"n": (1, 200), "seed": (0, 2**32 - 1)}

#: model -> (keep "end" or "start", most characters read (None: the model's context), why (None: the model's
#: context is the reason))
CROPS: dict[str, tuple[str, int | None, str | None]] = {
    "char_lm": ("end", None, None),
    "char_lstm": ("start", 200, "the widget draws at most 200"),
    "dates": ("start", None, None),
}


def limits() -> dict[str, list[int]]:
    """:data:`LIMITS` as JSON (what the manifest and a live spec hold)."""
    return {name: [lo, hi] for name, (lo, hi) in LIMITS.items()}


def crop_rule(model: str, context: int | None = None) -> dict:
    """How ``model`` crops a long input, as JSON: ``{"keep", "max", "why"}`` (``context``: what the model reads, used
    where the rule says the model's own context). ``keep`` "end" keeps the last ``max`` characters, "start" the
    first."""
    if model not in CROPS:
        raise ValueError(f"no cropping rule for the model {model!r}; the live models are {', '.join(CROPS)}")
    keep, most, why = CROPS[model]
    most = context if most is None else most
    if not isinstance(most, int) or most < 1:
        raise ValueError(f"{model} reads the model's own context: pass it (a positive int), got {most!r}")
    return {"keep": keep, "max": most, "why": why}
