"""Decoding from any language model: greedy, temperature, top-k sampling and beam search, in one incremental loop.

The contract is a *stepper*: ``step(ids (B, t_new) LongTensor, state | None) -> (logits (B, V), state)`` gives the
next-token scores after reading ``ids`` on top of ``state`` (None: nothing read yet), and
``reorder_state(state, index (B',) LongTensor) -> state`` keeps, duplicates or drops rows (the beams that survive).
An RNN's state is its hidden state, so each new token costs one step; a transformer's would be its key/value cache;
an encoder-decoder's may hold the encoder outputs too. The state may be any structure the model's ``reorder_state``
understands: the decoder never looks inside it.

Mode discipline: decoding runs in eval mode (dropout off) and gives the caller's mode back afterwards. A stepper that
is an ``nn.Module`` is switched itself; a stepper that is not one (an encoder-decoder's ``bind(src)``, which runs the
encoder on its first step) names the module it runs as its ``module`` attribute, and that module is switched. The
device of the ids the loop builds is that module's. Greedy, sampling and beam search are one loop that differs only in
how it picks the next tokens, and the beam's hypotheses are scored as one batch.

Models that only score a whole context, ``score_fn(context_ids: list[int]) -> (V,)`` (the n-gram and window LMs'
``next_token_logits``), go through ``ContextStepper``, whose state is the list of contexts: every call re-reads the
whole prefix, which is what those models do anyway. Every public function takes either kind.

Log-probabilities are logits too (softmax of log p is p), so temperature means the same thing for both:
softmax(z / T) is p^(1/T) renormalised.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

import numpy as np
import torch

from seqviz import evaluating
from seqviz._checks import check_temperature as _check_temperature

__all__ = ["ScoreFn", "Stepper", "ContextStepper", "as_stepper", "next_token_logits_by_step",
           "softmax_with_temperature", "top_k_filter", "sample_next", "generate", "beam_search", "BeamCandidate",
           "BeamTrace", "STATUSES", "check_length_penalty"]

ScoreFn = Callable[[Sequence[int]], "torch.Tensor | np.ndarray"]


@runtime_checkable
class Stepper(Protocol):
    """A model that decodes incrementally (RecurrentLM, a seq2seq decoder, a transformer with a cache)."""

    def step(self, ids: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]: ...

    def reorder_state(self, state: Any, index: torch.Tensor) -> Any: ...


class ContextStepper:
    """The stepper of a model that scores whole contexts: state = one list of ids per row, re-scored in full.

    ``step`` appends the new ids to each row's context and calls ``score_fn`` on it, so a token costs a pass over
    the whole prefix (cheap for an n-gram, which reads only its last n-1 ids).
    """

    def __init__(self, score_fn: ScoreFn):
        if not callable(score_fn):
            raise TypeError(f"score_fn must be callable, context_ids -> (V,) scores, got {type(score_fn).__name__}")
        self.score_fn = score_fn

    def step(self, ids: torch.Tensor, state: list[list[int]] | None) -> tuple[torch.Tensor, list[list[int]]]:
        rows = ids.tolist()
        contexts = [[] for _ in rows] if state is None else state
        if len(contexts) != len(rows):
            raise ValueError(f"ids have {len(rows)} rows but the state holds {len(contexts)} contexts")
        contexts = [ctx + row for ctx, row in zip(contexts, rows)]
        return torch.stack([_as_logits(self.score_fn(ctx)) for ctx in contexts]), contexts   # (B, V)

    def reorder_state(self, state: list[list[int]], index: torch.Tensor) -> list[list[int]]:
        return [list(state[i]) for i in index.tolist()]


def as_stepper(model) -> Stepper:
    """A stepper for ``model``: itself if it has step and reorder_state, else a ContextStepper over its
    ``next_token_logits`` (or over ``model`` itself, a score function)."""
    if isinstance(model, Stepper):
        return model
    if hasattr(model, "next_token_logits"):
        return ContextStepper(model.next_token_logits)
    if callable(model):
        return ContextStepper(model)
    raise TypeError(f"cannot decode from {type(model).__name__}: give a model with step(ids, state) and "
                    f"reorder_state(state, index), or a score function context_ids -> (V,) scores")


def _as_logits(logits) -> torch.Tensor:
    z = torch.as_tensor(np.asarray(logits) if not isinstance(logits, torch.Tensor) else logits)
    z = z.detach().to(torch.float64)
    if z.dim() != 1:
        raise ValueError(f"expected next-token scores of shape (V,), got {tuple(z.shape)}")
    if z.numel() == 0:
        raise ValueError("next-token scores are empty: the vocabulary has no tokens")
    if torch.isnan(z).any():
        raise ValueError("next-token scores contain NaN; check the model (e.g. a log of a negative number)")
    if not torch.isfinite(z).any():
        raise ValueError("every next-token score is -inf: the model gives no token any probability")
    return z


def _as_batch_logits(logits, rows: int) -> torch.Tensor:
    """A step's logits (B, V) as float64 on the CPU, checked like _as_logits row by row."""
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2 or logits.shape[0] != rows:
        raise ValueError(f"step must return logits of shape (B, V) = ({rows}, V) for the last position, got "
                         f"{tuple(getattr(logits, 'shape', ())) or type(logits).__name__}")
    z = logits.detach().to("cpu", torch.float64)
    if z.shape[1] == 0:
        raise ValueError("next-token scores are empty: the vocabulary has no tokens")
    if torch.isnan(z).any():
        raise ValueError("next-token scores contain NaN; check the model (e.g. a log of a negative number)")
    if not torch.isfinite(z).any(1).all():
        raise ValueError("every next-token score is -inf: the model gives no token any probability")
    return z                                                                      # (B, V)


