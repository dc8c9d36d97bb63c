"""The Elman network, SLP (9.3): one cell, the loop over time (Fig. 9.4), and a batch-first layer that can be stacked
and bidirectional, with a scratch and a fused (torch.nn.RNN on the same parameters) implementation.

Shapes: B batch, T time, d_in input width, d_h hidden width, L layers, K directions (1 or 2).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqviz._checks import _IMPLS, _MERGES, _NONLINEARITIES, _check_choice, _check_mask, _check_positive

__all__ = ["ElmanCell", "elman_scan", "ElmanRNN"]


class ElmanCell(nn.Module):
    """One step of an Elman (simple recurrent) network, (9.3): h_t = g(U h_{t-1} + W x_t).

    W: (d_h, d_in) input -> hidden, U: (d_h, d_h) hidden -> hidden. Like torch.nn.RNN it has two biases, b_W and
    b_U (SLP leaves biases out; they are what makes the weights copyable both ways).
    """

    def __init__(self, d_in: int, d_h: int, nonlinearity: str = "tanh", bias: bool = True):
        super().__init__()
        _check_positive(d_in=d_in, d_h=d_h)
        _check_choice("nonlinearity", nonlinearity, tuple(_NONLINEARITIES))
        self.d_in, self.d_h, self.nonlinearity = d_in, d_h, nonlinearity
        self.W = nn.Parameter(torch.empty(d_h, d_in))
        self.U = nn.Parameter(torch.empty(d_h, d_h))
        self.b_W = nn.Parameter(torch.empty(d_h)) if bias else None
        self.b_U = nn.Parameter(torch.empty(d_h)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Uniform(-1/sqrt(d_h), 1/sqrt(d_h)), the torch.nn.RNN initialisation."""
        bound = self.d_h ** -0.5
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def g(self, a: Tensor) -> Tensor:
        """The activation g of (9.3): tanh or ReLU."""
        return _NONLINEARITIES[self.nonlinearity](a)

    def forward(self, x_t: Tensor, h_prev: Tensor) -> Tensor:
        """x_t (B, d_in), h_prev (B, d_h) -> h_t (B, d_h)."""
        # (9.3) h_t = g(U h_{t-1} + W x_t)   (+ b_U + b_W)
        return self.g(F.linear(h_prev, self.U, self.b_U) + F.linear(x_t, self.W, self.b_W))


def elman_scan(cell: ElmanCell, x: Tensor, h0: Tensor, mask: Tensor | None = None,
               reverse: bool = False) -> tuple[Tensor, Tensor]:
    """Forward inference, Fig. 9.4: run `cell` over x (B, T, d_in) from h0 (B, d_h).

    Returns (h (B, T, d_h), h_last (B, d_h)). With a padding mask (B, T) a padded step leaves the state unchanged
    and outputs zeros, so padding never reaches a real token, in either direction.
    """
    T = x.shape[1]
    h, outputs = h0, [None] * T
    for t in (reversed(range(T)) if reverse else range(T)):
        # (9.3) h_t = g(U h_{t-1} + W x_t)
        h_t = cell(x[:, t], h)                                                    # (B, d_h)
        if mask is not None:
            real = mask[:, t, None]                                               # (B, 1)
            h_t, out_t = torch.where(real, h_t, h), torch.where(real, h_t, 0.0)
        else:
            out_t = h_t
        h, outputs[t] = h_t, out_t
    return torch.stack(outputs, dim=1), h                                         # (B, T, d_h), (B, d_h)


