"""Tests for seqviz.lstm: the LSTM and GRU cells and layers against torch.nn.LSTM / GRU with copied weights, scratch
= fused in values and gradients, gate ranges and the cell-state identity (9.27) in the returned traces, the LSTM LM,
the agreement task generator, and clear errors for bad input."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from seqviz.data.tasks import AGREEMENT_VERBS, agreement_examples, agreement_vocabulary
from seqviz.data import Batch, StreamBatcher, pad_batch
from seqviz.lstm import (GATES, GRU, LSTM, TORCH_LSTM_GATE_ORDER, GRUCell, GRULM, GRUTrace, LSTMCell, LSTMClassifier,
                         LSTMLM, LSTMLMConfig, LSTMTrace, most_correlated_units, play_indicators,
                         state_grad_norms)
from seqviz.rnn import ElmanCell, ElmanRNN, RNNClassifierConfig
from seqviz.train import lm_step

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


def test_agreement_default_draws_are_unchanged_by_the_present_tense_option():
    """p_present=0 (the default) gives the examples of the generator before that option existed (fingerprint taken
    from it), so the classifier experiments seeded with it keep their data."""
    import dataclasses
    import hashlib

    exs = agreement_examples(200, 6, seed=3)
    assert exs == agreement_examples(200, 6, seed=3, p_present=0.0)
    digest = hashlib.sha256(repr([dataclasses.astuple(e) for e in exs]).encode()).hexdigest()
    assert digest.startswith("cf55159bd768c555")


def test_agreement_with_agreeing_clause_verbs_is_seeded_and_labelled_right():
    """p_present=1: every relative clause ends in a present-tense verb agreeing with the clause's own noun (an
    attractor when its number differs); the main verb still agrees with the subject and never leaks."""
    from seqviz.data.tasks import _NOUNS, _PAST_VERBS, _PRESENT_VERBS

    a = agreement_examples(400, 6, seed=5, p_present=1.0)
    assert a == agreement_examples(400, 6, seed=5, p_present=1.0) != agreement_examples(400, 6, seed=6, p_present=1.0)
    number = {w: k for pair in _NOUNS for k, w in enumerate(pair)}             # noun -> 0 singular, 1 plural
    verb_number = {w: k for pair in _PRESENT_VERBS for k, w in enumerate(pair)}
    vocab = set(agreement_vocabulary())
    clauses = 0
    for ex in a:
        assert set(ex.tokens) <= vocab and not set(ex.tokens) & set(AGREEMENT_VERBS)
        assert ex.label == number[ex.tokens[1]] and ex.verb == AGREEMENT_VERBS[ex.label]
        assert not set(ex.tokens) & set(_PAST_VERBS)                          # p_present=1: every clause verb agrees
        nouns = [w for w in ex.tokens[2:] if w in number]
        assert len(nouns) == ex.phrases and ex.attractors == sum(number[w] != ex.label for w in nouns)
        for k, w in enumerate(ex.tokens):
            if w == "that":                                                   # that the (adj) noun verb
                j = k + 2 if ex.tokens[k + 2] in number else k + 3
                assert ex.tokens[j + 1] in verb_number and verb_number[ex.tokens[j + 1]] == number[ex.tokens[j]]
                clauses += 1
    assert clauses > 300                                                       # the check above did run
    mixed = agreement_examples(400, 6, seed=5, p_present=0.5)
    used = {w for ex in mixed for w in ex.tokens}
    assert used & set(_PAST_VERBS) and used & set(verb_number)                 # p in (0, 1): both kinds of clause
    with pytest.raises(ValueError, match="p_present is a probability"):
        agreement_examples(3, p_present=-0.1)


def test_agreement_examples_reject_bad_arguments():
    with pytest.raises(ValueError, match="n \\(number of examples\\) must be a positive int"):
        agreement_examples(0)
    with pytest.raises(ValueError, match="max_phrases must be a non-negative int"):
        agreement_examples(3, -1)
    with pytest.raises(ValueError, match="p_attractor is a probability"):
        agreement_examples(3, p_attractor=1.5)


# ---------------------------------------------------------------------------------------------------------------
# layers: equal to torch.nn.LSTM / GRU, scratch = fused


def torch_pair(kind, d_in, d_h, layers, bi, impl, seed=0):
    torch.manual_seed(seed)
    ref = (torch.nn.LSTM if kind == "lstm" else torch.nn.GRU)(d_in, d_h, layers, batch_first=True,
                                                                bidirectional=bi)
    return ref, (LSTM if kind == "lstm" else GRU).from_torch(ref, impl=impl)


def initial_state(kind, LK, B, d_h, g):
    h0 = randn(LK, B, d_h, g=g)
    return (h0, randn(LK, B, d_h, g=g)) if kind == "lstm" else h0


def assert_states_close(a, b):
    for s, r in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        assert s.shape == r.shape and torch.allclose(s, r, atol=TOL, rtol=0)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("impl", ["scratch", "fused"])
@pytest.mark.parametrize("with_state", [False, True])
def test_layer_equals_torch(kind, num_layers, bidirectional, impl, with_state):
    g = gen(1)
    ref, ours = torch_pair(kind, 4, 6, num_layers, bidirectional, impl)
    x = randn(3, 5, 4, g=g)                                                   # (B, T, d_in)
    state0 = initial_state(kind, num_layers * (1 + bidirectional), 3, 6, g) if with_state else None
    out, state_n = ours(x, state0)
    out_ref, state_ref = ref(x, state0)
    assert out.shape == out_ref.shape and torch.allclose(out, out_ref, atol=TOL, rtol=0)
    assert_states_close(state_n, state_ref)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("impl", ["scratch", "fused"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_padding_mask_equals_packed_sequences(kind, impl, bidirectional):
    """A right-padded batch with its mask gives what torch gives for the packed sequences: the same outputs at real
    tokens (zeros at padding) and each sequence's state after its own last token."""
    g = gen(2)
    ref, ours = torch_pair(kind, 4, 5, 2, bidirectional, impl)
    lengths = torch.tensor([6, 2, 4])
    x = randn(3, 6, 4, g=g)
    mask = torch.arange(6)[None, :] < lengths[:, None]                        # (B, T)
    x = x.masked_fill(~mask[..., None], 1e3)                                  # padding must not leak in
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out_ref, state_ref = ref(packed)
    out_ref, _ = torch.nn.utils.rnn.pad_packed_sequence(out_ref, batch_first=True, total_length=6)
    out, state_n = ours(x, None, mask)
    assert torch.allclose(out, out_ref, atol=TOL, rtol=0)
    assert bool((out[~mask] == 0).all())
    assert_states_close(state_n, state_ref)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_fused_equals_scratch_in_values_and_gradients(kind):
    g = gen(3)
    _, scratch = torch_pair(kind, 4, 5, 2, True, "scratch")
    fused = (LSTM if kind == "lstm" else GRU)(4, 5, 2, bidirectional=True, impl="fused")
    fused.load_state_dict(scratch.state_dict())
    x = randn(2, 7, 4, g=g)
    mask = torch.tensor([[True] * 7, [True] * 3 + [False] * 4])
    results = []
    for layer in (scratch, fused):
        out, state = layer(x, None, mask)
        h_n = state[0] if isinstance(state, tuple) else state
        (out.sin().sum() + h_n.pow(2).sum()).backward()
        results.append((out.detach(), {n: p.grad.clone() for n, p in layer.named_parameters()}))
    (o1, g1), (o2, g2) = results
    assert torch.allclose(o1, o2, atol=TOL, rtol=0)
    assert g1.keys() == g2.keys() and len(g1) == 2 * 2 * (16 if kind == "lstm" else 12)
    for name in g1:
        assert torch.allclose(g1[name], g2[name], atol=TOL, rtol=0), name
    assert "W_f" in scratch.cells[0]._parameters if kind == "lstm" else "W_z" in scratch.cells[0]._parameters


