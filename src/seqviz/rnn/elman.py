"""The Elman network, SLP (9.3): one cell, and the stacked / bidirectional layer of such cells (a RecurrentLayer)
whose fused twin is torch.nn.RNN run on the same parameters.

Shapes: B batch, T time, d_in input width, d_h hidden width, L layers, K directions (1 or 2).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqviz._checks import _NONLINEARITIES, _check_choice, _check_positive
from .layer import RecurrentLayer

__all__ = ["ElmanCell", "ElmanRNN"]


class ElmanCell(nn.Module):
    """One step of an Elman (simple recurrent) network, (9.3): h_t = g(U h_{t-1} + W x_t).

    W: (d_h, d_in) input -> hidden, U: (d_h, d_h) hidden -> hidden. Like torch.nn.RNN it has two biases, b_W and
    b_U (SLP leaves biases out; they are what makes the weights copyable both ways). Its state is h_t itself.
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

    def init_state(self, batch_size: int, device=None, dtype=None) -> Tensor:
        """h_0 = 0, (B, d_h)."""
        return torch.zeros(batch_size, self.d_h, device=device, dtype=dtype)

    def g(self, a: Tensor) -> Tensor:
        """The activation g of (9.3): tanh or ReLU."""
        return _NONLINEARITIES[self.nonlinearity](a)

    def forward(self, x_t: Tensor, h_prev: Tensor) -> Tensor:
        """x_t (B, d_in), h_prev (B, d_h) -> h_t (B, d_h)."""
        # (9.3) h_t = g(U h_{t-1} + W x_t)   (+ b_U + b_W)
        return self.g(F.linear(h_prev, self.U, self.b_U) + F.linear(x_t, self.W, self.b_W))

    def forward_traced(self, x_t: Tensor, h_prev: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """The same step, also returning the pre-activation a_t = U h_{t-1} + W x_t and h_t = g(a_t), (B, d_h)."""
        a_t = F.linear(h_prev, self.U, self.b_U) + F.linear(x_t, self.W, self.b_W)
        # (9.3) h_t = g(a_t)
        h_t = self.g(a_t)
        return h_t, {"a": a_t, "h": h_t}


class ElmanRNN(RecurrentLayer):
    """A (stacked, optionally bidirectional) Elman layer, batch first: a RecurrentLayer of ElmanCells.

    forward(x (B, T, d_in), h0 (L*K, B, d_h) | None, mask (B, T) | None) -> (out (B, T, d_out), h_n (L*K, B, d_h)).
    impl="fused" runs torch.nn.RNN on these very parameters (W = weight_ih, U = weight_hh).
    """

    cell_class = ElmanCell

    def __init__(self, d_in: int, d_h: int, num_layers: int = 1, *, bidirectional: bool = False,
                 merge: str = "concat", nonlinearity: str = "tanh", bias: bool = True, impl: str = "scratch"):
        super().__init__(d_in, d_h, num_layers, bidirectional=bidirectional, merge=merge, impl=impl,
                         nonlinearity=nonlinearity, bias=bias)

    @property
    def nonlinearity(self) -> str:
        return self.cell_kwargs["nonlinearity"]

    @property
    def bias(self) -> bool:
        return self.cell_kwargs["bias"]

    def _make_shell(self, d_in: int) -> nn.Module:
        return nn.RNN(d_in, self.d_h, 1, nonlinearity=self.nonlinearity, bias=self.bias, batch_first=True,
                      bidirectional=self.bidirectional, device="meta")

    def _fused_params(self, layer: int) -> dict[str, Tensor]:
        params = {}
        for k, suffix in enumerate(["", "_reverse"][:self.num_directions]):
            c = self.cell(layer, k)
            params[f"weight_ih_l0{suffix}"], params[f"weight_hh_l0{suffix}"] = c.W, c.U
            if self.bias:
                params[f"bias_ih_l0{suffix}"], params[f"bias_hh_l0{suffix}"] = c.b_W, c.b_U
        return params

    @classmethod
    def from_torch(cls, rnn: nn.RNN, impl: str = "scratch") -> "ElmanRNN":
        """An ElmanRNN holding copies of a batch-first torch.nn.RNN's weights (W = weight_ih, U = weight_hh)."""
        if not isinstance(rnn, nn.RNN) or not rnn.batch_first or rnn.proj_size or rnn.dropout:
            raise ValueError("from_torch needs a torch.nn.RNN with batch_first=True, no dropout and no projection")
        new = cls(rnn.input_size, rnn.hidden_size, rnn.num_layers, bidirectional=rnn.bidirectional,
                  nonlinearity=rnn.nonlinearity, bias=rnn.bias, impl=impl)
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
