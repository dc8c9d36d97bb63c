"""Listings of the package's code in the chapters show the model without its input checks (seqviz.listing; issue 40,
item 1): which statements are checks, how a run of them becomes one comment, and that nothing else changes."""
from __future__ import annotations

import inspect
import textwrap

import pytest

from seqviz.listing import ELIDED, elide_checks, listing

SOURCE = '''def forward(self, x, y=None):
    """x (B, T) -> out."""
    _check_ids(x, "x")
    if x.dim() != 2:
        raise ValueError("x must be (B, T)")
    # a comment between two checks
    if y is not None and y.shape != x.shape:
        raise ValueError("y must match x")
    h = self.embed(x)                      # (B, T, d)
    if y is not None:
        self._check_targets(y)
        if y.min() < 0:
            raise ValueError("negative ids")
    if self.training:
        h = self.drop(h)
    else:
        raise RuntimeError("kept: an if with an else is not a check")
    return self.out(h)
'''


def test_a_run_of_checks_becomes_one_comment_and_the_rest_is_untouched():
    got = elide_checks(SOURCE).splitlines()
    assert got == ['def forward(self, x, y=None):',
                   '    """x (B, T) -> out."""',
                   '    ' + ELIDED,
                   '    h = self.embed(x)                      # (B, T, d)',
                   '    ' + ELIDED,                        # an if whose body is only checks goes whole
                   '    if self.training:',
                   '        h = self.drop(h)',
                   '    else:',
                   '        raise RuntimeError("kept: an if with an else is not a check")',
                   '    return self.out(h)']


def test_source_without_checks_comes_back_as_it_was():
    src = "def f(x):\n    if x:\n        return 1\n    return g(x)\n"
    assert elide_checks(src) == src


def test_a_method_is_dedented_and_its_nested_checks_are_found():
    src = textwrap.indent(SOURCE, "    ")
    assert elide_checks(src) == elide_checks(SOURCE)


@pytest.mark.parametrize("obj_path", ["seqviz.seq2seq:Seq2Seq.forward", "seqviz.attention:attention",
                                      "seqviz.transformer.layers:MultiHeadAttention.forward",
                                      "seqviz.transformer.layers:LayerNorm.forward"])
def test_the_chapters_listings_show_no_raise_and_every_other_line_of_the_source(obj_path):
    import importlib

    mod, _, name = obj_path.partition(":")
    obj = importlib.import_module(mod)
    for part in name.split("."):
        obj = getattr(obj, part)
    md = listing(obj).data
    assert md.startswith("```python\n") and md.endswith("```")
    shown = md[len("```python\n"):-3].splitlines()
    assert sum(ELIDED in line for line in shown) >= 1 and not any("raise " in line for line in shown), md
    source = textwrap.dedent(inspect.getsource(obj)).splitlines()
    kept = [line for line in shown if ELIDED not in line]
    it = iter(source)                                   # every shown line is a source line, in order
    assert all(line in it for line in kept), md
    assert shown[0] == source[0] and shown[-1] == source[-1]


def test_bad_input_says_what_to_pass():
    with pytest.raises(ValueError, match="not valid Python"):
        elide_checks("def f(:\n")
    with pytest.raises(TypeError, match="Python source text"):
        elide_checks(42)
    with pytest.raises(TypeError, match="cannot read the source"):
        listing(3)