def test_traces_obey_the_equations_and_feed_the_widget():
    from seqviz.widgets import LSTMGates, prepare_gates
    g = gen(4)
    layer = LSTM(3, 5, num_layers=2, bidirectional=True)
    x = randn(2, 6, 3, g=g)
    h0, c0 = randn(4, 2, 5, g=g), randn(4, 2, 5, g=g)
    out, (h_n, c_n), traces = layer.trace(x, (h0, c0))
    assert len(traces) == 4 and all(isinstance(t, LSTMTrace) for t in traces)
    assert torch.allclose(out, layer(x, (h0, c0))[0], atol=1e-6)              # tracing changes nothing
    for idx, tr in enumerate(traces):
        assert tr.f.shape == tr.c.shape == (2, 6, 5)
        k = idx % 2                                                           # direction
        order = range(6) if k == 0 else reversed(range(6))
        c_prev = c0[idx]
        for t in order:
            # (9.27) c_t = f_t ⊙ c_{t-1} + i_t ⊙ g_t, with the previous step in the direction of reading
            assert torch.allclose(tr.c[:, t], tr.f[:, t] * c_prev + tr.i[:, t] * tr.g[:, t], atol=1e-6)
            assert torch.allclose(tr.h[:, t], tr.o[:, t] * torch.tanh(tr.c[:, t]), atol=1e-6)   # (9.29)
            c_prev = tr.c[:, t]
        assert torch.allclose(c_prev, c_n[idx], atol=1e-6)
    assert torch.allclose(out[..., :5], traces[2].h, atol=1e-6)               # top layer, forward direction
    d = prepare_gates(traces[0][1], list("abcdef"))                           # one sequence: (T, d_h)
    assert list(d.values) == ["f", "g", "i", "c", "o", "h"] and d.shape == (6, 5)
    LSTMGates(traces[0][0], list("abcdef"))
    with pytest.raises(ValueError, match=r"must be \(T, units\).*pick one sequence"):
        prepare_gates(traces[0], list("abcdef"))                              # a batch of 2: say which sequence
    with pytest.raises(ValueError, match="tokens"):
        prepare_gates(traces[0][0], list("abc"))                              # T = 6 steps, 3 tokens
    gru_traces = GRU(3, 4).trace(x)[2]
    assert isinstance(gru_traces[0], GRUTrace) and gru_traces[0].z.shape == (2, 6, 4)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_mismatched_states_and_bad_inputs_are_refused(kind):
    layer = (LSTM if kind == "lstm" else GRU)(3, 4, num_layers=2)
    x = torch.randn(2, 5, 3)
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, d_in=3\)"):
        layer(torch.randn(5, 3))                                              # wrong rank
    if kind == "lstm":
        with pytest.raises(ValueError, match=r"a tuple of 2 tensors, each \(L\*K, B, d_h\) = \(2, 2, 4\)"):
            layer(x, (torch.zeros(2, 2, 4), torch.zeros(2, 2, 5)))            # c_0 of the wrong width
        with pytest.raises(ValueError, match="a tuple of 2 tensors"):
            layer(x, torch.zeros(2, 2, 4))                                    # h_0 alone
    else:
        with pytest.raises(ValueError, match=r"\(L\*K, B, d_h\) = \(2, 2, 4\)"):
            layer(x, torch.zeros(1, 2, 4))
    with pytest.raises(ValueError, match="right-padded"):
        layer(x, None, torch.tensor([[True, False, True, True, True]] * 2))   # not a prefix mask
    with pytest.raises(ValueError, match="from_torch needs a torch.nn"):
        LSTM.from_torch(torch.nn.GRU(3, 4, batch_first=True))
    with pytest.raises(ValueError, match="batch_first=True"):
        GRU.from_torch(torch.nn.GRU(3, 4))


