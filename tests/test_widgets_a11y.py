"""The widgets' Python side of issue 33 (every page fits and reads): the options a chapter uses to say what a heatmap's
axes are (chapter 8's copy trace), AttentionSteps counting from 1 (chapter 6), and static figures that stay readable
in print (a page wide at most, 8 pt labels, colour-blind-safe colours).

The browser side (fitting the column, label sizes, keyboard, text alternatives, axe) is in tests/browser/.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from matplotlib.colors import to_hex

from seqviz.widgets import AttentionHeatmap, AttentionSteps, LSTMGates, PositionalMatrix
from seqviz.widgets.positional import DASHES, OKABE_ITO


def softmax_rows(shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(*shape, generator=g, dtype=torch.float64), -1)


def toks(n, prefix="t"):
    return [f"{prefix}{i}" for i in range(n)]


def copy_trace(**kwargs):
    """A 6-word headline's copy attention over a 120-word article, labelled as chapter 8 shows it."""
    labels = dict(query_label="headline word", key_label="article word", value_label="copy attention")
    return AttentionHeatmap(softmax_rows((6, 120)), toks(6, "h"), toks(120, "a"), **(labels | kwargs))


def tick_sizes(ax):
    return [t.get_fontsize() for t in ax.get_xticklabels() + ax.get_yticklabels()]


# ------------------------------------------------------------------------------- what the axes of a heatmap are ---


def test_axis_labels_default_to_attention_and_reach_the_browser():
    w = AttentionHeatmap(softmax_rows((2, 3, 4, 4)), toks(4))
    assert (w.query_label, w.key_label, w.value_label) == ("query", "key", "attention weight")
    assert (w.layer_names, w.head_names) == ([], [])
    c = copy_trace()
    state = c.get_state()
    assert (state["query_label"], state["key_label"], state["value_label"]) == (
        "headline word", "article word", "copy attention")


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(query_label=""), TypeError, r"query_label must be a non-empty string"),
    (dict(key_label=3), TypeError, r"key_label must be a non-empty string .*got 3"),
    (dict(value_label="  "), TypeError, r"value_label must be a non-empty string"),
    (dict(layer_names=["a"]), ValueError, r"layer_names has 1 entries but the attention has 2 layers"),
    (dict(head_names="abc"), TypeError, r"head_names must be a list of 3 non-empty strings"),
    (dict(head_names=["a", "", "c"]), TypeError, r"head_names must be a list of 3 non-empty strings"),
])
def test_bad_axis_labels_and_names_say_what_to_pass(kwargs, err, match):
    with pytest.raises(err, match=match):
        AttentionHeatmap(softmax_rows((2, 3, 4, 4)), toks(4), **kwargs)


def test_names_reach_the_browser_and_new_data_of_another_shape_drops_them():
    w = AttentionHeatmap(softmax_rows((2, 1, 4, 4)), toks(4), layer_names=["bidirectional", "causal"])
    assert w.layer_names == ["bidirectional", "causal"]
    w.set_data(softmax_rows((2, 1, 3, 3)), toks(3))  # same number of layers: kept
    assert w.layer_names == ["bidirectional", "causal"]
    w.set_data(softmax_rows((3, 1, 3, 3)), toks(3))  # three layers: the two names no longer fit
    assert w.layer_names == []


def test_copy_trace_figure_is_a_labelled_band_that_never_names_a_layer_or_head():
    fig = copy_trace(title="copy").to_figure()
    heat, bar = fig.axes
    assert heat.get_xlabel() == "article word" and heat.get_ylabel() == "headline word"
    assert bar.get_ylabel() == "copy attention"
    assert heat.get_title() == ""  # one distribution: no "layer 0, head 0"
    w_in, h_in = fig.get_size_inches()
    assert w_in <= 8.0 and h_in < w_in / 2  # a wide band, at most a page wide (not a strip beside a tall bar)
    assert min(tick_sizes(heat)) >= 8
    shown = [t.get_text() for t in heat.get_xticklabels()]
    assert shown[0] == "a0" and 10 < len(shown) < 120  # thinned so 8 pt labels fit, every few article words
    assert [t.get_text() for t in heat.get_yticklabels()] == toks(6, "h")  # every headline word


def test_layer_and_head_names_title_the_figure():
    w = AttentionHeatmap(softmax_rows((2, 1, 4, 4)), toks(4), layer_names=["bidirectional", "causal"], layer=1)
    assert w.to_figure().axes[0].get_title() == "causal"
    grid = AttentionHeatmap(softmax_rows((1, 4, 4, 4)), toks(4), view="grid").to_figure()
    assert [ax.get_title() for ax in grid.axes[:4]] == ["head 0", "head 1", "head 2", "head 3"]


# ------------------------------------------------------------------------------------ AttentionSteps from 1 ---


