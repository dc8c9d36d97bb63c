"""A recurrent layer for any cell: the loop over time (SLP Fig. 9.4) and a stacked (Fig. 9.10), bidirectional
(Fig. 9.11, (9.18)-(9.20)), masked layer.

A *cell* is an ``nn.Module`` with ``d_h``, ``init_state(B, device, dtype)`` and ``forward(x_t (B, d_in), state) ->
state``, where a state is a Tensor h_t (B, d_h) or a tuple of Tensors whose first element is h_t (an LSTM's
(h_t, c_t)); optionally ``forward_traced(x_t, state) -> (state, {name: Tensor (B, d_h)})`` for its internals.
``scan`` runs one cell over a sequence; ``RecurrentLayer`` stacks cells in layers and directions. A subclass names
its cell class and may give a fused twin (the torch.nn module run on the same parameters), e.g. ``ElmanRNN``.

Shapes: B batch, T time, d_in input width, d_h hidden width, L layers, K directions (1 or 2). A layer's state is
(L*K, B, d_h), or a tuple of such, ordered as torch.nn.RNN / torch.nn.LSTM order theirs: layer-major, forward first.
"""

from __future__ import annotations

from typing import Any, Callable, Union

import torch
from torch import Tensor, nn
from torch.func import functional_call
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqviz._checks import _IMPLS, _MERGES, _check_choice, _check_mask, _check_positive

__all__ = ["State", "scan", "RecurrentLayer", "map_state", "state_h"]

State = Union[Tensor, tuple]   # a Tensor, or a tuple of Tensors whose first element is h


def map_state(fn: Callable[..., Tensor], *states: Any) -> Any:
    """Apply ``fn`` to the tensors of one or more states of the same structure (Tensor, tuple/list, dict, nested)."""
    first = states[0]
    if isinstance(first, Tensor):
        return fn(*states)
    if isinstance(first, tuple) and hasattr(first, "_fields"):                   # a NamedTuple
        return type(first)(*(map_state(fn, *parts) for parts in zip(*states)))
    if isinstance(first, (tuple, list)):
        return type(first)(map_state(fn, *parts) for parts in zip(*states))
    if isinstance(first, dict):
        return {k: map_state(fn, *(s[k] for s in states)) for k in first}
    if first is None:
        return None
    raise TypeError(f"a state must be a Tensor or a tuple / list / dict of Tensors, got {type(first).__name__}")


def state_h(state: State) -> Tensor:
    """h_t of a cell state: the state itself, or its first element (an LSTM's (h_t, c_t))."""
    return state if isinstance(state, Tensor) else state[0]


def scan(cell: nn.Module, x: Tensor, state0: State, mask: Tensor | None = None, reverse: bool = False,
         traces: bool = False):
    """Forward inference, Fig. 9.4: run ``cell`` over x (B, T, d_in) from ``state0`` ((B, d_h) or a tuple).

    Returns (h (B, T, d_h), state after the last step); with ``traces=True`` also {name: (B, T, d_h)}, the cell's
    ``forward_traced`` internals at every step ({"h": ...} for a cell without one). With a padding mask (B, T) a
    padded step keeps the state and outputs zeros (its traces are zeros too), so padding never reaches a real
    token, in either direction. ``reverse=True`` runs from t = T to 1: the backward RNN of a bidirectional layer,
    (9.19) h^b_t = RNN_backward(x_t..x_n).
    """
    T = x.shape[1]
    traced = traces and hasattr(cell, "forward_traced")
    state, outputs, steps = state0, [None] * T, [None] * T
    for t in (reversed(range(T)) if reverse else range(T)):
        # one step of the cell, e.g. (9.3) h_t = g(U h_{t-1} + W x_t)
        if traced:
            new, trace_t = cell.forward_traced(x[:, t], state)
        else:
            new = cell(x[:, t], state)
            trace_t = {"h": state_h(new)} if traces else {}
        h_t = state_h(new)                                                         # (B, d_h)
        if mask is not None:
            real = mask[:, t, None]                                                # (B, 1)
            new = map_state(lambda n, old: torch.where(real, n, old), new, state)
            h_t = torch.where(real, h_t, 0.0)
            trace_t = {k: torch.where(real, v, 0.0) for k, v in trace_t.items()}
        state, outputs[t], steps[t] = new, h_t, trace_t
    out = torch.stack(outputs, dim=1)                                              # (B, T, d_h)
    if not traces:
        return out, state
    return out, state, {k: torch.stack([s[k] for s in steps], dim=1) for k in steps[0]}   # each (B, T, d_h)


