"""Tests for seqviz.window: the fixed-window neural LM of chapter 2."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from seqviz import set_seed
from seqviz.decode import generate
from seqviz.train import TrainConfig, Trainer, evaluate
from seqviz.data import window_data
from seqviz.window import WindowConfig, WindowLM

V = 13


def model_for(seed: int = 0, **kw) -> WindowLM:
    set_seed(seed)
    cfg = dict(context=3, d_emb=5, d_h=7)  # all sizes different, so a transposition cannot pass
    cfg.update(kw)
    return WindowLM(WindowConfig(V, **cfg))


def rule_windows(n_windows: int, seed: int = 0, batch_size: int = 32) -> torch.utils.data.DataLoader:
    """Random windows (a, b, c) -> b + 1 mod V: the answer hangs on the middle slot, not on the last word."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randint(0, V, (n_windows, 3), generator=g)  # (N, n)
    Y = (X[:, 1] + 1) % V  # (N,)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=batch_size, shuffle=True)


# -- shapes and the equations ---------------------------------------------------------------------------------------
def test_shapes():
    m = model_for()
    x = torch.randint(0, V, (4, 3))
    logits, loss = m(x)
    assert logits.shape == (4, V) and loss is None
    logits, loss = m(x, torch.randint(0, V, (4,)))
    assert loss.dim() == 0 and loss.item() > 0
    assert m.hidden(x).shape == (4, 7)
    assert m.position_contributions([1, 2]).shape == (2, 3, 7)
    assert m.next_token_logits([1, 2, 3]).shape == (V,)


def test_forward_equals_the_equations_written_out():
    m = model_for(nonlinearity="tanh")
    x = torch.tensor([[1, 2, 3], [12, 0, 7]])
    E = m.E.weight  # (V, d): row w is the embedding of w
    W, b1 = m.W.weight, m.W.bias  # (H, n*d), (H,)
    U, b2 = m.U.weight, m.U.bias  # (V, H), (V,)
    rows = []
    for window in x.tolist():
        # E x for a one-hot x picks out a row: e_k = E^T onehot(w_k)
        onehots = [F.one_hot(torch.tensor(w), V).float() for w in window]
        e = torch.cat([E.T @ o for o in onehots])  # (n*d,) concatenated in window order
        h = torch.tanh(W @ e + b1)  # (H,)
        rows.append(U @ h + b2)  # (V,)
    expected = torch.stack(rows)
    torch.testing.assert_close(m(x)[0], expected, rtol=1e-5, atol=1e-6)


def test_relu_activation():
    m = model_for(nonlinearity="relu")
    x = torch.tensor([[4, 5, 6]])
    e = m.E(x).reshape(1, -1)
    torch.testing.assert_close(m.hidden(x), torch.relu(m.W(e)))


def test_position_contributions_sum_to_the_hidden_preactivation():
    m = model_for()
    window = [3, 9, 3]
    contrib = m.position_contributions(window)  # (3, n, H)
    pre = sum(contrib[k, k] for k in range(3)) + m.W.bias  # word k sits in slot k
    torch.testing.assert_close(torch.tanh(pre), m.hidden(torch.tensor([window]))[0])
    # the same word gets a different vector in each slot: nothing is shared between positions
    assert not torch.allclose(contrib[0, 0], contrib[0, 1])
    torch.testing.assert_close(contrib[0], contrib[2])  # same word, same table


def test_parameter_count_formula():
    m = model_for()
    n, d, H = 3, 5, 7
    assert m.num_parameters() == V * d + (n * d * H + H) + (H * V + V)


# -- probabilities --------------------------------------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, V - 1), min_size=3, max_size=12))
def test_next_token_distribution_sums_to_one(context):
    m = model_for()
    p = torch.softmax(m.next_token_logits(context).double(), dim=0)
    assert p.shape == (V,) and bool((p > 0).all())
    assert float(p.sum()) == pytest.approx(1.0, abs=1e-12)


