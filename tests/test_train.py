"""Tests for seqviz.train: the shared trainer, evaluation and perplexity."""

from __future__ import annotations

import math
from collections import namedtuple

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from seqviz import set_seed
from seqviz.data import Batch, PaddedBatches
from seqviz.train import (
    Constant,
    History,
    StepDecay,
    StepOutput,
    TrainConfig,
    WarmupCosine,
    Trainer,
    count_targets,
    default_step,
    detach_carry,
    evaluate,
    perplexity,
)

V = 11  # vocabulary of the copy task


class CopyLM(torch.nn.Module):
    """Smallest model with the LM interface: embed each token, predict a token at the same position."""

    def __init__(self, vocab: int = V, dim: int = 8) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.out = torch.nn.Linear(dim, vocab)

    def forward(self, idx, targets=None):
        logits = self.out(torch.tanh(self.emb(idx)))  # (B, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))  # (B*T, V), (B*T,)
        return logits, loss


def copy_batches(n_batches: int, batch: int = 8, T: int = 5, seed: int = 1, shift: int = 0):
    """Batches (x, y) with y = (x + shift) mod V: shift 0 is the copy task."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_batches):
        x = torch.randint(0, V, (batch, T), generator=g)
        out.append((x, (x + shift) % V))
    return out


def make_model(seed: int = 0) -> CopyLM:
    set_seed(seed)
    return CopyLM()


def quiet(**kw) -> TrainConfig:
    return TrainConfig(progress=False, **kw)


# -- training ---------------------------------------------------------------------------------------------------
def test_trainer_lowers_loss_on_copy_task():
    model = make_model()
    train, valid = copy_batches(20), copy_batches(4, seed=2)
    before = evaluate(model, valid)["loss"]
    hist = Trainer(model, quiet(epochs=5, lr=1e-2), train, valid).fit()
    assert isinstance(hist, History)
    assert hist.steps == 100 and len(hist.step_loss) == 100 and len(hist.epoch_loss) == 5
    assert before > math.log(V) - 0.5  # starts near uniform
    assert hist.valid_loss[-1] < 0.2 * before  # and learns to copy
    assert hist.epoch_loss[-1] < hist.epoch_loss[0]
    assert hist.valid_perplexity[-1] == pytest.approx(math.exp(hist.valid_loss[-1]))
    assert hist.eval_steps == [20, 40, 60, 80, 100]  # once per epoch by default
    assert hist.targets == 100 * 8 * 5
    # the wall time is recorded, not judged (a fast machine may measure next to nothing): its use is checked instead
    assert isinstance(hist.seconds, float) and hist.seconds >= 0
    if hist.seconds > 0:
        assert hist.tokens_per_second == hist.targets / hist.seconds
    else:
        assert math.isnan(hist.tokens_per_second)


def test_training_is_deterministic_under_seed():
    def run():
        model = make_model(seed=3)
        loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(*map(torch.cat, zip(*copy_batches(10)))), batch_size=6, shuffle=True
        )
        hist = Trainer(model, quiet(epochs=3, lr=5e-3, seed=7), loader, copy_batches(2, seed=9)).fit()
        return hist.step_loss, hist.valid_loss, [p.detach().clone() for p in model.parameters()]

    a, b = run(), run()
    assert a[0] == b[0]  # the same numbers, bit for bit (shuffling follows the trainer seed)
    assert a[1] == b[1]
    assert all(torch.equal(p, q) for p, q in zip(a[2], b[2]))


def test_trainer_seed_changes_shuffling():
    def first_losses(seed):
        model = make_model(seed=3)
        data = torch.utils.data.TensorDataset(*map(torch.cat, zip(*copy_batches(10))))
        loader = torch.utils.data.DataLoader(data, batch_size=6, shuffle=True)
        return Trainer(model, quiet(max_steps=5, seed=seed), loader).fit().step_loss

    assert first_losses(1) != first_losses(2)


def test_max_steps_and_eval_every():
    hist = Trainer(make_model(), quiet(epochs=10, max_steps=23, eval_every=5), copy_batches(10), copy_batches(2)).fit()
    assert hist.steps == 23
    assert hist.eval_steps == [5, 10, 15, 20, 23]  # plus a final evaluation of the last model
    assert len(hist.valid_loss) == len(hist.valid_perplexity) == len(hist.metrics) == 5
    assert len(hist.epoch_loss) == 3  # two full epochs and a partial one


def test_clipping_records_grad_norm_and_bounds_update():
    model = make_model()
    hist = Trainer(model, quiet(max_steps=5, clip=1e-3, lr=1.0, optimizer="sgd"), copy_batches(5)).fit()
    assert len(hist.grad_norm) == 5 and all(g > 1e-3 for g in hist.grad_norm)
    # with SGD, lr 1 and clip 1e-3 no parameter can move by more than 1e-3 per step in total norm
    before = make_model()
    with torch.no_grad():
        delta = torch.sqrt(sum(((p - q) ** 2).sum() for p, q in zip(model.parameters(), before.parameters())))
    assert float(delta) <= 5 * 1e-3 + 1e-6
    assert Trainer(make_model(), quiet(max_steps=3, clip=None), copy_batches(3)).fit().grad_norm == []


@pytest.mark.parametrize("name", ["adamw", "adam", "sgd", "AdamW"])
def test_optimizers(name):
    lr = 0.5 if name == "sgd" else 1e-2
    hist = Trainer(make_model(), quiet(epochs=3, lr=lr, optimizer=name), copy_batches(20)).fit()
    assert hist.epoch_loss[-1] < hist.epoch_loss[0]


def test_learning_rate_schedules():
    hist = Trainer(make_model(), quiet(max_steps=10, lr=0.1), copy_batches(10)).fit()
    assert hist.lr == [0.1] * 10
    hist = Trainer(make_model(), quiet(epochs=2, lr=0.1, schedule=WarmupCosine(warmup=4)), copy_batches(7)).fit()
    assert len(hist.lr) == 14
    assert hist.lr[:4] == pytest.approx([0.025, 0.05, 0.075, 0.1])  # linear warm-up
    assert hist.lr[4] == pytest.approx(0.1)  # cosine starts at the top ...
    assert all(a > b for a, b in zip(hist.lr[4:], hist.lr[5:]))  # ... and falls every step ...
    assert hist.lr[-1] == 0.0  # ... to exactly final * lr = 0 at the last step (not one step short of it)
    assert hist.lr[9] == pytest.approx(0.1 * 0.5 * (1 + math.cos(math.pi * 5 / 9)))  # 5 of 9 steps down


@pytest.mark.parametrize("warmup, planned, final", [(0, 10, 0.0), (4, 14, 0.0), (30, 250, 0.05), (3, 5, 0.1)])
def test_cosine_reaches_final_at_the_last_planned_step(warmup, planned, final):
    """Bug: the cosine ran over planned - warmup steps, so the last step (planned - 1) stopped one step short."""
    schedule = WarmupCosine(warmup=warmup, final=final)
    assert schedule(planned - 1, 0, planned) == final
    assert schedule(warmup, 0, planned) == 1.0  # the first step after warm-up runs at lr
    assert schedule(planned + 5, 0, planned) == final  # and past the plan it stays at the floor
    assert WarmupCosine(warmup=warmup, final=final)(warmup, 0, warmup + 1) == 1.0  # nothing to decay over


def test_schedules_live_in_their_own_module():
    import seqviz.schedules
    import seqviz.train

    for name in ("Schedule", "Constant", "WarmupCosine", "StepDecay"):
        assert getattr(seqviz.train, name) is getattr(seqviz.schedules, name) and name in seqviz.train.__all__


def test_step_decay_is_honoured_per_epoch():
    # the bug this replaces: a callback decayed the rate and the trainer overwrote it on the next step
    hist = Trainer(make_model(), quiet(epochs=4, lr=0.1, schedule=StepDecay(gamma=0.5)), copy_batches(3)).fit()
    assert hist.lr == pytest.approx([0.1] * 3 + [0.05] * 3 + [0.025] * 3 + [0.0125] * 3)
    hist = Trainer(make_model(), quiet(epochs=5, lr=0.1, schedule=StepDecay(gamma=0.1, every=2, start=3)),
                   copy_batches(1)).fit()
    assert hist.lr == pytest.approx([0.1, 0.1, 0.1, 0.01, 0.01])
    cosine = TrainConfig(schedule="cosine").schedule
    assert isinstance(cosine, WarmupCosine) and isinstance(TrainConfig().schedule, Constant)


def test_optimizer_sees_the_recorded_rate():
    seen = []

    def cb(trainer, event, info):
        if event == "step":
            seen.append(trainer.optimizer.param_groups[0]["lr"])

    hist = Trainer(make_model(), quiet(epochs=3, lr=0.2, schedule=StepDecay(gamma=0.5)), copy_batches(2),
                   callbacks=[cb]).fit()
    assert seen == hist.lr == pytest.approx([0.2, 0.2, 0.1, 0.1, 0.05, 0.05])


def test_a_callback_that_changes_the_rate_is_refused():
    def decay(trainer, event, info):
        if event == "epoch":
            for g in trainer.optimizer.param_groups:
                g["lr"] *= 0.5

    with pytest.raises(RuntimeError, match="schedule"):
        Trainer(make_model(), quiet(epochs=3, lr=0.1), copy_batches(2), callbacks=[decay]).fit()


@pytest.mark.parametrize("bad, word", [(WarmupCosine(final=0.5), None), ({"gamma": 0}, "gamma"),
                                       ({"every": 0}, "every"), ({"start": -1}, "start")])
def test_schedule_checks(bad, word):
    if word is None:
        assert bad(5, 0, 10) > 0.5 - 1e-12  # a floor of final * lr
        with pytest.raises(ValueError, match="final"):
            WarmupCosine(final=1.5)
        with pytest.raises(ValueError, match="warmup"):
            Constant(warmup=-1)
        with pytest.raises(TypeError, match="Schedule"):
            TrainConfig(schedule=0.5)
        return
    with pytest.raises(ValueError, match=word):
        StepDecay(**bad)


def test_cosine_needs_a_known_length():
    class Unsized:
        def __iter__(self):
            return iter(copy_batches(3))

    with pytest.raises(ValueError, match="max_steps"):
        Trainer(make_model(), quiet(schedule="cosine"), Unsized()).fit()
    hist = Trainer(make_model(), quiet(schedule="cosine", max_steps=3), Unsized()).fit()
    assert hist.steps == 3 and hist.lr[0] > hist.lr[-1]


# -- early stopping, checkpoints, callbacks ---------------------------------------------------------------------
def test_early_stopping_triggers():
    # the model learns y = x while validation asks for y = x + 1: validation loss only rises, so it stops
    hist = Trainer(
        make_model(), quiet(epochs=50, lr=1e-2, eval_every=5, patience=3), copy_batches(10), copy_batches(2, shift=1)
    ).fit()
    assert hist.stopped_early
    assert hist.steps == 20  # best at step 5, then three evaluations without improvement
    assert hist.best["step"] == 5
    assert hist.valid_loss[0] == min(hist.valid_loss)


def test_patience_running_out_at_the_planned_end_is_not_early():
    hist = Trainer(
        make_model(), quiet(epochs=4, lr=1e-2, eval_every=5, patience=3), copy_batches(5), copy_batches(2, shift=1)
    ).fit()
    assert hist.steps == 20 and not hist.stopped_early and hist.best["step"] == 5


def test_each_fit_is_a_new_run():
    trainer = Trainer(make_model(), quiet(max_steps=4), copy_batches(5), copy_batches(1))
    first = trainer.fit()
    second = trainer.fit()
    assert second.steps == 4 and len(second.step_loss) == 4 and second is trainer.history
    assert second.step_loss[0] < first.step_loss[0]  # the model carried on training


def test_no_early_stop_while_improving():
    hist = Trainer(make_model(), quiet(epochs=4, lr=1e-2, patience=1), copy_batches(10), copy_batches(2)).fit()
    assert not hist.stopped_early and hist.steps == 40
    assert hist.best["step"] == 40


def test_checkpoint_round_trip(tmp_path):
    path = tmp_path / "best.pt"
    model = make_model()
    valid = copy_batches(2, shift=1)  # validation that gets worse: the best model is an early one
    trainer = Trainer(model, quiet(epochs=6, lr=1e-2, eval_every=5, checkpoint=path), copy_batches(10), valid)
    hist = trainer.fit()
    assert hist.best["step"] < hist.steps
    last = evaluate(model, valid)["loss"]
    record = torch.load(path, weights_only=True)  # plain tensors and numbers only
    assert record["step"] == hist.best["step"]
    assert record["valid_loss"] == pytest.approx(hist.best["valid_loss"])
    fresh = make_model(seed=99)
    fresh.load_state_dict(record["model"])
    assert evaluate(fresh, valid)["loss"] == pytest.approx(hist.best["valid_loss"], abs=1e-6)
    trainer.load_checkpoint()
    assert evaluate(model, valid)["loss"] == pytest.approx(hist.best["valid_loss"], abs=1e-6)
    assert hist.best["valid_loss"] < last


def test_checkpoint_without_validation_saves_last(tmp_path):
    path = tmp_path / "last.pt"
    model = make_model()
    Trainer(model, quiet(max_steps=4, checkpoint=str(path)), copy_batches(5)).fit()
    record = torch.load(path, weights_only=True)
    assert record["step"] == 4
    assert all(torch.equal(record["model"][k], v) for k, v in model.state_dict().items())


def test_load_checkpoint_errors(tmp_path):
    trainer = Trainer(make_model(), quiet(max_steps=1), copy_batches(1))
    with pytest.raises(ValueError, match="checkpoint"):
        trainer.load_checkpoint()
    with pytest.raises(FileNotFoundError, match="fit"):
        trainer.load_checkpoint(tmp_path / "missing.pt")


def test_callbacks_see_events_and_can_stop():
    events = []

    def cb(trainer, event, info):
        events.append((event, info.get("step"), info.get("epoch")))
        if event == "step" and info["step"] == 7:
            trainer.should_stop = True

    hist = Trainer(make_model(), quiet(epochs=3), copy_batches(5), copy_batches(1), callbacks=[cb]).fit()
    assert hist.steps == 7
    kinds = [e[0] for e in events]
    assert kinds.count("step") == 7 and kinds.count("epoch") == 2 and kinds.count("eval") == 2
    assert ("epoch", None, 1) in events


def test_progress_bar_runs(capsys):
    hist = Trainer(make_model(), TrainConfig(max_steps=3, progress=True), copy_batches(3), copy_batches(1)).fit()
    assert hist.steps == 3
    assert "train" in capsys.readouterr().err


# -- carried state (stateful truncated BPTT) ---------------------------------------------------------------------
State = namedtuple("State", "h c")


def test_carry_is_reset_and_detached():
    seen = []  # (mode, carry seen at the start of the step)

    def step(model, batch, carry):
        seen.append(("train" if model.training else "eval", carry))
        logits, loss = model(batch.x, batch.y)
        h = logits.mean() if carry is None else logits.mean() + carry["h"][0]
        return StepOutput(loss + 0 * h, logits,
                          {"h": [h, State(h * 2, (h,))], "n": 1 if carry is None else carry["n"] + 1})

    model = make_model()
    hist = Trainer(model, quiet(epochs=2), copy_batches(3), copy_batches(2), step=step).fit()
    assert hist.steps == 6
    train_seen = [c for m, c in seen if m == "train"]
    eval_seen = [c for m, c in seen if m == "eval"]
    assert train_seen[0] is None and train_seen[3] is None  # reset at each epoch start
    assert eval_seen[0] is None and eval_seen[2] is None  # reset at each evaluation start
    assert [c["n"] for c in train_seen[1:3]] == [1, 2]  # carried within an epoch
    assert eval_seen[1]["n"] == 1  # carried within an evaluation
    for c in train_seen[1:3] + train_seen[4:]:
        h, st_ = c["h"]
        assert not h.requires_grad and h.grad_fn is None  # detached after each step
        assert isinstance(st_, State) and st_.h.grad_fn is None and st_.c[0].grad_fn is None


def test_detach_carry_nested():
    x = torch.ones(2, requires_grad=True)
    y = x * 3
    carry = {"a": (y, [y, {"b": y}]), "s": State(y, None), "k": 5}
    out = detach_carry(carry)
    assert out["k"] == 5 and out["s"].c is None and isinstance(out["s"], State)
    for t in (out["a"][0], out["a"][1][0], out["a"][1][1]["b"], out["s"].h):
        assert t.grad_fn is None and torch.equal(t, y.detach())
    assert y.grad_fn is not None  # the input is untouched
    assert detach_carry(None) is None


# -- evaluation -------------------------------------------------------------------------------------------------
def test_evaluate_weights_batches_by_targets_and_restores_mode():
    model = make_model()
    small, big = copy_batches(1, batch=2, seed=4)[0], copy_batches(1, batch=30, seed=5)[0]
    res = evaluate(model, [small, big])
    with torch.no_grad():
        x = torch.cat([small[0], big[0]])
        y = torch.cat([small[1], big[1]])
        expected = F.cross_entropy(model(x)[0].reshape(-1, V), y.reshape(-1)).item()
    assert res["loss"] == pytest.approx(expected, rel=1e-6)
    assert res["perplexity"] == pytest.approx(math.exp(expected), rel=1e-6)
    assert res["targets"] == 32 * 5
    assert perplexity(model, [small, big]) == pytest.approx(res["perplexity"])
    assert model.training  # restored

    model.eval()
    evaluate(model, [small])
    assert not model.training  # restored to eval too


def test_evaluate_runs_in_eval_mode_without_grad():
    calls = []

    class Probe(CopyLM):
        def forward(self, idx, targets=None):
            calls.append((self.training, torch.is_grad_enabled()))
            return super().forward(idx, targets)

    set_seed(0)
    Trainer(Probe(), quiet(max_steps=2), copy_batches(2), copy_batches(1)).fit()
    assert calls == [(True, True), (True, True), (False, False)]


def test_count_ignores_padding_targets():
    y = torch.tensor([[1, 2, -100], [3, -100, -100]])
    assert count_targets(Batch(torch.zeros(2, 3), y)) == 3
    assert count_targets(Batch(torch.zeros(4), torch.zeros(4, dtype=torch.float32))) == 4
    # a tagger batch (ids, tags, mask): only the real tags count, never the mask's positions
    tagged = next(iter(PaddedBatches([[5, 6, 7], [8]], [[1, 2, 3], [4]], batch_size=2, pad_id=0)))
    assert tagged.mask.tolist() == [[True, True, True], [True, False, False]]
    assert count_targets(tagged) == 4 == tagged.n_targets


def test_a_step_must_return_step_output():
    def old_style(model, batch, carry):
        return model(batch.x, batch.y)[1], None

    with pytest.raises(TypeError, match="StepOutput"):
        Trainer(make_model(), quiet(max_steps=1), copy_batches(1), step=old_style).fit()


def test_evaluation_with_metrics_runs_the_model_once_per_batch():
    calls = []

    class Counting(CopyLM):
        def forward(self, idx, targets=None):
            calls.append(idx.shape[0])
            return super().forward(idx, targets)

    def accuracy(batch, logits):
        return {"accuracy": ((logits.argmax(-1) == batch.y).sum(), batch.y.numel())}

    set_seed(0)
    res = evaluate(Counting(), copy_batches(3), metrics=accuracy)
    assert len(calls) == 3 and 0 <= res["accuracy"] <= 1


def test_metrics_are_sum_over_count():
    def accuracy(batch, logits):
        pred = logits.argmax(-1)
        return {"accuracy": ((pred == batch.y).sum(), batch.y.numel()), "half": (1, 2)}

    model = make_model()
    trainer = Trainer(model, quiet(epochs=8, lr=1e-2), copy_batches(10), copy_batches(2), metrics=accuracy)
    hist = trainer.fit()
    assert hist.metrics[-1]["accuracy"] > 0.95
    assert all(m["half"] == 0.5 for m in hist.metrics)
    res = trainer.evaluate(copy_batches(3, seed=8))
    assert 0.95 < res["accuracy"] <= 1.0


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=5), st.integers(0, 2**16))
def test_evaluate_equals_pooled_mean(sizes, seed):
    set_seed(0)
    model = CopyLM()
    g = torch.Generator().manual_seed(seed)
    batches = []
    for b in sizes:
        x = torch.randint(0, V, (b, 3), generator=g)
        batches.append((x, torch.randint(0, V, (b, 3), generator=g)))
    with torch.no_grad():
        losses = torch.cat(
            [F.cross_entropy(model(x)[0].reshape(-1, V), y.reshape(-1), reduction="none") for x, y in batches]
        )
    assert evaluate(model, batches)["loss"] == pytest.approx(losses.mean().item(), rel=1e-5)


# -- bad input --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kw, word",
    [
        ({"epochs": 0}, "epochs"),
        ({"epochs": 1.5}, "epochs"),
        ({"max_steps": 0}, "max_steps"),
        ({"lr": 0}, "lr"),
        ({"lr": -1e-3}, "lr"),
        ({"lr": float("nan")}, "lr"),
        ({"lr": "1e-3"}, "lr"),
        ({"weight_decay": -0.1}, "weight_decay"),
        ({"clip": 0.0}, "clip"),
        ({"clip": float("inf")}, "clip"),
        ({"eval_every": 0}, "eval_every"),
        ({"patience": -2}, "patience"),
        ({"seed": -1}, "seed"),
        ({"seed": True}, "seed"),
        ({"optimizer": "rmsprop"}, "optimizer"),
        ({"schedule": "linear"}, "schedule"),
    ],
)
def test_bad_config_values(kw, word):
    with pytest.raises(ValueError, match=word):
        TrainConfig(**kw)


def test_bad_checkpoint_type():
    with pytest.raises(TypeError, match="checkpoint"):
        TrainConfig(checkpoint=123)


def test_presets():
    tiny, full = TrainConfig.tiny(), TrainConfig.full()
    assert tiny.max_steps is not None and full.patience is not None and full.epochs > tiny.epochs
    assert TrainConfig.tiny(lr=0.1).lr == 0.1
    with pytest.raises(ValueError, match="lr"):
        TrainConfig.full(lr=-1)


def test_empty_train_data():
    with pytest.raises(ValueError, match="empty"):
        Trainer(make_model(), quiet(), [])

    class Empty:  # re-iterable without len()
        def __iter__(self):
            return iter(())

    with pytest.raises(ValueError, match="no batches"):
        Trainer(make_model(), quiet(), Empty()).fit()
    with pytest.raises(ValueError, match="empty"):
        Trainer(make_model(), quiet(), copy_batches(1), [])
    with pytest.raises(ValueError, match="no targets"):
        evaluate(make_model(), Empty())


def test_one_shot_iterator_rejected():
    with pytest.raises(TypeError, match="re-iterable"):
        Trainer(make_model(), quiet(), (b for b in copy_batches(2)))
    with pytest.raises(TypeError, match="iterable"):
        Trainer(make_model(), quiet(), 42)


def test_bad_trainer_arguments():
    with pytest.raises(TypeError, match="TrainConfig"):
        Trainer(make_model(), {"lr": 1e-3}, copy_batches(1))
    with pytest.raises(TypeError, match="nn.Module"):
        Trainer(lambda x: x, quiet(), copy_batches(1))
    with pytest.raises(ValueError, match="valid_data"):
        Trainer(make_model(), quiet(patience=2), copy_batches(1))
    with pytest.raises(TypeError, match="callbacks"):
        Trainer(make_model(), quiet(), copy_batches(1), callbacks=[3])


def test_non_finite_loss_names_step_and_lr():
    class Exploding(CopyLM):
        def forward(self, idx, targets=None):
            logits, loss = super().forward(idx, targets)
            self.calls = getattr(self, "calls", 0) + 1
            return logits, loss * (float("inf") if self.calls == 3 else 1.0)

    set_seed(0)
    with pytest.raises(FloatingPointError, match=r"step 3.*lower the learning rate"):
        Trainer(Exploding(), quiet(epochs=2), copy_batches(5)).fit()


def test_model_without_targets_gives_clear_error():
    xs_only = [(b[0],) for b in copy_batches(2)]
    with pytest.raises(TypeError, match="targets"):
        Trainer(make_model(), quiet(), xs_only).fit()


# -- the device helper --------------------------------------------------------------------------------------------
def test_default_device_follows_the_environment(monkeypatch):
    import seqviz

    monkeypatch.setenv("SEQVIZ_DEVICE", "cpu")
    assert seqviz.default_device() == torch.device("cpu")
    monkeypatch.setenv("SEQVIZ_DEVICE", "warp-drive")
    with pytest.raises(ValueError, match="not a torch device"):
        seqviz.default_device()
    if not torch.cuda.is_available():
        monkeypatch.setenv("SEQVIZ_DEVICE", "cuda")
        with pytest.raises(ValueError, match="no CUDA"):
            seqviz.default_device()
        monkeypatch.delenv("SEQVIZ_DEVICE")
        assert seqviz.default_device().type in ("cpu", "mps")


# -- the device fit() trains on --------------------------------------------------------------------------------------
def test_auto_device_follows_seqviz_default_device(monkeypatch):
    monkeypatch.setenv("SEQVIZ_DEVICE", "cpu")  # as the tests and CI set it
    assert TrainConfig().device == "auto"
    assert quiet().resolved_device(make_model()) == torch.device("cpu")
    monkeypatch.setenv("SEQVIZ_DEVICE", "no-such-device")
    with pytest.raises(ValueError, match="SEQVIZ_DEVICE"):
        quiet().resolved_device(make_model())


def test_device_none_trains_where_the_model_is():
    model = make_model()
    assert quiet(device=None).resolved_device(model) == torch.device("cpu")
    assert quiet(device="cpu").resolved_device(model) == torch.device("cpu")


def test_bad_device_name_is_refused():
    with pytest.raises(ValueError, match="TrainConfig.device"):
        TrainConfig(device="gpu please")


def test_fit_builds_a_new_optimizer_on_the_model_where_it_trains():
    """The optimizer is built after the move, over the model's own parameters; a second fit() is a new run with a new
    optimizer (Adam's moments from zero), and the model is back on its device after each (here the CPU path)."""
    model = make_model()
    trainer = Trainer(model, quiet(epochs=1, lr=1e-2, device="cpu"), copy_batches(3))
    assert trainer.optimizer is None  # nothing to optimize before fit() has put the model where it trains
    trainer.fit()
    first = trainer.optimizer
    assert {id(p) for g in first.param_groups for p in g["params"]} == {id(p) for p in model.parameters()}
    assert all(float(first.state[p]["step"]) == 3 for p in model.parameters())
    trainer.fit()
    assert trainer.optimizer is not first
    assert all(float(trainer.optimizer.state[p]["step"]) == 3 for p in model.parameters())  # not 6: a new run
    assert all(p.device.type == "cpu" for p in model.parameters())
    assert all(s["exp_avg"].device.type == "cpu" for s in trainer.optimizer.state.values())


# -- weight decay --------------------------------------------------------------------------------------------------
class Decaying(torch.nn.Module):
    """A tied LM with parts that get exactly zero gradient, so only weight decay can move them."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(V, 8)
        self.out = torch.nn.Linear(8, V)
        self.out.weight = self.emb.weight  # tied: the output layer IS the embedding matrix
        self.idle_norm = torch.nn.LayerNorm(8)  # gain 1, bias 0
        self.idle = torch.nn.Linear(8, 8)
        self.spare = torch.nn.Embedding(4, 8)  # an untied embedding, never read

    def forward(self, idx, targets=None):
        h = torch.tanh(self.emb(idx))  # (B, T, 8)
        logits = self.out(h)  # (B, T, V)
        zero = 0.0 * (self.idle_norm(h).sum() + self.idle(h).sum() + self.spare.weight.sum())  # gradient exactly 0
        return logits, F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1)) + zero  # (B*T, V), (B*T,)


def test_weight_decay_spares_gains_biases_and_embeddings():
    """Bug: one parameter group decayed everything; a LayerNorm gain with zero gradient shrank towards 0."""
    set_seed(0)
    model = Decaying()
    idle_w, spare = model.idle.weight.detach().clone(), model.spare.weight.detach().clone()
    trainer = Trainer(model, quiet(max_steps=10, lr=0.1, weight_decay=0.1), copy_batches(10))
    trainer.fit()
    assert torch.equal(model.idle_norm.weight, torch.ones(8))  # exactly 1: no decay on a gain
    assert torch.equal(model.spare.weight, spare)  # nor on an embedding
    # a weight matrix decays: AdamW's decoupled decay, (1 - lr * wd) per step, the only force on it here
    assert torch.allclose(model.idle.weight, idle_w * (1 - 0.1 * 0.1) ** 10, atol=1e-6)
    decayed = {id(p) for g in trainer.optimizer.param_groups if g["weight_decay"] > 0 for p in g["params"]}
    assert decayed == {id(model.idle.weight)}  # not the tied embedding / output matrix, nor any bias


def test_decay_embeddings_on_request():
    set_seed(0)
    model = Decaying()
    spare = model.spare.weight.detach().clone()
    trainer = Trainer(model, quiet(max_steps=5, lr=0.1, weight_decay=0.1, decay_embeddings=True), copy_batches(5))
    trainer.fit()
    assert torch.allclose(model.spare.weight, spare * (1 - 0.1 * 0.1) ** 5, atol=1e-6)
    decayed = {id(p) for g in trainer.optimizer.param_groups if g["weight_decay"] > 0 for p in g["params"]}
    assert decayed == {id(model.idle.weight), id(model.emb.weight), id(model.spare.weight)}
    assert torch.equal(model.idle_norm.weight, torch.ones(8))  # gains never decay
    with pytest.raises(TypeError, match="decay_embeddings"):
        TrainConfig(decay_embeddings="yes")


# -- the order of the data ------------------------------------------------------------------------------------------
def test_two_models_trained_on_one_batcher_see_the_same_order():
    """Bug: a hidden pass counter made the second model trained on a batches object (chapter 5's comparison) see
    other orders than the first. Now the order is a function of (seed, epoch): the trainer sets the epoch."""
    seqs = [[1 + (i * 7 + j) % 9 for j in range(1 + i % 5)] for i in range(40)]

    def build():
        return PaddedBatches(seqs, [i % 2 for i in range(40)], 4, pad_id=0, shuffle=True, seed=3, bucket=True)

    def orders(data):
        seen = []

        def step(model, batch, carry):
            seen.append(batch.x.tolist())
            logits = model.out(model.emb(batch.x).mean(1))  # (B, V): a classifier of the whole sequence
            return StepOutput(F.cross_entropy(logits, batch.y), logits)

        Trainer(make_model(), quiet(epochs=2), data, step=step).fit()
        return seen

    data = build()
    first, second = orders(data), orders(data)
    assert first == second  # the same batches object, the same order for both models
    assert first == orders(build())  # as an independently built one with the same seed
    n = len(data)
    assert first[:n] != first[n:]  # and the two epochs differ


# -- the house: models never import the trainer -----------------------------------------------------------------------
def test_no_model_module_imports_the_trainer():
    import ast
    from pathlib import Path

    import seqviz

    root = Path(seqviz.__file__).parent
    models = [root / name for name in ("ngram.py", "window.py", "lstm.py", "attention.py", "seq2seq.py")]
    models += [*root.glob("rnn/*.py"), *root.glob("ngram/*.py"), *root.glob("transformer*.py"),
               *root.glob("transformer/*.py")]
    # chapter 8's models (the copy head, the copy models, the selector, the tokenizer...); its recipes train them:
    # the delta LM's fine-tuning, pretraining, the copy checkpoint's build and SmolLM2's fine-tuning (its LoRA
    # recipe), like char_lstm.py and agreement.py
    recipes = {"delta.py", "pretraining.py", "copy_checkpoint.py", "smollm_headlines.py", "__main__.py"}
    summarize = [p for p in root.glob("summarize/*.py") if p.name not in recipes]
    assert {"pointer.py", "copy_models.py", "compress.py"} <= {p.name for p in summarize}
    models += summarize
    trainer_side = {"train", "steps", "schedules"}
    assert len([p for p in models if p.exists()]) >= 10  # the chapters' modules, whether files or packages
    for path in models:
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):  # from seqviz.train import x / from ..train import x
                base = ("." * node.level) + (node.module or "")
                modules = [base] + [f"{base}.{a.name}" for a in node.names]  # from seqviz import train
            else:
                continue
            for module in modules:
                parts = module.split(".")
                assert not (parts[-1] in trainer_side and (parts[0] in ("seqviz", "") or node.level)), \
                    f"{path.name} imports {module}: models never import the trainer"