class ElmanRNN(nn.Module):
    """A (stacked, optionally bidirectional) Elman layer, batch first, with a scratch and a fused implementation.

    forward(x (B, T, d_in), h0 (L*K, B, d_h) | None, mask (B, T) | None) -> (out (B, T, d_out), h_n (L*K, B, d_h)).
    h0/h_n are ordered as in torch.nn.RNN (layer-major, forward before backward). A bidirectional layer combines its
    two directions by `merge`: "concat" (d_out = 2 d_h, what torch.nn.RNN does), "sum" or "mean" (d_out = d_h); the
    combined output is the next layer's input. impl="fused" runs torch.nn.RNN on these very parameters.
    """

    def __init__(self, d_in: int, d_h: int, num_layers: int = 1, *, bidirectional: bool = False,
                 merge: str = "concat", nonlinearity: str = "tanh", bias: bool = True, impl: str = "scratch"):
        super().__init__()
        _check_positive(d_in=d_in, d_h=d_h, num_layers=num_layers)
        _check_choice("merge", merge, _MERGES)
        _check_choice("impl", impl, _IMPLS)
        self.d_in, self.d_h, self.num_layers = d_in, d_h, num_layers
        self.num_directions = 2 if bidirectional else 1
        self.merge, self.nonlinearity, self.bias, self.impl = merge, nonlinearity, bias, impl
        K = self.num_directions
        self.cells = nn.ModuleList(
            ElmanCell(d_in if layer == 0 else self.d_out, d_h, nonlinearity, bias)
            for layer in range(num_layers) for _ in range(K))                     # index layer * K + direction
        # torch.nn.RNN shells for the fused path, one per layer, on the meta device: they own no real weights
        # (functional_call lends them ours) and are kept out of the module tree, so they never show in state_dict.
        self._shells = [nn.RNN(d_in if layer == 0 else self.d_out, d_h, 1, nonlinearity=nonlinearity, bias=bias,
                               batch_first=True, bidirectional=bidirectional, device="meta")
                        for layer in range(num_layers)]

    @property
    def bidirectional(self) -> bool:
        return self.num_directions == 2

    @property
    def d_out(self) -> int:
        """Width of the output: 2 d_h for a concatenated bidirectional layer, else d_h."""
        return self.d_h * (2 if self.bidirectional and self.merge == "concat" else 1)

    def cell(self, layer: int, direction: int = 0) -> ElmanCell:
        return self.cells[layer * self.num_directions + direction]

    def init_state(self, batch_size: int, device=None, dtype=None) -> Tensor:
        """Zero initial state h_0 of shape (L*K, B, d_h)."""
        ref = self.cells[0].W
        return torch.zeros(self.num_layers * self.num_directions, batch_size, self.d_h,
                           device=device or ref.device, dtype=dtype or ref.dtype)

    def forward(self, x: Tensor, h0: Tensor | None = None, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        if not isinstance(x, Tensor) or not x.dtype.is_floating_point:
            raise TypeError(f"x must be a float tensor (B, T, d_in), got {getattr(x, 'dtype', type(x).__name__)}; "
                            f"embed token ids first")
        if x.dim() != 3 or x.shape[-1] != self.d_in:
            raise ValueError(f"x must have shape (B, T, d_in={self.d_in}), got {tuple(x.shape)}")
        B, T, _ = x.shape
        if B == 0 or T == 0:
            raise ValueError(f"empty batch: x has shape {tuple(x.shape)}; give at least one step of one sequence")
        LK = self.num_layers * self.num_directions
        if h0 is None:
            h0 = self.init_state(B, x.device, x.dtype)
        elif not isinstance(h0, Tensor) or tuple(h0.shape) != (LK, B, self.d_h):
            raise ValueError(f"hidden state must have shape (L*K, B, d_h) = ({LK}, {B}, {self.d_h}), got "
                             f"{tuple(getattr(h0, 'shape', ()))}; pass None to start from zeros, or the h_n of a "
                             f"batch of the same size")
        lengths = None if mask is None else _check_mask(mask, (B, T))
        K, layer_in, h_n = self.num_directions, x, []
        for layer in range(self.num_layers):
            h0_l = h0[layer * K:(layer + 1) * K]                                  # (K, B, d_h)
            if self.impl == "fused":
                out, h_l = self._fused_layer(layer, layer_in, h0_l, lengths)
            elif self.impl == "scratch":
                outs, hs = zip(*(elman_scan(self.cell(layer, k), layer_in, h0_l[k], mask, reverse=k == 1)
                                 for k in range(K)))
                out, h_l = torch.stack(outs, 2), torch.stack(hs, 0)              # (B, T, K, d_h), (K, B, d_h)
            else:
                raise ValueError(f"impl must be 'scratch' or 'fused', got {self.impl!r}")
            h_n.append(h_l)
            if self.merge == "concat":
                layer_in = out.reshape(B, T, K * self.d_h)                        # (B, T, K*d_h) = [h^f; h^b]
            elif self.merge == "sum":
                layer_in = out.sum(2)                                             # (B, T, d_h) h^f + h^b
            else:
                layer_in = out.mean(2)                                            # (B, T, d_h) (h^f + h^b) / 2
        return layer_in, torch.cat(h_n, 0)                                        # (B, T, d_out), (L*K, B, d_h)

    def _fused_layer(self, layer: int, x: Tensor, h0: Tensor, lengths: Tensor | None) -> tuple[Tensor, Tensor]:
        """One layer through torch.nn.RNN with this layer's cells as its weights: -> (B, T, K, d_h), (K, B, d_h)."""
        params = {}
        for k, suffix in enumerate(["", "_reverse"][:self.num_directions]):
            c = self.cell(layer, k)
            params[f"weight_ih_l0{suffix}"], params[f"weight_hh_l0{suffix}"] = c.W, c.U
            if self.bias:
                params[f"bias_ih_l0{suffix}"], params[f"bias_hh_l0{suffix}"] = c.b_W, c.b_U
        B, T, _ = x.shape
        inp = x if lengths is None else pack_padded_sequence(x, lengths.cpu(), batch_first=True,
                                                             enforce_sorted=False)
        out, h_l = functional_call(self._shells[layer], params, (inp, h0.contiguous()))
        if lengths is not None:
            out, _ = pad_packed_sequence(out, batch_first=True, total_length=T)   # zeros at padding
        return out.reshape(B, T, self.num_directions, self.d_h), h_l             # (B, T, K, d_h), (K, B, d_h)

    @classmethod
    def from_torch(cls, rnn: nn.RNN, impl: str = "scratch") -> "ElmanRNN":
        """An ElmanRNN holding copies of a batch-first torch.nn.RNN's weights (W = weight_ih, U = weight_hh)."""
        if not isinstance(rnn, nn.RNN) or not rnn.batch_first or rnn.proj_size or rnn.dropout:
            raise ValueError("from_torch needs a torch.nn.RNN with batch_first=True, no dropout and no projection")
        nonlin = rnn.nonlinearity
        new = cls(rnn.input_size, rnn.hidden_size, rnn.num_layers, bidirectional=rnn.bidirectional,
                  nonlinearity=nonlin, bias=rnn.bias, impl=impl)
        with torch.no_grad():
            for layer in range(rnn.num_layers):
                for k, suffix in enumerate(["", "_reverse"][:new.num_directions]):
                    c = new.cell(layer, k)
                    c.W.copy_(getattr(rnn, f"weight_ih_l{layer}{suffix}"))
                    c.U.copy_(getattr(rnn, f"weight_hh_l{layer}{suffix}"))
                    if rnn.bias:
                        c.b_W.copy_(getattr(rnn, f"bias_ih_l{layer}{suffix}"))
                        c.b_U.copy_(getattr(rnn, f"bias_hh_l{layer}{suffix}"))
        return new.to(rnn.weight_ih_l0.dtype)