# ---------------------------------------------------------------------------------------------------------------
# models


def test_lstm_lm_interface_tying_and_stateful_batches():
    torch.manual_seed(0)
    lm = LSTMLM(LSTMLMConfig.tiny(20))
    assert lm.V.weight is lm.E.weight
    ids = torch.randint(0, 20, (61,))
    x, y = ids[:-1].view(1, 60), ids[1:].view(1, 60)
    logits, loss = lm(x, y)
    assert logits.shape == (1, 60, 20) and loss.dim() == 0
    # stateful: three windows with the state carried = the one long sequence
    carried, state = [], None
    for batch in StreamBatcher(ids, 1, 20):
        out, _, state = lm(batch.x, state=state, return_state=True)
        carried.append(out)
    assert torch.allclose(torch.cat(carried, 1), logits, atol=TOL, rtol=0)
    # lm_step carries (h, c) between windows and its loss is the model's
    step = lm_step(stateful=True)
    batches = list(StreamBatcher(ids, 1, 20))
    o1 = step(lm, batches[0], None)
    o2 = step(lm, batches[1], o1.carry)
    assert isinstance(o1.carry, tuple) and len(o1.carry) == 2
    assert torch.allclose(o2.logits, logits[:, 20:40], atol=TOL, rtol=0)
    # next-token logits = the last position; step() carries the state for incremental decoding
    assert torch.allclose(lm.next_token_logits(x[0, :7]), logits[0, 6], atol=TOL, rtol=0)
    z, st = lm.step(x[:, :4])
    z2, _ = lm.step(x[:, 4:7], st)
    assert torch.allclose(z2[0], logits[0, 6], atol=TOL, rtol=0)
    r = lm.reorder_state(st, torch.tensor([0, 0]))
    assert r[0].shape == (1, 2, 16) and r[1].shape == (1, 2, 16)


