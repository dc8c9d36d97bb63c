"""Tests for seqviz.rnn: the Elman cell and layer against torch.nn.RNN, hand-written BPTT against autograd, the RNN
LM (weight tying, stateful windows, the LM interface), and the tagger / classifier under padding."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from seqviz import set_seed
from seqviz.data import Batch, PaddedBatches, lm_batches
from seqviz.rnn import (
    IGNORE_INDEX,
    ElmanCell,
    ElmanRNN,
    RNNClassifier,
    RNNClassifierConfig,
    RNNLM,
    RNNLMConfig,
    RecurrentLayer,
    RecurrentLM,
    RecurrentLMConfig,
    RNNTagger,
    RNNTaggerConfig,
    elman_bptt,
    grad_norm_by_distance,
    lm_grad_norm_by_distance,
    rnnlm_manual_gradients,
    scan,
)
from seqviz.train import accuracy, lm_step

TOL = 1e-5


@pytest.fixture(autouse=True)
def one_thread():
    """These models are tiny: one thread is faster than two and leaves the other core to the rest of the suite."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def seeded(seed: int = 0) -> torch.Generator:
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def randn(*shape, g, dtype=torch.float32):
    return torch.randn(*shape, generator=g, dtype=dtype)


# ---------------------------------------------------------------------------------------------------------------
# the cell and the layer equal torch's


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_cell_equals_torch_rnncell(nonlinearity):
    g = seeded()
    ref = torch.nn.RNNCell(5, 7, nonlinearity=nonlinearity)
    cell = ElmanCell(5, 7, nonlinearity)
    with torch.no_grad():
        cell.W.copy_(ref.weight_ih), cell.U.copy_(ref.weight_hh)
        cell.b_W.copy_(ref.bias_ih), cell.b_U.copy_(ref.bias_hh)
    x, h = randn(4, 5, g=g), randn(4, 7, g=g)
    assert torch.allclose(cell(x, h), ref(x, h), atol=TOL, rtol=0)
    assert cell.W.shape == (7, 5) and cell.U.shape == (7, 7)  # W: input -> hidden, U: hidden -> hidden (not square)


@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("impl", ["scratch", "fused"])
@pytest.mark.parametrize("with_h0", [False, True])
def test_layer_equals_torch_rnn(num_layers, bidirectional, impl, with_h0):
    g = seeded(1)
    ref = torch.nn.RNN(5, 6, num_layers, batch_first=True, bidirectional=bidirectional)
    ours = ElmanRNN.from_torch(ref, impl=impl)
    K = 2 if bidirectional else 1
    x = randn(3, 8, 5, g=g)
    h0 = randn(num_layers * K, 3, 6, g=g) if with_h0 else None
    out_ref, h_ref = ref(x, h0)
    out, h_n = ours(x, h0)
    assert out.shape == (3, 8, 6 * K) and h_n.shape == (num_layers * K, 3, 6)
    assert torch.allclose(out, out_ref, atol=TOL, rtol=0)
    assert torch.allclose(h_n, h_ref, atol=TOL, rtol=0)


def test_layer_equals_torch_rnn_relu_without_bias():
    g = seeded(2)
    ref = torch.nn.RNN(4, 5, 2, nonlinearity="relu", bias=False, batch_first=True, bidirectional=True)
    ours = ElmanRNN.from_torch(ref)
    assert ours.cell(0).b_W is None and len(list(ours.parameters())) == 8
    x = randn(2, 6, 4, g=g)
    for impl in ("scratch", "fused"):
        ours.impl = impl
        out, h_n = ours(x)
        assert torch.allclose(out, ref(x)[0], atol=TOL, rtol=0)
        assert torch.allclose(h_n, ref(x)[1], atol=TOL, rtol=0)


def test_scan_is_the_loop_of_fig_9_4():
    """scan over an ElmanCell is h_t = g(U h_{t-1} + W x_t) step by step, and the last output is the final state."""
    g = seeded(3)
    cell = ElmanCell(3, 4)
    x, h0 = randn(2, 5, 3, g=g), torch.zeros(2, 4)
    out, h_last = scan(cell, x, h0)
    h = h0
    for t in range(5):
        h = torch.tanh(h @ cell.U.T + cell.b_U + x[:, t] @ cell.W.T + cell.b_W)
        assert torch.allclose(out[:, t], h, atol=TOL, rtol=0)
    assert torch.equal(out[:, -1], h_last)
    back, h_first = scan(cell, x, h0, reverse=True)
    flipped, _ = scan(cell, x.flip(1), h0)
    assert torch.allclose(back, flipped.flip(1), atol=TOL, rtol=0) and torch.equal(back[:, 0], h_first)


@pytest.mark.parametrize("merge", ["concat", "sum", "mean"])
def test_bidirectional_merge(merge):
    """The two directions are two independent RNNs, one over the reversed input, combined per position."""
    g = seeded(4)
    rnn = ElmanRNN(3, 4, bidirectional=True, merge=merge)
    x = randn(2, 5, 3, g=g)
    out, h_n = rnn(x)
    fwd, _ = scan(rnn.cell(0, 0), x, torch.zeros(2, 4))
    bwd, _ = scan(rnn.cell(0, 1), x.flip(1), torch.zeros(2, 4))
    bwd = bwd.flip(1)
    expected = {"concat": torch.cat([fwd, bwd], -1), "sum": fwd + bwd, "mean": (fwd + bwd) / 2}[merge]
    assert rnn.d_out == (8 if merge == "concat" else 4)
    assert torch.allclose(out, expected, atol=TOL, rtol=0)
    assert torch.allclose(h_n[0], fwd[:, -1], atol=TOL, rtol=0) and torch.allclose(h_n[1], bwd[:, 0], atol=TOL)


