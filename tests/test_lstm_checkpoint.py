"""The shipped character LSTM of chapter 4 (seqviz.char_lstm): the committed file is the one the code names (SHA-256),
is small, loads with weights_only in eval mode and scores what its recipe recorded; a wrong file is refused with a
clear error; the recipe's save/load round trip is exact."""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import pytest
import torch

from seqviz.char_lstm import (CHECKPOINT_PATH, CHECKPOINT_SHA256, SLICE, CharLSTMRecipe, char_loss, load_char_lstm,
                              save_char_lstm, train_char_lstm)
from seqviz.lstm import LSTMLM


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def shipped():
    if not CHECKPOINT_PATH.is_file():
        pytest.fail(f"{CHECKPOINT_PATH} is missing: run `make char-lstm`")
    return load_char_lstm()


def test_the_committed_checkpoint_is_the_named_one_and_small():
    data = CHECKPOINT_PATH.read_bytes()
    assert hashlib.sha256(data).hexdigest() == CHECKPOINT_SHA256
    assert len(data) <= 4_000_000                                                # float16, <= 4 MB


def test_loaded_model_is_in_eval_mode_and_scores_what_was_recorded(shipped):
    from seqviz.data import load_corpus

    model, vocab, info = shipped
    assert isinstance(model, LSTMLM) and not model.training
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert info["recipe"] == CharLSTMRecipe(**info["recipe"]).__dict__          # the recipe it was made by
    assert info["test_bits"] <= 2.2 and info["valid_bits"] <= 2.2                # issue 22's target, held out
    test = load_corpus("shakespeare").test
    loss = char_loss(model, vocab, test[SLICE[0]:SLICE[1]])
    assert loss == pytest.approx(info["slice_nats"], abs=2e-3)                  # CPU drift only
    assert not model.training
    a, b = model(torch.tensor([vocab.encode(list("ROMEO.\n"))]))[0], model(torch.tensor([vocab.encode(list("ROMEO.\n"))]))[0]
    assert torch.equal(a, b)                                                     # eval mode: no dropout


def test_a_wrong_or_missing_file_is_refused_with_the_fix(tmp_path):
    bad = tmp_path / "tampered.pt"
    data = bytearray(CHECKPOINT_PATH.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"SHA-256 [0-9a-f]{64}, expected .*make char-lstm"):
        load_char_lstm(bad)
    with pytest.raises(FileNotFoundError, match="make char-lstm"):
        load_char_lstm(tmp_path / "none.pt")


class _NotWeights:
    pass


def test_loading_never_unpickles_code(tmp_path):
    evil = tmp_path / "evil.pt"
    torch.save({"state": {}, "vocab": [], "info": {"x": _NotWeights()}}, evil)
    with pytest.raises(Exception, match="[Ww]eights only load failed|Unsupported global"):
        load_char_lstm(evil, sha256=None)


@dataclass
class _Corpus:
    train: str
    valid: str
    test: str


def test_recipe_round_trip_is_exact(tmp_path):
    text = "ROMEO.\nBut soft, what light through yonder window breaks?\n\nJULIET.\n[Aside.] 'Ay me.'\n" * 20
    corpus = _Corpus(text[:1200], text[1200:1500], text[1500:])
    recipe = CharLSTMRecipe(d_emb=8, d_h=12, num_layers=2, batch_size=4, bptt=16, epochs=1, max_steps=3)
    model, vocab, info = train_char_lstm(recipe, corpus, log=lambda s: None)
    assert not model.training and info["steps"] == 3
    assert all(torch.equal(p, p.half().float()) for p in model.parameters())    # scored as it is stored
    digest = save_char_lstm(model, vocab, info, tmp_path / "tiny.pt")
    assert digest == hashlib.sha256((tmp_path / "tiny.pt").read_bytes()).hexdigest()
    again, vocab2, info2 = load_char_lstm(tmp_path / "tiny.pt", sha256=digest)
    assert vocab2.itos == vocab.itos and info2 == info and not again.training
    ids = torch.tensor([vocab.encode(list("JULIET.\n"))])
    assert torch.equal(again(ids)[0], model(ids)[0])
    assert char_loss(again, vocab2, corpus.test[SLICE[0]:SLICE[1]]) == info["slice_nats"]
    assert info["valid_bits"] == pytest.approx(info["valid_nats"] / math.log(2))
    with pytest.raises(ValueError, match="too short"):
        char_loss(again, vocab2, "ab")
