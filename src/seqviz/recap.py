"""The chapter recaps: the perplexity ladder so far, one rung per chapter, read from the benchmarks' recorded results.

The benchmarks (``bench/bench_*.py`` in the repository) write their figures to the package's recorded results
(``seqviz/recorded/NAME.json``), which :mod:`seqviz.results` reads back wherever the package is installed. A chapter's
recap shows the same figures as the book's Measured appendix, so no measured number in a chapter is typed by hand.

"Which model is better" depends on what each was given, so the recap's ladder is drawn at equal compute: perplexity
against **training FLOPs** (:func:`training_curves`, :func:`plot_compute`), one curve per chapter, not against
minutes, which the benches measured on different CPUs. The count (:func:`training_flops`) is the usual estimate for
dense networks: a multiply-add is 2 floating-point operations, and the backward pass costs twice the forward one, so

    training FLOPs = 6 × (multiply-adds per token of the forward pass) × (tokens the model read in training),

where the multiply-adds per token are those of every matrix the token passes through, counted from the model's shapes
(:func:`macs_per_token`): the window LM's hidden layer (n·d × d_h); each recurrent layer's input and recurrent
matrices, once per step (one of each for an Elman cell, three for a GRU, four for an LSTM); each transformer block's
four attention projections and its feed-forward layer (4d² + 2·d·d_ff), and its attention scores and weighted values
(2·T·d: every query against the T positions of its window, as computed); and always the output layer (d × V), which
for words is most of the work. Embedding look-ups, nonlinearities, LayerNorm and the softmax are left out (a few per
cent). Counting n-grams takes no multiplications: chapter 1's rung costs ~0 FLOPs. The shapes come from the row (a
window row's ``window`` and ``d/d_h``, a transformer row's ``recipe``) or from the package preset its name gives
(``seqviz RNNLM `full``` is ``RNNLMConfig.full``); the tokens read are the passes over PTB's training text times its
length (:data:`PTB_TRAIN_TOKENS` targets; the recurrent LMs also read one ``<s>`` a sentence,
:data:`PTB_TRAIN_POSITIONS`), or, where a row records them, its steps × batch × context.
"""
from __future__ import annotations

import math
import re

from seqviz.results import all_results, fmt, html_table, ladder, plot_rungs

__all__ = ["show_recap", "chapter_rungs", "training_curves", "plot_compute", "training_flops", "macs_per_token",
           "model_shape", "format_flops", "CHAPTERS", "FAMILY", "RECAP_COLUMNS", "PTB_VOCAB", "PTB_TRAIN_TOKENS",
           "PTB_TRAIN_POSITIONS"]

#: the benches that put a chapter's model on the PTB perplexity ladder, in lecture order, with the chapter they measure
CHAPTERS = {"ngram": "1 n-gram", "window": "2 fixed window", "rnn": "3 RNN", "lstm": "4 LSTM",
            "transformer": "7 transformer"}
#: what a chapter's own models are called in its bench's rows (benches also print baselines, e.g. KN5 in window.json)
FAMILY = {"ngram": ("gram",), "window": ("window",), "rnn": ("rnn", "elman"), "lstm": ("lstm", "gru"),
          "transformer": ("transformer",)}
#: the columns of a recap's table
RECAP_COLUMNS = ["chapter", "model", "perplexity", "budget", "published", "measured"]
#: one colour and line style per chapter in the compute-matched plot (Okabe-Ito; the style carries it too)
COLORS = {"ngram": "#000000", "window": "#009E73", "rnn": "#E69F00", "lstm": "#D55E00", "transformer": "#0072B2"}
STYLES = {"ngram": ":", "window": "-", "rnn": "--", "lstm": "-", "transformer": "-."}
MARKERS = {"window": "s", "rnn": "^", "lstm": "o", "transformer": "D"}

#: PTB as the benches read it (seqviz.data, ``load_corpus("ptb")``): the training vocabulary (10,000 word types with
#: ``</s>`` and ``<pad>``), the training text's tokens (words and one ``</s>`` a sentence: every one a target), and
#: the positions a model reading one ``<s>`` before each sentence steps through (the recurrent LMs' stream)
PTB_VOCAB = 10_002
PTB_TRAIN_TOKENS = 929_589
PTB_TRAIN_POSITIONS = 971_657


