"""Chapter 4: gated recurrent units, the LSTM (SLP 3rd ed. draft, ch. 9, (9.22)-(9.29)) and the GRU (Cho et al. 2014).

A cell computes one step and can return its gates; the layers (stacked, bidirectional, padding masks, initial state)
are the generic `seqviz.rnn` recurrent layer run with these cells, with a fused twin (`torch.nn.LSTM` / `torch.nn.GRU`
running *our* parameters through `torch.func.functional_call`) proven equal in the tests and used for training.

The gate table below is the one place that names the LSTM's gates in SLP's order (f, g, i, o) and maps them to
``torch.nn.LSTM``'s weight blocks, which are stacked in the order i, f, g, o.

Shapes: B batch, T time, d_in input width, d_h hidden width, L layers, K directions (1 or 2), V vocabulary size.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqviz import evaluating
from seqviz._checks import _check_positive
from seqviz.rnn import RecurrentLayer, RecurrentLM, RecurrentLMConfig, RNNClassifier, State

__all__ = ["GateInfo", "GATES", "TORCH_LSTM_GATE_ORDER", "TORCH_GRU_GATE_ORDER", "LSTMCell", "GRUCell",
           "LSTMTrace", "GRUTrace", "LSTM", "GRU", "LSTMLMConfig", "LSTMLM", "GRULM", "LSTMClassifier",
           "GRUClassifier", "state_grad_norms", "play_indicators", "most_correlated_units"]


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
#: ``torch.nn.GRU`` stacks reset, update, new (candidate): rows of block k belong to ``TORCH_GRU_GATE_ORDER[k]``.
TORCH_GRU_GATE_ORDER: tuple[str, ...] = ("r", "z", "n")

_LSTM_BLOCKS = tuple(name for name in GATES if name in TORCH_LSTM_GATE_ORDER)   # ("f", "g", "i", "o"): SLP order


def _init_uniform(module: nn.Module, d_h: int) -> None:
    """Uniform(-1/sqrt(d_h), 1/sqrt(d_h)) for every parameter, the torch.nn.LSTM / GRU initialisation."""
    bound = d_h ** -0.5
    for p in module.parameters():
        nn.init.uniform_(p, -bound, bound)


def _gated_params(module: nn.Module, gates, d_in: int, d_h: int, bias: bool) -> None:
    """Register W_x (d_h, d_in), U_x (d_h, d_h) and, with bias, b_W_x and b_U_x (d_h,) for each gate x."""
    for x in gates:
        module.register_parameter(f"W_{x}", nn.Parameter(torch.empty(d_h, d_in)))
        module.register_parameter(f"U_{x}", nn.Parameter(torch.empty(d_h, d_h)))
        module.register_parameter(f"b_W_{x}", nn.Parameter(torch.empty(d_h)) if bias else None)
        module.register_parameter(f"b_U_{x}", nn.Parameter(torch.empty(d_h)) if bias else None)


def _check_step_inputs(cell: nn.Module, x_t: Tensor, states: tuple[Tensor, ...], names: tuple[str, ...]) -> None:
    if not isinstance(x_t, Tensor) or x_t.dim() != 2 or x_t.shape[1] != cell.d_in:
        raise ValueError(f"x_t must have shape (B, d_in={cell.d_in}), got {tuple(getattr(x_t, 'shape', ()))}; a "
                         f"cell takes one time step, a layer takes (B, T, d_in)")
    for name, s in zip(names, states):
        if not isinstance(s, Tensor) or tuple(s.shape) != (x_t.shape[0], cell.d_h):
            raise ValueError(f"{name} must have shape (B, d_h) = ({x_t.shape[0]}, {cell.d_h}), got "
                             f"{tuple(getattr(s, 'shape', ()))}; start from cell.init_state(B)")


@dataclass
class LSTMTrace:
    """What one LSTM layer/direction computed at every step: gates f, i, o in 0..1, candidate g in -1..1, the cell
    state c and the output h, each (B, T, d_h). Give one sequence to ``seqviz.widgets.LSTMGates``: ``trace[0]``."""

    f: Tensor  # (9.22) forget gate
    i: Tensor  # (9.25) add (input) gate
    g: Tensor  # (9.24) candidate
    o: Tensor  # (9.28) output gate
    c: Tensor  # (9.27) cell state
    h: Tensor  # (9.29) hidden state

    def __getitem__(self, b: int) -> "LSTMTrace":
        """The trace of sequence b of the batch: each field (T, d_h)."""
        return LSTMTrace(*(getattr(self, n)[b] for n in ("f", "i", "g", "o", "c", "h")))


@dataclass
class GRUTrace:
    """What one GRU layer/direction computed at every step: reset r and update z gates (0..1), candidate n (-1..1)
    and the output h, each (B, T, d_h)."""

    r: Tensor  # reset gate
    z: Tensor  # update gate
    n: Tensor  # candidate state h~_t
    h: Tensor  # hidden state

    def __getitem__(self, b: int) -> "GRUTrace":
        return GRUTrace(*(getattr(self, n)[b] for n in ("r", "z", "n", "h")))


class _TorchBlocks:
    """Weights shared with torch.nn.LSTM / nn.GRU: torch stacks one block per gate, in ``TORCH_ORDER``, into
    weight_ih, weight_hh, bias_ih, bias_hh; this cell keeps them apart as W_x, U_x, b_W_x, b_U_x."""

    TORCH_ORDER: tuple[str, ...] = ()

    def _torch_names(self) -> dict[str, str]:
        names = {"weight_ih": "W_{}", "weight_hh": "U_{}"}
        if self.bias:
            names.update(bias_ih="b_W_{}", bias_hh="b_U_{}")
        return names

    def to_torch_params(self, suffix: str = "") -> dict[str, Tensor]:
        """This cell as torch's tensors (weight_ih{suffix}, ...), blocks stacked in TORCH_ORDER.

        torch.cat keeps the graph, so gradients through the fused layer land on W_f, U_f, ... themselves."""
        return {f"{t}{suffix}": torch.cat([getattr(self, ours.format(x)) for x in self.TORCH_ORDER])
                for t, ours in self._torch_names().items()}                     # each (G d_h, ...), G gates

    @torch.no_grad()
    def copy_from_torch(self, module: nn.Module, suffix: str = ""):
        """Copy the blocks of torch's tensors ``weight_ih{suffix}``, ... (an nn.LSTM/GRU or its Cell) into this cell."""
        for t, ours in self._torch_names().items():
            blocks = getattr(module, f"{t}{suffix}").chunk(len(self.TORCH_ORDER), 0)   # G x (d_h, ...)
            for x, block in zip(self.TORCH_ORDER, blocks):
                getattr(self, ours.format(x)).copy_(block)
        return self


