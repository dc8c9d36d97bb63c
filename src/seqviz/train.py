"""One model-agnostic trainer for every chapter (in the spirit of minGPT's ``trainer.py``).

A model is trained on a re-iterable of batches: the named ``seqviz.data.Batch(x, y, mask)`` every batcher yields (a
plain ``(x, y)`` tuple is read as ``Batch(x, y)``); a batcher with ``set_epoch`` gets the epoch before each pass, so
its order depends on (seed, epoch) alone. The default step function calls ``model(batch.x, batch.y)`` (with
``mask=batch.mask`` when the batch has one), the package's LM interface ``-> (logits, loss)``. A chapter passes its
own ``step(model, batch, carry) -> StepOutput(loss, logits, carry)`` when it needs more, e.g. :func:`lm_step`, with
which the RNN chapters carry the hidden state across batches for stateful truncated BPTT. The trainer resets
``carry`` to ``None`` at the start of every epoch and every evaluation, and detaches it after every optimizer step.
The step functions and metrics live in ``seqviz.steps``, the schedules in ``seqviz.schedules``; both are re-exported
here. A ``step`` argument is always a step function; counts of optimizer steps are plural (``max_steps``,
``History.steps``), and a record's ``"step"`` key is the count when it was made.

The learning rate belongs to one object, ``TrainConfig.schedule`` (:class:`Constant`, :class:`WarmupCosine`,
:class:`StepDecay`): the trainer sets it before every step and refuses to run on if anything else changed it. Weight
decay falls on weight matrices only: never on biases or LayerNorm gains (fewer than 2 dimensions), nor on embeddings
(an output layer tied to them included) unless ``TrainConfig.decay_embeddings``.

Losses are means over a batch's targets; epoch and validation losses are means over *all* targets (each batch
weighted by its number of targets, the entries of ``batch.y`` that are not ``IGNORE_INDEX``), so perplexity =
exp(mean loss) is the per-token perplexity (SLP 9.12-9.13). Metrics are computed from the logits of the step itself:
evaluation runs the model once per batch.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

import torch
from seqviz.progress import progress

from seqviz import default_device, evaluating, set_seed
from seqviz._checks import IGNORE_INDEX
from seqviz.data.batches import Batch
from seqviz.schedules import SCHEDULE_NAMES, Constant, Schedule, StepDecay, WarmupCosine
from seqviz.steps import (MetricsFn, StepFn, StepOutput, accuracy, count_targets, default_step, detach_carry,
                          lm_step)

__all__ = [
    "TrainConfig", "History", "Trainer", "evaluate", "perplexity",
    "Schedule", "Constant", "WarmupCosine", "StepDecay",  # from seqviz.schedules
    "StepOutput", "default_step", "lm_step", "accuracy", "count_targets", "detach_carry",  # from seqviz.steps
    "IGNORE_INDEX",
]

_OPTIMIZERS = ("adamw", "adam", "sgd")


@dataclass
class TrainConfig:
    """How long and how to train. Presets: ``TrainConfig.tiny()`` (CI-sized) and ``TrainConfig.full()``."""

    epochs: int = 1  # passes over train_data
    max_steps: int | None = None  # stop after this many optimizer steps in total (None = no limit)
    lr: float = 1e-3  # peak learning rate; the schedule scales it
    weight_decay: float = 0.0  # decoupled for AdamW, L2 for Adam/SGD; on weight matrices only (see decay_embeddings)
    decay_embeddings: bool = False  # also decay nn.Embedding weights (and an output layer tied to them)
    clip: float | None = 1.0  # max global gradient norm (None = no clipping)
    eval_every: int | None = None  # evaluate every this many steps (None = once per epoch)
    patience: int | None = None  # stop after this many evaluations without a new best validation loss
    seed: int = 0  # seeds python, numpy and torch at the start of fit() (dropout; not a seqviz batcher's order)
    checkpoint: str | os.PathLike | None = None  # file for the best model's state_dict (None = do not save)
    progress: bool = True  # tqdm.auto progress bar with the running loss in the postfix
    optimizer: str = "adamw"  # "adamw", "adam" or "sgd"
    schedule: Schedule | str = field(default_factory=Constant)  # a Schedule, or "constant" / "cosine" (no warm-up)
    # where fit() trains: "auto" = seqviz.default_device() (a GPU/MPS when present, else the CPU; SEQVIZ_DEVICE
    # overrides), None = wherever the model already is, or a device name ("cpu", "cuda:0"). A model fit() moved comes
    # back to where it was at the end, so the cells after training run on it as before.
    device: str | None = "auto"

    def __post_init__(self) -> None:
        def positive_int(name: str, value: Any, allow_none: bool) -> None:
            if value is None and allow_none:
                return
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                hint = " or None" if allow_none else ""
                raise ValueError(f"TrainConfig.{name} must be a positive integer{hint}, got {value!r}")

        positive_int("epochs", self.epochs, allow_none=False)
        positive_int("max_steps", self.max_steps, allow_none=True)
        positive_int("eval_every", self.eval_every, allow_none=True)
        positive_int("patience", self.patience, allow_none=True)
        if not _is_real(self.lr) or not math.isfinite(self.lr) or self.lr <= 0:
            raise ValueError(f"TrainConfig.lr must be a finite number > 0, got {self.lr!r} (try 1e-3 for AdamW)")
        if not _is_real(self.weight_decay) or not math.isfinite(self.weight_decay) or self.weight_decay < 0:
            raise ValueError(f"TrainConfig.weight_decay must be a finite number >= 0, got {self.weight_decay!r}")
        if self.clip is not None and (not _is_real(self.clip) or not math.isfinite(self.clip) or self.clip <= 0):
            raise ValueError(f"TrainConfig.clip must be a number > 0 or None (no clipping), got {self.clip!r}")
        if not isinstance(self.decay_embeddings, bool):
            raise TypeError(f"TrainConfig.decay_embeddings must be True or False, got {self.decay_embeddings!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"TrainConfig.seed must be a non-negative integer, got {self.seed!r}")
        if self.checkpoint is not None and not isinstance(self.checkpoint, (str, os.PathLike)):
            raise TypeError(f"TrainConfig.checkpoint must be a file path or None, got {type(self.checkpoint).__name__}")
        if isinstance(self.schedule, str):
            if self.schedule not in SCHEDULE_NAMES:
                raise ValueError(f"TrainConfig.schedule must be a Schedule (Constant(), WarmupCosine(warmup=100), "
                                 f"StepDecay(gamma=0.5)) or one of {tuple(SCHEDULE_NAMES)}, got {self.schedule!r}")
            self.schedule = SCHEDULE_NAMES[self.schedule]()
        if not isinstance(self.schedule, Schedule):
            raise TypeError(f"TrainConfig.schedule must be a Schedule such as Constant() or WarmupCosine(warmup=100), "
                            f"got {type(self.schedule).__name__}")
        if not isinstance(self.optimizer, str) or self.optimizer.lower() not in _OPTIMIZERS:
            raise ValueError(f"TrainConfig.optimizer must be one of {_OPTIMIZERS}, got {self.optimizer!r}")
        if self.device is not None and self.device != "auto":
            try:
                torch.device(self.device)
            except (RuntimeError, TypeError):
                raise ValueError(f"TrainConfig.device must be 'auto', None or a torch device name such as 'cpu' or "
                                 f"'cuda:0', got {self.device!r}") from None

    def resolved_device(self, model: torch.nn.Module) -> torch.device:
        """The device fit() trains ``model`` on (see ``device``)."""
        if self.device is None:
            return _model_device(model)
        return default_device() if self.device == "auto" else torch.device(self.device)

    @classmethod
    def tiny(cls, **overrides: Any) -> "TrainConfig":
        """A few hundred steps: enough to see the loss fall in CI and in a one-minute notebook cell."""
        return replace(cls(epochs=1, max_steps=300, lr=3e-3), **overrides)

    @classmethod
    def full(cls, **overrides: Any) -> "TrainConfig":
        """Several epochs with early stopping on validation loss: for a reader with time to spare."""
        return replace(cls(epochs=10, lr=1e-3, patience=2), **overrides)


@dataclass
class History:
    """What ``Trainer.fit`` measured. Validation lists have one entry per evaluation, at ``eval_steps``."""

    step_loss: list[float] = field(default_factory=list)  # training loss of every optimizer step
    grad_norm: list[float] = field(default_factory=list)  # global gradient norm before clipping (if clip is set)
    lr: list[float] = field(default_factory=list)  # learning rate used at every step
    epoch_loss: list[float] = field(default_factory=list)  # target-weighted mean training loss per epoch
    eval_steps: list[int] = field(default_factory=list)  # step count at each evaluation
    valid_loss: list[float] = field(default_factory=list)
    valid_perplexity: list[float] = field(default_factory=list)
    metrics: list[dict] = field(default_factory=list)  # metric name -> value, one dict per evaluation
    best: dict | None = None  # {"step", "valid_loss", "valid_perplexity"} of the best evaluation
    stopped_early: bool = False
    steps: int = 0  # optimizer steps taken
    targets: int = 0  # training targets (tokens / labels) seen
    seconds: float = 0.0  # wall time of fit(), evaluation included

    @property
    def tokens_per_second(self) -> float:
        """Training targets per second of wall time (evaluation time included)."""
        return self.targets / self.seconds if self.seconds > 0 else float("nan")


def _run_step(step: StepFn, model: torch.nn.Module, batch: Batch, carry: Any) -> StepOutput:
    out = step(model, batch, carry)
    if not isinstance(out, StepOutput):
        raise TypeError(f"a step must return seqviz.train.StepOutput(loss, logits, carry), got "
                        f"{type(out).__name__}; wrap the values: StepOutput(loss, logits, carry)")
    if not torch.is_tensor(out.loss) or out.loss.dim() != 0:
        raise TypeError("StepOutput.loss must be a scalar loss tensor")
    return out


def evaluate(
    model: torch.nn.Module,
    data: Iterable[Batch],
    step: StepFn | None = None,
    metrics: MetricsFn | None = None,
    count: Callable[[Batch], int] | None = None,
) -> dict:
    """Mean loss over all targets of ``data``, its perplexity, and metrics (sum / count over all batches).

    Runs under ``torch.no_grad()`` in eval mode (``seqviz.evaluating``: the model's own mode comes back after),
    starts with ``carry=None``, and runs the model once per batch: metrics read the step's own logits. Returns
    ``{"loss", "perplexity", "targets", **metrics}``.
    """
    step = step or default_step
    count = count or count_targets
    _check_reiterable(data, "data")
    device = _model_device(model)
    total, n, carry = 0.0, 0, None
    sums: dict[str, list[float]] = {}
    with evaluating(model), torch.no_grad():
        for batch in data:
            batch = _as_batch(batch).to(device)
            out = _run_step(step, model, batch, carry)
            carry = out.carry
            k = count(batch)
            total += float(out.loss) * k
            n += k
            if metrics is not None:
                if out.logits is None:
                    raise ValueError("metrics need the step's logits: return StepOutput(loss, logits, carry)")
                for name, (s, c) in metrics(batch, out.logits).items():
                    acc = sums.setdefault(name, [0.0, 0.0])
                    acc[0] += float(s)
                    acc[1] += float(c)
    if n == 0:
        raise ValueError("evaluation data yielded no targets: pass a non-empty list / DataLoader of batches")
    mean = total / n
    out = {"loss": mean, "perplexity": math.exp(mean) if mean < 700 else float("inf"), "targets": n}
    for name, (s, c) in sums.items():
        out[name] = s / c if c else float("nan")
    return out


def perplexity(model: torch.nn.Module, data: Iterable[Batch], step: StepFn | None = None) -> float:
    """exp(mean cross-entropy per target) of ``model`` on ``data`` (SLP 9.12-9.13)."""
    return evaluate(model, data, step=step)["perplexity"]


class Trainer:
    """Train ``model`` on ``train_data`` with ``config``; ``fit()`` returns a ``History``.

    ``callbacks``: functions ``cb(trainer, event, info)`` called with event ``"step"`` (info: step, loss, lr),
    ``"eval"`` (info: step, results) and ``"epoch"`` (info: epoch, loss); setting ``trainer.should_stop = True``
    ends training after the current step. The learning rate is the schedule's alone: a callback that changes it
    stops the run with an error naming ``TrainConfig.schedule``. ``count(batch) -> int`` gives a batch's number of
    targets, the weight of its mean loss in epoch and validation means (default :func:`count_targets`). With
    ``config.checkpoint`` set, the best model by validation loss is saved; ``load_checkpoint()`` puts it back.
    ``optimizer`` is None until ``fit()`` builds it (see there).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        config: TrainConfig,
        train_data: Iterable[Batch],
        valid_data: Iterable[Batch] | None = None,
        *,
        step: StepFn | None = None,
        metrics: MetricsFn | None = None,
        callbacks: Sequence[Callable[["Trainer", str, dict], Any]] = (),
        count: Callable[[Batch], int] | None = None,
    ) -> None:
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not isinstance(config, TrainConfig):
            raise TypeError(f"config must be a TrainConfig, got {type(config).__name__} (try TrainConfig.tiny())")
        if not [p for p in model.parameters() if p.requires_grad]:
            raise ValueError("model has no trainable parameters")
        _check_reiterable(train_data, "train_data")
        if _known_len(train_data) == 0:
            raise ValueError("train_data is empty: it must yield at least one batch")
        if valid_data is not None:
            _check_reiterable(valid_data, "valid_data")
            if _known_len(valid_data) == 0:
                raise ValueError("valid_data is empty: pass None to train without validation")
        if config.patience is not None and valid_data is None:
            raise ValueError("early stopping (config.patience) needs valid_data to watch the validation loss")
        for cb in callbacks:
            if not callable(cb):
                raise TypeError(f"callbacks must be callables cb(trainer, event, info), got {type(cb).__name__}")
        self.model = model
        self.config = config
        self.train_data = train_data
        self.valid_data = valid_data
        self.step_fn = step or default_step
        self.metrics = metrics
        self.callbacks = tuple(callbacks)
        self.count = count or count_targets
        self.should_stop = False
        self.optimizer: torch.optim.Optimizer | None = None  # built by fit(), on the device it trains on
        self.history = History()

    # -- evaluation -------------------------------------------------------------------------------------------
    def evaluate(self, data: Iterable[Batch]) -> dict:
        """Mean loss / perplexity / metrics of the model on ``data`` (see :func:`evaluate`)."""
        return evaluate(self.model, data, step=self.step_fn, metrics=self.metrics, count=self.count)

    def load_checkpoint(self, path: str | os.PathLike | None = None) -> dict:
        """Load the best model saved by ``fit`` back into the model (``weights_only=True``); returns its record."""
        path = path if path is not None else self.config.checkpoint
        if path is None:
            raise ValueError("no checkpoint path: set TrainConfig.checkpoint before fit(), or pass a path")
        if not os.path.exists(path):
            raise FileNotFoundError(f"checkpoint {os.fspath(path)!r} does not exist: run fit() with it set first")
        record = torch.load(path, map_location=_model_device(self.model), weights_only=True)
        self.model.load_state_dict(record["model"])
        return record

    # -- training: fit() is these named steps -------------------------------------------------------------------
    def fit(self) -> History:
        """Train for ``config.epochs`` (or ``config.max_steps``), evaluating and early-stopping as configured.

        Each call is a new run: seeded with ``config.seed``, a new ``History`` (also kept as ``self.history``), the
        schedule from its first step, and a new optimizer, built after the model has moved to the device it trains
        on (as minGPT does), so Adam's moments start from zero again; only the model's weights carry over from an
        earlier fit(). A model fit() moved goes back to where it was at the end; ``self.optimizer`` (and its state)
        stays on the training device, where the next fit() replaces it.
        """
        home = _model_device(self.model)
        self.model.to(self.config.resolved_device(self.model))
        self.optimizer = _make_optimizer(self.config, self.model)
        try:
            self._start_run()
            for epoch in range(self.config.epochs):
                self._train_epoch(epoch)
                if self._done:
                    break
            self._finish_run()
        finally:
            if getattr(self, "_bar", None) is not None:
                self._bar.close()
            if getattr(self, "_t0", None) is not None:
                self.history.seconds += time.perf_counter() - self._t0
            self.model.to(home)  # the cells after training find the model where they left it
        return self.history

    def _start_run(self) -> None:
        """A new History, the seed, the planned length (for the schedule and the progress bar)."""
        cfg = self.config
        self._bar = self._t0 = None
        self.history = History()  # every fit() is a new run
        set_seed(cfg.seed)
        self._t0 = time.perf_counter()
        self.should_stop = self._done = self._out_of_patience = False
        self._since_best, self._lr_set = 0, None
        n_batches = _known_len(self.train_data)
        planned = cfg.epochs * n_batches if n_batches is not None else None
        if cfg.max_steps is not None:
            planned = cfg.max_steps if planned is None else min(planned, cfg.max_steps)
        if cfg.schedule.needs_length and planned is None:
            raise ValueError(f"{type(cfg.schedule).__name__} needs to know the run's length: set max_steps, or give "
                             "train_data a len() (a list, DataLoader or one of seqviz.data's batchers)")
        self._planned = planned
        self._bar = progress(planned, "train", unit="step", dynamic_ncols=True) if cfg.progress else None

    def _train_epoch(self, epoch: int) -> None:
        """One pass over train_data (carry reset at its start), then the epoch's record and evaluation."""
        cfg, hist = self.config, self.history
        carry, ep_total, ep_n = None, 0.0, 0
        device = _model_device(self.model)
        self.model.train()
        if callable(getattr(self.train_data, "set_epoch", None)):
            self.train_data.set_epoch(epoch)  # the batcher's order: a function of (its seed, epoch) only
        for batch in self.train_data:
            batch = _as_batch(batch).to(device)
            value, carry = self._train_step(batch, carry, epoch)
            k = self.count(batch)
            ep_total, ep_n = ep_total + value * k, ep_n + k
            hist.targets += k
            if self._bar is not None:
                self._bar.update(1)
                self._bar.set_postfix(loss=f"{ep_total / ep_n:.3f}", refresh=False)  # epoch running mean
            self._emit("step", {"step": hist.steps, "loss": value, "lr": hist.lr[-1]})
            if self.valid_data is not None and cfg.eval_every is not None and hist.steps % cfg.eval_every == 0:
                self._evaluate_and_record()
            if (cfg.max_steps is not None and hist.steps >= cfg.max_steps) or self.should_stop:
                self._done = True
            if self._done:
                break
        if hist.steps == 0:
            raise ValueError("train_data yielded no batches: it must yield at least one Batch(x, y)")
        if ep_n:
            hist.epoch_loss.append(ep_total / ep_n)
            self._emit("epoch", {"epoch": epoch + 1, "loss": ep_total / ep_n})
        last_epoch = self._done or epoch == cfg.epochs - 1
        if self.valid_data is not None and not self._out_of_patience and (cfg.eval_every is None or last_epoch):
            if not (hist.eval_steps and hist.eval_steps[-1] == hist.steps):
                self._evaluate_and_record()

    def _train_step(self, batch: Batch, carry: Any, epoch: int) -> tuple[float, Any]:
        """Forward, backward, clip, update at the schedule's rate; returns (loss value, detached carry)."""
        cfg, hist = self.config, self.history
        out = _run_step(self.step_fn, self.model, batch, carry)
        value = float(out.loss.detach())
        if not math.isfinite(value):
            raise FloatingPointError(f"loss became {value} at step {hist.steps + 1} (epoch {epoch + 1}): lower the "
                                     f"learning rate (lr={cfg.lr:g}) or set clip (clip={cfg.clip})")
        lr = self._set_learning_rate(epoch)
        self.optimizer.zero_grad(set_to_none=True)
        out.loss.backward()
        if cfg.clip is not None:
            params = [p for p in self.model.parameters() if p.requires_grad]
            hist.grad_norm.append(float(torch.nn.utils.clip_grad_norm_(params, cfg.clip)))
        self.optimizer.step()
        hist.lr.append(lr)
        hist.steps += 1
        hist.step_loss.append(value)
        return value, detach_carry(out.carry)

    def _set_learning_rate(self, epoch: int) -> float:
        """Set the schedule's rate for this step; refuse to go on if something else changed the rate meanwhile."""
        groups = self.optimizer.param_groups
        if self._lr_set is not None and any(g["lr"] != self._lr_set for g in groups):
            changed = next(g["lr"] for g in groups if g["lr"] != self._lr_set)
            raise RuntimeError(
                f"the learning rate was changed outside the trainer (to {changed:g}; the schedule had set "
                f"{self._lr_set:g}): the schedule owns it. Choose one in TrainConfig.schedule, e.g. "
                "StepDecay(gamma=0.5) to halve it every epoch, or WarmupCosine(warmup=100)")
        lr = self.config.lr * self.config.schedule(self.history.steps, epoch, self._planned)
        for g in groups:
            g["lr"] = lr
        self._lr_set = lr
        return lr

    def _evaluate_and_record(self) -> None:
        """Evaluate on valid_data, record it, checkpoint a new best, count patience."""
        hist, cfg = self.history, self.config
        res = self.evaluate(self.valid_data)
        hist.eval_steps.append(hist.steps)
        hist.valid_loss.append(res["loss"])
        hist.valid_perplexity.append(res["perplexity"])
        hist.metrics.append({k: v for k, v in res.items() if k not in ("loss", "perplexity", "targets")})
        if hist.best is None or res["loss"] < hist.best["valid_loss"]:
            hist.best = {"step": hist.steps, "valid_loss": res["loss"], "valid_perplexity": res["perplexity"]}
            self._since_best = 0
            self._save(hist.best)
        else:
            self._since_best += 1
        if self._bar is not None:
            self._bar.set_postfix(loss=f"{hist.step_loss[-1]:.3f}", val_ppl=f"{res['perplexity']:.2f}", refresh=False)
        self._emit("eval", {"step": hist.steps, "results": res})
        if cfg.patience is not None and self._since_best >= cfg.patience:
            self._out_of_patience = self._done = True

    def _finish_run(self) -> None:
        hist = self.history
        # early only if patience ran out before the planned end of training
        hist.stopped_early = self._out_of_patience and (self._planned is None or hist.steps < self._planned)
        if self.valid_data is None:
            self._save({"step": hist.steps, "valid_loss": None, "valid_perplexity": None})

    # -- helpers ----------------------------------------------------------------------------------------------
    def _save(self, record: dict) -> None:
        if self.config.checkpoint is None:
            return
        weights = {k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()}
        torch.save({"model": weights, **record}, self.config.checkpoint)

    def _emit(self, event: str, info: dict) -> None:
        for cb in self.callbacks:
            cb(self, event, info)