def _rows(fig: dict) -> list[dict]:
    return [r for r in (fig or {}).get("rows", []) if isinstance(r, dict)]


def _name(row: dict) -> str:
    return str(row.get("name", row.get("model", "?")))


def _number(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def train_minutes(row: dict) -> float | None:
    """The minutes a results row says its model trained for (one thread): ``train_minutes`` (CPU time),
    ``minutes`` (wall), ``fit_s`` (an n-gram's fit), or "N min" in its ``note``; None if it says none."""
    for key, scale in (("train_minutes", 1.0), ("minutes", 1.0), ("train_seconds", 1 / 60), ("fit_s", 1 / 60)):
        if _number(row.get(key)) is not None:
            return _number(row[key]) * scale
    m = re.search(r"([\d.]+) min\b", str(row.get("note", "")))
    return float(m.group(1)) if m else None


# ---- counting the training compute ------------------------------------------------------------------------------------
def _preset(row: dict) -> str | None:
    """The preset a row names: `full` in backticks, or the word after "LM, " ("window LM, full (3 ep.)")."""
    m = re.search(r"`(\w+)`", _name(row)) or re.search(r"LM, (\w+)", _name(row))
    return m.group(1) if m else None


def _config(bench: str, preset: str):
    """The package's config preset ``preset`` (a classmethod of the bench's config class; ``default``: the chapter's
    model) of a recurrent bench's model, for PTB's vocabulary; None for a name that is no preset."""
    from seqviz.lstm import LSTMLMConfig
    from seqviz.rnn import RNNLMConfig

    cls = RNNLMConfig if bench == "rnn" else LSTMLMConfig           # GRULM takes LSTMLMConfig's sizes too
    make = getattr(cls, "chapter", cls) if preset == "default" else getattr(cls, preset, None)
    return None if make is None or preset == "tiny" else make(PTB_VOCAB)


def _epochs(row: dict) -> float | None:
    """Passes over the training text: a ``curve``'s length, a row's ``epochs``, its note's "N epoch(s)" or the
    number of its note's per-epoch ``valid PP`` figures."""
    if isinstance(row.get("curve"), list) and row["curve"]:
        return float(len(row["curve"]))
    if _number(row.get("epochs")) is not None:
        return _number(row["epochs"])
    note = str(row.get("note", ""))
    m = re.search(r"(\d+) epochs?\b|(\d+) epoch\(s\)", note)
    if m:
        return float(m.group(1) or m.group(2))
    m = re.search(r"valid PP ((?:[\d.]+ ?)+)", note)
    return float(len(m.group(1).split())) if m else None


def model_shape(bench: str, row: dict) -> dict | None:
    """What :func:`macs_per_token` needs of a ladder row's model: {"kind", "V", ...} with the kind's sizes, from the
    row itself or from the package preset its name gives; None when neither says (the row is then not drawn)."""
    name = _name(row).lower()
    if bench == "ngram" or "gram" in name:                           # an n-gram, or a bench's n-gram baseline
        return {"kind": "ngram", "V": PTB_VOCAB}
    if bench == "window":
        if "d/d_h" in row and _number(row.get("window")) is not None:
            d, d_h = (int(x) for x in str(row["d/d_h"]).split("/"))
            return {"kind": "window", "V": PTB_VOCAB, "n": int(row["window"]), "d": d, "d_h": d_h}
        from seqviz.window import WindowConfig
        preset = {"notebook": "tiny"}.get(_preset(row), _preset(row))
        make = getattr(WindowConfig, preset or "", None)
        if make is None:
            return None
        c = make(PTB_VOCAB)
        return {"kind": "window", "V": PTB_VOCAB, "n": c.context, "d": c.d_emb, "d_h": c.d_h}
    if bench in ("rnn", "lstm"):
        kind = "elman" if bench == "rnn" else ("gru" if "gru" in name else "lstm")
        c = _config(bench, _preset(row) or "")
        if c is None:
            return None
        return {"kind": kind, "V": PTB_VOCAB, "d_emb": c.d_emb, "d_h": c.d_h, "layers": c.num_layers}
    if bench == "transformer":
        if row.get("corpus") != "PTB":                               # the character models of chapter 7
            return None
        recipe = row.get("recipe") or {}
        model = recipe.get("model") or {}
        if not all(k in model for k in ("num_layers", "d_model")) or "context" not in recipe:
            return None
        d = int(model["d_model"])
        return {"kind": "transformer", "V": PTB_VOCAB, "layers": int(model["num_layers"]), "d": d,
                "d_ff": int(model.get("d_ff") or 4 * d), "T": int(recipe["context"])}
    return None


#: multiply-adds of one step of each recurrent cell, in units of (d_in + d_h) × d_h: its gates' matrices
GATES = {"elman": 1, "gru": 3, "lstm": 4}


def macs_per_token(shape: dict) -> int:
    """Multiply-adds of one token's forward pass through every matrix of the model (see the module's docstring).

    window: n·d·d_h + d_h·V; recurrent: per layer gates·(d_in + d_h)·d_h, + d_h·V; transformer: per block 4d²
    (W^Q, W^K, W^V, W^O) + 2·d·d_ff (W_1, W_2) + 2·T·d (QK^T and the weighted values), + d·V; n-gram: 0."""
    kind, V = shape["kind"], shape["V"]
    if kind == "ngram":
        return 0
    if kind == "window":
        return shape["n"] * shape["d"] * shape["d_h"] + shape["d_h"] * V
    if kind in GATES:
        d_h = shape["d_h"]
        layers = sum(GATES[kind] * ((shape["d_emb"] if l == 0 else d_h) + d_h) * d_h for l in range(shape["layers"]))
        return layers + d_h * V
    if kind == "transformer":
        d, T = shape["d"], shape["T"]
        return shape["layers"] * (4 * d * d + 2 * d * shape["d_ff"] + 2 * T * d) + d * V
    raise ValueError(f"no FLOP count for a model of kind {kind!r}: one of ngram, window, {', '.join(GATES)}, "
                     f"transformer")


def tokens_seen(bench: str, row: dict) -> float | None:
    """Tokens a ladder row's model read in training: steps × batch × context where its recipe records them, else
    its passes × PTB's training tokens (the recurrent LMs' stream with one ``<s>`` a sentence)."""
    recipe = row.get("recipe") or {}
    if all(_number(x) is not None for x in (row.get("steps"), recipe.get("batch_size"), recipe.get("context"))):
        return float(row["steps"] * recipe["batch_size"] * recipe["context"])
    epochs = _epochs(row)
    if epochs is None:
        return None
    return epochs * (PTB_TRAIN_POSITIONS if bench in ("rnn", "lstm") else PTB_TRAIN_TOKENS)


def training_flops(bench: str, row: dict) -> float | None:
    """6 × :func:`macs_per_token` × :func:`tokens_seen` of a ladder row (0 for an n-gram); None where the row and
    its preset do not say what the count needs."""
    shape = model_shape(bench, row)
    if shape is None:
        return None
    if shape["kind"] == "ngram":
        return 0.0
    tokens = tokens_seen(bench, row)
    return None if tokens is None else 6.0 * macs_per_token(shape) * tokens


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def format_flops(flops: float | None) -> str:
    """"6.8 × 10¹³" (two significant digits), "~0" for none, "?" when unknown."""
    if flops is None:
        return "?"
    if flops == 0:
        return "~0"
    e = math.floor(math.log10(flops))
    m = flops / 10 ** e
    if round(m, 1) >= 10:
        m, e = m / 10, e + 1
    return f"{m:.1f} × 10{str(e).translate(_SUPERSCRIPT)}"


# ---- the ladder at equal compute --------------------------------------------------------------------------------------
def _curve(bench: str, row: dict, flops: float) -> list[tuple[float, float | None, float | None]]:
    """(training FLOPs, validation perplexity, test perplexity) after each pass of one row, as recorded: a ``curve``
    list (a transformer's), the ``valid PP`` figures of its note (passes of equal length), or one point."""
    test = _number(row.get("test"))
    if isinstance(row.get("curve"), list) and row["curve"]:
        n = len(row["curve"])
        return [(flops * c["epoch"] / n, _number(c.get("valid")), _number(c.get("test"))) for c in row["curve"]]
    m = re.search(r"valid PP ((?:[\d.]+ ?)+)", str(row.get("note", "")))
    if m:
        valid = [float(v) for v in m.group(1).split()]
        return [(flops * (i + 1) / len(valid), v, test if i == len(valid) - 1 else None)
                for i, v in enumerate(valid)]
    return [(flops, _number(row.get("valid")), test)]


def training_curves(results: dict[str, dict], upto: str | None = None) -> list[dict]:
    """One curve per chapter up to the bench ``upto``, the run that makes its rung (:func:`chapter_rungs`), at equal
    compute: [{"bench", "model", "flops", "points": [(training FLOPs, valid, test)]}] with the validation perplexity
    after each pass and the test perplexity at the end. A rung whose compute cannot be counted is left out."""
    out = []
    for rung, n in zip(chapter_rungs(results, upto), _upto(upto)):
        row = next((r for r in _rows(results.get(n)) if _name(r) == rung["model"]), None)
        flops = None if row is None else training_flops(n, row)
        if flops is not None:
            out.append({"bench": n, "model": rung["model"], "flops": flops, "points": _curve(n, row, flops)})
    return out


def _label(c: dict) -> str:
    model = c["model"].replace("`", "")
    if c["bench"] == "ngram":
        return f"ch. {CHAPTERS['ngram']}: {model.replace('seqviz ', '')} (counts, ~0 FLOPs)"
    preset = _preset({"name": c["model"]})
    return f"ch. {CHAPTERS[c['bench']]}" + (f", {preset}" if preset else "")


def plot_compute(curves: list[dict], ax=None):
    """Perplexity against training FLOPs (log-log), one series per chapter, each named in the legend: its validation
    perplexity after every pass as a line and its test perplexity at the end as a star (one legend entry for
    both); an n-gram, which costs ~0 FLOPs, as a dotted horizontal line at its test perplexity. Returns the axes."""
    import matplotlib.pyplot as plt
    from matplotlib.legend_handler import HandlerTuple

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 5.2))
    handles, labels = [], []
    for c in curves:
        b, label = c["bench"], _label(c)
        color, style = COLORS.get(b, "#777777"), STYLES.get(b, "-")
        tests = [(x, t) for x, _, t in c["points"] if t is not None]
        if b == "ngram" or c["flops"] <= 0:
            if tests:
                handles.append(ax.axhline(tests[-1][1], color=color, lw=1.2, ls=":", label=label))
                labels.append(label)
            continue
        drawn = []
        xs = [x for x, v, _ in c["points"] if v is not None]
        ys = [v for _, v, _ in c["points"] if v is not None]
        if xs:
            drawn += ax.plot(xs, ys, ls=style, marker=MARKERS.get(b, "o"), color=color, ms=4, lw=1.4, label=label)
        if tests:
            drawn += ax.plot([tests[-1][0]], [tests[-1][1]], "*", color=color, ms=12, mec="white", mew=0.5,
                             label=label)
        if drawn:
            handles.append(tuple(drawn))
            labels.append(label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training FLOPs: 6 × multiply-adds per token × tokens (log scale)", fontsize=9)
    ax.set_ylabel("PTB perplexity (log scale)", fontsize=9)
    lo, hi = ax.get_ylim()
    mid = math.sqrt(lo * hi)
    lo, hi = min(lo, mid / 1.3), max(hi, mid * 1.3)                  # at least a factor 1.7: ticks to read
    ax.set_ylim(lo, hi)
    ticks = [t for t in (60, 80, 90, 100, 120, 140, 160, 180, 200, 250, 300, 400, 600, 1000) if lo <= t <= hi]
    ax.set_yticks(ticks, [str(t) for t in ticks])
    ax.yaxis.set_minor_formatter(plt.NullFormatter())
    lo, hi = ax.get_xlim()
    xticks = [m * 10 ** e for e in range(9, 18) for m in (1, 2, 5) if lo <= m * 10 ** e <= hi]
    ax.set_xticks(xticks, [format_flops(x).replace("1.0 × ", "").replace(".0 × ", " × ") for x in xticks])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.tick_params(labelsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(handles, labels, handler_map={tuple: HandlerTuple(ndivide=None)}, fontsize=9, ncol=2,
              loc="upper center", bbox_to_anchor=(0.5, -0.17), frameon=False,
              title="lines: validation after each pass; ★: test at the end", title_fontsize=9)
    return ax


def _upto(upto: str | None) -> list[str]:
    names = list(CHAPTERS)
    if upto is not None:
        if upto not in CHAPTERS:
            raise ValueError(f"upto must be one of {names}, got {upto!r}")
        names = names[: names.index(upto) + 1]
    return names


def _budget(bench: str, fig: dict, model: str) -> str | None:
    """A rung's training compute and time: "6.8 × 10¹³ FLOPs, 36 min" (the minutes on the machine it ran on)."""
    row = next((r for r in _rows(fig) if _name(r) == model), None)
    if row is None:
        return None
    minutes, flops = train_minutes(row), training_flops(bench, row)
    when = None if minutes is None else (f"{minutes * 60:.0f} s" if minutes < 1 else f"{minutes:.0f} min")
    what = None if flops is None else ("counts, ~0 FLOPs" if flops == 0 else f"{format_flops(flops)} FLOPs")
    return ", ".join(x for x in (what, when) if x) or None


def chapter_rungs(results: dict[str, dict], upto: str | None = None) -> list[dict]:
    """One row per chapter of the PTB ladder up to the bench ``upto`` (all of them by default): the best measured test
    perplexity of the chapter's own models (:data:`FAMILY`; a bench's baselines are left out), the model that reached
    it and its training budget (FLOPs, :func:`training_flops`, and minutes on the machine it ran on), beside the
    published figures that bench prints (each figure once, at its first chapter). A chapter whose results file is
    absent (or has no PTB rows) gets perplexity None and the command that measures it."""
    names = _upto(upto)
    rungs = ladder({n: results[n] for n in names if n in results})
    out, cited = [], set()
    for n in names:
        ours = [r for r in rungs if r["bench"] == n and r["source"] == "ours" and r["corpus"].startswith("PTB")
                and any(word in r["model"].lower() for word in FAMILY[n])]  # the chapter's models, not its baselines
        pub = [r for r in rungs if r["bench"] == n and r["source"] == "published"
               and round(r["perplexity"], 1) not in cited]
        cited.update(round(r["perplexity"], 1) for r in pub)  # a figure several benches print is listed once
        best = min(ours, key=lambda r: r["perplexity"]) if ours else None
        out.append({"chapter": CHAPTERS[n],
                    "model": best["model"] if best else f"not measured: python bench/bench_{n}.py",
                    "perplexity": best["perplexity"] if best else None,
                    "budget": _budget(n, results.get(n), best["model"]) if best else None,
                    "published": "; ".join(f"{r['model']}: {fmt(r['perplexity'])}" for r in pub) or None,
                    "measured": ((results.get(n) or {}).get("machine") or {}).get("date", "")[:10] or None})
    return out


def show_recap(upto: str | None = None) -> list[dict]:
    """Draw the PTB ladder up to the chapter whose bench is ``upto`` ("ngram", "window", "rnn", "lstm",
    "transformer"; None: all) at equal compute (:func:`plot_compute`), and tabulate it, one rung per chapter with its
    budget and the published figures beside ours, from the recorded results. Returns the rows."""
    import matplotlib.pyplot as plt
    from IPython.display import HTML, display

    results = all_results()
    rungs = chapter_rungs(results, upto)
    curves = training_curves(results, upto)
    if len(curves) > 1:                                                # a ladder to compare: at equal compute
        ax = plot_compute(curves)
        ax.set_title("The PTB ladder at equal compute (every rung: the Measured appendix)", fontsize=10)
        ax.figure.tight_layout()
        plt.show()
    elif any(r["perplexity"] is not None for r in rungs):              # one rung: its bar
        shown = [{**r, "label": f"ch. {r['chapter']}: {r['model']}"} for r in rungs if r["perplexity"] is not None]
        _, ax = plt.subplots(figsize=(7, 0.38 * len(shown) + 1.2))
        plot_rungs(shown, ax=ax, label="label")
        ax.set_xlabel("PTB test perplexity (lower is better; every rung: the Measured appendix)",
                      fontsize=9)
        ax.figure.tight_layout()
        plt.show()
    display(HTML(html_table(rungs, RECAP_COLUMNS)))
    return rungs