@pytest.mark.parametrize("model_class", [LSTMLM, GRULM])
def test_lm_fused_equals_scratch_and_traces(model_class):
    torch.manual_seed(1)
    lm = model_class(LSTMLMConfig.tiny(15, num_layers=2))
    idx = torch.randint(0, 15, (2, 9))
    fused, _ = lm(idx)
    lm.impl = "scratch"
    scratch, _ = lm(idx)
    assert torch.allclose(fused, scratch, atol=TOL, rtol=0)
    traces = lm.trace(idx)
    assert len(traces) == 2 and traces[1].h.shape == (2, 9, 16)


def test_lm_rejects_ids_outside_the_vocabulary():
    lm = LSTMLM(LSTMLMConfig.tiny(10))
    with pytest.raises(ValueError, match=r"token id 10 .* outside the vocabulary .*\[0, 10\)"):
        lm(torch.tensor([[1, 10]]))
    with pytest.raises(ValueError, match=r"shape \(B, T\).*unsqueeze\(0\)"):
        lm(torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"token id 12 .* outside"):
        lm.trace(torch.tensor([[12]]))
    with pytest.raises(ValueError, match="d_emb == d_h"):
        LSTMLMConfig(10, d_emb=8, d_h=16)


def test_lstm_classifier_learns_agreement_quickly():
    """The chapter's experiment in small: an LSTM classifier gets the verb's number right across distractors."""
    exs = agreement_examples(1100, 3, seed=0)
    words = ["<pad>"] + agreement_vocabulary()
    stoi = {w: i for i, w in enumerate(words)}
    ids, mask = pad_batch([[stoi[w] for w in e.tokens] for e in exs], 0)
    labels = torch.tensor([e.label for e in exs])
    torch.manual_seed(0)
    clf = LSTMClassifier(RNNClassifierConfig(len(words), 2, d_emb=16, d_h=16, pad_id=0))
    opt = torch.optim.Adam(clf.parameters(), 1e-2)
    for _ in range(4):
        for s in range(0, 1000, 50):
            _, loss = clf(ids[s:s + 50], labels[s:s + 50], mask[s:s + 50])
            opt.zero_grad(), loss.backward(), opt.step()
    with torch.no_grad():
        acc = (clf(ids[1000:], mask=mask[1000:])[0].argmax(-1) == labels[1000:]).float().mean()
    assert acc > 0.9


def test_state_grad_norms_match_autograd_and_lstm_keeps_the_gradient():
    g = gen(5)
    x = randn(4, 30, 3, g=g)
    cell = LSTMCell(3, 8)
    norms = state_grad_norms(cell, x, lambda h: h.sum())
    assert norms.shape == (30,) and torch.allclose(norms[0], torch.ones(4, 8).norm(dim=-1).mean())
    # against autograd through the layer: perturb h_t's input path via a leaf initial state (t = 0)
    h0 = torch.zeros(4, 8, requires_grad=True)
    state = (h0, torch.zeros(4, 8))
    for t in range(30):
        state = cell(x[:, t], state)
    (dh0,) = torch.autograd.grad(state[0].sum(), h0)
    full = state_grad_norms(cell, x, lambda h: h.sum(), state0=(h0, torch.zeros(4, 8)))
    assert full.shape == (30,) and dh0.norm(dim=-1).mean() > 0
    # an Elman cell with a small U forgets: its gradient 20 steps back is far smaller than the LSTM's with f ~ 1
    elman = ElmanCell(3, 8)
    with torch.no_grad():
        elman.U.mul_(0.3)
        cell.b_W_f.fill_(5.0)                                                  # forget gate open: the highway
    e = state_grad_norms(elman, x, lambda h: h.sum())
    lstm = state_grad_norms(cell, x, lambda h: h.sum())
    assert e[20] / e[0] < 1e-3 < lstm[20] / lstm[0]


