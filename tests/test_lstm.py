"""Tests for seqviz.lstm: the LSTM and GRU cells and layers against torch.nn.LSTM / GRU with copied weights, scratch
= fused in values and gradients, gate ranges and the cell-state identity (9.27) in the returned traces, the LSTM LM,
the agreement task generator, and clear errors for bad input."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from seqviz.data.tasks import AGREEMENT_VERBS, agreement_examples, agreement_vocabulary
from seqviz.lstm import GATES, TORCH_LSTM_GATE_ORDER, GRUCell, LSTMCell, LSTMTrace

TOL = 1e-5


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models: one thread is faster and leaves the other core to the rest of the suite."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def gen(seed: int = 0) -> torch.Generator:
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def randn(*shape, g):
    return torch.randn(*shape, generator=g)


# ---------------------------------------------------------------------------------------------------------------
# cells


def test_lstm_cell_equals_torch_lstmcell_and_copies_back():
    g = gen()
    ref = torch.nn.LSTMCell(5, 7)
    cell = LSTMCell(5, 7).copy_from_torch(ref)
    x, h, c = randn(4, 5, g=g), randn(4, 7, g=g), randn(4, 7, g=g)
    h1, c1 = cell(x, (h, c))
    h_ref, c_ref = ref(x, (h, c))
    assert torch.allclose(h1, h_ref, atol=TOL, rtol=0) and torch.allclose(c1, c_ref, atol=TOL, rtol=0)
    assert cell.W_f.shape == (7, 5) and cell.U_f.shape == (7, 7)       # W: input -> hidden, U: hidden -> hidden
    # the blocks go back in torch's order: a fresh torch cell loaded from ours computes the same
    back = torch.nn.LSTMCell(5, 7)
    with torch.no_grad():
        for name, t in cell.to_torch_params().items():
            getattr(back, name).copy_(t)
    assert torch.allclose(back(x, (h, c))[1], c1, atol=TOL, rtol=0)


def test_lstm_gate_blocks_follow_torch_order():
    """Row block k of torch's weight_ih is gate TORCH_LSTM_GATE_ORDER[k] (i, f, g, o), named as SLP does (f, g, i, o)."""
    ref = torch.nn.LSTMCell(3, 2)
    cell = LSTMCell(3, 2).copy_from_torch(ref)
    assert TORCH_LSTM_GATE_ORDER == ("i", "f", "g", "o") and cell.gates == ("f", "g", "i", "o")
    assert torch.equal(cell.W_i, ref.weight_ih[0:2]) and torch.equal(cell.W_f, ref.weight_ih[2:4])
    assert torch.equal(cell.U_g, ref.weight_hh[4:6]) and torch.equal(cell.b_U_o, ref.bias_hh[6:8])
    assert set(cell.gates) | {"c", "h"} == set(GATES)


def test_gru_cell_equals_torch_grucell():
    g = gen(1)
    ref = torch.nn.GRUCell(5, 7)
    cell = GRUCell(5, 7).copy_from_torch(ref)
    x, h = randn(4, 5, g=g), randn(4, 7, g=g)
    assert torch.allclose(cell(x, h), ref(x, h), atol=TOL, rtol=0)
    back = torch.nn.GRUCell(5, 7)
    with torch.no_grad():
        for name, t in cell.to_torch_params().items():
            getattr(back, name).copy_(t)
    assert torch.allclose(back(x, h), ref(x, h), atol=TOL, rtol=0)


def test_cells_without_bias_equal_torch():
    g = gen(2)
    x, h, c = randn(2, 3, g=g), randn(2, 4, g=g), randn(2, 4, g=g)
    ref = torch.nn.LSTMCell(3, 4, bias=False)
    cell = LSTMCell(3, 4, bias=False).copy_from_torch(ref)
    assert torch.allclose(cell(x, (h, c))[0], ref(x, (h, c))[0], atol=TOL, rtol=0)
    gref = torch.nn.GRUCell(3, 4, bias=False)
    gcell = GRUCell(3, 4, bias=False).copy_from_torch(gref)
    assert torch.allclose(gcell(x, h), gref(x, h), atol=TOL, rtol=0)
    assert sum(p.numel() for p in cell.parameters()) == sum(p.numel() for p in ref.parameters())


def test_parameter_counts_lstm_four_gru_three_elman_one():
    """For the same widths: LSTM 4x, GRU 3x the parameters of an Elman cell (each gate is one Elman-sized block)."""
    from seqviz.rnn import ElmanCell
    n = lambda m: sum(p.numel() for p in m.parameters())                  # noqa: E731
    assert n(LSTMCell(10, 16)) == 4 * n(ElmanCell(10, 16)) == n(torch.nn.LSTMCell(10, 16))
    assert n(GRUCell(10, 16)) == 3 * n(ElmanCell(10, 16)) == n(torch.nn.GRUCell(10, 16))


