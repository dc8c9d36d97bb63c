"""What a notebook stores beside each widget as plain text (a repository preview or a text-only viewer shows it
instead of the widget): the widget's name and title, never an object's memory address."""
from __future__ import annotations

import re

import numpy as np
import pytest

from seqviz.widgets import (AttentionHeatmap, AttentionSteps, BeamTree, LSTMGates, NextTokenDistribution,
                            PositionalMatrix)


def _widgets():
    rng = np.random.default_rng(0)
    yield AttentionHeatmap(np.full((2, 2), 0.5), ["a", "b"], ["a", "b"], title="two tokens")
    yield PositionalMatrix(title="positions")
    yield NextTokenDistribution(rng.normal(size=5), list("abcde"), title="next")
    gates = {k: rng.uniform(size=(1, 3, 4)) for k in ("f", "i", "g", "o", "c", "h")}
    yield LSTMGates(gates, list("abc"), title="gates")


@pytest.mark.parametrize("widget", list(_widgets()), ids=lambda w: type(w).__name__)
def test_the_stored_text_names_the_widget_not_an_address(widget):
    bundle = widget._repr_mimebundle_()
    text = (bundle[0] if isinstance(bundle, tuple) else bundle)["text/plain"]
    assert type(widget).__name__ in text and widget.title in text and "interactive widget" in text, text
    assert not re.search(r"0x[0-9a-f]{6,}", text), text


def test_every_widget_class_has_the_text_form():
    for cls in (AttentionHeatmap, AttentionSteps, BeamTree, LSTMGates, NextTokenDistribution, PositionalMatrix):
        assert "Described" in [c.__name__ for c in cls.__mro__[:2]], cls