# ---------------------------------------------------------------------------------------------------------------
# the unit search


def test_play_indicators_mark_what_a_reader_sees():
    text = "AJAX.\nYou dog! [Strikes him.]\n"
    ind = play_indicators(text)
    assert all(v.shape == (len(text),) for v in ind.values())
    inside = "".join(ch for ch, b in zip(text, ind["in [brackets]"]) if b)
    assert inside == "[Strikes him.]"
    names = "".join(ch for ch, b in zip(text, ind["in speaker name"]) if b)
    assert names == "AJAX."
    assert ind["position in line"][text.index("Y")] == 0 and ind["position in line"][text.index("d")] == 4
    with pytest.raises(ValueError, match="non-empty string"):
        play_indicators("")


def test_most_correlated_units_finds_a_planted_unit():
    g = gen(6)
    ind = {"a": (torch.arange(50) % 7).float(), "b": (torch.arange(50) > 20).float()}
    values = randn(50, 6, g=g)
    values[:, 4] = -3 * ind["b"] + 0.01 * values[:, 4]                         # unit 4 tracks "b", inverted
    found = most_correlated_units(values, ind)
    assert found["b"][0] == 4 and found["b"][1] < -0.99
    assert abs(found["a"][1]) < 0.7                                            # nothing planted for "a"
    with pytest.raises(ValueError, match=r"values must be \(T, d_h\).*trace.c\[0\]"):
        most_correlated_units(values[None], ind)
    with pytest.raises(ValueError, match="same text"):
        most_correlated_units(values[:40], ind)


def test_quotation_indicator_tells_quotes_from_elisions():
    text = ("COUNTESS.\n[Reads.] 'I have sent you a daughter-in-law; she hath\nrecovered the king.' 'Tis so, o'er "
            "the sea, for Troilus' sake.\n\nDIOMEDES. \n'As true as Troilus' she said, and 'a laugh'd.\n")
    ind = play_indicators(text)
    quoted = "".join(ch if q else "_" for ch, q in zip(text, ind["in 'quotation'"]))
    spans = [s for s in quoted.split("_") if s]
    assert spans == ["'I have sent you a daughter-in-law; she hath\nrecovered the king.'",
                     "'As true as Troilus'"]                          # elisions ('Tis, o'er, 'a) open nothing
    names = "".join(ch for ch, b in zip(text, ind["in speaker name"]) if b)
    assert names == "COUNTESS.DIOMEDES. "                                 # a name with a trailing space counts
    unclosed = "A.\n'Never closed\nstill inside\n\nB.\nout\n"
    q = play_indicators(unclosed)["in 'quotation'"]
    assert q[unclosed.index("still")] == 1 and q[unclosed.index("out")] == 0   # a blank line ends a quotation


# ---------------------------------------------------------------------------------------------------------------
# the agreement experiment (seqviz.agreement)


def test_agreement_scoring_reads_the_verb_after_each_prefix():
    from seqviz.agreement import accuracy_by_attractors, agreement_vocab, verb_logits

    exs = agreement_examples(40, 3, seed=2, p_present=1.0)
    vocab = agreement_vocab()
    torch.manual_seed(0)
    lm = LSTMLM(LSTMLMConfig(len(vocab), d_emb=8, d_h=8)).train()
    scores = verb_logits(lm, exs, vocab, batch_size=7)                         # several batches, padded
    assert scores.shape == (40, 2) and lm.training                              # the caller's mode comes back
    verbs = vocab.encode(list(AGREEMENT_VERBS))
    for e, row in zip(exs[:5], scores[:5]):                                     # one prefix alone, unpadded
        with torch.no_grad():
            alone = lm.eval()(torch.tensor([vocab.encode(list(e.tokens))]))[0][0, -1, verbs]
        assert torch.allclose(row, alone, atol=1e-5)
    right = torch.tensor([e.label == 1 for e in exs])                           # "always plural"
    acc = accuracy_by_attractors(right, exs)
    spaced = [e for e in exs if e.phrases > 0]
    for b, a in enumerate(acc):
        group = [e for e in spaced if min(e.attractors, 4) == b]
        if group:
            assert a == pytest.approx(sum(e.label for e in group) / len(group))
        else:
            assert a != a                                                        # NaN for an empty bin
    with pytest.raises(ValueError, match="same examples"):
        accuracy_by_attractors(right[:-1], exs)