# -- module helpers -------------------------------------------------------------------------------------------
def _is_real(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _param_groups(model: torch.nn.Module, weight_decay: float, decay_embeddings: bool) -> list[dict]:
    """Two parameter groups, the usual rule (minGPT, nanoGPT): weight decay on weight matrices (2 or more dimensions);
    none on biases and LayerNorm gains, nor on ``nn.Embedding`` weights (an output layer tied to one is the same
    tensor) unless ``decay_embeddings``. A parameter shared by two modules is listed once."""
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}
    decay, keep = [], []
    for p in model.parameters():
        if p.requires_grad:
            matrix = p.dim() >= 2 and (decay_embeddings or id(p) not in embeddings)
            (decay if matrix else keep).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": keep, "weight_decay": 0.0}]


def _make_optimizer(cfg: TrainConfig, model: torch.nn.Module) -> torch.optim.Optimizer:
    groups = _param_groups(model, cfg.weight_decay, cfg.decay_embeddings)
    groups = [g for g in groups if g["params"]]
    name = cfg.optimizer.lower()
    if name == "adamw":
        return torch.optim.AdamW(groups, lr=cfg.lr)
    if name == "adam":
        return torch.optim.Adam(groups, lr=cfg.lr)
    return torch.optim.SGD(groups, lr=cfg.lr)


