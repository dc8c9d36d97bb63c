"""One model-agnostic trainer for every chapter (in the spirit of minGPT's ``trainer.py``).

A model is trained on a re-iterable of batches (tuples of tensors: a list, a ``DataLoader``, a
``seqviz.data.StreamBatcher``). The default step calls ``model(*batch) -> (logits, loss)``, the package's LM
interface; a chapter passes its own ``step(model, batch, carry) -> (loss, carry)`` when it needs more, e.g. the
RNN chapter carries the hidden state across batches for stateful truncated BPTT. The trainer resets ``carry`` to
``None`` at the start of every epoch and every evaluation, and detaches it after every optimizer step.

Losses are means over a batch's targets; epoch and validation losses are means over *all* targets (each batch
weighted by its number of targets), so perplexity = exp(mean loss) is the per-token perplexity (SLP 9.12-9.13).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

import torch
from tqdm.auto import tqdm

from seqviz import set_seed
from seqviz._checks import IGNORE_INDEX

__all__ = [
    "TrainConfig",
    "History",
    "Trainer",
    "default_step",
    "count_targets",
    "detach_carry",
    "evaluate",
    "perplexity",
    "IGNORE_INDEX",
]


_OPTIMIZERS = ("adamw", "adam", "sgd")
_SCHEDULES = ("constant", "cosine")

Batch = Sequence[torch.Tensor]
StepFn = Callable[[torch.nn.Module, Batch, Any], tuple]
MetricsFn = Callable[[torch.nn.Module, Batch], dict]


@dataclass
class TrainConfig:
    """How long and how to train. Presets: ``TrainConfig.tiny()`` (CI-sized) and ``TrainConfig.full()``."""

    epochs: int = 1  # passes over train_data
    max_steps: int | None = None  # stop after this many optimizer steps in total (None = no limit)
    lr: float = 1e-3  # learning rate
    weight_decay: float = 0.0  # decoupled for AdamW, L2 for Adam/SGD
    clip: float | None = 1.0  # max global gradient norm (None = no clipping)
    eval_every: int | None = None  # evaluate every this many steps (None = once per epoch)
    patience: int | None = None  # stop after this many evaluations without a new best validation loss
    seed: int = 0  # seeds python, numpy and torch at the start of fit() (shuffling, dropout)
    checkpoint: str | os.PathLike | None = None  # file for the best model's state_dict (None = do not save)
    progress: bool = True  # tqdm.auto progress bar with the running loss in the postfix
    optimizer: str = "adamw"  # "adamw", "adam" or "sgd"
    schedule: str = "constant"  # learning rate over the run: "constant" or "cosine" (decays to 0 at the last step)
    warmup: int = 0  # steps of linear warm-up from 0 to lr before the schedule

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
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"TrainConfig.seed must be a non-negative integer, got {self.seed!r}")
        if self.checkpoint is not None and not isinstance(self.checkpoint, (str, os.PathLike)):
            raise TypeError(f"TrainConfig.checkpoint must be a file path or None, got {type(self.checkpoint).__name__}")
        if self.schedule not in _SCHEDULES:
            raise ValueError(f"TrainConfig.schedule must be one of {_SCHEDULES}, got {self.schedule!r}")
        if isinstance(self.warmup, bool) or not isinstance(self.warmup, int) or self.warmup < 0:
            raise ValueError(f"TrainConfig.warmup must be a non-negative integer (steps), got {self.warmup!r}")
        if not isinstance(self.optimizer, str) or self.optimizer.lower() not in _OPTIMIZERS:
            raise ValueError(f"TrainConfig.optimizer must be one of {_OPTIMIZERS}, got {self.optimizer!r}")

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


def default_step(model: torch.nn.Module, batch: Batch, carry: Any = None) -> tuple[torch.Tensor, None]:
    """The LM interface: ``model(*batch) -> (logits, loss)``; no state is carried."""
    out = model(*batch)
    if not isinstance(out, tuple) or len(out) != 2 or not torch.is_tensor(out[1]):
        raise TypeError(
            "the default step expects model(*batch) to return (logits, loss) with a tensor loss; "
            "pass targets in the batch, or give Trainer a step(model, batch, carry) -> (loss, carry)"
        )
    return out[1], None


def count_targets(batch: Batch) -> int:
    """Number of targets in a batch: elements of its last tensor that are not ``IGNORE_INDEX`` (-100)."""
    target = batch[-1]
    if not torch.is_tensor(target):
        raise TypeError(f"the last element of a batch should be the target tensor, got {type(target).__name__}")
    if target.dtype in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        return int((target != IGNORE_INDEX).sum())
    return target.numel()


def detach_carry(carry: Any) -> Any:
    """Detach every tensor inside nested tuples / lists / dicts (truncated BPTT: keep values, cut the graph)."""
    if torch.is_tensor(carry):
        return carry.detach()
    if isinstance(carry, tuple) and hasattr(carry, "_fields"):  # namedtuple
        return type(carry)(*(detach_carry(c) for c in carry))
    if isinstance(carry, (tuple, list)):
        return type(carry)(detach_carry(c) for c in carry)
    if isinstance(carry, dict):
        return {k: detach_carry(v) for k, v in carry.items()}
    return carry


def evaluate(
    model: torch.nn.Module,
    data: Iterable[Batch],
    step: StepFn | None = None,
    metrics: MetricsFn | None = None,
    count: Callable[[Batch], int] | None = None,
) -> dict:
    """Mean loss over all targets of ``data``, its perplexity, and metrics (sum / count over all batches).

    Runs under ``torch.no_grad()`` in eval mode, restores the model's previous mode, starts with ``carry=None``.
    Returns ``{"loss", "perplexity", "targets", **metrics}``.
    """
    step = step or default_step
    count = count or count_targets
    _check_reiterable(data, "data")
    was_training = model.training
    device = _model_device(model)
    model.eval()
    total, n, carry = 0.0, 0, None
    sums: dict[str, list[float]] = {}
    try:
        with torch.no_grad():
            for batch in data:
                batch = _to_device(_as_batch(batch), device)
                loss, carry = step(model, batch, carry)
                k = count(batch)
                total += float(loss) * k
                n += k
                if metrics is not None:
                    for name, (s, c) in metrics(model, batch).items():
                        acc = sums.setdefault(name, [0.0, 0.0])
                        acc[0] += float(s)
                        acc[1] += float(c)
    finally:
        model.train(was_training)
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

    ``callbacks``: functions ``cb(trainer, event, info)`` called with event ``"step"`` (info: step, loss),
    ``"eval"`` (info: step, results) and ``"epoch"`` (info: epoch, loss); setting ``trainer.should_stop = True``
    ends training after the current step. ``count(batch) -> int`` gives a batch's number of targets, the weight of
    its mean loss in epoch and validation means (default :func:`count_targets`). With ``config.checkpoint`` set,
    the best model by validation loss is saved; ``load_checkpoint()`` puts it back.
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
        params = [p for p in model.parameters() if p.requires_grad]
        if not params:
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
        self.optimizer = _make_optimizer(config, model)
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

    # -- training ---------------------------------------------------------------------------------------------
    def fit(self) -> History:
        """Train for ``config.epochs`` (or ``config.max_steps``), evaluating and early-stopping as configured.

        Each call seeds with ``config.seed`` and records a new ``History`` (also kept as ``self.history``).
        """
        cfg, model = self.config, self.model
        self.history = hist = History()  # every fit() is a new run (the optimizer keeps its state)
        set_seed(cfg.seed)
        device = _model_device(model)
        params = [p for p in model.parameters() if p.requires_grad]
        t0 = time.perf_counter()
        self.should_stop = False
        n_batches = _known_len(self.train_data)
        planned = cfg.epochs * n_batches if n_batches is not None else None
        if cfg.max_steps is not None:
            planned = cfg.max_steps if planned is None else min(planned, cfg.max_steps)
        if cfg.schedule == "cosine" and planned is None:
            raise ValueError("schedule='cosine' needs to know the run's length: set max_steps, or give train_data "
                             "a len() (a list, DataLoader or StreamBatcher)")
        since_best = 0
        bar = None
        if cfg.progress:
            bar = tqdm(total=planned, desc="train", unit="step", dynamic_ncols=True)

        def run_eval() -> bool:
            """Evaluate, record, checkpoint; True if patience is exhausted."""
            nonlocal since_best
            res = self.evaluate(self.valid_data)
            hist.eval_steps.append(hist.steps)
            hist.valid_loss.append(res["loss"])
            hist.valid_perplexity.append(res["perplexity"])
            hist.metrics.append({k: v for k, v in res.items() if k not in ("loss", "perplexity", "targets")})
            if hist.best is None or res["loss"] < hist.best["valid_loss"]:
                hist.best = {"step": hist.steps, "valid_loss": res["loss"], "valid_perplexity": res["perplexity"]}
                since_best = 0
                self._save(hist.best)
            else:
                since_best += 1
            if bar is not None:
                bar.set_postfix(loss=f"{hist.step_loss[-1]:.3f}", val_ppl=f"{res['perplexity']:.2f}", refresh=False)
            self._emit("eval", {"step": hist.steps, "results": res})
            return cfg.patience is not None and since_best >= cfg.patience

        try:
            done = out_of_patience = False
            for epoch in range(cfg.epochs):
                carry, ep_total, ep_n = None, 0.0, 0
                model.train()
                for batch in self.train_data:
                    batch = _to_device(_as_batch(batch), device)
                    loss, carry = self.step_fn(model, batch, carry)
                    if not torch.is_tensor(loss) or loss.dim() != 0:
                        raise TypeError("step must return (loss, carry) with a scalar loss tensor")
                    value = float(loss.detach())
                    if not math.isfinite(value):
                        raise FloatingPointError(
                            f"loss became {value} at step {hist.steps + 1} (epoch {epoch + 1}): "
                            f"lower the learning rate (lr={cfg.lr:g}) or set clip (clip={cfg.clip})"
                        )
                    lr = _learning_rate(cfg, hist.steps, planned)
                    for group in self.optimizer.param_groups:
                        group["lr"] = lr
                    hist.lr.append(lr)
                    self.optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    if cfg.clip is not None:
                        norm = torch.nn.utils.clip_grad_norm_(params, cfg.clip)
                        hist.grad_norm.append(float(norm))
                    self.optimizer.step()
                    carry = detach_carry(carry)
                    k = self.count(batch)
                    ep_total += value * k
                    ep_n += k
                    hist.targets += k
                    hist.steps += 1
                    hist.step_loss.append(value)
                    if bar is not None:
                        bar.update(1)
                        bar.set_postfix(loss=f"{ep_total / ep_n:.3f}", refresh=False)  # epoch running mean
                    self._emit("step", {"step": hist.steps, "loss": value})
                    if (
                        self.valid_data is not None
                        and cfg.eval_every is not None
                        and hist.steps % cfg.eval_every == 0
                        and run_eval()
                    ):
                        out_of_patience = done = True
                    if (cfg.max_steps is not None and hist.steps >= cfg.max_steps) or self.should_stop:
                        done = True
                    if done:
                        break
                if hist.steps == 0:
                    raise ValueError("train_data yielded no batches: it must yield at least one (x, y) batch")
                if ep_n:
                    hist.epoch_loss.append(ep_total / ep_n)
                    self._emit("epoch", {"epoch": epoch + 1, "loss": ep_total / ep_n})
                if self.valid_data is not None and not out_of_patience:
                    last_evaluated = bool(hist.eval_steps) and hist.eval_steps[-1] == hist.steps
                    if not last_evaluated and (cfg.eval_every is None or done or epoch == cfg.epochs - 1):
                        out_of_patience = run_eval()
                        done = done or out_of_patience
                if done:
                    break
            # early only if patience ran out before the planned end of training
            hist.stopped_early = out_of_patience and (planned is None or hist.steps < planned)
            if self.valid_data is None:
                self._save({"step": hist.steps, "valid_loss": None, "valid_perplexity": None})
        finally:
            if bar is not None:
                bar.close()
            hist.seconds += time.perf_counter() - t0
        return hist

    # -- helpers ----------------------------------------------------------------------------------------------
    def _save(self, record: dict) -> None:
        if self.config.checkpoint is None:
            return
        state = {k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()}
        torch.save({"model": state, **record}, self.config.checkpoint)

    def _emit(self, event: str, info: dict) -> None:
        for cb in self.callbacks:
            cb(self, event, info)


# -- module helpers -------------------------------------------------------------------------------------------
def _is_real(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _learning_rate(cfg: TrainConfig, step: int, planned: int | None) -> float:
    """lr for the (step+1)-th update: linear warm-up, then constant or cosine decay to 0 at the planned end."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    if cfg.schedule == "constant":
        return cfg.lr
    span = max(planned - cfg.warmup, 1)
    progress = min((step - cfg.warmup) / span, 1.0)
    return cfg.lr * 0.5 * (1.0 + math.cos(math.pi * progress))


def _make_optimizer(cfg: TrainConfig, model: torch.nn.Module) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    name = cfg.optimizer.lower()
    if name == "adamw":
        return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    if name == "adam":
        return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    return torch.optim.SGD(params, lr=cfg.lr, weight_decay=cfg.weight_decay)


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


def _as_batch(batch: Any) -> tuple:
    if torch.is_tensor(batch):
        return (batch,)
    if isinstance(batch, (tuple, list)):
        return tuple(batch)
    raise TypeError(f"a batch must be a tuple of tensors such as (x, y), got {type(batch).__name__}")


def _model_device(model: torch.nn.Module) -> torch.device:
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


def _to_device(batch: tuple, device: torch.device) -> tuple:
    return tuple(b.to(device) if torch.is_tensor(b) and b.device != device else b for b in batch)