@pytest.mark.parametrize("merge", ["concat", "sum", "mean"])
def test_fused_equals_scratch_in_values_and_gradients(merge):
    g = seeded(5)
    rnn = ElmanRNN(3, 4, 2, bidirectional=True, merge=merge)
    x = randn(3, 6, 3, g=g).requires_grad_()
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [1] + [0] * 5], dtype=torch.bool)
    results = {}
    for impl in ("scratch", "fused"):
        rnn.impl = impl
        rnn.zero_grad(), setattr(x, "grad", None)
        out, h_n = rnn(x, mask=mask)
        (out.pow(2).sum() + h_n.sum()).backward()
        results[impl] = (out.detach(), h_n.detach(), x.grad.clone(), [p.grad.clone() for p in rnn.parameters()])
    (o1, h1, gx1, gp1), (o2, h2, gx2, gp2) = results["scratch"], results["fused"]
    assert torch.allclose(o1, o2, atol=TOL, rtol=0) and torch.allclose(h1, h2, atol=TOL, rtol=0)
    assert torch.allclose(gx1, gx2, atol=TOL, rtol=0)
    assert all(torch.allclose(a, b, atol=TOL, rtol=0) for a, b in zip(gp1, gp2))


@settings(max_examples=20, deadline=None)
@given(B=st.integers(1, 4), T=st.integers(1, 7), d_in=st.integers(1, 6), d_h=st.integers(1, 6),
       layers=st.integers(1, 2), bi=st.booleans(), seed=st.integers(0, 2**16))
def test_fused_equals_scratch_any_shape(B, T, d_in, d_h, layers, bi, seed):
    g = seeded(seed)
    rnn = ElmanRNN(d_in, d_h, layers, bidirectional=bi)
    x = randn(B, T, d_in, g=g)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    mask = torch.arange(T)[None] < lengths[:, None]
    for m in (None, mask):
        rnn.impl = "scratch"
        o1, h1 = rnn(x, mask=m)
        rnn.impl = "fused"
        o2, h2 = rnn(x, mask=m)
        assert torch.allclose(o1, o2, atol=TOL, rtol=0) and torch.allclose(h1, h2, atol=TOL, rtol=0)


@pytest.mark.parametrize("impl", ["scratch", "fused"])
def test_padding_never_reaches_real_tokens(impl):
    """Each sequence alone (no padding) gives the same outputs and final states as inside a padded batch."""
    g = seeded(6)
    rnn = ElmanRNN(3, 4, 2, bidirectional=True, impl=impl)
    lengths = [5, 2, 7]
    x = randn(3, 9, 3, g=g)                                      # 2+ extra columns of padding
    mask = torch.arange(9)[None] < torch.tensor(lengths)[:, None]
    out, h_n = rnn(x, mask=mask)
    for b, n in enumerate(lengths):
        alone, h_alone = rnn(x[b:b + 1, :n])
        assert torch.allclose(out[b, :n], alone[0], atol=1e-6, rtol=0)
        assert torch.allclose(h_n[:, b], h_alone[:, 0], atol=1e-6, rtol=0)
        assert torch.count_nonzero(out[b, n:]) == 0              # padded outputs are zeros


def test_shells_hold_no_weights_and_model_copies():
    rnn = ElmanRNN(3, 4, 2, bidirectional=True, impl="fused")
    assert set(rnn.state_dict()) == {f"cells.{i}.{n}" for i in range(4) for n in ("W", "U", "b_W", "b_U")}
    twin = copy.deepcopy(rnn)
    x = torch.randn(2, 3, 3)
    assert torch.equal(twin(x)[0], rnn(x)[0])


# ---------------------------------------------------------------------------------------------------------------
# the generic layer: any cell, its state a tensor or a tuple of tensors


class PairCell(torch.nn.Module):
    """A toy cell whose state is two tensors (h, c), like an LSTM's: c_t = 0.5 c_{t-1} + W x_t,
    h_t = tanh(U h_{t-1} + c_t). Its trace is {"c": c_t, "h": h_t}."""

    def __init__(self, d_in, d_h):
        super().__init__()
        self.d_h = d_h
        self.W = torch.nn.Parameter(torch.randn(d_h, d_in) * 0.5)
        self.U = torch.nn.Parameter(torch.randn(d_h, d_h) * 0.5)

    def init_state(self, batch_size, device=None, dtype=None):
        zeros = torch.zeros(batch_size, self.d_h, device=device, dtype=dtype)
        return zeros, zeros.clone()

    def forward_traced(self, x_t, state):
        h, c = state
        c_t = 0.5 * c + x_t @ self.W.T
        h_t = torch.tanh(h @ self.U.T + c_t)
        return (h_t, c_t), {"c": c_t, "h": h_t}

    def forward(self, x_t, state):
        return self.forward_traced(x_t, state)[0]


class PairRNN(RecurrentLayer):
    cell_class = PairCell


def _pair_reference(layer, x, lengths):
    """The stacked bidirectional PairRNN in plain loops, one sequence at a time (no padding, no scan)."""
    K = layer.num_directions
    outs, h_n, c_n = [], [], []
    for b, n in enumerate(lengths):
        inp = x[b, :n]                                                  # (n, d_in)
        hs_b, cs_b = [], []
        for layer_i in range(layer.num_layers):
            dirs = []
            for k in range(K):
                cell = layer.cell(layer_i, k)
                h, c = torch.zeros(layer.d_h), torch.zeros(layer.d_h)
                seq = [None] * n
                for t in (reversed(range(n)) if k == 1 else range(n)):
                    c = 0.5 * c + cell.W @ inp[t]
                    h = torch.tanh(cell.U @ h + c)
                    seq[t] = h
                dirs.append(torch.stack(seq))                           # (n, d_h)
                hs_b.append(h), cs_b.append(c)
            inp = torch.cat(dirs, -1)                                   # (n, K d_h) concat
        outs.append(inp), h_n.append(torch.stack(hs_b)), c_n.append(torch.stack(cs_b))
    return outs, torch.stack(h_n, 1), torch.stack(c_n, 1)              # (L*K, B, d_h) each