def softmax_with_temperature(logits, temperature: float = 1.0) -> torch.Tensor:
    """softmax(z / T) as float64: T < 1 sharpens the distribution, T > 1 flattens it, T = 1 leaves it."""
    z = _as_logits(logits)
    T = _check_temperature(temperature)
    return torch.softmax(z / T, dim=0)


def top_k_filter(logits, k: int | None) -> torch.Tensor:
    """Keep the k highest scores and set the rest to -inf (ties at the k-th score are kept)."""
    z = _as_logits(logits)
    if k is None:
        return z
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"top_k must be a positive int or None, got {k!r}")
    if k >= z.numel():
        return z
    kth = torch.topk(z, k).values[-1]
    return torch.where(z >= kth, z, torch.full_like(z, -math.inf))


def check_length_penalty(value, name: str = "length_penalty") -> float:
    """A length-normalisation exponent (rank = log P / len ** value) as a float: any finite real number (0: the plain
    sum; about 0.6-1.0 counters the plain sum's taste for short outputs; a negative one favours them more)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} (the length-normalisation exponent: rank = log P / len ** {name}) must be a finite "
                         f"number, e.g. 0 (the plain sum of log-probabilities) or 0.6-1.0, got {value!r}")
    return float(value)


def sample_next(logits, temperature: float = 1.0, top_k: int | None = None,
                generator: torch.Generator | None = None) -> int:
    """The sampling step: draw one token id from softmax(top_k(z) / T) (top_k=None keeps every token)."""
    probs = softmax_with_temperature(top_k_filter(logits, top_k), temperature)
    return int(torch.multinomial(probs, 1, generator=generator).item())


# -- the one decoding loop --------------------------------------------------------------------------------------
Hypothesis = tuple[list[int], float]          # (new ids, total log-probability)
Expand = Callable[[torch.Tensor, list[Hypothesis]], list[tuple[int, int, float]]]


@torch.no_grad()
def next_token_logits_by_step(model, context_ids, max_context: int | None = None) -> torch.Tensor:
    """Logits (V,) for the token after ``context_ids`` (its last ``max_context`` ids, if set), read through
    ``model.step`` from no state in eval mode: the ``next_token_logits`` of every model that decodes incrementally."""
    ids = torch.as_tensor(list(map(int, context_ids)) if not isinstance(context_ids, torch.Tensor) else context_ids)
    if ids.dim() != 1 or ids.numel() == 0:
        raise ValueError(f"context_ids must be a non-empty 1-D sequence of token ids (start with <s>), got shape "
                         f"{tuple(ids.shape)}")
    if max_context is not None:
        ids = ids[-max_context:]
    with evaluating(_module_of(model)):
        logits, _ = model.step(ids.long().unsqueeze(0).to(_model_device(model)), None)   # (1, V)
    return logits[0]                                                                  # (V,)


def _module_of(stepper) -> torch.nn.Module | None:
    """The module whose mode decoding owns: the stepper itself, or the module a binding names as ``module``."""
    if isinstance(stepper, torch.nn.Module):
        return stepper
    module = getattr(stepper, "module", None)
    return module if isinstance(module, torch.nn.Module) else None


def _model_device(model) -> torch.device:
    module = _module_of(model)
    if module is not None:
        for p in module.parameters():
            return p.device
    return torch.device("cpu")


def _decode(model, prompt_ids: Sequence[int], max_new_tokens: int, width: int, expand: Expand,
            stop_id: int | None, length_penalty: float, state: Any = None,
            suppress_ids: Sequence[int] = (), record: list | None = None) -> list[Hypothesis]:
    """Grow up to ``width`` hypotheses from one prompt, all scored in one batch per step; best first.

    ``expand(logits (N, V), live) -> [(row, token, log-prob), ...]`` proposes continuations of the N live
    hypotheses, in preference order (a beam proposes 2 x width, so a finished hypothesis never costs a live one).
    Going down that list, a continuation ending in ``stop_id`` is finished, others stay live, until ``width`` are
    live. Ranking divides the log-probability by ``len ** length_penalty``. The loop ends at ``max_new_tokens``,
    when nothing is live, or when the ``width``-th best finished hypothesis ranks at least as high as the best any
    live one could still reach (so no later step could change the returned list): its log-probability can only fall, so that bound is its rank now for ``length_penalty <= 0`` and
    its log-probability over ``max_new_tokens ** length_penalty`` for a positive one (the longest length it can reach).
    With a width that holds every hypothesis, this is exhaustive search. Tokens in ``suppress_ids`` get the score
    -inf (never chosen, and the others renormalised without them). The stepper's module runs in eval mode.
    ``record``, a list the caller owns, gets one entry per step: every proposed ``(row, token, log-prob, status)``.
    """
    stepper = as_stepper(model)
    suppress = [int(i) for i in suppress_ids]
    device = _model_device(stepper)

    def rank(hyp: Hypothesis) -> float:
        ids, lp = hyp
        return lp / (max(len(ids), 1) ** length_penalty)

    def best_reachable(live: list[Hypothesis]) -> float:
        if length_penalty <= 0:                                                   # rank can only fall
            return max(rank(h) for h in live)
        return max(lp / max_new_tokens ** length_penalty for _, lp in live)       # lp <= 0 falls, len grows

    with evaluating(_module_of(stepper)):
        with torch.no_grad():
            prompt = torch.tensor([[int(i) for i in prompt_ids]], dtype=torch.long, device=device)   # (1, T)
            logits, state = stepper.step(prompt, state)
            live: list[Hypothesis] = [([], 0.0)]
            finished: list[Hypothesis] = []
            for t in range(max_new_tokens):
                z = _as_batch_logits(logits, len(live))                           # (N, V)
                if suppress:
                    if max(suppress) >= z.shape[1] or min(suppress) < 0:
                        raise ValueError(f"suppress_ids {suppress} must be token ids in [0, {z.shape[1]})")
                    z = z.clone()                                                 # never write into the model's
                    z[:, suppress] = -math.inf
                    if not torch.isfinite(z).any(1).all():
                        raise ValueError("suppress_ids leave no token to choose: every other score is -inf")
                chosen = expand(z, live)
                rows, new_live, seen = [], [], 0
                for row, token, lp in chosen:
                    seen += 1
                    ids = live[row][0] + [token]
                    if stop_id is not None and token == stop_id:
                        finished.append((ids, lp))
                    else:
                        rows.append(row)
                        new_live.append((ids, lp))
                    if len(new_live) == width:
                        break
                if record is not None:                                            # the rest were never reached
                    record.append([(row, token, lp, "pruned" if n >= seen else "finished"
                                    if stop_id is not None and token == stop_id else "kept")
                                   for n, (row, token, lp) in enumerate(chosen)])
                live = new_live
                if not live or len(finished) >= width and \
                        sorted(map(rank, finished), reverse=True)[width - 1] >= best_reachable(live):
                    break                                                         # no live one can enter the top
                if t + 1 == max_new_tokens:
                    break                                                         # no scores needed after the last
                index = torch.tensor(rows, dtype=torch.long, device=device)        # (N',) surviving parents
                tokens = torch.tensor([[ids[-1]] for ids, _ in live], dtype=torch.long, device=device)  # (N', 1)
                logits, state = stepper.step(tokens, stepper.reorder_state(state, index))
    return sorted(finished + live, key=rank, reverse=True)[:width]


def generate(model, prompt_ids: Sequence[int], max_new_tokens: int, *, temperature: float = 1.0,
             top_k: int | None = None, greedy: bool = False, stop_id: int | None = None,
             seed: int | None = None, state: Any = None, suppress_ids: Sequence[int] = ()) -> list[int]:
    """Extend ``prompt_ids`` one token at a time (autoregressive generation, SLP Fig. 9.9); stops after ``stop_id``
    (kept) or ``max_new_tokens``.

    ``model`` is a stepper (e.g. a RecurrentLM: each token costs one step) or a score function (re-scores the whole
    context). ``greedy=True`` takes the arg-max each step (the T -> 0 limit of sampling). ``seed`` makes a sampled
    run repeatable without touching the global random state. ``state`` is the stepper's state before the prompt
    (None: the start; a seq2seq decoder's may hold the encoder outputs). Tokens in ``suppress_ids`` are never
    generated (their logit is set to -inf, e.g. ``<unk>``). Returns only the new ids.
    """
    if not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be a non-negative int, got {max_new_tokens!r}")
    if not greedy:
        _check_temperature(temperature)
    if max_new_tokens == 0:
        return []
    gen = torch.Generator().manual_seed(seed) if seed is not None else None

    def expand(z: torch.Tensor, live: list[Hypothesis]) -> list[tuple[int, int, float]]:
        out = []
        for row, (_, lp) in enumerate(live):
            nxt = int(torch.argmax(z[row]).item()) if greedy else sample_next(z[row], temperature, top_k, gen)
            out.append((row, nxt, lp + float(torch.log_softmax(z[row], 0)[nxt])))
        return out

    (ids, _), = _decode(model, prompt_ids, max_new_tokens, 1, expand, stop_id, 0.0, state, suppress_ids)
    return ids


STATUSES = ("kept", "pruned", "finished")


@dataclass(frozen=True)
class BeamCandidate:
    """One continuation a beam step proposed: ``token`` after the live hypothesis ``parent``.

    ``parent`` is that hypothesis's index among the previous step's kept candidates, in their order (0 at the first
    step: the prompt). ``status``: "kept" (live, among the ``beam_size`` best), "finished" (it ends with
    ``stop_id``) or "pruned" (ranked below the ``beam_size``-th live one, so never reached)."""

    parent: int
    token: int
    token_logprob: float      # log P(token | prompt, the parent's tokens)
    logprob: float            # the hypothesis's log-probability: the parent's plus token_logprob
    status: str


@dataclass(frozen=True)
class BeamTrace:
    """What ``beam_search(..., trace=True)`` did, step by step, so the search can be drawn as a tree.

    ``steps[t]`` holds every candidate proposed for new token t + 1, best ranked first (up to 2 x ``beam_size``
    continuations of each live hypothesis). ``hypotheses`` is what the search returned. ``greedy`` (when asked
    with ``with_greedy=True``) is greedy decoding's path from the same prompt: ``(token, token_logprob)`` per step."""

    prompt_ids: tuple[int, ...]
    beam_size: int
    length_penalty: float
    stop_id: int | None
    max_new_tokens: int
    steps: tuple[tuple[BeamCandidate, ...], ...]
    hypotheses: tuple[tuple[tuple[int, ...], float], ...]
    greedy: tuple[tuple[int, float], ...] | None = None

    def kept(self, t: int) -> list[BeamCandidate]:
        """The live hypotheses after step ``t`` (0-based), in the order step t + 1 names them as parents."""
        return [c for c in self.steps[t] if c.status == "kept"]

    def ids(self, t: int, i: int) -> list[int]:
        """The new ids of candidate ``i`` of step ``t``: its parents' tokens, then its own."""
        out = []
        while t >= 0:
            c = self.steps[t][i]
            out.append(c.token)
            if t:
                i = self.steps[t - 1].index(self.kept(t - 1)[c.parent])
            t -= 1
        return out[::-1]

    def rank(self, logprob: float, length: int, length_penalty: float | None = None) -> float:
        """The score a hypothesis of ``length`` new tokens is ranked by: logprob / length ** length_penalty (the
        search's own ``length_penalty`` unless another is given; 0 is the plain sum)."""
        a = self.length_penalty if length_penalty is None else length_penalty
        return logprob / (max(length, 1) ** a)

    def to_dict(self, ids: Sequence[int] | None = None) -> dict:
        """The trace as plain JSON-able lists (a benchmark stores it; :meth:`from_dict` reads it back).

        ``ids`` (optional) renumbers the token ids: token ``ids[j]`` is written as ``j``, so a trace over a large
        vocabulary can be stored with only the labels it uses (see :meth:`token_ids`)."""
        if ids is None:
            new = lambda t: int(t)  # noqa: E731
        else:
            where = {int(t): j for j, t in enumerate(ids)}
            missing = sorted(set(self.token_ids()) - set(where))
            if missing:
                raise ValueError(f"ids lacks token ids {missing[:10]} that the trace uses; pass trace.token_ids()")
            new = where.__getitem__
        return {"prompt_ids": [new(t) for t in self.prompt_ids], "beam_size": self.beam_size,
                "length_penalty": self.length_penalty,
                "stop_id": None if self.stop_id is None else new(self.stop_id),
                "max_new_tokens": self.max_new_tokens,
                "steps": [[[c.parent, new(c.token), c.token_logprob, c.logprob, c.status] for c in step]
                          for step in self.steps],
                "hypotheses": [[[new(t) for t in ids_], lp] for ids_, lp in self.hypotheses],
                "greedy": None if self.greedy is None else [[new(t), lp] for t, lp in self.greedy]}

    def token_ids(self) -> list[int]:
        """Every token id the trace mentions (prompt, candidates, results, greedy's path, the stop id), sorted."""
        used = set(self.prompt_ids) | {c.token for step in self.steps for c in step}
        used |= {t for ids_, _ in self.hypotheses for t in ids_} | {t for t, _ in (self.greedy or ())}
        if self.stop_id is not None:
            used.add(self.stop_id)
        return sorted(int(t) for t in used)

    @classmethod
    def from_dict(cls, d: dict) -> "BeamTrace":
        """Read back what :meth:`to_dict` wrote (a clear error names the first field that is missing or malformed;
        the widget checks the search itself: statuses, log-probabilities, parents)."""
        need = ("prompt_ids", "beam_size", "length_penalty", "stop_id", "max_new_tokens", "steps", "hypotheses")
        if not isinstance(d, dict):
            raise TypeError(f"a stored beam trace is a dict (BeamTrace.to_dict()), got {type(d).__name__}")
        missing = [k for k in need if k not in d]
        if missing:
            raise ValueError(f"the stored beam trace lacks {missing}; store it with BeamTrace.to_dict()")
        try:
            steps = tuple(tuple(BeamCandidate(int(p), int(t), float(tl), float(lp), str(st))
                                for p, t, tl, lp, st in step) for step in d["steps"])
            hyps = tuple((tuple(int(t) for t in ids_), float(lp)) for ids_, lp in d["hypotheses"])
            greedy = None if d.get("greedy") is None else tuple((int(t), float(lp)) for t, lp in d["greedy"])
        except (TypeError, ValueError) as e:
            raise ValueError(f"the stored beam trace is malformed ({e}): each step is a list of "
                             "[parent, token, token_logprob, logprob, status] candidates") from None
        bad = [c.status for step in steps for c in step if c.status not in STATUSES]
        if bad:
            raise ValueError(f"unknown candidate status {bad[0]!r}; expected one of {STATUSES}")
        return cls(tuple(int(t) for t in d["prompt_ids"]), int(d["beam_size"]), float(d["length_penalty"]),
                   None if d["stop_id"] is None else int(d["stop_id"]), int(d["max_new_tokens"]), steps, hyps,
                   greedy)


def _greedy_expand(z: torch.Tensor, live: list[Hypothesis]) -> list[tuple[int, int, float]]:
    """Greedy decoding's one proposal a row: the arg-max token and the hypothesis's log-probability."""
    logp = torch.log_softmax(z, dim=1)                                             # (N, V)
    best = torch.argmax(logp, dim=1).tolist()                                      # (N,)
    return [(row, tok, live[row][1] + float(logp[row, tok])) for row, tok in enumerate(best)]


def beam_search(model, prompt_ids: Sequence[int], beam_size: int, max_new_tokens: int,
                stop_id: int | None = None, length_penalty: float = 0.0, *,
                state: Any = None, suppress_ids: Sequence[int] = (), trace: bool = False,
                with_greedy: bool = False):
    """Keep the ``beam_size`` best continuations by total log-probability; return them best first.

    All live hypotheses are scored as one batch (one ``step`` per token); ``reorder_state`` keeps the rows of the
    survivors. Scores are normalised with log_softmax, so logits and log-probs both work. A hypothesis that emits
    ``stop_id`` is finished. Ranking divides the log-probability by ``len ** length_penalty`` (0 = plain sum,
    which favours short outputs; about 0.6-1.0 counters that). ``state`` and ``suppress_ids`` as in ``generate``.
    Returns ``(new_ids, logprob)`` pairs; with ``trace=True``, ``(pairs, BeamTrace)``: every step's candidates,
    their log-probabilities and which were kept, pruned or finished (``with_greedy=True`` adds greedy decoding's
    path from the same prompt, for comparison).
    """
    if not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_size must be a positive int, got {beam_size!r}")
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
    if with_greedy and not trace:
        raise ValueError("with_greedy=True adds greedy's path to the trace: pass trace=True too")
    length_penalty = check_length_penalty(length_penalty)

    def rank(ids_len: int, lp: float) -> float:
        return lp / (max(ids_len, 1) ** length_penalty)

    def expand(z: torch.Tensor, live: list[Hypothesis]) -> list[tuple[int, int, float]]:
        logp = torch.log_softmax(z, dim=1)                                         # (N, V)
        # 2k per row: even if </s> is among a row's best, k live continuations remain (as standard beams do)
        top = torch.topk(logp, min(2 * beam_size, logp.shape[1]), dim=1)           # (N, 2k) each
        candidates = []
        for row, (values, indices) in enumerate(zip(top.values.tolist(), top.indices.tolist())):
            lp = live[row][1]
            candidates += [(row, i, lp + v) for v, i in zip(values, indices) if v != -math.inf]
        n = len(live[0][0]) + 1                                                    # every candidate's length
        return sorted(candidates, key=lambda c: rank(n, c[2]), reverse=True)

    record: list | None = [] if trace else None
    out = _decode(model, prompt_ids, max_new_tokens, beam_size, expand, stop_id, length_penalty, state,
                  suppress_ids, record)
    if not trace:
        return out
    greedy = None
    if with_greedy:
        path: list = []
        _decode(model, prompt_ids, max_new_tokens, 1, _greedy_expand, stop_id, 0.0, state, suppress_ids, path)
        greedy, prev = [], 0.0
        for (_, token, lp, _), in path:                                            # one proposal a step
            greedy.append((token, lp - prev))
            prev = lp
        greedy = tuple(greedy)
    steps, parents_lp = [], [0.0]                                                  # the prompt: log P = 0
    for cands in record:
        steps.append(tuple(BeamCandidate(row, token, lp - parents_lp[row], lp, status)
                           for row, token, lp, status in cands))
        parents_lp = [c.logprob for c in steps[-1] if c.status == "kept"]
    return out, BeamTrace(tuple(int(i) for i in prompt_ids), beam_size, float(length_penalty), stop_id,
                          max_new_tokens, tuple(steps), tuple((tuple(ids), lp) for ids, lp in out), greedy)
