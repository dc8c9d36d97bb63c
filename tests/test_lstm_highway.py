"""Chapter 4 §4.5: the gradient along an LSTM's cell state, ∂L_T/∂c_t, measured apart from ∂L_T/∂h_t
(seqviz.lstm.state_grad_norms(..., wrt="c"))."""
from __future__ import annotations

import pytest
import torch

from seqviz.lstm import GRUCell, LSTMCell, state_grad_norms


def _by_hand(cell, x, loss, t0):
    """(∂L/∂h_t0, ∂L/∂c_t0) with (h_t0, c_t0) made leaves after step t0 and the loop run on to the end."""
    state = cell.init_state(x.shape[0])
    for t in range(t0):
        state = cell(x[:, t], state)
    h, c = (s.detach().requires_grad_() for s in cell(x[:, t0], state))
    state = (h, c)
    for t in range(t0 + 1, x.shape[1]):
        state = cell(x[:, t], state)
    return torch.autograd.grad(loss(state[0]), (h, c))


def test_the_cell_line_is_the_gradient_that_reaches_c_t_through_the_next_step():
    torch.manual_seed(3)
    x, cell = torch.randn(3, 12, 4), LSTMCell(4, 6)
    loss = lambda h: (h ** 2).sum()                                            # noqa: E731
    c_line = state_grad_norms(cell, x, loss, wrt="c")                          # (T,), index = distance
    h_line = state_grad_norms(cell, x, loss, wrt="h")
    for t0 in (2, 5, 10):
        dh, dc = _by_hand(cell, x, loss, t0)
        assert c_line[11 - t0] == pytest.approx(float(dc.norm(dim=-1).mean()), rel=1e-5)
        assert h_line[11 - t0] == pytest.approx(float(dh.norm(dim=-1).mean()), rel=1e-5)
    assert c_line[0] == 0 and h_line[0] > 0                                    # the loss reads only h_T
    assert not torch.allclose(c_line[1:], h_line[1:])                          # two lines, not one


def test_along_the_cell_the_step_factor_is_the_forget_gate():
    # the gates read h_{t-1}, not c_{t-1}, so with h_{t-1} given, dc_t/dc_{t-1} = diag(f_t) exactly (§4.2)
    torch.manual_seed(0)
    cell = LSTMCell(4, 5)
    x, h_prev = torch.randn(2, 4), torch.randn(2, 5)
    c_prev = torch.randn(2, 5, requires_grad=True)
    (_, c_t), gates = cell.forward_traced(x, (h_prev, c_prev))
    jac = torch.autograd.functional.jacobian(lambda c: cell(x, (h_prev, c))[1], c_prev)   # (2, 5, 2, 5)
    for b in range(2):
        assert torch.allclose(jac[b, :, b, :], torch.diag(gates["f"][b]), atol=1e-7)


def test_a_cell_without_c_is_told_to_use_h():
    x = torch.randn(2, 5, 3)
    with pytest.raises(ValueError, match="carries only h_t: use wrt='h'"):
        state_grad_norms(GRUCell(3, 4), x, lambda h: h.sum(), wrt="c")
    with pytest.raises(ValueError, match="wrt must be"):
        state_grad_norms(LSTMCell(3, 4), x, lambda h: h.sum(), wrt="cell")