@pytest.mark.parametrize("bidirectional,layers", [(False, 1), (True, 2)])
def test_generic_layer_with_a_tuple_state_equals_plain_loops(bidirectional, layers):
    seeded(30)
    layer = PairRNN(3, 4, layers, bidirectional=bidirectional)
    lengths = [5, 2, 7]
    x = torch.randn(3, 8, 3)
    mask = torch.arange(8)[None] < torch.tensor(lengths)[:, None]
    out, (h_n, c_n) = layer(x, mask=mask)
    K = 2 if bidirectional else 1
    assert out.shape == (3, 8, 4 * K) and h_n.shape == c_n.shape == (layers * K, 3, 4)
    ref_out, ref_h, ref_c = _pair_reference(layer, x, lengths)
    for b, n in enumerate(lengths):
        assert torch.allclose(out[b, :n], ref_out[b], atol=1e-6, rtol=0)
        assert torch.count_nonzero(out[b, n:]) == 0                    # padding outputs zeros
    assert torch.allclose(h_n, ref_h, atol=1e-6, rtol=0) and torch.allclose(c_n, ref_c, atol=1e-6, rtol=0)
    # a given initial state is used: carrying (h_n, c_n) over two halves equals one pass (unidirectional)
    if not bidirectional:
        whole, (hw, cw) = layer(x)
        first, st = layer(x[:, :3])
        second, (h2, c2) = layer(x[:, 3:], st)
        assert torch.allclose(torch.cat([first, second], 1), whole, atol=1e-6, rtol=0)
        assert torch.allclose(h2, hw, atol=1e-6) and torch.allclose(c2, cw, atol=1e-6)


def test_generic_layer_returns_every_cells_traces():
    seeded(31)
    layer = PairRNN(3, 4, 2, bidirectional=True, merge="sum")
    x = torch.randn(2, 6, 3)
    mask = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])
    out, state, traces = layer(x, mask=mask, return_traces=True)
    assert torch.equal(out, layer(x, mask=mask)[0])
    assert len(traces) == 4 and all(set(tr) == {"c", "h"} for tr in traces)      # layer * K + direction
    assert all(tr["h"].shape == (2, 6, 4) for tr in traces)
    assert torch.allclose(traces[2]["h"] + traces[3]["h"], out, atol=1e-6)     # top layer's h, merged by sum
    assert torch.count_nonzero(traces[0]["c"][1, 3:]) == 0                     # padded steps trace zeros
    assert torch.allclose(traces[0]["c"][:, -1][0], state[1][0, 0])            # forward c_T of layer 0
    # an Elman cell traces its pre-activation a_t and h_t = tanh(a_t)
    rnn = ElmanRNN(3, 4, impl="fused")
    out, _, (tr,) = rnn(x, return_traces=True)
    assert torch.allclose(tr["h"], torch.tanh(tr["a"])) and torch.allclose(tr["h"], out, atol=1e-6)


def test_scan_with_a_tuple_state_keeps_the_state_on_padding():
    seeded(32)
    cell = PairCell(3, 4)
    x = torch.randn(2, 5, 3)
    mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
    out, (h, c) = scan(cell, x, cell.init_state(2), mask)
    alone, (h1, c1) = scan(cell, x[1:, :2], cell.init_state(1))
    assert torch.allclose(out[1, :2], alone[0]) and torch.count_nonzero(out[1, 2:]) == 0
    assert torch.allclose(h[1], h1[0]) and torch.allclose(c[1], c1[0])
    back, (hb, cb) = scan(cell, x, cell.init_state(2), mask, reverse=True)
    alone_b, (hb1, cb1) = scan(cell, x[1:, :2], cell.init_state(1), reverse=True)
    assert torch.allclose(back[1, :2], alone_b[0]) and torch.allclose(cb[1], cb1[0])


def test_generic_lm_and_classifier_take_a_tuple_state_layer():
    """RecurrentLM and the classifier over a two-tensor-state layer: stateful windows, step and reorder_state."""
    class PairLM(RecurrentLM):
        def build_layer(self, c):
            return PairRNN(c.d_emb, c.d_h, c.num_layers, impl=c.impl)

    set_seed(33)
    lm = PairLM(RecurrentLMConfig.tiny(11, num_layers=2, impl="scratch"))
    idx = torch.randint(11, (3, 7))
    whole, _ = lm(idx)
    first, _, state = lm(idx[:, :3], return_state=True)
    assert isinstance(state, tuple) and state[0].shape == state[1].shape == (2, 3, 16)
    second, _, _ = lm(idx[:, 3:], state=state, return_state=True)
    assert torch.allclose(torch.cat([first, second], 1), whole, atol=1e-6, rtol=0)
    logits, st = lm.step(idx[:, :5])
    for t in range(5, 7):
        logits, st = lm.step(idx[:, t:t + 1], st)
        assert torch.allclose(logits, whole[:, t], atol=1e-6)
    picked = lm.reorder_state(st, torch.tensor([2, 2, 0]))
    assert torch.equal(picked[1][:, 0], st[1][:, 2]) and picked[0].shape == (2, 3, 16)
    with pytest.raises(ValueError, match=r"impl='fused' needs a torch.nn twin"):
        PairLM(RecurrentLMConfig.tiny(11))                              # the default impl is fused
    with pytest.raises(ValueError, match=r"a tuple of 2 tensors"):
        lm(idx, state=torch.zeros(2, 3, 16))

    class PairClassifier(RNNClassifier):
        def build_layer(self, c):
            return PairRNN(c.d_emb, c.d_h, c.num_layers, bidirectional=c.bidirectional, merge=c.merge)

    clf = PairClassifier(RNNClassifierConfig.tiny(20, 3, bidirectional=True, num_layers=2, pooling="last"))
    seqs = [[4, 9, 3, 12], [7]]
    ids, mask = _pad(seqs, 0, extra=2)
    logits, _ = clf(ids, mask=mask)
    for b, s in enumerate(seqs):
        assert torch.allclose(logits[b], clf(torch.tensor([s]))[0][0], atol=1e-6, rtol=0)


