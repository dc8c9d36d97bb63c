"""What the trainer asks of a model: step functions, their output, and the metrics read from it.

A *step function* ``step(model, batch, carry) -> StepOutput(loss, logits, carry)`` computes one batch's loss (the
trainer does the backward pass and the update); ``carry`` is state handed from batch to batch (an RNN's hidden state
in stateful truncated BPTT), None at the start of every epoch and evaluation. A *metric* ``metric(batch, logits) ->
{name: (sum, count)}`` reads the step's own logits. They live with the trainer, not with the models, so that no model
module imports the trainer: ``seqviz.train`` re-exports every name here.

- :func:`default_step`  the package's LM interface ``model(x, y[, mask]) -> (logits, loss)``, nothing carried
- :func:`lm_step`       a recurrent LM over contiguous windows (``seqviz.data.lm_batches``), stateful or not
- :func:`accuracy`      the tagger / classifier metric (ch. 3-4)
- :func:`count_targets` and :func:`detach_carry`, the trainer's two helpers a custom step may want
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import torch

from seqviz._checks import IGNORE_INDEX
from seqviz.data.batches import Batch
from seqviz.rnn.layer import state_h

__all__ = ["StepOutput", "StepFn", "MetricsFn", "default_step", "lm_step", "accuracy", "count_targets",
           "detach_carry"]


class StepOutput(NamedTuple):
    """What a step function returns: the scalar loss, the logits it computed (for metrics), the state to carry."""

    loss: torch.Tensor
    logits: torch.Tensor | None = None
    carry: Any = None


StepFn = Callable[[torch.nn.Module, Batch, Any], StepOutput]
MetricsFn = Callable[[Batch, torch.Tensor], dict]


def default_step(model: torch.nn.Module, batch: Batch, carry: Any = None) -> StepOutput:
    """The LM interface: ``model(batch.x, batch.y[, mask=batch.mask]) -> (logits, loss)``; no state is carried."""
    out = model(batch.x, batch.y) if batch.mask is None else model(batch.x, batch.y, mask=batch.mask)
    if not isinstance(out, tuple) or len(out) != 2 or not torch.is_tensor(out[1]):
        raise TypeError(
            "the default step expects model(x, y) to return (logits, loss) with a tensor loss; "
            "pass targets in the batch, or give Trainer a step(model, batch, carry) -> StepOutput(loss, logits, carry)"
        )
    return StepOutput(out[1], out[0], None)


def lm_step(stateful: bool) -> StepFn:
    """The step function of a recurrent LM (``seqviz.rnn.RecurrentLM``: RNNLM, LSTMLM, GRULM) over contiguous
    windows (``seqviz.data.lm_batches`` / ``StreamBatcher``): ``step(model, batch, carry) -> StepOutput``.

    stateful=True carries the final hidden state into the next window (the trainer detaches it: truncated BPTT);
    stateful=False starts every window from the initial state, forgetting everything before it.
    """
    def step(model: torch.nn.Module, batch: Batch, carry: Any) -> StepOutput:
        state = carry if stateful else None
        if state is not None and state_h(state).shape[1] != batch.x.shape[0]:
            state = None                                                          # batch size changed: restart
        logits, loss, state_n = model(batch.x, batch.y, state=state, return_state=True)
        return StepOutput(loss, logits, state_n if stateful else None)
    return step


def accuracy(batch: Batch, logits: torch.Tensor) -> dict[str, tuple[float, int]]:
    """Trainer metric: {"accuracy": (correct, count)} from a step's logits, over the targets that count.

    Tagging (logits (B, T, n)): real tokens only (batch.mask, and y != IGNORE_INDEX); classification (logits
    (B, n)): every sequence whose label is not IGNORE_INDEX.
    """
    pred = logits.argmax(-1)                                                      # (B, T) or (B,)
    if pred.shape != batch.y.shape:
        raise ValueError(f"logits {tuple(logits.shape)} do not fit targets {tuple(batch.y.shape)}: accuracy "
                         f"needs (B, T, n) logits for (B, T) tags, or (B, n) for (B,) labels")
    keep = batch.y != IGNORE_INDEX                                                # (B, T) or (B,)
    if pred.dim() == 2 and batch.mask is not None:
        keep = keep & batch.mask                                                  # real tokens only
    return {"accuracy": (float((pred == batch.y)[keep].sum()), int(keep.sum()))}


def count_targets(batch: Batch) -> int:
    """Number of targets in a batch: entries of ``batch.y`` that are not ``IGNORE_INDEX`` (-100)."""
    target = batch.y
    if not torch.is_tensor(target):
        raise TypeError(f"batch.y should be the target tensor, got {type(target).__name__}")
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