class RecurrentLayer(nn.Module):
    """A stacked (Fig. 9.10), optionally bidirectional (Fig. 9.11) recurrent layer of any cell, batch first.

    forward(x (B, T, d_in), state0 (L*K, B, d_h) or a tuple of such | None, mask (B, T) | None) ->
    (out (B, T, d_out), state_n like state0); ``return_traces=True`` adds a list, index layer * K + direction, of
    the cells' traces {name: (B, T, d_h)} (computed by the scratch loop whatever ``impl`` says). A bidirectional
    layer combines its two directions by ``merge``: "concat" (d_out = 2 d_h, what torch.nn does), "sum" or "mean"
    (d_out = d_h); the combined output is the next layer's input.

    A subclass sets ``cell_class`` (built as ``cell_class(d_in, d_h, **cell_kwargs)``); for impl="fused" it also
    overrides ``_make_shell`` (a weightless torch.nn twin of one layer on the meta device) and ``_fused_params``
    (that twin's parameter names -> our tensors); ``_fused_layer`` then runs the twin on our parameters.
    """

    cell_class: type[nn.Module] | None = None

    def __init__(self, d_in: int, d_h: int, num_layers: int = 1, *, bidirectional: bool = False,
                 merge: str = "concat", impl: str = "scratch", **cell_kwargs):
        super().__init__()
        if self.cell_class is None:
            raise TypeError(f"{type(self).__name__} names no cell: set the class attribute cell_class (e.g. "
                            f"ElmanCell) in a subclass of RecurrentLayer")
        _check_positive(d_in=d_in, d_h=d_h, num_layers=num_layers)
        _check_choice("merge", merge, _MERGES)
        _check_choice("impl", impl, _IMPLS)
        self.d_in, self.d_h, self.num_layers = d_in, d_h, num_layers
        self.num_directions = 2 if bidirectional else 1
        self.merge, self.cell_kwargs = merge, dict(cell_kwargs)
        K = self.num_directions
        self.cells = nn.ModuleList(
            self.cell_class(self._layer_d_in(layer), d_h, **cell_kwargs)
            for layer in range(num_layers) for _ in range(K))                      # index layer * K + direction
        # torch.nn twins for the fused path, one per layer, on the meta device: they own no real weights
        # (functional_call lends them ours) and are kept out of the module tree, so they never show in state_dict.
        self._shells = [self._make_shell(self._layer_d_in(layer)) for layer in range(num_layers)]
        if impl == "fused" and not self.has_fused:
            raise ValueError(f"impl='fused' needs a torch.nn twin, and {type(self).__name__} has none; use "
                             f"impl='scratch'")
        self.impl = impl

    # -- what a subclass may give ------------------------------------------------------------------------------
    def _make_shell(self, d_in: int) -> nn.Module | None:
        """The torch.nn twin of one layer (batch first, 1 layer, K directions, device="meta"), or None if none."""
        return None

    def _fused_params(self, layer: int) -> dict[str, Tensor]:
        """The twin's parameter names (e.g. weight_ih_l0, weight_hh_l0_reverse) -> this layer's tensors."""
        raise NotImplementedError(f"{type(self).__name__} has no fused twin")

    # -- sizes and state ---------------------------------------------------------------------------------------
    @property
    def bidirectional(self) -> bool:
        return self.num_directions == 2

    @property
    def d_out(self) -> int:
        """Width of the output: 2 d_h for a concatenated bidirectional layer, else d_h."""
        return self.d_h * (2 if self.bidirectional and self.merge == "concat" else 1)

    @property
    def has_fused(self) -> bool:
        return self._shells[0] is not None

    def _layer_d_in(self, layer: int) -> int:
        return self.d_in if layer == 0 else self.d_out

    def cell(self, layer: int, direction: int = 0) -> nn.Module:
        return self.cells[layer * self.num_directions + direction]

    def init_state(self, batch_size: int, device=None, dtype=None) -> State:
        """Initial state (L*K, B, d_h), or a tuple of such: every cell's init_state, stacked layer-major."""
        ref = next(self.parameters())
        device, dtype = device or ref.device, dtype or ref.dtype
        per_cell = [c.init_state(batch_size, device, dtype) for c in self.cells]
        return map_state(lambda *s: torch.stack(s, 0), *per_cell)                 # (L*K, B, d_h) each

    def _check_state(self, state0: State, B: int) -> None:
        """A given initial state has the structure of init_state's (a Tensor, or a tuple of n) and its shapes."""
        probe = self.cells[0].init_state(1, device="meta")                        # structure only, no memory
        LK = self.num_layers * self.num_directions
        shape, expected = (LK, B, self.d_h), f"(L*K, B, d_h) = ({LK}, {B}, {self.d_h})"
        if isinstance(probe, Tensor):
            got_ok = isinstance(state0, Tensor) and tuple(state0.shape) == shape
            got = tuple(state0.shape) if isinstance(state0, Tensor) else type(state0).__name__
        else:
            got_ok = (isinstance(state0, tuple) and len(state0) == len(probe) and
                      all(isinstance(s, Tensor) and tuple(s.shape) == shape for s in state0))
            expected = f"a tuple of {len(probe)} tensors, each {expected}"
            got = (tuple(tuple(s.shape) if isinstance(s, Tensor) else type(s).__name__ for s in state0)
                   if isinstance(state0, (tuple, list)) else tuple(getattr(state0, "shape", ())))
        if not got_ok:
            raise ValueError(f"hidden state must have shape {expected}, got {got}; pass None to start from the "
                             f"initial state, or the state_n of a batch of the same size")

    # -- the forward pass --------------------------------------------------------------------------------------
    def forward(self, x: Tensor, state0: State | None = None, mask: Tensor | None = None,
                return_traces: bool = False):
        if not isinstance(x, Tensor) or not x.dtype.is_floating_point:
            raise TypeError(f"x must be a float tensor (B, T, d_in), got {getattr(x, 'dtype', type(x).__name__)}; "
                            f"embed token ids first")
        if x.dim() != 3 or x.shape[-1] != self.d_in:
            raise ValueError(f"x must have shape (B, T, d_in={self.d_in}), got {tuple(x.shape)}")
        B, T, _ = x.shape
        if B == 0 or T == 0:
            raise ValueError(f"empty batch: x has shape {tuple(x.shape)}; give at least one step of one sequence")
        _check_choice("impl", self.impl, _IMPLS)
        if self.impl == "fused" and not self.has_fused and not return_traces:
            raise ValueError(f"impl='fused' needs a torch.nn twin, and {type(self).__name__} has none; use "
                             f"impl='scratch'")
        if state0 is None:
            state0 = self.init_state(B, x.device, x.dtype)
        else:
            self._check_state(state0, B)
        lengths = None if mask is None else _check_mask(mask, (B, T))
        K, layer_in, states, traces = self.num_directions, x, [], []
        for layer in range(self.num_layers):
            state0_l = map_state(lambda s: s[layer * K:(layer + 1) * K], state0)    # (K, B, d_h) each
            if self.impl == "fused" and not return_traces:
                out, state_l = self._fused_layer(layer, layer_in, state0_l, lengths)
            else:
                runs = [scan(self.cell(layer, k), layer_in, map_state(lambda s: s[k], state0_l), mask,
                             reverse=k == 1, traces=return_traces) for k in range(K)]
                out = torch.stack([r[0] for r in runs], 2)                         # (B, T, K, d_h)
                state_l = map_state(lambda *s: torch.stack(s, 0), *[r[1] for r in runs])   # (K, B, d_h) each
                traces.extend(r[2] for r in runs if return_traces)
            states.append(state_l)
            layer_in = self._merge(out)
        state_n = map_state(lambda *s: torch.cat(s, 0), *states)                  # (L*K, B, d_h) each
        return (layer_in, state_n, traces) if return_traces else (layer_in, state_n)

    def _merge(self, out: Tensor) -> Tensor:
        """Combine the directions of one layer's output (B, T, K, d_h) -> (B, T, d_out)."""
        B, T, K, d_h = out.shape
        if self.merge == "concat":
            # (9.20) h_t = [h^f_t ; h^b_t], the bidirectional state (K = 1: h^f_t alone)
            return out.reshape(B, T, K * d_h)                                      # (B, T, K*d_h) = [h^f; h^b]
        if self.merge == "sum":
            return out.sum(2)                                                      # (B, T, d_h) h^f + h^b
        return out.mean(2)                                                         # (B, T, d_h) (h^f + h^b) / 2

    def _fused_params_now(self, layer: int) -> dict[str, Tensor]:
        """``_fused_params(layer)``; without gradients (decoding one token at a time, evaluation) the stacked tensors
        are kept and reused while the layer's parameters are the same tensors, on the same memory, at the same
        version (any in-place update, e.g. an optimizer step or ``copy_``, bumps the version; ``.to()`` makes new
        tensors; ``p.data = t`` moves the memory). Only an in-place edit through ``p.data`` escapes it, as it escapes
        autograd's own checks: edit parameters under ``torch.no_grad()`` instead."""
        if torch.is_grad_enabled():
            return self._fused_params(layer)                   # training: the graph must lead back to our tensors
        key = [(q, q.data_ptr(), q._version) for k in range(self.num_directions)
               for q in self.cell(layer, k).parameters()]
        cache = self.__dict__.setdefault("_fused_cache", {})  # kept out of the module tree, like _shells
        hit = cache.get(layer)
        if hit is not None and len(hit[0]) == len(key) and all(
                a is q and pa == pq and va == vq for (a, pa, va), (q, pq, vq) in zip(hit[0], key)):
            return hit[1]
        fused = self._fused_params(layer)
        cache[layer] = (key, fused)
        return fused

    def _fused_layer(self, layer: int, x: Tensor, state0: State, lengths: Tensor | None) -> tuple[Tensor, State]:
        """One layer through its torch.nn twin with our parameters: -> (B, T, K, d_h), state (K, B, d_h) each."""
        B, T, _ = x.shape
        inp = x if lengths is None else pack_padded_sequence(x, lengths.cpu(), batch_first=True,
                                                             enforce_sorted=False)
        out, state_l = functional_call(self._shells[layer], self._fused_params_now(layer),
                                       (inp, map_state(Tensor.contiguous, state0)))
        if lengths is not None:
            out, _ = pad_packed_sequence(out, batch_first=True, total_length=T)    # zeros at padding
        return out.reshape(B, T, self.num_directions, self.d_h), state_l          # (B, T, K, d_h)