def test_a_layer_needs_a_cell():
    class NoCell(RecurrentLayer):
        pass

    with pytest.raises(TypeError, match="cell_class"):
        NoCell(3, 4)
    with pytest.raises(ValueError, match="has none; use impl='scratch'"):
        PairRNN(3, 4, impl="fused")


def test_map_state_keeps_the_structure_and_the_encoder_checks_its_layer():
    from typing import NamedTuple

    from seqviz.rnn import RecurrentEncoder, map_state, state_h

    class HC(NamedTuple):
        h: torch.Tensor
        c: torch.Tensor

    s = {"dec": HC(torch.ones(2, 3), torch.zeros(2, 3)), "enc": [torch.arange(6.).view(2, 3)], "none": None}
    doubled = map_state(lambda t: t * 2, s)
    assert isinstance(doubled["dec"], HC) and torch.equal(doubled["dec"].h, torch.full((2, 3), 2.0))
    assert isinstance(doubled["enc"], list) and doubled["none"] is None
    assert state_h(HC(torch.ones(1), torch.zeros(1))).item() == 1.0
    with pytest.raises(TypeError, match="a state must be a Tensor"):
        map_state(lambda t: t, "h")
    with pytest.raises(ValueError, match="RecurrentLayer reading d_emb=8"):
        RecurrentEncoder(10, 8, ElmanRNN(6, 4))
    with pytest.raises(ValueError, match="RecurrentLayer reading d_emb=8"):
        RecurrentEncoder(10, 8, torch.nn.RNN(8, 4))
    enc = RecurrentEncoder(10, 8, PairRNN(8, 4, bidirectional=True), pad_id=0)
    h, (h_n, c_n), mask = enc(torch.tensor([[3, 4, 0]]))
    assert h.shape == (1, 3, 8) and h_n.shape == (2, 1, 4) and mask.tolist() == [[True, True, False]]


# ---------------------------------------------------------------------------------------------------------------
# backpropagation through time, by hand


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_manual_bptt_equals_autograd(nonlinearity):
    g = seeded(7)
    cell = ElmanCell(3, 5, nonlinearity).double()
    x = randn(4, 9, 3, g=g, dtype=torch.float64).requires_grad_()
    h0 = randn(4, 5, g=g, dtype=torch.float64).requires_grad_()
    dL_dy = randn(4, 9, 5, g=g, dtype=torch.float64)
    out, _ = scan(cell, x, h0)
    (out * dL_dy).sum().backward()                               # a loss whose gradient at each h_t is dL_dy
    manual = elman_bptt(cell, x.detach(), h0.detach(), dL_dy)
    for name in ("W", "U", "b_W", "b_U"):
        assert torch.allclose(getattr(manual, name), getattr(cell, name).grad, atol=1e-10, rtol=0), name
    assert torch.allclose(manual.x, x.grad, atol=1e-10, rtol=0)
    assert torch.allclose(manual.h0, h0.grad, atol=1e-10, rtol=0)
    assert torch.allclose(manual.h[:, -1], dL_dy[:, -1])        # nothing comes back into h_T from the future


@pytest.mark.parametrize("tie", [False, True])
def test_manual_lm_gradients_equal_autograd(tie):
    set_seed(8)
    model = RNNLM(RNNLMConfig.tiny(23, tie_weights=tie)).double()
    idx, y = torch.randint(23, (3, 7)), torch.randint(23, (3, 7))
    y[0, 2] = IGNORE_INDEX
    logits, loss = model(idx, y)
    loss.backward()
    manual_loss, grads = rnnlm_manual_gradients(model, idx, y)
    assert manual_loss.item() == pytest.approx(loss.item(), abs=1e-12)
    names = dict(model.named_parameters())
    assert set(grads) == set(names)
    for name, p in names.items():
        assert torch.allclose(grads[name], p.grad, atol=1e-10, rtol=0), name


def test_manual_lm_gradients_refuse_what_they_do_not_cover():
    model = RNNLM(RNNLMConfig.tiny(10, num_layers=2))
    with pytest.raises(ValueError, match="one layer"):
        rnnlm_manual_gradients(model, torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long))


def test_grad_norm_by_distance_matches_autograd_and_vanishes():
    g = seeded(9)
    cell = ElmanCell(3, 6).double()
    with torch.no_grad():
        cell.U.mul_(0.3)                                         # a contracting recurrence: gradients must shrink
    x = randn(2, 12, 3, g=g, dtype=torch.float64)
    dL_dhT = randn(2, 6, g=g, dtype=torch.float64)
    norms = grad_norm_by_distance(cell, x, dL_dhT)
    # autograd: keep each h_t and differentiate the last-step loss with respect to all of them
    hs, h = [], torch.zeros(2, 6, dtype=torch.float64)
    for t in range(12):
        h = cell(x[:, t], h)
        h.retain_grad()
        hs.append(h)
    (hs[-1] * dL_dhT).sum().backward()
    expected = torch.stack([hs[t].grad.norm(dim=-1).mean() for t in reversed(range(12))])
    assert torch.allclose(norms, expected, atol=1e-12, rtol=0)
    assert norms[0] == pytest.approx(dL_dhT.norm(dim=-1).mean().item())
    assert bool((norms[1:] < norms[:-1]).all()) and norms[-1] < 1e-3 * norms[0]