def test_next_token_logits_reads_only_the_last_window_and_restores_mode():
    m = model_for(dropout=0.5)
    m.train()
    a = m.next_token_logits([5, 5, 5, 1, 2, 3])
    assert m.training  # restored
    m.eval()
    torch.testing.assert_close(a, m(torch.tensor([[1, 2, 3]]))[0][0])
    torch.testing.assert_close(a, m.next_token_logits(torch.tensor([9, 1, 2, 3])))
    assert not m.training


def test_short_context_left_padded_with_pad_id():
    m = model_for()
    torch.testing.assert_close(m.next_token_logits([4], pad_id=0), m.next_token_logits([0, 0, 4]))
    torch.testing.assert_close(m.next_token_logits([], pad_id=2), m.next_token_logits([2, 2, 2]))


def test_works_with_the_shared_decoder():
    m = model_for()
    m.eval()
    new = generate(m.next_token_logits, [1, 2, 3], 6, greedy=True)
    ctx = [1, 2, 3]
    for _ in range(6):
        ctx.append(int(m(torch.tensor([ctx[-3:]]))[0].argmax()))
    assert new == ctx[3:]
    sampled = generate(m.next_token_logits, [1, 2, 3], 20, temperature=0.8, seed=1)
    assert sampled == generate(m.next_token_logits, [1, 2, 3], 20, temperature=0.8, seed=1)
    assert all(0 <= i < V for i in sampled)


# -- training -------------------------------------------------------------------------------------------------------
def train_on_rule(seed: int, epochs: int = 8):
    m = model_for(seed=seed, d_emb=8, d_h=32)
    train, valid = rule_windows(1500, seed=1), rule_windows(300, seed=2, batch_size=100)
    before = evaluate(m, valid)["loss"]
    hist = Trainer(m, TrainConfig(epochs=epochs, lr=1e-2, progress=False, seed=seed), train, valid).fit()
    return before, hist


def test_loss_decreases_on_a_tiny_task():
    before, hist = train_on_rule(0)
    assert before == pytest.approx(math.log(V), abs=0.3)  # starts near uniform
    assert hist.valid_loss[-1] < 0.1  # the rule is learnt, and holds on windows drawn afresh
    assert hist.valid_perplexity[-1] < 1.2


def test_training_is_deterministic():
    a, b = train_on_rule(3, epochs=2)[1], train_on_rule(3, epochs=2)[1]
    assert a.step_loss == b.step_loss and a.valid_loss == b.valid_loss
    assert train_on_rule(4, epochs=1)[1].step_loss != a.step_loss[: len(a.step_loss) // 2]


def test_dropout_only_while_training():
    m = model_for(dropout=0.5)
    x = torch.randint(0, V, (6, 3))
    m.train()
    set_seed(1)
    a = m(x)[0]
    b = m(x)[0]
    assert not torch.equal(a, b)
    m.eval()
    assert torch.equal(m(x)[0], m(x)[0])


# -- window_data ----------------------------------------------------------------------------------------------------
def test_window_data_predicts_every_token_once_when_padded():
    ids = torch.arange(1, 11)  # 10 tokens
    X, Y = map(torch.cat, zip(*((b.x, b.y) for b in window_data(ids, 3, pad_id=0, batch_size=4))))
    assert X.shape == (10, 3) and torch.equal(Y, ids)
    assert X[0].tolist() == [0, 0, 0] and X[1].tolist() == [0, 0, 1] and X[-1].tolist() == [7, 8, 9]
    X2, Y2 = map(torch.cat, zip(*((b.x, b.y) for b in window_data(ids, 3, batch_size=100))))
    assert X2.shape == (7, 3) and torch.equal(Y2, ids[3:])


def test_window_batches_shuffle_every_epoch_and_follow_the_seed():
    ids = torch.arange(100)
    data = window_data(ids, 2, batch_size=16, shuffle=True, seed=5)
    assert len(data) == 7  # ceil(98 / 16)
    set_seed(123)  # the global random state plays no part
    first = torch.cat([b.y for b in data])
    assert torch.equal(torch.cat([b.y for b in data]), first)  # the order is a function of (seed, epoch) only
    data.set_epoch(1)                                          # what the trainer does at each epoch's start
    second = torch.cat([b.y for b in data])
    assert sorted(first.tolist()) == sorted(second.tolist()) == list(range(2, 100))  # each window once per pass
    assert not torch.equal(first, second)  # a new order every epoch
    data.set_epoch(0)
    assert torch.equal(torch.cat([b.y for b in data]), first)
    again = window_data(ids, 2, batch_size=16, shuffle=True, seed=5)
    assert torch.equal(torch.cat([b.y for b in again]), first)  # the same order under the same seed
    for b in data:
        assert torch.equal(b.x[:, 1] + 1, b.y) and torch.equal(b.x[:, 0] + 2, b.y)  # windows stay aligned


def test_window_data_bad_input():
    with pytest.raises(ValueError, match="batch_size"):
        window_data(torch.arange(10), 3, batch_size=0)
    with pytest.raises(ValueError, match="at least 4"):
        window_data(torch.arange(3), 3)


# -- bad input ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "idx, exc, word",
    [
        (torch.tensor([1, 2, 3]), ValueError, "unsqueeze"),  # rank 1
        (torch.zeros(2, 3, 1, dtype=torch.long), ValueError, r"shape \(B, n=3\)"),  # rank 3
        (torch.zeros(0, 3, dtype=torch.long), ValueError, "empty batch"),
        (torch.zeros(2, 4, dtype=torch.long), ValueError, "n=3"),  # window of the wrong width
        (torch.tensor([[1, 2, V]]), ValueError, f"outside the vocabulary 0..{V - 1}"),
        (torch.tensor([[1, -1, 2]]), ValueError, "outside the vocabulary"),
        (torch.tensor([[1.0, 2.0, 3.0]]), TypeError, "integers"),
        ([[1, 2, 3]], TypeError, "LongTensor"),
    ],
)
def test_bad_idx(idx, exc, word):
    with pytest.raises(exc, match=word):
        model_for()(idx)


