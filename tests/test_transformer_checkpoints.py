"""Chapter 7's shipped checkpoints, their recipes, and the chunked output layer the PTB rung trains through.

The checkpoints (seqviz/checkpoints/shakespeare_char.pt, dates_transformer.pt) are checked against their SHA-256,
refuse a wrong one, and give the loss their build recorded on a fixed slice of their data; the recipes train (tiny
versions) and round-trip through save/load; ``linear_cross_entropy`` and ``TransformerLM.loss`` equal the plain
cross-entropy in value and gradient.
"""
from __future__ import annotations

import hashlib
import shutil

import pytest
import torch
import torch.nn.functional as F

from seqviz._checks import IGNORE_INDEX
from seqviz.transformer import (CharLMRecipe, DatesRecipe, TransformerConfig, TransformerLM, linear_cross_entropy,
                                load_char_lm, load_dates, train_char_lm, train_dates, window_loss)
from seqviz.transformer import pretrained
from seqviz.transformer.pretrained import SLICE, char_data, load_checkpoint, save_checkpoint


@pytest.fixture(scope="module")
def chars():
    return char_data()


def _shipped(name):
    """The committed checkpoint's path (both are committed and chapter 7 loads them: a missing one fails)."""
    path = pretrained.CHECKPOINTS / f"{name}.pt"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make checkpoints-transformer` "
                    f"(python -m seqviz.transformer make {pretrained._MAKE[name]})", pytrace=False)
    return path


# -- the shipped checkpoints -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["shakespeare_char", "dates_transformer"])
def test_committed_checkpoint_has_the_committed_hash(name):
    path = _shipped(name)
    assert pretrained.SHA256[name] is not None, f"{name}: no SHA-256 recorded in seqviz.transformer.pretrained"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == pretrained.SHA256[name]
    assert path.stat().st_size < {"shakespeare_char": 3e6, "dates_transformer": 1e6}[name]   # the book's budgets


@pytest.mark.parametrize("name", ["shakespeare_char", "dates_transformer"])
def test_a_wrong_hash_is_refused_with_a_clear_error(name, tmp_path):
    path = tmp_path / f"{name}.pt"
    shutil.copy(_shipped(name), path)
    target = pretrained._TARGET[name]
    with pytest.raises(ValueError, match=f"expected 0{{64}}.*Rebuild it with `make {target}` "
                                         rf"\(python -m seqviz.transformer make {pretrained._MAKE[name]}\)"):
        load_checkpoint(name, path, sha256="0" * 64)
    data = bytearray(path.read_bytes())
    data[-100] ^= 1                                                               # one flipped bit
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="is not the checkpoint this version of seqviz was made with"):
        load_checkpoint(name, path)                                                # the committed hash


@pytest.mark.parametrize("name, target, command", [("shakespeare_char", "checkpoints-transformer", "make char"),
                                                  ("dates_transformer", "checkpoints-transformer", "make dates"),
                                                  ("translator_de_en", "translator", "make translator")])
def test_an_absent_checkpoint_names_the_command_that_builds_it(name, target, command, tmp_path):
    with pytest.raises(FileNotFoundError, match=rf"`make {target}` \(python -m seqviz.transformer "
                                                rf"{command}\)"):
        load_checkpoint(name, tmp_path / "absent.pt")


def test_the_char_lm_gives_its_recorded_loss_on_the_fixed_slice(chars):
    _shipped("shakespeare_char")
    model, itos, info = load_char_lm()
    assert not model.training and model.V.weight is model.E.weight               # eval mode, tied again
    assert itos == chars[0]
    loss = window_loss(model, chars[2][:SLICE], model.config.max_len)
    assert loss == pytest.approx(info["slice_loss"], abs=2e-4)                    # CPU drift only
    assert info["valid_loss"] <= 1.50                                             # the chapter's claim, as built


def test_the_date_model_gives_its_recorded_loss_and_exact_match():
    from seqviz.data import date_pairs

    t = pretrained.SHIPPED_DATES.task
    task = date_pairs(t["n_train"], t["n_valid"], t["n_test"], batch_size=t["batch_size"], seed=t["seed"])
    model, info = load_dates(task)
    assert not model.training
    b = next(iter(task.valid))
    with torch.no_grad():
        loss = float(model(b.x, b.y, mask=b.mask)[1])
    assert loss == pytest.approx(info["slice_loss"], abs=2e-4)
    assert pretrained.dates_exact_match(model, task) == pytest.approx(info["exact_match"], abs=0.004)
    assert info["exact_match"] >= 0.95


def test_the_date_model_refuses_a_task_with_other_vocabularies():
    from types import SimpleNamespace

    other = SimpleNamespace(src_vocab=SimpleNamespace(itos=["<pad>", "a"]), tgt_vocab=SimpleNamespace(itos=["1"]))
    with pytest.raises(ValueError, match="vocabularies are not the ones"):
        load_dates(other)


# -- the recipes ---------------------------------------------------------------------------------------------------------
def test_a_tiny_char_recipe_trains_and_round_trips(chars, tmp_path):
    recipe = CharLMRecipe(num_layers=1, d_model=32, steps=30, warmup=5)
    model, itos, info = train_char_lm(recipe, chars, progress=False)
    again, _, _ = train_char_lm(recipe, chars, progress=False)
    assert not model.training and info["steps"] == 30
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), again.parameters()))   # seeded: it repeats
    before = window_loss(model, chars[2][:2000], 64)
    assert before < 4.0                                                           # below a uniform guess (4.43)
    digest = save_checkpoint(model, "tiny", {"itos": itos}, info, tmp_path / "tiny.pt")
    loaded, vocab, _ = load_checkpoint("tiny", tmp_path / "tiny.pt", sha256=digest)
    assert vocab["itos"] == itos and loaded.V.weight is loaded.E.weight
    assert window_loss(loaded, chars[2][:2000], 64) == pytest.approx(before, abs=0.01)   # float16 weights


def test_a_tiny_dates_recipe_trains_and_round_trips(tmp_path):
    recipe = DatesRecipe(num_layers=1, d_model=32, epochs=1, task={"n_train": 256, "n_valid": 32, "n_test": 32,
                                                                  "batch_size": 64, "seed": 0})
    model, task, info = train_dates(recipe, progress=False)
    assert not model.training and info["steps"] == 4
    vocab = {"src": list(task.src_vocab.itos), "tgt": list(task.tgt_vocab.itos)}
    digest = save_checkpoint(model, "tiny_dates", vocab, info, tmp_path / "d.pt")
    loaded, _, _ = load_checkpoint("tiny_dates", tmp_path / "d.pt", sha256=digest)
    b = next(iter(task.valid))
    with torch.no_grad():
        assert float(loaded(b.x, b.y, mask=b.mask)[1]) == pytest.approx(float(model(b.x, b.y, mask=b.mask)[1]),
                                                                         abs=0.01)


# -- the chunked output layer ----------------------------------------------------------------------------------------
def test_linear_cross_entropy_equals_the_plain_loss_and_its_gradients():
    g = torch.Generator().manual_seed(0)
    # small enough for gradcheck's one numerical derivative per input (it was 5,600 inputs and 15 s; now 720)
    h = torch.randn(70, 8, generator=g, dtype=torch.float64, requires_grad=True)
    W = torch.randn(20, 8, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.randint(20, (70,), generator=g)
    y[::7] = IGNORE_INDEX                                                         # not scored
    want = F.cross_entropy(h @ W.t(), y, ignore_index=IGNORE_INDEX)
    got = linear_cross_entropy(h, W, y, chunk=16)                                 # 5 chunks, the last one short
    assert float(got.detach()) == pytest.approx(float(want.detach()), abs=1e-12)
    for a, b in zip(torch.autograd.grad(want, (h, W)), torch.autograd.grad(got, (h, W))):
        assert torch.allclose(a, b, atol=1e-12)
    assert torch.autograd.gradcheck(lambda h, W: linear_cross_entropy(h, W, y, chunk=16), (h, W))


def test_linear_cross_entropy_says_what_is_wrong():
    h, W = torch.randn(4, 8), torch.randn(10, 8)
    with pytest.raises(ValueError, match="nothing to score"):
        linear_cross_entropy(h, W, torch.full((4,), IGNORE_INDEX))
    with pytest.raises(ValueError, match=r"need h \(N, d\), W \(V, d\)"):
        linear_cross_entropy(h, torch.randn(10, 7), torch.zeros(4, dtype=torch.long))


def test_the_model_loss_equals_forward_loss_with_tied_weights():
    torch.manual_seed(0)
    model = TransformerLM(TransformerConfig(60, max_len=12, d_model=16, num_heads=2, num_layers=2))
    x, y = torch.randint(60, (3, 12)), torch.randint(60, (3, 12))
    y[0, :4] = IGNORE_INDEX
    want = model(x, y)[1]
    got = model.loss(x, y)
    assert float(got.detach()) == pytest.approx(float(want.detach()), abs=1e-6)
    params = list(model.parameters())
    for a, b in zip(torch.autograd.grad(want, params), torch.autograd.grad(got, params)):
        assert torch.allclose(a, b, atol=1e-6)


def test_dropout_per_site():
    c = TransformerConfig(20, d_model=16, num_heads=2, dropout=0.3, attn_dropout=0.0, ffn_dropout=0.1)
    block = TransformerLM(c).blocks[0]
    assert (block.drop1.p, block.drop2.p, block.attn.dropout, block.ffn.drop.p) == (0.3, 0.3, 0.0, 0.1)
    default = TransformerLM(TransformerConfig(20, d_model=16, num_heads=2, dropout=0.2)).blocks[0]
    assert (default.attn.dropout, default.ffn.drop.p) == (0.2, 0.2)               # None: the one dropout
    with pytest.raises(ValueError, match=r"attn_dropout must be in \[0, 1\) or None"):
        TransformerConfig(20, attn_dropout=1.0)