def test_lm_grad_norm_by_distance_is_per_example_gradient():
    set_seed(10)
    model = RNNLM(RNNLMConfig.tiny(15)).double()
    idx, y = torch.randint(15, (2, 6)), torch.randint(15, (2, 6))
    norms = lm_grad_norm_by_distance(model, idx, y)
    assert norms.shape == (6,)
    # distance 0 equals the autograd gradient of example 0's last-step loss w.r.t. its h_T, averaged over examples
    per = []
    for b in range(2):
        h, _ = model.rnn(model.E(idx[b:b + 1]))
        h_T = h[:, -1].detach().requires_grad_()
        F.cross_entropy(model.V(h_T), y[b:b + 1, -1]).backward()
        per.append(h_T.grad.norm())
    assert norms[0].item() == pytest.approx(torch.stack(per).mean().item(), abs=1e-10)


# ---------------------------------------------------------------------------------------------------------------
# the RNN language model


def test_lm_shapes_loss_and_probabilities():
    set_seed(11)
    model = RNNLM(RNNLMConfig.tiny(31, tie_weights=False, d_emb=8))
    idx, y = torch.randint(31, (4, 6)), torch.randint(31, (4, 6))
    logits, loss = model(idx, y)
    assert logits.shape == (4, 6, 31)
    # (9.12-9.13) mean over positions of -log softmax(V h_t)[w_{t+1}]
    log_p = logits.log_softmax(-1)
    assert loss.item() == pytest.approx(-log_p.gather(-1, y[..., None]).mean().item(), abs=1e-6)
    assert torch.allclose(log_p.exp().sum(-1), torch.ones(4, 6), atol=1e-6)   # a distribution at every step
    logits2, loss2 = model(idx)
    assert loss2 is None and torch.equal(logits, logits2)


def test_lm_fused_equals_scratch():
    set_seed(12)
    model = RNNLM(RNNLMConfig.tiny(20, num_layers=2))
    idx, y = torch.randint(20, (3, 9)), torch.randint(20, (3, 9))
    grads = {}
    for impl in ("fused", "scratch"):
        model.impl = impl
        model.zero_grad()
        logits, loss = model(idx, y)
        loss.backward()
        grads[impl] = (logits.detach(), [p.grad.clone() for p in model.parameters()])
    assert torch.allclose(grads["fused"][0], grads["scratch"][0], atol=TOL, rtol=0)
    assert all(torch.allclose(a, b, atol=TOL, rtol=0) for a, b in zip(grads["fused"][1], grads["scratch"][1]))


def test_weight_tying_shares_one_tensor():
    set_seed(13)
    tied = RNNLM(RNNLMConfig.tiny(40, tie_weights=True))
    untied = RNNLM(RNNLMConfig.tiny(40, tie_weights=False))
    assert tied.V.weight is tied.E.weight
    assert tied.V.weight.data_ptr() == tied.E.weight.data_ptr()
    params = list(tied.parameters())
    assert sum(p is tied.E.weight for p in params) == 1               # the optimizer sees (and steps) it once
    n_tied, n_untied = (sum(p.numel() for p in m.parameters()) for m in (tied, untied))
    assert n_untied - n_tied == 40 * 16                               # the saving: one |V| x d_h matrix
    # the shared tensor's gradient is the sum of its two roles (embedding and output layer)
    untied.load_state_dict({**tied.state_dict(), "V.weight": tied.E.weight.detach().clone()})
    idx, y = torch.randint(40, (2, 5)), torch.randint(40, (2, 5))
    tied(idx, y)[1].backward()
    untied(idx, y)[1].backward()
    assert torch.allclose(tied.E.weight.grad, untied.E.weight.grad + untied.V.weight.grad, atol=1e-6, rtol=0)
    # and an update through one name is seen through the other
    with torch.no_grad():
        tied.E.weight[3, 0] = 7.0
    assert tied.V.weight[3, 0].item() == 7.0


def test_weight_tying_needs_equal_widths():
    with pytest.raises(ValueError, match="d_emb == d_h"):
        RNNLMConfig(50, d_emb=32, d_h=64, tie_weights=True)
    RNNLMConfig(50, d_emb=32, d_h=64, tie_weights=False)


def test_carried_state_continues_the_sequence():
    """Two windows with h_n carried over compute exactly what one long window computes (stateful TBPTT)."""
    set_seed(14)
    model = RNNLM(RNNLMConfig.tiny(12, num_layers=2))
    idx = torch.randint(12, (3, 10))
    whole, _ = model(idx)
    first, _, h = model(idx[:, :4], return_state=True)
    second, _, _ = model(idx[:, 4:], state=h, return_state=True)
    assert h.shape == (2, 3, 16)
    assert torch.allclose(torch.cat([first, second], 1), whole, atol=TOL, rtol=0)
    fresh, _ = model(idx[:, 4:])
    assert not torch.allclose(fresh, second, atol=1e-3)                # without the state it is not the same


def test_lm_steps_carry_state_only_when_stateful():
    set_seed(15)
    model = RNNLM(RNNLMConfig.tiny(12))
    x, y = torch.randint(12, (2, 5)), torch.randint(12, (2, 5))
    loss, logits, carry = lm_step(stateful=True)(model, Batch(x, y), None)
    assert carry.shape == (1, 2, 16) and loss.dim() == 0
    assert torch.equal(logits, model(x)[0])                            # the step's own logits, for metrics
    loss2, _, _ = lm_step(stateful=True)(model, Batch(x, y), carry)
    assert loss2.item() != loss.item()
    assert lm_step(stateful=False)(model, Batch(x, y), carry).carry is None
    assert lm_step(stateful=False)(model, Batch(x, y), carry).loss.item() == pytest.approx(loss.item())
    # a carried state from a batch of another size is dropped (the last window of a stream may be narrower)
    assert lm_step(stateful=True)(model, Batch(x[:1], y[:1]), carry).carry.shape == (1, 1, 16)


