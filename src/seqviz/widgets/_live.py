"""Live mode: a widget that starts from a recorded example and runs one of the book's trained models on the reader's
own input (issue 34).

``Widget.live(model, text, ...)`` computes the recorded example with the package's model (``seqviz.live.kernel``),
builds the widget from it and sets its ``live_spec`` trait: which model, the recorded input, how the bar under the
title names it, and the ``group`` of widgets that share one input on a page. The page reads the same as before until
the reader presses "Run live on your own input"; the view's half (``static/_live.js``) then runs the model where the
widget is:

- in the static book (no kernel), in the browser: the book's own copy of onnxruntime-web and the export of
  ``make live-models``, loaded once per page and shared by every widget (``static/live.js``);
- where a kernel is attached (JupyterLab, Notebook, VS Code, Colab), in the kernel: the view sends the input as a
  custom message, the widget (this mixin) runs the same package model in PyTorch, sets its traits with ``set_data``
  (the view redraws) and replies with the notes to show. The package ships no onnxruntime-web and no export, so this
  is what works from an installed wheel; and it is the package's own model, the one the chapter teaches.

A message is ``{"type": "seqviz-live", "id", "action": "run" | "generate", "text", ...}``; the reply
``{"type": "seqviz-live-reply", "id", "notes": [...], "status": "...", "error": "...", "details": {...}}``.
"""
from __future__ import annotations

import math
import numbers
from typing import ClassVar

import traitlets

__all__ = ["LiveMode", "LIVE_MESSAGE", "check_spec"]

LIVE_MESSAGE = "seqviz-live"
#: what the bar calls the input of each model
INPUT_NAMES = {"char_lm": "prompt", "char_lstm": "text", "dates": "date"}
#: the keys of a live spec that are the spec's own, which a widget's options may not set
SPEC_KEYS = ("model", "text", "group", "input", "multiline", "limits")


def check_spec(spec: dict, models: dict[str, str], widget: str) -> dict:
    """A checked live spec: ``model`` one of ``models`` (the ones this widget can run), ``text`` the recorded input,
    ``group`` (a name or None) and the widget's own options (JSON values); it adds what the bar calls the input, whether
    it is several lines, and the limits of a request (seqviz.live.limits: the view and the kernel read the same)."""
    from seqviz.live.limits import limits

    model, text = spec.get("model"), spec.get("text")
    if model not in models:
        raise ValueError(f"{widget} runs live with {' or '.join(repr(m) for m in models)}, not {model!r}")
    if not isinstance(text, str) or not text:
        raise TypeError(f"the recorded input must be non-empty text (the example the chapter discusses), got {text!r}")
    group = spec.get("group")
    if group is not None and (not isinstance(group, str) or not group.strip()):
        raise TypeError(f"group must be a name shared by the widgets that read one input, or None; got {group!r}")
    return {**spec, "input": INPUT_NAMES[model], "multiline": model != "dates", "limits": limits()}


class LiveMode(traitlets.HasTraits):
    """Mixin of the widgets that can run a model live. A subclass names the models it runs (``_live_models``:
    model -> what it shows) and implements ``_live_data``; ``live`` and the kernel's half come from here."""

    #: empty: no live mode (the widget shows what it was given, as before)
    live_spec = traitlets.Dict().tag(sync=True)
    _live_models: ClassVar[dict[str, str]] = {}

    @classmethod
    def _live_data(cls, spec: dict, text: str, request: dict) -> tuple[tuple, dict, dict]:
        """(set_data's positional and keyword arguments, the reply: notes and status) for ``text`` through
        ``spec["model"]``; ``request`` holds the view's choices (e.g. a layer)."""
        raise NotImplementedError

    @classmethod
    def live(cls, model: str, text: str, *, group: str | None = None, options: dict | None = None, **kwargs):
        """The widget on ``text`` read by ``model`` (the recorded example; computed now with the package's model),
        able to run that model on the reader's input. ``group`` names the widgets of a page that share one input;
        ``options`` are the live mode's own (per widget); other keyword arguments go to the widget."""
        options = dict(options or {})
        taken = [k for k in options if k in SPEC_KEYS]
        if taken:
            raise ValueError(f"options may not set {', '.join(repr(k) for k in taken)}: "
                             f"{'it is' if len(taken) == 1 else 'they are'} the live spec's own (the model, the "
                             f"recorded text and the group are .live()'s arguments: {cls.__name__}.live(model, text, "
                             f"group=...)); options are the widget's own live settings")
        spec = check_spec({"model": model, "text": text, "group": group, **options}, cls._live_models, cls.__name__)
        args, kw, reply = cls._live_data(spec, text, {})
        if reply.get("notes"):
            raise ValueError(f"the recorded example should be read as it is: {'; '.join(reply['notes'])}")
        widget = cls(*args, **kw, **kwargs)
        widget.live_spec = spec
        widget.on_msg(widget._on_live_msg)
        return widget

    def _live_generate(self, request: dict) -> dict:
        raise ValueError(f"{type(self).__name__} does not generate text")

    def _live_run(self, request: dict) -> dict:
        """Run the model on the request's text, show it (set_data) and return the reply's notes and status."""
        args, kw, reply = self._live_data(self.live_spec, request["text"], request)
        self.set_data(*args, **kw)
        self._live_shown(request, reply)
        return reply

    def _live_shown(self, request: dict, reply: dict) -> None:
        """After new live data: set what the view should show of it (default: nothing)."""

    def _on_live_msg(self, _widget, content, _buffers) -> None:
        if not isinstance(content, dict) or content.get("type") != LIVE_MESSAGE:
            return
        from seqviz.live.kernel import LiveInputError

        reply = {"type": f"{LIVE_MESSAGE}-reply", "id": content.get("id")}
        try:
            if not self.live_spec:
                raise ValueError("this widget was not made with .live(...): it has no model to run")
            if not isinstance(content.get("text"), str):
                raise LiveInputError("the input must be text")
            action = content.get("action", "run")
            if action not in ("run", "generate"):
                raise ValueError(f"unknown live action {action!r}")
            reply.update(self._live_run(content) if action == "run" else self._live_generate(content))
        except LiveInputError as e:
            reply.update(error=str(e), details=e.details)
        except Exception as e:                                                    # noqa: BLE001 - said in the widget
            reply.update(error=f"the kernel could not run the model: {type(e).__name__}: {e}")
        self.send(reply)


def count(value, name: str, lo: int, hi: int) -> int:
    """An int in [lo, hi] from a request (the view sends numbers; NaN, infinities, fractions, booleans and anything
    not a number are refused with the same message). The page's runtime says the same (live.js checkLimit)."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value)
            or int(value) != value or not lo <= value <= hi):
        raise ValueError(f"{name} must be a whole number from {lo} to {hi}, got {value!r}")
    return int(value)