def test_agreement_runs_record_every_epoch_and_units_are_read_from_the_same_states():
    from seqviz.agreement import (KINDS, ablated_correct, agreement_vocab, number_unit, train_agreement_lm,
                                  verb_logits)
    from seqviz.agreement import _last_states

    train, test = agreement_examples(300, 2, seed=0, p_present=1.0), agreement_examples(120, 6, seed=1, p_present=1.0)
    vocab = agreement_vocab()
    run = train_agreement_lm("LSTM", 3, train, test, vocab, d=8, epochs=2, batch_size=64)
    assert run.kind == "LSTM" and len(run.by_epoch) == 2 and all(len(a) == 5 for a in run.by_epoch)
    assert not any(a != a for a in run.accuracy())                              # every bin is filled
    assert run.accuracy() == run.by_epoch[-1] and 0 <= run.adjacent <= 1 and not run.model.training
    assert len(run.correct) == 2 and run.correct[0].shape == (120,) and run.correct[0].dtype == torch.bool
    none, some = run.accuracy(bins=(0, 2), epoch=0)
    right = [bool(c) for c, e in zip(run.correct[0], test) if e.phrases > 0 and e.attractors >= 2]
    assert some == pytest.approx(sum(right) / len(right)) and none == run.by_epoch[0][0]
    again = train_agreement_lm("LSTM", 3, train, test, vocab, d=8, epochs=2, batch_size=64)
    assert torch.equal(torch.tensor(again.by_epoch).nan_to_num(-1), torch.tensor(run.by_epoch).nan_to_num(-1))  # seeded
    lm = run.model
    # the cell loop the unit search and the ablation use gives the layer's own trace
    ids = torch.tensor([vocab.encode(list(test[0].tokens))])
    trace = lm.trace(ids)[0]
    c_last = _last_states(lm, test[:1], vocab, field="c")
    assert torch.allclose(c_last, trace.c[:, -1], atol=1e-5)
    plain = ablated_correct(lm, test, vocab, None)
    labels = torch.tensor([e.label for e in test])
    assert torch.equal(plain, verb_logits(lm, test, vocab).argmax(-1) == labels)
    unit, r = number_unit(lm, test, vocab)
    states = _last_states(lm, test, vocab, field="c")
    corr = torch.corrcoef(torch.stack([states[:, unit].double(), labels.double()]))[0, 1]
    assert r == pytest.approx(float(corr), abs=1e-6) and abs(r) == pytest.approx(
        max(abs(float(torch.corrcoef(torch.stack([states[:, u].double(), labels.double()]))[0, 1]))
            for u in range(8) if states[:, u].std() > 0), abs=1e-6)
    assert (_last_states(lm, test, vocab, ablate=unit)[:, unit] == 0).all()
    gru = train_agreement_lm("GRU", 0, train, test, vocab, d=8, epochs=1, batch_size=64).model
    assert isinstance(number_unit(gru, test, vocab, field="h")[0], int)
    with pytest.raises(ValueError, match="only an LSTM has a cell state"):
        number_unit(gru, test, vocab)
    with pytest.raises(ValueError, match="kind must be one of"):
        train_agreement_lm("Transformer", 0, train, test, vocab)
    assert set(KINDS) == {"Elman", "GRU", "LSTM"}