def test_stateful_training_learns_across_window_boundaries():
    """A stream where each token is fixed by the one two places back: with windows of length 2 only a carried
    state can predict the first position of a window. Stateful training must beat stateless training there."""
    from seqviz.train import TrainConfig, Trainer, evaluate

    g = torch.Generator().manual_seed(0)
    pattern = torch.tensor([3, 5, 4, 7])
    stream = torch.cat([torch.stack([torch.randint(3, 8, (1,), generator=g)[0], p]) for p in pattern.repeat(300)])
    # odd places cycle through the pattern, so each is fixed by the odd token 2 steps back; even places are noise
    batches = lm_batches(stream, batch_size=16, bptt=2)
    results = {}
    for stateful in (False, True):
        set_seed(0)
        model = RNNLM(RNNLMConfig.tiny(8, d_emb=24, d_h=24))
        Trainer(model, TrainConfig(epochs=6, lr=2e-2, progress=False), batches, step=lm_step(stateful)).fit()
        results[stateful] = evaluate(model, batches, step=lm_step(stateful))["loss"]
    # ideal: log 5 on the noise (half the targets) = 0.80 stateful; stateless also misses half the odd ones = 1.21
    assert results[True] < 0.95 and results[False] > 1.15


def test_next_token_logits_is_the_last_position_and_decodes():
    from seqviz.decode import generate

    set_seed(16)
    model = RNNLM(RNNLMConfig.tiny(18, dropout=0.5))
    model.train()
    ctx = [2, 5, 7, 1]
    z = model.next_token_logits(ctx)
    assert model.training                                              # mode restored
    model.eval()
    assert z.shape == (18,) and torch.allclose(z, model(torch.tensor([ctx]))[0][0, -1], atol=1e-6)
    assert torch.softmax(z, 0).sum().item() == pytest.approx(1.0, abs=1e-6)
    greedy = generate(model.next_token_logits, [2], 6, greedy=True)
    assert greedy == generate(model.next_token_logits, [2], 6, greedy=True)
    # greedy really follows the arg-max of next_token_logits at every step
    context = [2]
    for tok in greedy:
        assert tok == int(model.next_token_logits(context).argmax())
        context.append(tok)
    assert torch.equal(model.next_token_logits(torch.tensor(ctx)), model.next_token_logits(ctx))


def test_decoding_a_model_left_in_train_mode_gives_the_eval_result():
    """After Trainer.fit a model is in train mode; with dropout 0.5 decoding must still switch dropout off (the same
    output as in eval mode, run after run) and hand the model back in train mode."""
    from seqviz.decode import beam_search, generate

    set_seed(17)
    model = RNNLM(RNNLMConfig.tiny(18, dropout=0.5))
    model.eval()
    want = (generate(model, [2], 8, greedy=True), generate(model, [2], 8, temperature=1.5, seed=3),
            beam_search(model, [2], 3, 6, stop_id=1))
    model.train()
    for _ in range(3):
        got = (generate(model, [2], 8, greedy=True), generate(model, [2], 8, temperature=1.5, seed=3),
               beam_search(model, [2], 3, 6, stop_id=1))
        assert got == want
        assert model.training                                          # the caller's mode comes back


# ---------------------------------------------------------------------------------------------------------------
# tagger and classifier: padding masks


@pytest.mark.parametrize("impl", ["scratch", "fused"])
@pytest.mark.parametrize("bidirectional,layers,merge", [(False, 1, "concat"), (True, 1, "concat"),
                                                        (True, 2, "sum"), (True, 2, "mean")])
def test_tagger_padding_never_changes_a_prediction(impl, bidirectional, layers, merge):
    set_seed(17)
    model = RNNTagger(RNNTaggerConfig.tiny(30, 5, bidirectional=bidirectional, num_layers=layers, merge=merge,
                                           impl=impl))
    seqs = [[4, 9, 3, 12], [7, 7], [5, 6, 8, 10, 11, 20]]
    tags = [[1, 2, 0, 4], [3, 3], [0, 1, 2, 3, 4, 0]]
    ids, _ = _pad(seqs, 0, extra=3)
    logits, _ = model(ids)
    assert logits.shape == (3, 9, 5)
    losses = []
    for b, (s, t) in enumerate(zip(seqs, tags)):
        alone, loss = model(torch.tensor([s]), torch.tensor([t]))
        assert torch.allclose(logits[b, :len(s)], alone[0], atol=1e-6, rtol=0)
        assert torch.equal(logits[b, :len(s)].argmax(-1), alone[0].argmax(-1))
        losses.append((loss.item(), len(s)))
    # the padded batch's loss is the token-weighted mean of the single-sequence losses
    y, _ = _pad(tags, IGNORE_INDEX, extra=3)
    _, loss = model(ids, y)
    assert loss.item() == pytest.approx(sum(l * n for l, n in losses) / sum(n for _, n in losses), abs=1e-6)
    assert torch.allclose(logits.softmax(-1).sum(-1), torch.ones(3, 9), atol=1e-6)


def _pad(seqs, value, extra=0):
    T = max(map(len, seqs)) + extra
    out = torch.full((len(seqs), T), value, dtype=torch.long)
    for b, s in enumerate(seqs):
        out[b, :len(s)] = torch.tensor(s)
    return out, out != value


@pytest.mark.parametrize("impl", ["scratch", "fused"])
@pytest.mark.parametrize("pooling", ["last", "mean", "max"])
@pytest.mark.parametrize("bidirectional,merge", [(False, "concat"), (True, "concat"), (True, "mean")])
def test_classifier_padding_never_changes_a_prediction(impl, pooling, bidirectional, merge):
    set_seed(18)
    model = RNNClassifier(RNNClassifierConfig.tiny(30, 3, pooling=pooling, bidirectional=bidirectional,
                                                   merge=merge, num_layers=2, impl=impl))
    seqs = [[4, 9, 3, 12], [7], [5, 6, 8, 10, 11, 20]]
    ids, mask = _pad(seqs, 0, extra=4)
    logits, _ = model(ids, mask=mask)
    assert logits.shape == (3, 3)
    assert torch.equal(logits, model(ids)[0])                        # mask derived from pad_id is the same
    for b, s in enumerate(seqs):
        alone, _ = model(torch.tensor([s]))
        assert torch.allclose(logits[b], alone[0], atol=1e-6, rtol=0)
        assert logits[b].argmax() == alone[0].argmax()
    assert torch.allclose(logits.softmax(-1).sum(-1), torch.ones(3), atol=1e-6)


