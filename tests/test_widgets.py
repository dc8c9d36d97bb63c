"""seqviz.widgets, Python side: accepted shapes, compact payloads, clear errors, traits that reach the browser.

The browser side (rendering, controls, XSS, JS numbers = Python numbers) is tested against the built book in
tests/browser/.
"""
from __future__ import annotations

import ast
import dataclasses
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from matplotlib.figure import Figure

import seqviz
from seqviz.data import Vocab
from seqviz.decode import softmax_with_temperature
from seqviz.widgets import (GATES, AttentionHeatmap, AttentionSteps, BeamTree, LSTMGates, NextTokenDistribution,
                            PositionalMatrix, Quiz, causal_mask, prepare_attention, prepare_gates, prepare_logits,
                            sinusoidal_encoding)
from seqviz.widgets._common import STATIC, dequantize_uint8, quantize_uint8
from seqviz.widgets.positional import MAX_D_MODEL, MAX_LEN

XSS = "<img src=x onerror=alert(1)>"


def softmax_rows(shape, seed=0, mask=None):
    """Random attention weights whose last axis sums to 1 (masked entries exactly 0)."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(*shape, generator=g, dtype=torch.float64)
    if mask is not None:
        scores = scores.masked_fill(~torch.as_tensor(mask), -math.inf)
    return torch.softmax(scores, -1)


def toks(n, prefix="t"):
    return [f"{prefix}{i}" for i in range(n)]


def capture(widget):
    """Record the messages the widget would send to the browser (the comm is a dummy outside a kernel)."""
    sent = []
    widget.comm.send = lambda data=None, metadata=None, buffers=None: sent.append((data, buffers or []))
    return sent


def synced_names(widget):
    skip = {"layout", "tabbable", "tooltip", "comm"}
    return [k for k in widget.keys if not k.startswith("_") and k not in skip]


# --------------------------------------------------------------------------------------------- quantisation ---


@settings(max_examples=60)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                  elements=st.floats(-3, 3, allow_nan=False)), st.floats(0.1, 5))
def test_uint8_round_trip_error_is_at_most_half_a_step(a, width):
    lo, hi = -width, width
    back = dequantize_uint8(quantize_uint8(a, lo, hi), a.shape, lo, hi)
    assert np.abs(back - np.clip(a, lo, hi)).max() <= (hi - lo) / 510 + 1e-12


def test_quantize_rejects_empty_range():
    with pytest.raises(ValueError, match="hi > lo"):
        quantize_uint8(np.zeros(3), 1.0, 1.0)


# ------------------------------------------------------------------------------------------ attention -----------


@pytest.mark.parametrize("shape, expected", [((5, 5), (1, 1, 5, 5)), ((3, 5, 5), (1, 3, 5, 5)),
                                             ((2, 3, 5, 5), (2, 3, 5, 5))])
def test_attention_accepts_every_rank(shape, expected):
    w = AttentionHeatmap(softmax_rows(shape), toks(5))
    assert tuple(w.shape) == expected
    assert len(w.weights) == int(np.prod(expected))  # one byte per weight, not a JSON list of floats
    assert w.key_tokens == w.query_tokens == toks(5)


def test_attention_accepts_numpy_and_cross_attention_with_tq_ne_tk():
    a = softmax_rows((2, 3, 4, 7)).numpy()
    w = AttentionHeatmap(a, toks(4, "q"), key_tokens=toks(7, "k"))
    assert w.shape == [2, 3, 4, 7] and w.key_tokens == toks(7, "k")


def test_attention_bytes_are_c_order_l_h_tq_tk_and_decode_within_a_step():
    # Tq != Tk and L != H so a transposition anywhere would be caught
    a = softmax_rows((2, 3, 4, 6), seed=3).numpy()
    w = AttentionHeatmap(a, toks(4), key_tokens=toks(6))
    buf = np.frombuffer(w.weights, dtype=np.uint8)
    L, H, Tq, Tk = w.shape
    l, h, i, j = 1, 2, 3, 5
    assert buf[((l * H + h) * Tq + i) * Tk + j] == round(a[l, h, i, j] / w.vmax * 255)
    back = dequantize_uint8(w.weights, w.shape, 0.0, w.vmax)
    assert np.abs(back - a).max() <= w.vmax / 510 + 1e-9
    assert w.vmax == pytest.approx(a.max())


def test_attention_rows_must_sum_to_one_along_keys_not_queries():
    a = softmax_rows((4, 6)).numpy()  # rows (queries) sum to 1
    AttentionHeatmap(a, toks(4), key_tokens=toks(6))
    cols = softmax_rows((6, 4)).numpy().T  # (4, 6) whose *columns* sum to 1: the transposed mistake
    with pytest.raises(ValueError, match=r"sums to .*not 1.*last axis"):
        AttentionHeatmap(cols, toks(4), key_tokens=toks(6))


@pytest.mark.parametrize("weights, q, k, match", [
    (np.full(4, 0.25), toks(4), None, "rank 2 .* got rank 1"),
    (np.full((1, 1, 1, 4, 4), 0.25), toks(4), None, "got rank 5.*pick one example"),
    (np.full((4, 4), 0.25), toks(3), None, "query_tokens has 3 entries but .* Tq is 4"),
    (np.full((4, 5), 0.2), toks(4), toks(6), "key_tokens has 6 entries but .* Tk is 5"),
    (np.full((4, 5), 0.2), toks(4), None, "cross-attention.*key_tokens"),
    (np.array([[0.5, np.nan], [0.5, 0.5]]), toks(2), None, "NaN"),
    (np.array([[0.5, np.inf], [0.5, 0.5]]), toks(2), None, "infinite"),
    (np.array([[1.5, -0.5], [0.5, 0.5]]), toks(2), None, "negative.*softmax output"),
    (np.array([[0.5, 0.4], [0.5, 0.5]]), toks(2), None, r"\(0, 0, 0\) sums to 0.9"),
    (np.zeros((0, 0)), [], None, "empty"),
    (np.full((2, 2), 0.5), ["a", 3], None, r"query_tokens\[1\] is int"),
    (np.full((2, 2), 0.5), "ab", None, "not one string"),
    ("weights", toks(2), None, "tensor or array"),
])
def test_attention_bad_input_says_what_is_wrong(weights, q, k, match):
    with pytest.raises((ValueError, TypeError), match=match):
        AttentionHeatmap(weights, q, key_tokens=k)


def test_attention_causal_mask_is_stored_compactly_and_checked():
    T = 5
    allowed = causal_mask(T)
    assert allowed[3, 3] and allowed[3, 0] and not allowed[0, 3]
    a = softmax_rows((2, 3, T, T), mask=allowed)
    w = AttentionHeatmap(a, toks(T), mask=allowed)
    assert w.mask_shape == [1, 1, T, T] and len(w.mask) == T * T
    assert np.array_equal(np.frombuffer(w.mask, np.uint8).reshape(T, T), allowed.astype(np.uint8))
    assert AttentionHeatmap(a, toks(T), mask="causal").mask == w.mask
    # a per-head mask (H, T, T) is kept per head
    per_head = np.broadcast_to(allowed, (3, T, T))
    assert AttentionHeatmap(a, toks(T), mask=per_head).mask_shape == [1, 3, T, T]


@pytest.mark.parametrize("mask, match", [
    (np.ones((4, 4), bool), "does not fit"),
    (np.full((5, 5), 0.5), "boolean"),
    ("triangular", "causal"),
    (np.ones((2, 2, 2, 2, 5, 5), bool), "rank 2"),
])
def test_attention_bad_mask(mask, match):
    with pytest.raises(ValueError, match=match):
        AttentionHeatmap(softmax_rows((5, 5)), toks(5), mask=mask)


def test_attention_weight_where_the_mask_forbids_is_an_error():
    a = softmax_rows((4, 4))  # not masked: weight above the diagonal
    with pytest.raises(ValueError, match=r"where the mask forbids.*before the softmax"):
        AttentionHeatmap(a, toks(4), mask="causal")


def test_attention_layer_head_view_validated_and_sent_to_the_browser():
    w = AttentionHeatmap(softmax_rows((2, 3, 4, 4)), toks(4))
    sent = capture(w)
    w.layer = 1
    w.head = 2
    w.view = "grid"
    assert [m["state"] for m, _ in sent] == [{"layer": 1}, {"head": 2}, {"view": "grid"}]
    assert all(m["method"] == "update" for m, _ in sent)
    with pytest.raises(ValueError, match="layer=2 is out of range.*0 and 1"):
        w.layer = 2
    with pytest.raises(ValueError, match="head=-1"):
        w.head = -1
    with pytest.raises(Exception, match="grid"):
        w.view = "mosaic"


def test_attention_set_data_sends_one_update_with_a_binary_buffer_and_clamps_selection():
    w = AttentionHeatmap(softmax_rows((2, 3, 4, 4)), toks(4), layer=1, head=2)
    sent = capture(w)
    w.set_data(softmax_rows((1, 1, 3, 3), seed=5), toks(3, "x"))
    assert len(sent) == 1
    msg, buffers = sent[0]
    assert ["weights"] in msg["buffer_paths"] and len(buffers[msg["buffer_paths"].index(["weights"])]) == 9
    assert msg["state"]["shape"] == [1, 1, 3, 3] and msg["state"]["query_tokens"] == toks(3, "x")
    assert (w.layer, w.head) == (0, 0)


def test_attention_static_figure():
    T = 5
    w = AttentionHeatmap(softmax_rows((2, 3, T, T), mask=causal_mask(T)), toks(T), mask="causal", title="t")
    fig = w.to_figure()
    assert isinstance(fig, Figure) and sum(ax.get_visible() for ax in fig.axes) == 2  # heatmap + colour bar
    grid = w.to_figure(layer=1, grid=True)
    assert sum(ax.get_visible() for ax in grid.axes) == 3 + 1
    with pytest.raises(ValueError, match="layer=4"):
        w.to_figure(layer=4)


@settings(max_examples=25)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 9), st.integers(1, 9), st.integers(0, 10_000))
def test_attention_any_valid_shape_round_trips(L, H, Tq, Tk, seed):
    a = softmax_rows((L, H, Tq, Tk), seed=seed)
    d = prepare_attention(a, toks(Tq), toks(Tk))
    assert d.weights.shape == (L, H, Tq, Tk)
    np.testing.assert_allclose(d.weights.sum(-1), 1.0, atol=1e-9)


# ---------------------------------------------------------------------------------------------- LSTM gates -------


def lstm_traces(T=7, units=5, seed=0):
    """Real gate traces of a torch.nn.LSTM, recomputed step by step from its weights (PyTorch order i, f, g, o)."""
    torch.manual_seed(seed)
    lstm = torch.nn.LSTM(3, units, batch_first=True)
    x = torch.randn(1, T, 3)
    W, U, b = lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0 + lstm.bias_hh_l0
    h, c = torch.zeros(units), torch.zeros(units)
    out = {k: [] for k in "figoch"}
    with torch.no_grad():
        for x_t in x[0]:
            zi, zf, zg, zo = (W @ x_t + U @ h + b).split(units)
            f, i, g, o = zf.sigmoid(), zi.sigmoid(), zg.tanh(), zo.sigmoid()
            c = f * c + i * g  # (9.27)
            h = o * torch.tanh(c)  # (9.29)
            for k, v in zip("figoch", (f, i, g, o, c, h)):
                out[k].append(v)
        ref, _ = lstm(x)
    traces = {k: torch.stack(v) for k, v in out.items()}  # each (T, units)
    assert torch.allclose(traces["h"], ref[0], atol=1e-6)
    return traces


def test_gates_from_a_real_lstm_in_slp_order():
    tr = lstm_traces()
    w = LSTMGates.from_traces({k: tr[k] for k in "hcfoig"}, toks(7), gate="c", step=3)
    assert w.gates == ["f", "g", "i", "c", "o", "h"]  # SLP order whatever order was passed
    assert w.shape == [7, 5] and len(w.traces) == 6 * 7 * 5
    assert w.labels[0] == "f_t forget gate (9.22)" and "(9.27)" in w.labels[3]
    assert w.kinds == ["sigmoid", "tanh", "sigmoid", "cell", "sigmoid", "tanh"]
    assert (w.gate, w.step) == ("c", 3)


def test_gate_bytes_layout_and_ranges():
    tr = lstm_traces(T=6, units=4)
    tr["c"] = tr["c"] * 3  # a cell state beyond -1..1 gets its own symmetric scale
    w = LSTMGates({"f": tr["f"], "c": tr["c"]}, toks(6))
    lo, hi = w.ranges[1]
    assert lo == -hi and hi == pytest.approx(float(tr["c"].abs().max()))
    assert w.ranges[0] == [0.0, 1.0]
    buf = np.frombuffer(w.traces, np.uint8).reshape(2, 6, 4)  # (G, T, units)
    back = lo + buf[1] / 255 * (hi - lo)
    assert np.abs(back - tr["c"].numpy()).max() <= (hi - lo) / 510 + 1e-9
    assert np.abs(buf[0] / 255 - tr["f"].numpy()).max() <= 1 / 510 + 1e-9


def test_gates_accept_a_dataclass_and_a_batch_of_one():
    tr = lstm_traces()

    @dataclasses.dataclass
    class Trace:  # what an LSTM layer might return: extra fields (k_t, j_t) are ignored
        f: torch.Tensor
        i: torch.Tensor
        k: torch.Tensor
        h: torch.Tensor | None = None

    w = LSTMGates(Trace(f=tr["f"][None], i=tr["i"][None], k=tr["f"] * tr["c"]), toks(7))
    assert w.gates == ["f", "i"] and w.shape == [7, 5]


@pytest.mark.parametrize("make, tokens, match", [
    (lambda t: {"forget": t["f"]}, 7, "unknown trace name.*'forget'"),
    (lambda t: {}, 7, "no traces given"),
    (lambda t: [t["f"]], 7, "must be a mapping"),
    (lambda t: {"f": t["f"][0]}, 7, r"must be \(T, units\).*shape \(5,\)"),
    (lambda t: {"f": torch.stack([t["f"], t["f"]])}, 7, "For a batch, pick one"),
    (lambda t: {"f": t["f"], "h": t["h"][:, :3]}, 7, "same \\(T, units\\) shape"),
    (lambda t: {"f": t["f"]}, 6, "tokens has 6 entries but the number of time steps T is 7"),
    (lambda t: {"f": t["f"] * float("nan")}, 7, "NaN"),
    (lambda t: {"o": t["o"] * 4 - 2}, 7, r"output gate o_t, a sigmoid.*outside 0..1.*pre-activation"),
    (lambda t: {"g": t["g"] * 3}, 7, r"candidate g_t, a tanh.*outside -1..1"),
    (lambda t: {"f": t["f"][:0]}, 0, "empty"),
])
def test_gates_bad_input_says_what_is_wrong(make, tokens, match):
    with pytest.raises((ValueError, TypeError), match=match):
        LSTMGates(make(lstm_traces()), toks(tokens))


def test_gate_and_step_validated_and_sent_to_the_browser():
    w = LSTMGates({k: v for k, v in lstm_traces().items() if k in "fch"}, toks(7))
    sent = capture(w)
    w.gate = "h"
    w.step = 6
    assert [m["state"] for m, _ in sent] == [{"gate": "h"}, {"step": 6}]
    with pytest.raises(ValueError, match=r"gate 'o' is not among the traces given: \['f', 'c', 'h'\]"):
        w.gate = "o"
    with pytest.raises(ValueError, match="step=7 is out of range"):
        w.step = 7


def test_gates_set_data_and_static_figure():
    w = LSTMGates(lstm_traces(), toks(7), gate="o", step=6)
    sent = capture(w)
    w.set_data({"f": lstm_traces(T=3)["f"]}, ["a", " ", "$"])
    assert len(sent) == 1 and (w.gate, w.step) == ("f", 2)
    fig = w.to_figure()
    assert isinstance(fig, Figure) and len(fig.axes) == 2  # one heatmap + its colour bar
    fig.canvas.draw()  # tokens " " and "$" must not break matplotlib's text layout (mathtext)
    with pytest.raises(ValueError, match="not among"):
        w.to_figure(["c"])


def test_gate_table_matches_slp():
    assert {k: g.equation for k, g in GATES.items()} == {"f": "9.22", "g": "9.24", "i": "9.25", "c": "9.27",
                                                         "o": "9.28", "h": "9.29"}
    assert prepare_gates({"i": torch.full((2, 1), 0.5)}, ["a", "b"]).ranges == {"i": (0.0, 1.0)}


# ------------------------------------------------------------------------------------------ positional -----------


def test_sinusoidal_encoding_equals_the_formula_elementwise():
    max_len, d, base = 9, 6, 100.0
    P = sinusoidal_encoding(max_len, d, base)
    assert P.shape == (max_len, d) and P.dtype == np.float64
    for p in range(max_len):
        for i in range(d // 2):
            angle = p / base ** (2 * i / d)
            assert P[p, 2 * i] == pytest.approx(math.sin(angle), abs=1e-15)
            assert P[p, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-15)
    np.testing.assert_array_equal(sinusoidal_encoding(1, 4)[0], [0.0, 1.0, 0.0, 1.0])  # position 0


def test_sinusoidal_encoding_odd_width_ends_with_a_sine():
    P = sinusoidal_encoding(5, 5)
    assert P.shape == (5, 5)
    np.testing.assert_allclose(P[:, 4], np.sin(np.arange(5) / 10000.0 ** (4 / 5)))


@settings(max_examples=30)
@given(st.integers(2, 60), st.integers(1, 32).map(lambda k: 2 * k), st.floats(2, 1e5))
def test_dot_products_depend_only_on_the_offset(max_len, d, base):
    P = sinusoidal_encoding(max_len, d, base)
    S = P @ P.T
    np.testing.assert_allclose(np.diagonal(S), d / 2, atol=1e-9)
    for offset in range(1, min(max_len, 6)):
        diag = np.diagonal(S, offset)
        np.testing.assert_allclose(diag, diag[0], atol=1e-9)
    assert np.abs(P).max() <= 1.0


@pytest.mark.parametrize("args, err, match", [
    ((0, 4), ValueError, "max_len must be >= 1"),
    ((4, 0), ValueError, "d_model must be >= 1"),
    ((4.5, 4), TypeError, "max_len must be an int"),
    ((4, 4, 1.0), ValueError, "base must be a finite number > 1"),
    ((4, 4, float("nan")), ValueError, "base"),
    ((4, 4, "10000"), TypeError, "base must be a number"),
])
def test_sinusoidal_encoding_bad_input(args, err, match):
    with pytest.raises(err, match=match):
        sinusoidal_encoding(*args)


def test_positional_widget_traits_validated_and_sent():
    w = PositionalMatrix(d_model=16, max_len=50, base=100.0, dims=[0, 3], positions=[2, 40])
    np.testing.assert_array_equal(w.encoding(), sinusoidal_encoding(50, 16, 100.0))
    sent = capture(w)
    w.d_model = 32
    w.base = 1000.0
    w.dims = [1, 31]
    w.positions = [0, 49]
    assert [m["state"] for m, _ in sent] == [{"d_model": 32}, {"base": 1000.0}, {"dims": [1, 31]},
                                             {"positions": [0, 49]}]
    for trait, value, match in [("d_model", MAX_D_MODEL + 2, "above the widget's limit"),
                                ("max_len", MAX_LEN + 1, "above the widget's limit"), ("max_len", 1, ">= 2"),
                                ("base", 0.5, "> 1"), ("dims", [32], r"\[32\] are out of range for d_model=32"),
                                ("dims", [], "1 to 8"), ("positions", [1], "two positions"),
                                ("positions", [1, 50], "out of range for max_len=50")]:
        with pytest.raises(ValueError, match=match):
            setattr(w, trait, value)


def test_positional_defaults_fit_small_settings_and_figure():
    w = PositionalMatrix(d_model=4, max_len=20)
    assert w.dims == [0, 1] and w.positions == [5, 12]
    fig = w.to_figure()
    assert isinstance(fig, Figure) and len(fig.axes) == 5  # three panels + two colour bars


# --------------------------------------------------------------------------------------- next token --------------


def test_next_token_payload_sorted_float32_scores_and_their_tokens_only():
    z = torch.tensor([0.5, 3.0, -1.0, 2.0, float("-inf")])
    w = NextTokenDistribution(z, ["a", "b", "c", "d", "e"], top_k=3)
    logits = np.frombuffer(w.logits, "<f4")
    assert w.tokens == ["b", "d", "a", "c", "e"]
    np.testing.assert_array_equal(logits, z.numpy()[[1, 3, 0, 2, 4]])
    assert w.k_max == 5 and w.top_k == 3
    # issue 14: no payload the browser does not read (the sorted vocabulary ids were sent and never used)
    assert "ids" not in w.keys
    assert {k for k, v in w.get_state().items() if isinstance(v, (bytes, memoryview))} == {"logits"}


@settings(max_examples=40)
@given(hnp.arrays(np.float64, st.integers(1, 40), elements=st.floats(-30, 30)), st.floats(0.05, 5.0))
def test_browser_formula_on_the_payload_equals_decode_softmax(z, T):
    w = NextTokenDistribution(z, toks(len(z)), temperature=T)
    p = w.probabilities()
    assert p.sum() == pytest.approx(1.0, abs=1e-9) and (p >= 0).all()
    np.testing.assert_allclose(p, softmax_with_temperature(z, T).numpy(), atol=1e-12)
    # what next_token.js computes: softmax((z - z_max) / T) over the sorted float32 payload, shown next to the token
    # string sent in the same order (here "t<vocabulary id>")
    zs = np.frombuffer(w.logits, "<f4").astype(np.float64)
    e = np.exp((zs - zs[0]) / T)
    shown_ids = [int(t[1:]) for t in w.tokens]
    np.testing.assert_allclose(e / e.sum(), p[shown_ids], atol=1e-5)


def test_next_token_accepts_a_vocab_and_log_probs_with_minus_inf():
    v = Vocab.build(["a", "b", "b", "c"])
    logp = torch.full((len(v),), -math.inf)
    logp[v["b"]] = math.log(0.75)
    logp[v["a"]] = math.log(0.25)
    w = NextTokenDistribution(logp, v)
    assert w.tokens[:2] == ["b", "a"] and w.top_k == len(v)  # default 20 bars, fewer for a small vocabulary
    p = w.probabilities(0.5)
    assert p[v["b"]] == pytest.approx(0.75 ** 2 / (0.75 ** 2 + 0.25 ** 2)) and p[v["c"]] == 0.0


@pytest.mark.parametrize("logits, tokens, match", [
    (torch.zeros(2, 3), toks(3), r"shape \(V,\).*logits\[0, -1\]"),
    (torch.zeros(0), [], "empty"),
    (torch.tensor([0.0, float("nan")]), toks(2), "NaN"),
    (torch.tensor([0.0, float("inf")]), toks(2), r"\+inf"),
    (torch.full((3,), -math.inf), toks(3), "every logit is -inf"),
    (torch.zeros(3), toks(4), "vocab_tokens has 4 entries but the number of logits V is 3"),
    (torch.zeros(2), ["a", None], r"vocab_tokens\[1\] is NoneType"),
])
def test_next_token_bad_input(logits, tokens, match):
    with pytest.raises((ValueError, TypeError), match=match):
        NextTokenDistribution(logits, tokens)


def test_next_token_temperature_and_top_k_validated_and_sent():
    w = NextTokenDistribution(torch.arange(30.0), toks(30))
    sent = capture(w)
    w.temperature = 0.5
    w.top_k = 7
    assert [m["state"] for m, _ in sent] == [{"temperature": 0.5}, {"top_k": 7}]
    for trait, value, err, match in [("temperature", 0.0, ValueError, "must be > 0.*greedy"),
                                     ("temperature", -1.0, ValueError, "> 0"),
                                     ("temperature", 9.0, ValueError, "outside the slider's range"),
                                     ("temperature", float("nan"), TypeError, "number"),
                                     ("top_k", 0, ValueError, "between 1 and 30"),
                                     ("top_k", 31, ValueError, "between 1 and 30"),
                                     ("top_k", True, TypeError, "int")]:
        with pytest.raises(err, match=match):
            setattr(w, trait, value)
    with pytest.raises(ValueError, match="> 0"):
        w.probabilities(0)


def test_next_token_static_figure_and_set_data():
    w = NextTokenDistribution(torch.tensor([1.0, 2.0, 0.0]), [" ", "$", XSS])
    fig = w.to_figure([0.5, 2.0])
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    fig.canvas.draw()
    sent = capture(w)
    w.set_data(torch.tensor([0.0, 1.0]), ["x", "y"])
    assert len(sent) == 1 and w.tokens == ["y", "x"] and w.top_k == 2


def test_prepare_logits_returns_float_scores_and_tokens():
    z, t = prepare_logits([1, 2, 3], ["a", "b", "c"])
    assert z.dtype == np.float64 and t == ["a", "b", "c"]


# ------------------------------------------------------------------------------------------ ES modules -----------

WIDGETS = {
    "attention.js": lambda: AttentionHeatmap(softmax_rows((2, 2, 3, 3)), toks(3)),
    "lstm_gates.js": lambda: LSTMGates(lstm_traces(), toks(7)),
    "positional.js": lambda: PositionalMatrix(),
    "next_token.js": lambda: NextTokenDistribution(torch.arange(5.0), toks(5)),
    "beam_tree.js": lambda: BeamTree.from_search(lambda ctx: torch.log_softmax(torch.arange(6.0) * (len(ctx) % 3), 0),
                                                 [0], 2, 3, stop_id=5, tokens=toks(6)),
    "attention_steps.js": lambda: AttentionSteps(torch.randn(2, 3, 4), torch.randn(2, 3, 4), torch.randn(2, 3, 5),
                                                 toks(3)),
    "quiz.js": lambda: Quiz("Which?", [("a", True, "because"), ("b", False, "because not")]),
}


PRELUDE = STATIC / "_prelude.js"


def top_level_names(js: str) -> set[str]:
    """Names a module file declares at its top level (const/let/function/class at column 0)."""
    names = set()
    for line in js.splitlines():
        m = re.match(r"(?:export )?(?:const|let|var|function\*?|class) +(\w+)", line)
        if m:
            names.add(m.group(1))
            if line.startswith(("const ", "let ")):  # const A = 1, B = 2;
                names.update(re.findall(r",\s*(\w+)\s*=", line.split("//")[0]))
    return names


def listened(js: str) -> set[str]:
    """Trait names the view re-renders on: the lists in its `onChanges(model, {...}, redraw)`, whose clean-up
    function render() returns (alone or with the resize observer's)."""
    m = re.search(r"(?:return|const (\w+) =) onChanges\(model, \{(.*?)\}, ", js, re.S)
    assert m, "the view must call onChanges(model, {kind: [traits]}, redraw) so it follows updates from Python"
    if m.group(1):  # kept in a variable: render() must return a clean-up that calls it
        assert re.search(rf"return \(\) => \{{[^}}]*\b{m.group(1)}\(\)", js), "render() must return the clean-up"
    return set(re.findall(r'"(\w+)"', m.group(2)))


LIVE_VIEW = STATIC / "_live.js"
LIVE = {"next_token.js", "attention.js", "attention_steps.js", "lstm_gates.js", "beam_tree.js"}  # have a live mode


@pytest.mark.parametrize("name", sorted(WIDGETS))
def test_es_module_is_the_shared_prelude_then_the_widget_file(name):
    w = WIDGETS[name]()
    prelude, own = PRELUDE.read_text(), (STATIC / name).read_text()
    parts = [prelude] + ([(STATIC / "_random.js").read_text(), LIVE_VIEW.read_text()] if name in LIVE else []) + [own]
    assert w._esm == "\n".join(parts)  # read from the packaged files, not an inline string
    assert w._css == (STATIC / "widgets.css").read_text()
    assert own.rstrip().endswith("export default { render };") and "export default" not in prelude
    assert all("export default" not in part for part in parts[:-1])
    # loaded alone from a blob: URL, the module can import nothing statically; token text never goes through an HTML
    # parser (the live view imports the book's runtime module dynamically, by URL)
    assert not re.search(r"^\s*import[\s({]", w._esm, re.M)
    assert "innerHTML" not in w._esm and "insertAdjacentHTML" not in w._esm and "outerHTML" not in w._esm
    # a name declared in two of the files would be a SyntaxError in the browser only
    names = [top_level_names(part) for part in parts]
    clash = {n for i, a in enumerate(names) for b in names[i + 1:] for n in a & b}
    assert not clash, f"{name} declares {sorted(clash)} twice (prelude, live view, widget)"


@pytest.mark.parametrize("name", sorted(WIDGETS))
def test_es_module_reads_and_follows_every_synced_trait(name):
    """Every trait sent to the browser is read by the view (no unused payload, issue 14) and re-rendered on."""
    w = WIDGETS[name]()
    traits = set(synced_names(w))
    unread = sorted(t for t in traits if f'model.get("{t}")' not in w._esm)
    assert not unread, f"{name} never reads the synced trait(s) {unread}: stop sending them"
    assert listened((STATIC / name).read_text()) == traits


def test_no_other_widget_modules_than_these_the_prelude_and_the_live_view():
    # live*.js: the live runtime (vendor/live/live.js in the built book), tested with the live models
    assert sorted(p.name for p in STATIC.glob("*.js") if not p.name.startswith("live")) == sorted(
        [*WIDGETS, "_prelude.js", "_random.js", "_live.js"])


def test_esm_names_a_missing_widget_module_clearly():
    from seqviz.widgets._common import esm

    with pytest.raises(FileNotFoundError, match=r"no widget module .*nope\.js.*attention\.js"):
        esm("nope.js")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (the browser tests parse it too)")
@pytest.mark.parametrize("name", sorted(WIDGETS))
def test_es_module_parses_as_a_module(name, tmp_path):
    f = tmp_path / f"{name[:-3]}.mjs"
    f.write_text(WIDGETS[name]()._esm)
    r = subprocess.run(["node", "--check", str(f)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


# ------------------------------------------------------------------- widgets import models, never the reverse -----

SRC = Path(seqviz.__file__).resolve().parent


def widget_imports(path: Path, root: Path) -> list[str]:
    """Where the module at ``path`` (inside the package folder ``root``) imports seqviz.widgets: ``"line: what"``.

    Absolute and relative imports count, at any depth (inside functions too), and so do
    ``importlib.import_module("seqviz.widgets...")`` / ``__import__`` calls with a literal name.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = (root.name, *path.relative_to(root).parent.parts)  # e.g. ("seqviz", "rnn")
    hits = []

    def is_widgets(name: str | None) -> bool:
        return bool(name) and (name == "seqviz.widgets" or name.startswith("seqviz.widgets."))

    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            mod = ".".join([*base, *([node.module] if node.module else [])])
            names = [mod, *(f"{mod}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if fn in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                names = [node.args[0].value]
        hits += [f"{node.lineno}: {n}" for n in names if is_widgets(n)]
    return hits


def test_no_module_outside_widgets_imports_seqviz_widgets():
    modules = [p for p in SRC.rglob("*.py") if "widgets" not in p.relative_to(SRC).parts[:1]]
    assert len(modules) > 10 and SRC / "attention.py" in modules  # the walk really covers the package
    offenders = {str(p.relative_to(SRC)): h for p in modules if (h := widget_imports(p, SRC))}
    assert not offenders, (f"model code must not import the widgets (widgets import models): {offenders}; "
                           f"move what is shared into the model module and import it from there in the widget")


@pytest.mark.parametrize("line, flagged", [
    ("from seqviz.widgets import AttentionHeatmap", True),
    ("import seqviz.widgets.attention as a", True),
    ("from ..widgets import AttentionHeatmap", True),
    ("from .. import widgets", True),
    ("from ..widgets._common import esm", True),
    ("def f():\n    from seqviz import widgets", True),
    ("import importlib\nimportlib.import_module('seqviz.widgets.positional')", True),
    ("from seqviz.attention import causal_mask", False),
    ("from ..widgets_notes import x", False),
    ("from . import widgets", False),  # seqviz.rnn.widgets, another module
    ("import numpy as np", False),
])
def test_the_import_check_finds_every_form(tmp_path, line, flagged):
    pkg = tmp_path / "seqviz" / "rnn"
    pkg.mkdir(parents=True)
    (pkg / "mod.py").write_text(line + "\n")
    assert bool(widget_imports(pkg / "mod.py", tmp_path / "seqviz")) == flagged


def test_widget_package_still_exports_the_model_maths_it_used_to_define():
    """causal_mask, sinusoidal_encoding and GATES moved to the models; old imports keep working, same objects."""
    import seqviz.attention
    import seqviz.lstm
    import seqviz.transformer
    import seqviz.widgets as W
    from seqviz.widgets import attention, lstm_gates, positional

    assert W.causal_mask is attention.causal_mask is seqviz.attention.causal_mask
    assert W.sinusoidal_encoding is positional.sinusoidal_encoding is seqviz.transformer.sinusoidal_encoding
    assert W.GATES is lstm_gates.GATES is seqviz.lstm.GATES
    assert list(W.GATES) == ["f", "g", "i", "c", "o", "h"]  # SLP's order, what the gates view lists
    for name in W.__all__:
        assert getattr(W, name) is not None
    assert {"AttentionHeatmap", "LSTMGates", "PositionalMatrix", "NextTokenDistribution", "causal_mask",
            "sinusoidal_encoding", "GATES", "prepare_attention", "prepare_gates", "prepare_logits"} <= set(W.__all__)
