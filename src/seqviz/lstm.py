"""Chapter 4: gated recurrent units, the LSTM (SLP 3rd ed. draft, ch. 9, (9.22)-(9.29)) and the GRU.

The gate table below is the one place that names the LSTM's gates in SLP's order (f, g, i, o) and maps them to
``torch.nn.LSTM``'s weight blocks, which are stacked in the order i, f, g, o.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GateInfo", "GATES", "TORCH_LSTM_GATE_ORDER"]


@dataclass(frozen=True)
class GateInfo:
    name: str  # what SLP calls it
    symbol: str  # as SLP writes it
    equation: str  # SLP 3rd ed. equation number
    kind: str  # "sigmoid" (0..1), "tanh" (-1..1) or "cell" (unbounded, shown symmetric around 0)


# In SLP's order of computation; k_t (9.23) and j_t (9.26) are products of these and are not shown separately.
GATES: dict[str, GateInfo] = {
    "f": GateInfo("forget gate", "f_t", "9.22", "sigmoid"),  # (9.22) f_t = σ(U_f h_{t-1} + W_f x_t)
    "g": GateInfo("candidate", "g_t", "9.24", "tanh"),  # (9.24) g_t = tanh(U_g h_{t-1} + W_g x_t)
    "i": GateInfo("add gate", "i_t", "9.25", "sigmoid"),  # (9.25) i_t = σ(U_i h_{t-1} + W_i x_t)
    "c": GateInfo("cell state", "c_t", "9.27", "cell"),  # (9.27) c_t = j_t + k_t
    "o": GateInfo("output gate", "o_t", "9.28", "sigmoid"),  # (9.28) o_t = σ(U_o h_{t-1} + W_o x_t)
    "h": GateInfo("hidden state", "h_t", "9.29", "tanh"),  # (9.29) h_t = o_t ⊙ tanh(c_t)
}

#: ``torch.nn.LSTM`` stacks its four weight blocks (weight_ih, weight_hh, biases) as input, forget, cell, output:
#: rows ``k*d_h:(k+1)*d_h`` of block k belong to gate ``TORCH_LSTM_GATE_ORDER[k]``.
TORCH_LSTM_GATE_ORDER: tuple[str, ...] = ("i", "f", "g", "o")