def test_classifier_pooling_definitions():
    set_seed(19)
    seqs = [[4, 9, 3], [7, 8]]
    ids, mask = _pad(seqs, 0, extra=1)
    for bidirectional in (False, True):
        base = RNNClassifier(RNNClassifierConfig.tiny(20, 2, bidirectional=bidirectional))
        h, h_n = base.encoder.rnn(base.encoder.E(ids), mask=mask)
        K = 2 if bidirectional else 1
        for pooling in ("last", "mean", "max"):
            base.config.pooling = pooling
            pooled = base.pool(h, h_n, mask)
            for b, s in enumerate(seqs):
                real = h[b, :len(s)]                                  # (n, d_out)
                if pooling == "mean":                                 # (9.17)
                    want = real.mean(0)
                elif pooling == "max":
                    want = real.max(0).values
                elif K == 1:
                    want = real[-1]                                   # state after the last real token
                else:                                                 # Fig. 9.12: forward's last, backward's first
                    want = torch.cat([real[-1, :16], real[0, 16:]])
                assert torch.allclose(pooled[b], want, atol=1e-6, rtol=0), (pooling, bidirectional)


def test_accuracy_metric_reads_the_batch_by_name():
    set_seed(20)
    tagger = RNNTagger(RNNTaggerConfig.tiny(20, 4))
    ids, mask = _pad([[3, 4, 5], [6]], 0)
    tags = torch.tensor([[0, 1, 2], [3, 2, 2]])                         # row 1: tags under padding must not count
    logits, _ = tagger(ids, mask=mask)
    pred = logits.argmax(-1)
    correct = sum(int(pred[b, t] == tags[b, t]) for b, t in [(0, 0), (0, 1), (0, 2), (1, 0)])
    assert accuracy(Batch(ids, tags, mask), logits) == {"accuracy": (float(correct), 4)}
    ignored = tags.clone()
    ignored[0, 1] = IGNORE_INDEX
    assert accuracy(Batch(ids, ignored, mask), logits)["accuracy"][1] == 3
    clf = RNNClassifier(RNNClassifierConfig.tiny(20, 2))
    labels = torch.tensor([1, IGNORE_INDEX])
    logits, _ = clf(ids, mask=mask)
    assert accuracy(Batch(ids, labels, mask), logits) == {"accuracy": (float(logits[0].argmax() == 1), 1)}
    with pytest.raises(ValueError, match="do not fit targets"):
        accuracy(Batch(ids, tags, mask), logits)


def test_tagger_loss_weighting_counts_only_real_targets():
    """Through the trainer's evaluate, a padded tagger batch weighs its loss by its real tokens only."""
    from seqviz.train import evaluate

    set_seed(22)
    tagger = RNNTagger(RNNTaggerConfig.tiny(20, 4))
    seqs, tags = [[3, 4, 5, 6, 7], [6]], [[0, 1, 2, 3, 0], [3]]
    one_by_one = evaluate(tagger, PaddedBatches(seqs, tags, batch_size=1, pad_id=0))
    padded = evaluate(tagger, PaddedBatches(seqs, tags, batch_size=2, pad_id=0))
    assert one_by_one["targets"] == padded["targets"] == 6
    assert padded["loss"] == pytest.approx(one_by_one["loss"], abs=1e-6)


def test_tagger_and_classifier_train_through_the_trainer():
    from seqviz.train import TrainConfig, Trainer

    g = torch.Generator().manual_seed(0)
    seqs = [torch.randint(3, 12, (int(n),), generator=g).tolist() for n in torch.randint(2, 9, (96,), generator=g)]
    tags = [[int(w % 3) for w in s] for s in seqs]                   # the tag is a function of the word
    labels = [int(s[0] > 7) for s in seqs]                           # the class depends on the first word
    for model, targets in ((RNNTagger(RNNTaggerConfig.tiny(12, 3)), tags),
                           (RNNClassifier(RNNClassifierConfig.tiny(12, 2, pooling="last", bidirectional=True)),
                            labels)):
        set_seed(0)
        data = PaddedBatches(seqs, targets, 16, pad_id=0, shuffle=True)
        hist = Trainer(model, TrainConfig(epochs=15, lr=2e-2, progress=False), data, data, metrics=accuracy).fit()
        assert hist.metrics[-1]["accuracy"] > 0.95, type(model).__name__


# ---------------------------------------------------------------------------------------------------------------
# bad input: clear errors


@pytest.fixture
def lm():
    set_seed(21)
    return RNNLM(RNNLMConfig.tiny(10, num_layers=2))


@pytest.mark.parametrize("idx,exc,match", [
    (torch.zeros(5, dtype=torch.long), ValueError, r"shape \(B, T\).*unsqueeze"),
    (torch.zeros(2, 3, 4, dtype=torch.long), ValueError, r"shape \(B, T\)"),
    (torch.zeros(2, 3), TypeError, "integer token ids"),
    ([[1, 2]], TypeError, "torch tensor"),
    (torch.zeros(0, 4, dtype=torch.long), ValueError, "empty batch"),
    (torch.zeros(2, 0, dtype=torch.long), ValueError, "empty batch"),
    (torch.tensor([[1, 10]]), ValueError, r"token id 10 .*outside the vocabulary.*\[0, 10\)"),
    (torch.tensor([[-1, 3]]), ValueError, "token id -1"),
])
def test_lm_rejects_bad_ids(lm, idx, exc, match):
    with pytest.raises(exc, match=match):
        lm(idx)


