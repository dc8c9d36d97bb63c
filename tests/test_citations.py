"""Every SLP number the book cites exists in the chapter it follows and names the same thing.

The book follows Jurafsky & Martin, SLP 3rd ed. draft, chapter 9 "Deep Learning Architectures for Sequence
Processing" (the 2020-2021 drafts). Its numbered equations (9.1)-(9.48), figures 9.1-9.24 and sections are listed
below, taken from the project's map of that chapter (``shared/slp-ch9-map.md``), each with a few keywords (regular
expressions, case-insensitive) of what it says. The scan reads the chapter notebooks and book pages (cell sources
only, never outputs) and the package's sources, finds every "(9.x)", "\\tag{9.x}", "Eq. 9.x", "Fig. 9.x" and "§9.x"
(ranges such as "(9.22)-(9.29)" or "Figs. 9.21-9.22" included), and checks

- that the number exists (there is no (9.49), no Fig. 9.25, no §9.11);
- that the text around it (the citing line and two lines either side, inside the same cell) mentions what the number
  names: one keyword of that equation or figure (of any member, for a range). A line citing (9.27) talks about c_t or
  the cell; (9.1) about perplexity; (9.10) about the chain rule. The windows are small so that a number cannot borrow
  its context from an unrelated paragraph, and the keyword sets are wide (symbols, code names, words) so that any
  honest way of citing the equation passes.

Formulas from other sources (n-gram estimators, Kneser-Ney, the fixed-window LM, Bahdanau/Luong attention, beam
search, sinusoidal positions) carry their own citation and the book's own (k.x) numbers, which are not checked here.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------------------------------------------
# The chapter, from the map: number -> keywords of what it says (any one must appear near the citation)
# ---------------------------------------------------------------------------------------------------------------
PERPLEXITY = [r"perplex", r"\bPP\b", r"-1\s*/\s*[nN]", r"−1\s*/\s*[nN]"]
EQUATIONS: dict[int, list[str]] = {
    1: PERPLEXITY,                                                        # PP = P(w_1:n)^(-1/n)
    2: PERPLEXITY,                                                        # the same, chain rule expanded
    3: [r"elman", r"h_\{?[t\d]", r"recurren", r"\bRNN", r"U\s*h", r"hidden", r"activation"],  # h_t = g(U h + W x)
    4: [r"y_\{?t", r"output", r"V\s*h"],                                  # y_t = f(V h_t)
    5: [r"softmax", r"y_\{?t", r"V\s*h", r"output"],                      # y_t = softmax(V h_t)
    6: [r"e_\{?t", r"E\s*x", r"embed"],                                   # e_t = E x_t
    7: [r"h_\{?t", r"recurren", r"U\s*h", r"hidden", r"W\s*e"],          # h_t = g(U h_t-1 + W e_t)
    8: [r"softmax", r"y_\{?t", r"V\s*h", r"output"],                      # y_t = softmax(V h_t)
    9: [r"w_\{?t\s*\+\s*1", r"next", r"y_\{?t", r"probab"],              # P(w_t+1 = i | w_1..t) = y_t[i]
    10: [r"chain", r"\\prod", r"Π", r"product", r"factor"],               # chain rule
    11: [r"y_\{?i", r"\\prod", r"Π", r"product", r"chain"],               # = prod_i y_i[w_i]
    12: [r"cross.?entropy", r"L_\{?CE", r"\bloss"],                       # L_CE = -sum_w y_t[w] log yhat_t[w]
    13: [r"cross.?entropy", r"L_\{?CE", r"\bloss", r"one.hot", r"-\s*\\?log", r"negative log", r"teacher"],
    14: [r"ty(ing|ed)\b", r"\btie", r"E\s*x", r"embed"],                  # weight tying: e_t = E x_t
    15: [r"ty(ing|ed)\b", r"\btie", r"h_\{?t", r"recurren"],              # h_t = g(U h_t-1 + W e_t)
    16: [r"ty(ing|ed)\b", r"\btie", r"E\^", r"Eᵀ", r"transpose", r"\.T\b", r"output"],  # y_t = softmax(E^T h_t)
    17: [r"mean", r"pool", r"average"],                                   # h_mean = (1/n) sum_i h_i
    18: [r"bidirectional", r"forward", r"\^f\b", r"\^\{?f\}?"],           # h_t^f = RNN_forward(x_1..t)
    19: [r"bidirectional", r"backward", r"\^\{?b\}?", r"revers"],         # h_t^b = RNN_backward(x_t..n)
    20: [r"bidirectional", r"concat", r"\[\s*h", r"⊕|\\oplus"],           # h_t = [h_t^f ; h_t^b]
    21: [r"flights", r"airline", r"cancel", r"agree", r"long.(distance|range)", r"example sentence"],
    22: [r"forget", r"f_\{?t", r"\bf\b", r"LSTM", r"\bgates?\b"],  # f_t = sigma(U_f h + W_f x)
    23: [r"k_\{?t", r"forget", r"c_\{?t\s*-\s*1", r"f_\{?t", r"\bk\b"],   # k_t = c_t-1 * f_t
    24: [r"g_\{?t", r"candidate", r"tanh", r"\bg\b"],                     # g_t = tanh(U_g h + W_g x)
    25: [r"input gate", r"\badd\b", r"i_\{?t", r"\binput", r"\bi\b", r"LSTM"],  # i_t = sigma(U_i h + W_i x), "add"
    26: [r"j_\{?t", r"i_\{?t", r"g_\{?t", r"\binput", r"\bj\b"],          # j_t = g_t * i_t
    27: [r"c_\{?t", r"\bcell", r"memory", r"\bc\b"],                      # c_t = j_t + k_t
    28: [r"output gate", r"o_\{?t", r"\boutput", r"\bo\b", r"LSTM"],  # o_t = sigma(U_o h + W_o x)
    29: [r"h_\{?t", r"o_\{?t", r"tanh", r"hidden", r"\bh\b"],             # h_t = o_t * tanh(c_t)
    30: [r"score", r"dot", r"attention", r"x_i\s*·\s*x_j"],               # score(x_i, x_j) = x_i . x_j
    31: [r"alpha", r"α", r"softmax", r"causal", r"attention weight", r"mask"],
    32: [r"softmax", r"\bexp", r"alpha", r"α", r"normali"],
    33: [r"y_\{?i", r"weighted", r"alpha", r"α", r"attention"],           # y_i = sum_j alpha_ij x_j
    34: [r"W\^\{?Q", r"W_?Q", r"quer", r"\bkeys?\b", r"values?\b", r"q_\{?i"],  # q_i = W^Q x_i ...
    35: [r"q_\{?i", r"quer", r"\bkeys?\b", r"score", r"dot"],             # score = q_i . k_j
    36: [r"v_\{?j", r"values?\b", r"weighted", r"y_\{?i", r"alpha", r"α"],  # y_i = sum_j alpha_ij v_j
    37: [r"sqrt", r"√", r"d_\{?k", r"scal"],                              # q . k / sqrt(d_k)
    38: [r"W\^\{?Q", r"W_?Q", r"Q\s*=\s*X", r"matri", r"quer", r"\bkeys?\b", r"values?\b", r"X\s*W"],
    39: [r"softmax", r"Q\s*K", r"QK", r"sqrt", r"√", r"d_\{?k", r"attention"],
    40: [r"layer.?norm", r"residual", r"block", r"post.?norm", r"SelfAttn", r"attention"],
    41: [r"layer.?norm", r"FFN", r"feed.?forward", r"block", r"residual"],
    42: [r"mean", r"μ", r"\bmu\b", r"layer.?norm"],
    43: [r"σ", r"sigma", r"\bstd", r"varian", r"standard deviation", r"layer.?norm"],
    44: [r"x̂", r"hat", r"normali", r"layer.?norm"],
    45: [r"γ", r"gamma", r"β", r"beta", r"gain", r"bias", r"layer.?norm"],
    46: [r"multi.?head", r"heads?\b", r"W\^\{?O", r"W_?O", r"concat"],    # (head_1 + ... + head_h) W^O
    47: [r"heads?\b", r"W_i\^", r"W\^\{?Q", r"W_?Q", r"quer"],            # per head: Q = X W_i^Q ...
    48: [r"heads?\b", r"SelfAttention", r"attention"],                   # head_i = SelfAttention(Q, K, V)
}
FIGURES: dict[int, list[str]] = {
    1: [r"window", r"feed.?forward", r"slid", r"bengio", r"fixed"],
    2: [r"elman", r"\bRNN", r"recurren"],
    3: [r"feed.?forward", r"\bRNN", r"recurren"],
    4: [r"forward", r"inference", r"\bRNN", r"unroll", r"recurren"],
    5: [r"unroll", r"\btime", r"\bRNN", r"recurren"],
    6: [r"train", r"teacher", r"\bRNN", r"language model", r"\bLMs?\b"],
    7: [r"\btag", r"\bPOS\b", r"part.of.speech", r"label"],
    8: [r"classif", r"pool", r"sentiment"],
    9: [r"generat", r"autoregress", r"sampl", r"decod"],
    10: [r"stack"],
    11: [r"bidirectional"],
    12: [r"bidirectional", r"classif"],
    13: [r"LSTM", r"gate", r"\bcell"],
    14: [r"\bunits?\b", r"LSTM", r"feed.?forward", r"simple recurrent"],
    15: [r"causal", r"self.attention", r"attention"],
    16: [r"y_\{?3", r"causal", r"self.attention", r"attention"],
    17: [r"mask", r"triang", r"Q\s*K", r"QK", r"N\s*[×x]\s*N", r"causal"],
    18: [r"block", r"transformer"],
    19: [r"multi.?head", r"heads?\b"],
    20: [r"position"],
    21: [r"train", r"transformer", r"language model", r"\bLMs?\b", r"teacher"],
    22: [r"complet", r"autoregress", r"generat", r"sampl", r"prompt", r"decod"],
    23: [r"\bCNN", r"daily mail", r"summar"],
    24: [r"summar"],
}
SECTIONS = {"9.1", "9.2", "9.2.1", "9.2.2", "9.3", "9.4", "9.4.1", "9.4.2", "9.4.3", "9.5", "9.5.1", "9.5.2", "9.6",
            "9.6.1", "9.7", "9.7.1", "9.7.2", "9.7.3", "9.8", "9.9", "9.9.1", "9.10"}

# ---------------------------------------------------------------------------------------------------------------
# Finding citations
# ---------------------------------------------------------------------------------------------------------------
NUM = r"9\.(?P<{}>\d+)(?![.\d])"
SEP = r"\s*(?P<sep>-|–|—|/|to|and)\s*"
# "(9.27)", "(9.22)-(9.29)", "(9.6-9.8)", "(9.31)/(9.32)", "(9.17;": an equation, a range of them (a dash) or two
# (a slash, "and"). A parenthesis opening a three-level number, "(9.7.3)", is a section.
EQ_PAREN = re.compile(rf"\(\s*{NUM.format('a')}\)?(?:{SEP}\(?\s*{NUM.format('b')}\)?)?")
EQ_TAG = re.compile(rf"\\tag\{{\s*{NUM.format('a')}\s*\}}")
EQ_WORD = re.compile(rf"\b(?:Eqs?|Equations?)\.?\s*\(?{NUM.format('a')}\)?(?:{SEP}\(?{NUM.format('b')}\)?)?")
FIG = re.compile(rf"\b(?:Figs?|Figures?)\.?\s*{NUM.format('a')}(?:{SEP}(?:Figs?\.?\s*)?{NUM.format('b')})?")
SEC = re.compile(r"(?:§|\(\s*(?=9\.\d+\.\d))\s*(?P<s>9\.\d+(?:\.\d+)?)")


def citations(line: str) -> list[tuple[str, str, list[int]]]:
    """(kind, text, numbers) for each citation in a line: kind 'eq', 'fig' or 'sec' (numbers [] for a section, whose
    text is its number); a dash range lists every member, a slash or "and" the two numbers."""
    found, taken = [], []

    def free(m):
        if any(a < m.end() and m.start() < b for a, b in taken):
            return False
        taken.append(m.span())
        return True

    def add(kind, m):
        if not free(m):
            return
        d = m.groupdict()
        lo, hi = int(d["a"]), int(d["b"]) if d.get("b") else int(d["a"])
        if d.get("sep") in ("/", "and") or hi < lo:
            numbers = [lo, hi]
        else:
            numbers = list(range(lo, hi + 1))
        found.append((kind, m.group(0), numbers))

    for m in FIG.finditer(line):
        add("fig", m)
    for m in EQ_WORD.finditer(line):
        add("eq", m)
    for m in EQ_TAG.finditer(line):
        add("eq", m)
    for m in SEC.finditer(line):
        if free(m):
            found.append(("sec", m.group("s"), []))
    for m in EQ_PAREN.finditer(line):
        add("eq", m)
    return found


def sources() -> list[tuple[str, list[list[str]]]]:
    """(name, blocks of lines): a notebook gives one block per cell (its source only), a text file one block."""
    files = sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("book/*.md"), *ROOT.glob("book/*.ipynb"),
                    *ROOT.glob("src/seqviz/**/*.py")])
    out = []
    for path in files:
        name = str(path.relative_to(ROOT))
        if path.suffix == ".ipynb":
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            src = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells]
            out.append((name, [s.splitlines() for s in src]))
        else:
            out.append((name, [path.read_text(encoding="utf-8").splitlines()]))
    return out


def mentions(keywords: list[str], text: str) -> bool:
    return any(re.search(k, text, flags=re.IGNORECASE) for k in keywords)


def problems(name: str, blocks: list[list[str]], window: int = 2) -> list[str]:
    """Every cited number that does not exist, or whose surroundings mention nothing it names."""
    bad = []
    for b, lines in enumerate(blocks):
        where = f"{name}, cell {b}" if name.endswith(".ipynb") else name
        for i, line in enumerate(lines):
            for kind, text, numbers in citations(line):
                at = f"{where}, line {i + 1}: {text!r} in {line.strip()[:160]!r}"
                if kind == "sec":
                    if text not in SECTIONS:
                        bad.append(f"no section §{text} in SLP ch. 9 — {at}")
                    continue
                table = EQUATIONS if kind == "eq" else FIGURES
                missing = [k for k in numbers if k not in table]
                if missing:
                    what = "equation (9.{})" if kind == "eq" else "Fig. 9.{}"
                    bad.append(f"no {what.format(missing[0])} in SLP ch. 9 — {at}")
                    continue
                around = "\n".join(lines[max(0, i - window):i + window + 1])
                keywords = [k for n in numbers for k in table[n]]
                if not mentions(keywords, around):
                    what = "equation" if kind == "eq" else "figure"
                    bad.append(f"{what} {text} names something else (none of {table[numbers[0]][:4]} nearby) — {at}")
    return bad


# ---------------------------------------------------------------------------------------------------------------
# The checker checks: it finds each form of citation and rejects wrong ones
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line, expected", [
    ("# (9.27) c_t = j_t + k_t", [("eq", [27])]),
    ("the LSTM (9.22)–(9.29) and Fig. 9.13", [("fig", [13]), ("eq", list(range(22, 30)))]),
    ("RNN LM (9.6-9.8) as in SLP §9.3 and §9.7.3", [("sec", []), ("sec", []), ("eq", [6, 7, 8])]),
    ("of (9.30)/(9.35).", [("eq", [30, 35])]),
    ("P(w) \\tag{9.1}", [("eq", [1])]),
    ("Eq. 9.12 and Figs. 9.21-9.22 (9.17;", [("fig", [21, 22]), ("eq", [12]), ("eq", [17])]),
    ("see section (9.7.1) and (1.6), (2.3), 9.5 GB", [("sec", [])]),
])
def test_finds_every_form_of_citation(line, expected):
    assert [(k, n) for k, _, n in citations(line)] == expected


def test_rejects_numbers_the_chapter_does_not_have_and_wrong_names():
    ok = ["perplexity is the inverse probability, normalised (9.1)", "by the chain rule (9.10)",
          "# (9.27) c_t = j_t + k_t", "the LSTM's gates (9.22)-(9.29)", "sliding window (SLP Fig. 9.1)",
          "see §9.5.2"]
    assert problems("ok.md", [ok]) == []
    wrong = {"the chain rule (9.1)": "names something else", "# (9.3) c_t = j_t + k_t": "names something else",
             "the softmax (9.49)": "no equation (9.49)", "transformer (Fig. 9.25)": "no Fig. 9.25",
             "as in §9.11": "no section §9.11", "mean pooling (Fig. 9.2)": "names something else"}
    for line, message in wrong.items():
        found = problems("wrong.md", [[line]])
        assert len(found) == 1 and message in found[0], (line, found)
    # the window is the citing line and two either side, inside one cell only
    assert problems("nb.ipynb", [["perplexity", "", "", "(9.1)"]]) != []
    assert problems("nb.ipynb", [["perplexity", "", "(9.1)"]]) == []
    assert problems("nb.ipynb", [["perplexity"], ["(9.1)"]]) != []


def test_the_table_is_the_map():
    """The table above against the project's map, where the map is at hand (it lives beside the repository)."""
    path = ROOT.parent / "shared" / "slp-ch9-map.md"
    if not path.exists():
        pytest.skip("shared/slp-ch9-map.md is not beside this checkout")
    text = path.read_text(encoding="utf-8")
    eqs = {int(m) for m in re.findall(r"^\| 9\.(\d+) \|", text, flags=re.MULTILINE)}
    figs_line = text.split("## Figures", 1)[1].split("##", 1)[0]
    figs = {int(m) for m in re.findall(r"(?:^|·)\s*9\.(\d+)\s", figs_line)}
    secs = set(re.findall(r"(9\.\d+(?:\.\d+)?) ", text.split("## Sections", 1)[1].split("##", 1)[0]))
    assert eqs == set(EQUATIONS) and figs == set(FIGURES) and secs == SECTIONS


# ---------------------------------------------------------------------------------------------------------------
# The book and the package
# ---------------------------------------------------------------------------------------------------------------
SOURCES = sources()


def test_the_scan_reads_the_book_and_the_package():
    names = {n for n, _ in SOURCES}
    assert {"notebooks/01_ngrams.ipynb", "notebooks/02_fixed_window.ipynb", "src/seqviz/ngram/scratch.py"} <= names
    assert sum(len(citations(line)) for _, blocks in SOURCES for lines in blocks for line in lines) > 50


@pytest.mark.parametrize("name, blocks", SOURCES, ids=[n for n, _ in SOURCES])
def test_every_cited_slp_number_exists_and_names_the_same_thing(name, blocks):
    bad = problems(name, blocks)
    assert not bad, "\n".join(bad)
