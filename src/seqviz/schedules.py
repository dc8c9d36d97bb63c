"""Learning-rate schedules: the rate of each optimizer step is ``lr * schedule(steps_done, epoch, planned)``.

The trainer (``seqviz.train``) owns the learning rate through one of these objects, ``TrainConfig.schedule``, and sets
it before every optimizer step. ``steps_done`` counts the optimizer steps taken before this one (0 for the first),
``epoch`` the epochs from 0, ``planned`` is the run's length in steps (None when the data has no length and
``max_steps`` is unset). (In the trainer, a bare ``step`` is the step *function*; counts of steps are plural.)

- :class:`Constant`      the same rate throughout (after the warm-up)
- :class:`WarmupCosine`  linear warm-up, then a cosine from ``lr`` down to ``final * lr`` at the last planned step
- :class:`StepDecay`     multiply by ``gamma`` every few epochs (Zaremba et al. 2014's recipe for the RNN chapters)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Schedule", "Constant", "WarmupCosine", "StepDecay", "SCHEDULE_NAMES"]


@dataclass(frozen=True)
class Schedule:
    """The learning rate over a run: ``lr * factor(steps_done, epoch, planned)``, after ``warmup`` steps of linear
    warm-up (with ``steps_done < warmup`` the rate is ``(steps_done + 1) / warmup * lr``)."""

    warmup: int = 0  # steps of linear warm-up from lr/warmup to lr

    def __post_init__(self) -> None:
        if isinstance(self.warmup, bool) or not isinstance(self.warmup, int) or self.warmup < 0:
            raise ValueError(f"{type(self).__name__}.warmup must be a non-negative integer (steps), got "
                             f"{self.warmup!r}")

    needs_length = False  # True if the schedule must know the run's length

    def __call__(self, steps_done: int, epoch: int, planned: int | None) -> float:
        if steps_done < self.warmup:
            return (steps_done + 1) / self.warmup
        return self.factor(steps_done, epoch, planned)

    def factor(self, steps_done: int, epoch: int, planned: int | None) -> float:
        raise NotImplementedError(f"{type(self).__name__} must define factor(steps_done, epoch, planned) -> float")


@dataclass(frozen=True)
class Constant(Schedule):
    """The same rate throughout (after the warm-up)."""

    def factor(self, steps_done: int, epoch: int, planned: int | None) -> float:
        return 1.0


@dataclass(frozen=True)
class WarmupCosine(Schedule):
    """Cosine decay from lr at the first step after warm-up to exactly ``final * lr`` at the last planned step
    (Loshchilov & Hutter 2017). A run with no step after that first one has nothing to decay over: it runs at lr."""

    final: float = 0.0  # the last step's rate, as a fraction of lr
    needs_length = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.final <= 1.0:
            raise ValueError(f"WarmupCosine.final must be in [0, 1] (a fraction of lr), got {self.final!r}")

    def factor(self, steps_done: int, epoch: int, planned: int | None) -> float:
        span = planned - 1 - self.warmup  # steps from the first after warm-up (progress 0) to the last (1)
        if span < 1:
            return 1.0
        progress = min((steps_done - self.warmup) / span, 1.0)
        return self.final + (1.0 - self.final) * 0.5 * (1.0 + math.cos(math.pi * progress))


@dataclass(frozen=True)
class StepDecay(Schedule):
    """Multiply the rate by ``gamma`` every ``every`` epochs, from epoch ``start`` on (Zaremba et al. 2014's recipe)."""

    gamma: float = 0.5  # factor per decay
    every: int = 1  # epochs between decays
    start: int = 1  # the first epoch (counted from 0) trained at the decayed rate

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"StepDecay.gamma must be in (0, 1], got {self.gamma!r}")
        for name in ("every", "start"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < (1 if name == "every" else 0):
                raise ValueError(f"StepDecay.{name} must be a {'positive' if name == 'every' else 'non-negative'} "
                                 f"int (epochs), got {v!r}")

    def factor(self, steps_done: int, epoch: int, planned: int | None) -> float:
        decays = 0 if epoch < self.start else (epoch - self.start) // self.every + 1
        return self.gamma ** decays


SCHEDULE_NAMES = {"constant": Constant, "cosine": WarmupCosine}  # what TrainConfig(schedule="...") accepts