def _check_reiterable(data: Any, name: str) -> None:
    if data is None:
        raise ValueError(f"{name} is None: pass a list / DataLoader / StreamBatcher of batches")
    try:
        it = iter(data)
    except TypeError:
        raise TypeError(f"{name} must be an iterable of batches, got {type(data).__name__}") from None
    if it is data:
        raise TypeError(
            f"{name} is a one-shot iterator ({type(data).__name__}); pass something re-iterable "
            "(a list of batches, a DataLoader, a StreamBatcher) so every epoch and evaluation sees all of it"
        )


def _known_len(data: Any) -> int | None:
    try:
        return len(data)
    except TypeError:
        return None


def _as_batch(batch: Any) -> Batch:
    """A Batch as it is; a plain (x, y) or (x, y, mask) tuple read by position once, here, as Batch(x, y, mask)."""
    if isinstance(batch, Batch):
        return batch
    if isinstance(batch, (tuple, list)) and 1 <= len(batch) <= 3:
        return Batch(*batch)
    raise TypeError(f"a batch must be a seqviz.data.Batch(x, y, mask) or an (x, y) tuple, got {type(batch).__name__}"
                    + (f" of length {len(batch)}" if isinstance(batch, (tuple, list)) else ""))


def _model_device(model: torch.nn.Module) -> torch.device:
    for p in model.parameters():
        return p.device
    return torch.device("cpu")