@pytest.mark.parametrize(
    "targets, exc, word",
    [
        (torch.tensor([1, 2]), ValueError, r"shape \(B,\)"),
        (torch.tensor([[1], [2], [3]]), ValueError, r"shape \(B,\)"),
        (torch.tensor([1, 2, V + 5]), ValueError, "outside the vocabulary"),
        ([1, 2, 3], TypeError, "LongTensor"),
    ],
)
def test_bad_targets(targets, exc, word):
    with pytest.raises(exc, match=word):
        model_for()(torch.zeros(3, 3, dtype=torch.long), targets)


def test_bad_context():
    m = model_for()
    with pytest.raises(ValueError, match="give at least 3 ids or pass pad_id"):
        m.next_token_logits([1, 2])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        m.next_token_logits([1, 2, 99])
    with pytest.raises(ValueError, match="1-D"):
        m.next_token_logits(torch.tensor([[1, 2, 3]]))
    with pytest.raises(ValueError, match="1-D"):
        m.next_token_logits([[1, 2, 3]])
    with pytest.raises(TypeError, match="integers"):
        m.position_contributions([1.0])
    with pytest.raises(TypeError, match="integer"):
        m.next_token_logits([1.5, 2.0, 3.0])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        m.position_contributions([V])


@pytest.mark.parametrize(
    "kw, word",
    [
        ({"vocab_size": 0}, "vocab_size"),
        ({"vocab_size": 1}, "vocab_size"),
        ({"context": 0}, "context"),
        ({"d_emb": 2.5}, "d_emb"),
        ({"d_h": -3}, "d_h"),
        ({"nonlinearity": "sigmoid"}, "nonlinearity"),
        ({"dropout": 1.0}, "dropout"),
        ({"dropout": -0.1}, "dropout"),
    ],
)
def test_bad_config(kw, word):
    args = {"vocab_size": V, **kw}
    with pytest.raises(ValueError, match=word):
        WindowConfig(**args)


def test_presets_and_config_type():
    tiny, full = WindowConfig.tiny(100), WindowConfig.full(100)
    assert tiny.vocab_size == full.vocab_size == 100
    assert full.context >= tiny.context and full.d_h > tiny.d_h
    assert WindowConfig.tiny(100, context=2).context == 2
    with pytest.raises(TypeError, match="WindowConfig"):
        WindowLM({"vocab_size": 10})