def test_gru_step_exercise_check_accepts_the_cell_and_names_mistakes(capsys):
    from seqviz.exercises import check_gru_step

    def lin(x, W, b):
        return x @ W.T + b

    def right(cell, x, h):
        r = torch.sigmoid(lin(h, cell.U_r, cell.b_U_r) + lin(x, cell.W_r, cell.b_W_r))
        z = torch.sigmoid(lin(h, cell.U_z, cell.b_U_z) + lin(x, cell.W_z, cell.b_W_z))
        n = torch.tanh(lin(x, cell.W_n, cell.b_W_n) + r * lin(h, cell.U_n, cell.b_U_n))
        return (1 - z) * n + z * h, {"r": r, "z": z, "n": n}

    state = torch.random.get_rng_state()
    assert check_gru_step(right) and "✓" in capsys.readouterr().out
    assert torch.equal(state, torch.random.get_rng_state())                      # the caller's RNG is untouched
    # the wrong answers (a swapped z_t, Cho et al.'s reset placement, a tanh gate, no traces, traces missing) and the
    # message each must get: seqviz.exercises.mistakes, tested in tests/test_exercises.py


def test_state_grad_norms_of_the_whole_state_include_the_cell():
    g = gen(7)
    x = randn(3, 12, 4, g=g)
    cell = LSTMCell(4, 6)
    loss = lambda h: (h ** 2).sum()                                            # noqa: E731
    both = state_grad_norms(cell, x, loss, wrt="state")
    # by hand: leaf (h_t, c_t) at step t = 5, run on to T, gradient of both parts
    state = cell.init_state(3)
    for t in range(5):
        state = cell(x[:, t], state)
    h5, c5 = (s.detach().requires_grad_() for s in cell(x[:, 5], state))
    state = (h5, c5)
    for t in range(6, 12):
        state = cell(x[:, t], state)
    dh, dc = torch.autograd.grad(loss(state[0]), (h5, c5))
    assert both[11 - 5] == pytest.approx(float(torch.cat([dh, dc], -1).norm(dim=-1).mean()), rel=1e-5)
    assert state_grad_norms(cell, x, loss)[11 - 5] == pytest.approx(float(dh.norm(dim=-1).mean()), rel=1e-5)
    gru = GRUCell(4, 6)
    assert torch.allclose(state_grad_norms(gru, x, loss, wrt="state"), state_grad_norms(gru, x, loss))
    with pytest.raises(ValueError, match="wrt must be"):
        state_grad_norms(cell, x, loss, wrt="cell")


@pytest.mark.parametrize("make", [lambda: LSTM(5, 4, 2, bidirectional=True, impl="fused"),
                                  lambda: GRU(5, 4, 2, impl="fused"),
                                  lambda: ElmanRNN(5, 4, 2, impl="fused")])
def test_fused_weights_are_stacked_once_without_gradients_and_follow_every_update(make):
    # decoding steps one token at a time with no gradients: the layer stacks its gate blocks into torch's tensors
    # once and reuses them, and any in-place change of a parameter (an optimizer step, copy_) is seen at once
    torch.manual_seed(0)
    layer = make()
    x = torch.randn(2, 3, 5)
    with torch.no_grad():
        a, _ = layer(x)
        stacked = {k: v[1] for k, v in layer._fused_cache.items()}
        b, _ = layer(x)
        assert torch.equal(a, b) and all(layer._fused_cache[k][1] is v for k, v in stacked.items())   # reused
        next(layer.cell(0).parameters()).add_(0.5)                                # in place: a new version
        c, _ = layer(x)
    with_grad, _ = layer(x)                       # the uncached path (torch's GRU kernel differs in the last bit)
    assert not torch.equal(a, c)
    torch.testing.assert_close(c, with_grad.detach(), rtol=0, atol=1e-6)
    opt = torch.optim.SGD(layer.parameters(), lr=0.5)
    with_grad.pow(2).sum().backward()
    opt.step()
    with torch.no_grad():
        d, _ = layer(x)
    assert not torch.equal(c, d)
    torch.testing.assert_close(d, layer(x)[0].detach(), rtol=0, atol=1e-6)
    first = next(layer.cell(0).parameters())
    first.data = first.detach() * 2                                               # new memory, same tensor
    with torch.no_grad():
        e, _ = layer(x)
    assert not torch.equal(d, e)
    torch.testing.assert_close(e, layer(x)[0].detach(), rtol=0, atol=1e-6)
