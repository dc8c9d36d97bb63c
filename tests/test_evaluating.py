"""seqviz.evaluating: the package's one mode discipline (issue 20, bug 2). Inside, every given module and its parts are
in eval mode (dropout off); after it, each part has its own mode back, also when the body raises."""
import pytest
import torch
from torch import nn

import seqviz


def model() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)))


def modes(m: nn.Module) -> list[bool]:
    return [sub.training for sub in m.modules()]


def test_inside_every_part_is_in_eval_mode_and_dropout_is_off():
    m = model().train()
    x = torch.ones(2, 4)
    with seqviz.evaluating(m):
        assert not any(modes(m))
        assert torch.equal(m(x), m(x))                     # no dropout mask: the same output twice
    assert all(modes(m))
    torch.manual_seed(0)
    assert not torch.equal(m(x), m(x))                     # training again: dropout draws


def test_each_part_gets_its_own_mode_back():
    m = model().train()
    m[2].eval()                                            # a frozen part inside a training model
    before = modes(m)
    assert any(before) and not all(before)
    with seqviz.evaluating(m):
        assert not any(modes(m))
    assert modes(m) == before
    m.eval()
    with seqviz.evaluating(m):
        pass
    assert not any(modes(m))                               # a model in eval mode stays in eval mode


def test_the_mode_comes_back_when_the_body_raises():
    m = model().train()
    with pytest.raises(RuntimeError, match="boom"):
        with seqviz.evaluating(m):
            raise RuntimeError("boom")
    assert all(modes(m))


def test_several_modules_none_skipped_and_not_a_module_refused():
    a, b = model().train(), model().train()
    with seqviz.evaluating(a, None, b):
        assert not any(modes(a)) and not any(modes(b))
    assert all(modes(a)) and all(modes(b))
    with pytest.raises(TypeError, match="torch.nn.Module"):
        with seqviz.evaluating(a, "not a model"):
            pass
    assert all(modes(a))                                   # refused before anything was switched