def test_lstm_cell_step_trace_is_the_equations():
    g = gen(3)
    cell = LSTMCell(3, 5)
    x, h, c = randn(2, 3, g=g), randn(2, 5, g=g), randn(2, 5, g=g)
    (h1, c1), tr = cell.forward_traced(x, (h, c))
    assert set(tr) == set(GATES)
    # (9.27) c_t = j_t + k_t = g_t ⊙ i_t + c_{t-1} ⊙ f_t;  (9.29) h_t = o_t ⊙ tanh(c_t)
    assert torch.allclose(c1, tr["g"] * tr["i"] + c * tr["f"], atol=1e-6)
    assert torch.allclose(h1, tr["o"] * torch.tanh(c1), atol=1e-6)


@given(scale=st.floats(0.0, 50.0), seed=st.integers(0, 2**16), d_h=st.integers(1, 6))
def test_gates_stay_in_range_for_any_input(scale, seed, d_h):
    """f, i, o are sigmoids (0..1), g a tanh (-1..1), whatever the input and state: the widget's colour scales rely on
    it. GRU: r, z in 0..1, n in -1..1, and h stays in -1..1 once it starts there (it interpolates)."""
    g = gen(seed)
    cell, gru = LSTMCell(3, d_h), GRUCell(3, d_h)
    x = randn(4, 3, g=g) * scale
    state = (randn(4, d_h, g=g) * scale, randn(4, d_h, g=g) * scale)
    with torch.no_grad():
        _, tr = cell.forward_traced(x, state)
        h_gru, gtr = gru.forward_traced(x, torch.tanh(state[0]))
    for name in ("f", "i", "o"):
        assert 0 <= tr[name].min() and tr[name].max() <= 1, name
    assert -1 <= tr["g"].min() and tr["g"].max() <= 1
    assert tr["h"].abs().max() <= 1                                        # (9.29): o_t in 0..1 times a tanh
    for name in ("r", "z"):
        assert 0 <= gtr[name].min() and gtr[name].max() <= 1, name
    assert gtr["n"].abs().max() <= 1 and h_gru.abs().max() <= 1


def test_cell_input_errors_name_the_fix():
    cell, gru = LSTMCell(3, 4), GRUCell(3, 4)
    x = torch.randn(2, 3)
    with pytest.raises(ValueError, match=r"x_t must have shape \(B, d_in=3\).*a layer takes \(B, T, d_in\)"):
        cell(torch.randn(2, 5, 3), cell.init_state(2))
    with pytest.raises(ValueError, match=r"c_\{t-1\} must have shape \(B, d_h\) = \(2, 4\).*init_state"):
        cell(x, (torch.zeros(2, 4), torch.zeros(2, 5)))
    with pytest.raises(ValueError, match=r"state is a pair \(h, c\)"):
        cell(x, torch.zeros(2, 4))
    with pytest.raises(ValueError, match=r"h_\{t-1\} must have shape"):
        gru(x, torch.zeros(3, 4))
    with pytest.raises(ValueError, match="d_h must be a positive int"):
        LSTMCell(3, 0)


# ---------------------------------------------------------------------------------------------------------------
# the agreement task


def test_agreement_examples_are_seeded_and_labelled_right():
    a, b = agreement_examples(300, 5, seed=7), agreement_examples(300, 5, seed=7)
    assert a == b and a != agreement_examples(300, 5, seed=8)
    state = __import__("random").getstate()
    agreement_examples(10, seed=1)
    assert __import__("random").getstate() == state                       # the global RNG is left alone
    vocab = set(agreement_vocabulary())
    singular = {"flight", "key", "author", "pilot", "student", "senator", "painting", "dog", "cabinet", "airline",
                "door", "city"}
    plural = {"flights", "keys", "authors", "pilots", "students", "senators", "paintings", "dogs", "cabinets",
              "airlines", "doors", "cities"}
    for ex in a:
        assert ex.tokens[0] == "the" and set(ex.tokens) <= vocab
        subject = ex.tokens[1]
        assert ex.label == (subject in plural) and (subject in plural) != (subject in singular)
        assert ex.verb == AGREEMENT_VERBS[ex.label] == ("are" if subject in plural else "is")
        assert ex.distance == len(ex.tokens) - 2 and 0 <= ex.phrases <= 5
        later = [w for w in ex.tokens[2:] if w in singular | plural]
        assert len(later) == ex.phrases                                    # one distractor noun per phrase
        assert ex.attractors == sum((w in plural) != ex.label for w in later)
        assert not set(ex.tokens) & set(AGREEMENT_VERBS)                   # the answer never leaks into the prefix
    assert {ex.phrases for ex in a} == set(range(6))
    assert 0.4 < sum(ex.label for ex in a) / len(a) < 0.6


def test_agreement_examples_reject_bad_arguments():
    with pytest.raises(ValueError, match="n \\(number of examples\\) must be a positive int"):
        agreement_examples(0)
    with pytest.raises(ValueError, match="max_phrases must be a non-negative int"):
        agreement_examples(3, -1)
    with pytest.raises(ValueError, match="p_attractor is a probability"):
        agreement_examples(3, p_attractor=1.5)