class LSTMCell(_TorchBlocks, nn.Module):
    """One LSTM step, (9.22)-(9.29): (x_t, (h_{t-1}, c_{t-1})) -> (h_t, c_t).

    Each gate x in f, g, i, o has W_x (d_h, d_in) on the input and U_x (d_h, d_h) on the previous output. Like
    torch.nn.LSTM each gate also has two biases, b_W_x and b_U_x (SLP leaves biases out; the slides add one), which
    is what makes the weights copyable both ways (`to_torch_params` / `copy_from_torch`).
    """

    TORCH_ORDER = TORCH_LSTM_GATE_ORDER  # the one place this cell meets torch's block order

    gates = _LSTM_BLOCKS

    def __init__(self, d_in: int, d_h: int, bias: bool = True):
        super().__init__()
        _check_positive(d_in=d_in, d_h=d_h)
        self.d_in, self.d_h, self.bias = d_in, d_h, bias
        _gated_params(self, self.gates, d_in, d_h, bias)
        _init_uniform(self, d_h)

    def init_state(self, batch_size: int, device=None, dtype=None) -> tuple[Tensor, Tensor]:
        """Zero (h_0, c_0), each (B, d_h)."""
        h0 = torch.zeros(batch_size, self.d_h, device=device or self.W_f.device, dtype=dtype or self.W_f.dtype)
        return h0, h0.clone()

    def _pre(self, x: str, x_t: Tensor, h_prev: Tensor) -> Tensor:
        """U_x h_{t-1} + W_x x_t (+ b_U_x + b_W_x), the pre-activation of gate x: (B, d_h)."""
        return (F.linear(h_prev, getattr(self, f"U_{x}"), getattr(self, f"b_U_{x}"))
                + F.linear(x_t, getattr(self, f"W_{x}"), getattr(self, f"b_W_{x}")))

    def forward_traced(self, x_t: Tensor, state: tuple[Tensor, Tensor]):
        """One step that also returns its gates: -> ((h_t, c_t), {"f", "i", "g", "o", "c", "h": (B, d_h)})."""
        if not isinstance(state, (tuple, list)) or len(state) != 2:
            raise ValueError("an LSTM's state is a pair (h, c), each (B, d_h); start from cell.init_state(B)")
        h_prev, c_prev = state
        _check_step_inputs(self, x_t, (h_prev, c_prev), ("h_{t-1}", "c_{t-1}"))
        # (9.22) f_t = σ(U_f h_{t-1} + W_f x_t)
        f_t = torch.sigmoid(self._pre("f", x_t, h_prev))
        # (9.23) k_t = c_{t-1} ⊙ f_t
        k_t = c_prev * f_t
        # (9.24) g_t = tanh(U_g h_{t-1} + W_g x_t)
        g_t = torch.tanh(self._pre("g", x_t, h_prev))
        # (9.25) i_t = σ(U_i h_{t-1} + W_i x_t)
        i_t = torch.sigmoid(self._pre("i", x_t, h_prev))
        # (9.26) j_t = g_t ⊙ i_t
        j_t = g_t * i_t
        # (9.27) c_t = j_t + k_t
        c_t = j_t + k_t
        # (9.28) o_t = σ(U_o h_{t-1} + W_o x_t)
        o_t = torch.sigmoid(self._pre("o", x_t, h_prev))
        # (9.29) h_t = o_t ⊙ tanh(c_t)
        h_t = o_t * torch.tanh(c_t)
        return (h_t, c_t), {"f": f_t, "i": i_t, "g": g_t, "o": o_t, "c": c_t, "h": h_t}

    def forward(self, x_t: Tensor, state: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        """x_t (B, d_in), (h_{t-1}, c_{t-1}) each (B, d_h) -> (h_t, c_t)."""
        return self.forward_traced(x_t, state)[0]



class GRUCell(_TorchBlocks, nn.Module):
    """One GRU step (Cho et al. 2014; no SLP number), with torch.nn.GRU's placement of the reset gate:

    r_t = σ(U_r h_{t-1} + W_r x_t), z_t = σ(U_z h_{t-1} + W_z x_t), n_t = tanh(W_n x_t + r_t ⊙ (U_n h_{t-1})),
    h_t = (1 - z_t) ⊙ n_t + z_t ⊙ h_{t-1}. Two gates instead of three and no separate cell state: 3/4 of an LSTM's
    parameters. Biases b_W_x, b_U_x as torch.nn.GRU has them, so weights copy both ways.
    """

    TORCH_ORDER = TORCH_GRU_GATE_ORDER  # the one place this cell meets torch's block order

    gates = ("r", "z", "n")

    def __init__(self, d_in: int, d_h: int, bias: bool = True):
        super().__init__()
        _check_positive(d_in=d_in, d_h=d_h)
        self.d_in, self.d_h, self.bias = d_in, d_h, bias
        _gated_params(self, self.gates, d_in, d_h, bias)
        _init_uniform(self, d_h)

    def init_state(self, batch_size: int, device=None, dtype=None) -> Tensor:
        """Zero h_0 (B, d_h)."""
        return torch.zeros(batch_size, self.d_h, device=device or self.W_r.device, dtype=dtype or self.W_r.dtype)

    def forward_traced(self, x_t: Tensor, h_prev: Tensor):
        """One step that also returns its gates: -> (h_t, {"r", "z", "n", "h": (B, d_h)})."""
        _check_step_inputs(self, x_t, (h_prev,), ("h_{t-1}",))
        # Cho et al. (2014), reset gate: r_t = σ(U_r h_{t-1} + W_r x_t)
        r_t = torch.sigmoid(F.linear(h_prev, self.U_r, self.b_U_r) + F.linear(x_t, self.W_r, self.b_W_r))
        # update gate: z_t = σ(U_z h_{t-1} + W_z x_t)
        z_t = torch.sigmoid(F.linear(h_prev, self.U_z, self.b_U_z) + F.linear(x_t, self.W_z, self.b_W_z))
        # candidate: n_t = tanh(W_n x_t + r_t ⊙ (U_n h_{t-1}))   (torch/cuDNN apply r_t after U_n; Cho before)
        n_t = torch.tanh(F.linear(x_t, self.W_n, self.b_W_n) + r_t * F.linear(h_prev, self.U_n, self.b_U_n))
        # h_t = (1 - z_t) ⊙ n_t + z_t ⊙ h_{t-1}: the update gate interpolates between new and old
        h_t = (1 - z_t) * n_t + z_t * h_prev
        return h_t, {"r": r_t, "z": z_t, "n": n_t, "h": h_t}

    def forward(self, x_t: Tensor, h_prev: Tensor) -> Tensor:
        """x_t (B, d_in), h_{t-1} (B, d_h) -> h_t (B, d_h)."""
        return self.forward_traced(x_t, h_prev)[0]


# ----------------------------------------------------------------------------------------------------------------
# Layers: the generic RecurrentLayer of seqviz.rnn with these cells, and their fused torch.nn twins
# ----------------------------------------------------------------------------------------------------------------
class _GatedLayer(RecurrentLayer):
    """A RecurrentLayer of gated cells whose fused twin is `torch_class` (torch.nn.LSTM or GRU) on our parameters."""

    torch_class: type[nn.Module]
    trace_class: type

    def __init__(self, d_in: int, d_h: int, num_layers: int = 1, *, bidirectional: bool = False,
                 merge: str = "concat", bias: bool = True, impl: str = "scratch"):
        super().__init__(d_in, d_h, num_layers, bidirectional=bidirectional, merge=merge, impl=impl, bias=bias)

    @property
    def bias(self) -> bool:
        return self.cell_kwargs["bias"]

    def _make_shell(self, d_in: int) -> nn.Module:
        return self.torch_class(d_in, self.d_h, 1, bias=self.bias, batch_first=True,
                                bidirectional=self.bidirectional, device="meta")

    def _fused_params(self, layer: int) -> dict[str, Tensor]:
        params = {}
        for k, suffix in enumerate(["_l0", "_l0_reverse"][:self.num_directions]):
            params.update(self.cell(layer, k).to_torch_params(suffix))           # gate blocks in torch's order
        return params

    def trace(self, x: Tensor, state0: State | None = None, mask: Tensor | None = None):
        """Run the scratch loop and return (out (B, T, d_out), state_n, traces): one trace dataclass per layer and
        direction, index layer * K + direction, each field (B, T, d_h). Nothing is kept on the module."""
        out, state_n, traces = self(x, state0, mask, return_traces=True)
        return out, state_n, [self.trace_class(**t) for t in traces]

    @classmethod
    def from_torch(cls, module: nn.Module, impl: str = "scratch"):
        """A layer holding copies of a batch-first torch.nn.LSTM / GRU's weights (gate blocks split by name)."""
        if (not isinstance(module, cls.torch_class) or not module.batch_first or getattr(module, "proj_size", 0)
                or module.dropout):
            raise ValueError(f"from_torch needs a torch.nn.{cls.torch_class.__name__} with batch_first=True, no "
                             f"dropout and no projection")
        new = cls(module.input_size, module.hidden_size, module.num_layers, bidirectional=module.bidirectional,
                  bias=module.bias, impl=impl)
        for layer in range(module.num_layers):
            for k, suffix in enumerate(["", "_reverse"][:new.num_directions]):
                new.cell(layer, k).copy_from_torch(module, f"_l{layer}{suffix}")
        return new.to(module.weight_ih_l0.dtype)


class LSTM(_GatedLayer):
    """A (stacked, bidirectional) LSTM layer, batch first: a RecurrentLayer of LSTMCells.

    forward(x (B, T, d_in), (h_0, c_0) each (L*K, B, d_h) | None, mask (B, T) | None) -> (out (B, T, d_out),
    (h_n, c_n)), ordered as torch.nn.LSTM orders them. impl="fused" runs torch.nn.LSTM on these very parameters;
    `trace` returns the gates as LSTMTrace dataclasses.
    """

    cell_class = LSTMCell
    torch_class = nn.LSTM
    trace_class = LSTMTrace


class GRU(_GatedLayer):
    """A (stacked, bidirectional) GRU layer, batch first: a RecurrentLayer of GRUCells; fused twin torch.nn.GRU."""

    cell_class = GRUCell
    torch_class = nn.GRU
    trace_class = GRUTrace


# ----------------------------------------------------------------------------------------------------------------
# Models: the generic recurrent LM and classifier with these layers
# ----------------------------------------------------------------------------------------------------------------
@dataclass
class LSTMLMConfig(RecurrentLMConfig):
    """LSTM language model: sizes as RecurrentLMConfig. Presets: `tiny` (tests), `chapter` (the page's one-minute
    PTB model), `full` (the benchmark: the sizes of chapter 3's Elman `full`, 1 x 200, tied, dropout 0.2, so the
    two differ only in the recurrence) and `zaremba_small` (Zaremba et al. 2014's "small" sizes, 2 x 200)."""

    @classmethod
    def chapter(cls, vocab_size: int, **kw) -> "LSTMLMConfig":
        return cls(vocab_size, **{"d_emb": 128, "d_h": 128, **kw})

    @classmethod
    def full(cls, vocab_size: int, **kw) -> "LSTMLMConfig":
        return cls(vocab_size, **{"d_emb": 200, "d_h": 200, "num_layers": 1, "dropout": 0.2, **kw})

    @classmethod
    def zaremba_small(cls, vocab_size: int, **kw) -> "LSTMLMConfig":
        return cls(vocab_size, **{"d_emb": 200, "d_h": 200, "num_layers": 2, "dropout": 0.2, **kw})


class LSTMLM(RecurrentLM):
    """The LSTM language model (9.6-9.8 with the LSTM (9.22-9.29) as the recurrence, tying 9.14-9.16).

    Everything else (stateful forward, `step`, `reorder_state`, `next_token_logits`) is RecurrentLM's; `trace`
    returns the gates of every layer for a batch of ids."""

    layer_class = LSTM

    def build_layer(self, c: RecurrentLMConfig) -> RecurrentLayer:
        return self.layer_class(c.d_emb, c.d_h, c.num_layers, impl=c.impl)

    @torch.no_grad()
    def trace(self, idx: Tensor, state: State | None = None) -> list:
        """Gate traces (one dataclass per layer, fields (B, T, d_h)) of the model reading idx (B, T), in eval mode."""
        from seqviz._checks import _check_ids
        _check_ids(idx, self.config.vocab_size)
        with evaluating(self):
            return self.rnn.trace(self.E(idx), state)[2]


class GRULM(LSTMLM):
    """The same language model with a GRU as its recurrence."""

    layer_class = GRU


class LSTMClassifier(RNNClassifier):
    """RNNClassifier (last / mean / max pooling) with an LSTM layer of the config's sizes."""

    layer_class = LSTM

    def build_layer(self, c) -> RecurrentLayer:
        return self.layer_class(c.d_emb, c.d_h, c.num_layers, bidirectional=c.bidirectional, merge=c.merge,
                                impl=c.impl)


class GRUClassifier(LSTMClassifier):
    """RNNClassifier with a GRU layer."""

    layer_class = GRU


def state_grad_norms(cell: nn.Module, x: Tensor, loss_fn, state0: State | None = None, wrt: str = "h") -> Tensor:
    """||dL_T/dh_t|| against the distance T - t, mean over the batch, for a loss L_T = loss_fn(h_T) that sees only
    the last state: (T,), index 0 = h_T itself. Any cell (Elman, LSTM, GRU), by autograd through the step loop.

    ``wrt="state"`` measures the gradient with respect to the whole state the cell carries, (h_t, c_t) for an LSTM
    (the norm of both together): the cell state is where an LSTM's highway runs, and a trained LSTM that latches a
    value in c_t can shut its gates to h_t, whose own gradient then fades. For an Elman cell or a GRU it is "h".
    ``wrt="c"`` measures the cell state alone, dL_T/dc_t (an LSTM's second part; 0 at distance 0, where the loss
    reads only h_T). A measurement, not a layer: it keeps every state as a graph node so that autograd can give
    dL_T/ds_t.
    """
    if wrt not in ("h", "c", "state"):
        raise ValueError(f"wrt must be 'h' (the hidden state), 'c' (an LSTM's cell state) or 'state' (every part of "
                         f"the cell's state), got {wrt!r}")
    B, T, _ = x.shape
    state = cell.init_state(B, x.device, x.dtype) if state0 is None else state0
    kept = []
    for t in range(T):
        state = cell(x[:, t], state)
        # the carried state as nodes of their own, so that the gradient with respect to c_t is the one that reaches
        # it through the next step, not also through h_t = o_t tanh(c_t) of this step
        state = state.clone() if isinstance(state, Tensor) else type(state)(p.clone() for p in state)
        parts = (state,) if isinstance(state, Tensor) else tuple(state)             # h_t first, then c_t (LSTM)
        if wrt == "c" and len(parts) < 2:
            raise ValueError(f"wrt='c' needs a cell whose state is (h_t, c_t), an LSTM; {type(cell).__name__} "
                             f"carries only h_t: use wrt='h'")
        kept.append({"h": parts[:1], "c": parts[1:2], "state": parts}[wrt])
    h_T = state if isinstance(state, Tensor) else state[0]                         # (B, d_h)
    grads = iter(torch.autograd.grad(loss_fn(h_T), [p for parts in kept for p in parts], allow_unused=True))
    norms = []
    for parts in kept:
        squares = [next(grads) for _ in parts]
        total = sum(g.pow(2).sum(-1) for g in squares if g is not None)            # (B,), or 0 if nothing reached
        norms.append(torch.zeros(()) if isinstance(total, int) else total.sqrt().mean())
    return torch.stack(norms).flip(0).detach()                                    # (T,)


# ----------------------------------------------------------------------------------------------------------------
# Looking for interpretable units (Karpathy et al. 2015): correlate each unit with something a reader can see
# ----------------------------------------------------------------------------------------------------------------
#: words that open with an apostrophe without opening a quotation ('Tis, 'twas, ...): an elision, not a quote mark
_ELISIONS = ("tis", "twas", "twere", "twill", "twould", "tween", "twixt", "gainst", "em", "ld", "fore", "bout",
             "mongst", "scape", "larum", "cause", "a", "sfoot", "sblood", "slid", "slight", "sooth", "bide", "s", "t", "d")


def _quoted(text: str) -> list[float]:
    """1.0 for each character inside a 'single-quoted' quotation (the quote marks included), else 0.0.

    Shakespeare's texts quote with the apostrophe, which also marks elisions ('tis, o'er) and plural possessives
    (Troilus'): a quotation opens at an apostrophe that starts a word and is not an elision, and closes at the next
    apostrophe that ends a word, or at a blank line (a quotation never runs across speeches)."""
    inside, out, n = False, [], len(text)
    for k, ch in enumerate(text):
        prev, nxt = text[k - 1] if k else " ", text[k + 1] if k + 1 < n else " "
        word = ""
        j = k + 1
        while j < n and text[j].isalpha():
            word += text[j].lower()
            j += 1
        if ch == "\n" and prev == "\n":
            inside = False
        if ch == "'" and not inside and not prev.isalnum() and nxt.isalpha() and word not in _ELISIONS:
            inside = True
            out.append(1.0)
            continue
        out.append(float(inside))
        if ch == "'" and inside and not nxt.isalpha() and k and text[k - 1] != " ":
            inside = False
    return out


def play_indicators(text: str) -> dict[str, Tensor]:
    """Per-character indicators of a play's layout, each (len(text),) float: "in [brackets]" (stage directions),
    "in 'quotation'" (text a speaker quotes or reads out, between apostrophes: see `_quoted`), "position in line"
    (characters since the last newline) and "in speaker name" (a line in capitals ending in '.', such as
    "HAMLET.")."""
    if not isinstance(text, str) or not text:
        raise ValueError("text must be a non-empty string (the characters the traces were computed on)")
    bracket, position, speaker = [], [], []
    depth, col = 0, 0
    lines = text.split("\n")
    for n, line in enumerate(lines):
        name = line.rstrip()                                                       # "DIOMEDES. " is a name too
        is_name = len(name) > 1 and name.endswith(".") and name.upper() == name and any(ch.isalpha() for ch in name)
        for ch in line + ("\n" if n < len(lines) - 1 else ""):
            depth += ch == "["
            bracket.append(float(depth > 0))
            depth = max(0, depth - (ch == "]"))
            position.append(float(col))
            speaker.append(float(is_name and ch != "\n"))
            col = 0 if ch == "\n" else col + 1
    return {"in [brackets]": torch.tensor(bracket), "in 'quotation'": torch.tensor(_quoted(text)),
            "position in line": torch.tensor(position), "in speaker name": torch.tensor(speaker)}


def most_correlated_units(values: Tensor, indicators: dict[str, Tensor]) -> dict[str, tuple[int, float]]:
    """For each indicator (T,), the unit of values (T, d_h) whose activation has the largest |Pearson correlation|
    with it: {name: (unit, r)}. A unit that tracks the indicator has |r| near 1; chance is near 0."""
    if not isinstance(values, Tensor) or values.dim() != 2:
        raise ValueError(f"values must be (T, d_h) activations of one sequence, got shape "
                         f"{tuple(getattr(values, 'shape', ()))}; e.g. trace.c[0] for the first sequence")
    v = values.double() - values.double().mean(0)                                  # (T, d_h)
    out = {}
    for name, ind in indicators.items():
        if ind.shape != values.shape[:1]:
            raise ValueError(f"indicator {name!r} has {ind.shape[0]} steps but values have {values.shape[0]}; "
                             f"compute both on the same text")
        a = ind.double() - ind.double().mean()                                     # (T,)
        r = (a @ v) / (a.norm() * v.norm(dim=0)).clamp_min(1e-12)                  # (d_h,)
        unit = int(r.abs().argmax())
        out[name] = (unit, float(r[unit]))
    return out