def we_wash_our_cats(**kwargs):
    q, k, v = (torch.randn(4, 8, generator=torch.Generator().manual_seed(s), dtype=torch.float64) for s in range(3))
    return AttentionSteps(q, k, v, ["We", "wash", "our", "cats"], **kwargs)


def test_index_base_is_0_or_1_and_reaches_the_browser():
    assert we_wash_our_cats().index_base == 0
    w = we_wash_our_cats(index_base=1, query=2, causal=True)
    assert w.get_state()["index_base"] == 1 and w.query == 2  # `query` stays a Python index
    for bad in (2, -1, True, "1"):
        with pytest.raises(Exception, match="index_base must be 0 .* or 1"):
            we_wash_our_cats(index_base=bad)


def test_every_query_is_offered_and_counted_as_the_code_counts():
    w = we_wash_our_cats(index_base=1, causal=True)
    assert w.shape[2] == 4 and w.get_state()["query_tokens"] == ["We", "wash", "our", "cats"]
    # the causal mask: the first query sees itself only, the last sees all four (weights from the package's maths)
    assert w.compute(query=0).weights.tolist() == [1.0, 0.0, 0.0, 0.0]
    assert (w.compute(query=3).weights > 0).all()
    assert "query 1 \u201cWe\u201d" in w.to_figure(query=0)._suptitle.get_text()
    assert "query 0 \u201cWe\u201d" in we_wash_our_cats().to_figure(query=0)._suptitle.get_text()


def test_steps_figure_fits_a_page_with_8pt_labels():
    fig = we_wash_our_cats(causal=True).to_figure()
    assert fig.get_size_inches()[0] <= 7.5
    for ax in fig.axes[:3]:
        assert min(tick_sizes(ax)) >= 8
    texts = [t for ax in fig.axes[:3] for t in ax.texts]
    assert texts and min(t.get_fontsize() for t in texts) >= 8


# ------------------------------------------------------------------------------- readable static figures ---


def test_a_long_lstm_trace_prints_a_page_wide_with_8pt_token_labels():
    T, U = 180, 16
    gates = {"f": torch.rand(T, U), "c": torch.randn(T, U)}
    fig = LSTMGates(gates, list("abcdefghij" * 18), step=20).to_figure()
    assert fig.get_size_inches()[0] <= 7.5
    ax = fig.axes[0]
    labels = ax.get_xticklabels()
    assert min(t.get_fontsize() for t in labels) >= 8
    step = labels[1].get_position()[0] - labels[0].get_position()[0]
    assert 1 < step and len(labels) == math.ceil(T / step)  # every step-th token, evenly
    # a short trace keeps every token
    short = LSTMGates({"f": torch.rand(12, 4)}, toks(12)).to_figure()
    assert [t.get_text() for t in short.axes[0].get_xticklabels()] == toks(12)


def test_positional_curves_differ_by_colour_blind_safe_colour_and_by_dash():
    fig = PositionalMatrix(d_model=64, max_len=100, dims=[0, 1, 4, 5, 20, 21]).to_figure()
    assert fig.get_size_inches()[0] <= 7.5
    curves = next(ax for ax in fig.axes if ax.get_xlabel() == "position p" and ax.lines)
    lines = [ln for ln in curves.lines if ln.get_label().startswith("dim")]
    assert [to_hex(ln.get_color()) for ln in lines] == OKABE_ITO[:6]
    dashes = {str(ln.get_linestyle()) + str(getattr(ln, "_dash_pattern", "")) for ln in lines}
    assert len(dashes) == 6  # no two curves told apart by colour alone
    assert len(set(map(str, DASHES))) == len(DASHES) == len(OKABE_ITO)
    assert all(t.get_fontsize() >= 8 for ax in fig.axes for t in ax.get_xticklabels() + ax.get_yticklabels())


def test_beam_tree_figure_prints_8pt_labels_and_marks_pruned_nodes_by_line_too():
    from seqviz.decode import beam_search
    from seqviz.widgets import BeamTree
    from seqviz.worked_examples import SeedBeamScorer

    toy = SeedBeamScorer()
    _, trace = beam_search(toy.next_token_logits, [toy.bos], 3, 6, stop_id=toy.eos, trace=True, with_greedy=True)
    ax = BeamTree(trace, toy, step=4).to_figure().axes[0]
    assert min(t.get_fontsize() for t in ax.texts) >= 8
    assert min(t.get_fontsize() for t in ax.get_legend().get_texts()) >= 8
    pruned = [t for t in ax.texts if to_hex(t.get_color()) == "#595959"]
    assert pruned and all(t.get_bbox_patch().get_linestyle() == ":" for t in pruned)
    assert "pruned (dotted)" in [t.get_text() for t in ax.get_legend().get_texts()]