def test_lm_rejects_bad_targets_and_state(lm):
    idx = torch.ones(2, 3, dtype=torch.long)
    with pytest.raises(ValueError, match=r"targets must have shape \(2, 3\)"):
        lm(idx, torch.ones(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="target 10 is outside"):
        lm(idx, torch.full((2, 3), 10))
    with pytest.raises(ValueError, match="nothing to score"):
        lm(idx, torch.full((2, 3), IGNORE_INDEX))
    with pytest.raises(ValueError, match=r"hidden state must have shape .*\(2, 2, 16\), got \(1, 2, 16\)"):
        lm(idx, state=torch.zeros(1, 2, 16))
    with pytest.raises(ValueError, match="hidden state"):
        lm(idx, state=torch.zeros(2, 3, 16))                         # batch size does not match
    with pytest.raises(ValueError, match="non-empty"):
        lm.next_token_logits([])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        lm.next_token_logits([3, 99])


def test_layer_and_mask_errors():
    rnn = ElmanRNN(3, 4)
    with pytest.raises(ValueError, match=r"d_in=3"):
        rnn(torch.zeros(2, 5, 4))
    with pytest.raises(TypeError, match="float tensor"):
        rnn(torch.zeros(2, 5, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="empty batch"):
        rnn(torch.zeros(2, 0, 3))
    x = torch.zeros(2, 3, 3)
    with pytest.raises(ValueError, match="right-padded"):
        rnn(x, mask=torch.tensor([[True, False, True], [True, True, True]]))
    with pytest.raises(ValueError, match="row 1 .* no real token"):
        rnn(x, mask=torch.tensor([[True, False, False], [False, False, False]]))
    with pytest.raises(TypeError, match="bool tensor"):
        rnn(x, mask=torch.ones(2, 3))
    with pytest.raises(ValueError, match=r"mask must have shape"):
        rnn(x, mask=torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="batch_first"):
        ElmanRNN.from_torch(torch.nn.RNN(3, 4))


@pytest.mark.parametrize("make,match", [
    (lambda: ElmanRNN(3, 4, impl="cuda"), "impl must be one of"),
    (lambda: ElmanRNN(3, 4, merge="product"), "merge must be one of"),
    (lambda: ElmanRNN(0, 4), "d_in must be a positive int"),
    (lambda: ElmanCell(3, 4, nonlinearity="sigmoid"), "nonlinearity must be one of"),
    (lambda: RNNLMConfig(10, dropout=1.0), r"dropout must be in \[0, 1\)"),
    (lambda: RNNLMConfig(0), "vocab_size must be a positive int"),
    (lambda: RNNClassifierConfig(10, 2, pooling="attention"), "pooling must be one of"),
    (lambda: RNNTaggerConfig(10, 0), "num_tags must be a positive int"),
    (lambda: RNNTaggerConfig(10, 3, pad_id=10), "pad_id 10 is outside"),
])
def test_bad_configuration_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_tagger_and_classifier_input_errors():
    tagger = RNNTagger(RNNTaggerConfig.tiny(10, 3))
    clf = RNNClassifier(RNNClassifierConfig.tiny(10, 2))
    with pytest.raises(ValueError, match="row 0 .* no real token"):
        tagger(torch.zeros(1, 4, dtype=torch.long))                  # all padding
    with pytest.raises(ValueError, match="target 3 is outside"):
        tagger(torch.ones(1, 2, dtype=torch.long), torch.tensor([[0, 3]]))
    tagger(torch.tensor([[1, 0]]), torch.tensor([[0, 7]]))              # a tag under padding is never read
    with pytest.raises(ValueError, match=r"targets must have shape \(2,\)"):
        clf(torch.ones(2, 3, dtype=torch.long), torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="empty batch"):
        clf(torch.zeros(0, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        clf(torch.tensor([[1, 12]]))


def test_ignored_targets_are_neither_scored_nor_counted():
    """The LM skips IGNORE_INDEX in its loss and the trainer leaves it out of the count that weights each batch's
    mean, so evaluate() over batches with ignored targets is the mean over the scored targets alone."""
    from seqviz.train import evaluate

    set_seed(21)
    model = RNNLM(RNNLMConfig.tiny(12))
    x1, y1 = torch.randint(12, (2, 5)), torch.randint(12, (2, 5))
    y1[0, :3] = IGNORE_INDEX                                           # 7 of 10 scored
    x2, y2 = torch.randint(12, (3, 5)), torch.randint(12, (3, 5))     # 15 of 15 scored
    res = evaluate(model, [Batch(x1, y1), Batch(x2, y2)])
    with torch.no_grad():
        nll = torch.cat([F.cross_entropy(model(x)[0][y != IGNORE_INDEX], y[y != IGNORE_INDEX], reduction="none")
                         for x, y in ((x1, y1), (x2, y2))])           # (22,) one loss per scored target
    assert res["targets"] == 22 == nll.numel()
    assert res["loss"] == pytest.approx(nll.mean().item(), rel=1e-6)


def test_presets_build_and_run():
    idx = torch.tensor([[3, 4, 5, 0]])
    for config in (RNNLMConfig.tiny(9), RNNLMConfig(9), RNNLMConfig.full(9)):
        assert config.tie_weights and config.d_emb == config.d_h
        logits, _ = RNNLM(config)(idx)
        assert logits.shape == (1, 4, 9)
    for config in (RNNTaggerConfig.tiny(9, 3), RNNTaggerConfig(9, 3), RNNTaggerConfig.full(9, 3)):
        assert RNNTagger(config)(idx)[0].shape == (1, 4, 3)
    for config in (RNNClassifierConfig.tiny(9, 2), RNNClassifierConfig(9, 2), RNNClassifierConfig.full(9, 2)):
        assert RNNClassifier(config)(idx)[0].shape == (1, 2)
