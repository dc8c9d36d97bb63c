"""Beam search as a tree you can step through: every candidate the beam proposed, kept, pruned or finished.

Python checks the ``BeamTrace`` that ``seqviz.decode.beam_search(..., trace=True)`` returns and packs it as a flat
list of nodes (compact binary buffers); ``static/beam_tree.js`` lays the tree out in columns, one per step, and
answers the step slider, the pruned/score switches and the mouse, so the widget also works in the static book.

Beam search is not in SLP's chapter 9 (it decodes the encoder-decoders of later chapters): the ranking it draws is
the one ``seqviz.decode`` uses, log P(y) / |y|^alpha, with alpha = 0 the plain sum of log-probabilities.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import anywidget
import numpy as np
import traitlets

from seqviz.decode import STATUSES, BeamCandidate, BeamTrace, beam_search, check_length_penalty

from ._common import Described, CSS, check_index, esm, plain
from ._live import LiveMode, count

__all__ = ["BeamTree", "BeamData", "prepare_beam", "KEPT", "PRUNED", "FINISHED", "GREEDY_ONLY", "MAX_NODES"]

KEPT, PRUNED, FINISHED, GREEDY_ONLY = 0, 1, 2, 3  # node status codes sent to the browser (GREEDY_ONLY: a step of
CODES = {"kept": KEPT, "pruned": PRUNED, "finished": FINISHED}  # greedy's path the beam never proposed)
MAX_NODES = 20_000  # more than a page can show legibly (and about 0.4 MB of payload)
ATOL = 1e-6  # log P(hypothesis) must equal the parent's plus the token's within this


@dataclass(frozen=True)
class BeamData:
    """The checked search as a flat node list in drawing order: node 0 is the prompt (step 0); then step 1's
    candidates grouped by parent, best first within a parent, then step 2's, ... ; greedy-only nodes last in their
    step. ``parent`` -1 for the root; ``logprob`` the hypothesis's log-probability (0 at the root)."""

    step: np.ndarray            # (N,) int, 0 = the prompt
    parent: np.ndarray          # (N,) int32, index of the parent node, -1 for the root
    status: np.ndarray          # (N,) uint8, KEPT / PRUNED / FINISHED / GREEDY_ONLY (the root: KEPT)
    token: np.ndarray           # (N,) int, the token id (-1 for the root)
    logprob: np.ndarray         # (N,) float64
    labels: list[str]           # (N,) token text, the root's is root_label
    greedy: list[int]           # node of greedy's path at steps 1, 2, ... (empty: no greedy path)
    result: list[int]           # nodes of the returned hypotheses, best first
    n_steps: int

    def score(self, node: int, alpha: float) -> float:
        """log P / N^alpha for a node of N new tokens (N = its step)."""
        return float(self.logprob[node]) / (max(int(self.step[node]), 1) ** alpha)

    def text(self, node: int, joiner: str = " ") -> str:
        """The hypothesis a node stands for: its tokens from step 1 on, joined."""
        out = []
        while node > 0:
            out.append(self.labels[node])
            node = int(self.parent[node])
        return joiner.join(out[::-1])


def _labels_of(tokens) -> list[str]:
    if hasattr(tokens, "itos"):
        tokens = tokens.itos                        # a seqviz.data.Vocab, or the seed example's scorer
    if isinstance(tokens, str):
        raise TypeError("tokens must be the vocabulary as a list of strings (id -> text), not one string")
    try:
        toks = list(tokens)
    except TypeError:
        raise TypeError(f"tokens must be a list of strings (id -> text) or a Vocab, got {type(tokens).__name__}") \
            from None
    for i, t in enumerate(toks):
        if not isinstance(t, str):
            raise TypeError(f"tokens[{i}] is {type(t).__name__} {t!r}; every token must be a str")
    if not toks:
        raise ValueError("tokens is empty: pass the vocabulary the model decodes with (id -> text)")
    return toks


def _check_number(x, where: str, allow_zero_only: bool = False) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{where} must be a number, got {type(x).__name__} {x!r}")
    x = float(x)
    if math.isnan(x):
        raise ValueError(f"{where} is NaN; check the model's scores (e.g. a log of a negative number)")
    if not math.isfinite(x):
        raise ValueError(f"{where} is {x}; a beam never proposes a token of probability 0, so every "
                         f"log-probability must be finite")
    if x > ATOL:
        raise ValueError(f"{where} = {x:.4g} > 0: a log-probability is at most 0 (pass log-probabilities, "
                         f"not logits or probabilities)")
    return x


def _check_token(tok, vocab: list[str], where: str) -> int:
    if isinstance(tok, bool) or not isinstance(tok, (int, np.integer)):
        raise TypeError(f"{where} token must be an int id, got {type(tok).__name__} {tok!r}")
    if not 0 <= int(tok) < len(vocab):
        raise ValueError(f"token id {tok} ({where}) is not in tokens ({len(vocab)} entries): pass the vocabulary "
                         f"the model decodes with")
    return int(tok)


def prepare_beam(trace: BeamTrace, tokens, root_label: str | None = None) -> BeamData:
    """Check a beam trace against itself and the vocabulary, and flatten it into drawing order.

    Checks: a ``BeamTrace`` with at least one step; every candidate a ``BeamCandidate`` with a known status; each
    parent among the previous step's kept candidates; at most ``beam_size`` kept a step; log-probabilities finite,
    <= 0 and each the parent's plus the token's; finished candidates end with ``stop_id`` and kept ones do not;
    every token id (and greedy's) in ``tokens``; every returned hypothesis a path of the tree.
    """
    if not isinstance(trace, BeamTrace):
        raise TypeError(f"trace must be the BeamTrace that seqviz.decode.beam_search(..., trace=True) returns, got "
                        f"{type(trace).__name__}; or build the widget with BeamTree.from_search(model, ...)")
    vocab = _labels_of(tokens)
    steps = trace.steps
    if not isinstance(steps, (tuple, list)) or not steps:
        raise ValueError("trace.steps is empty: the search made no step (max_new_tokens must be >= 1)")
    if not isinstance(trace.beam_size, int) or trace.beam_size < 1:
        raise ValueError(f"trace.beam_size must be a positive int, got {trace.beam_size!r}")
    n_parents, parent_lp = 1, [0.0]
    for t, cands in enumerate(steps):
        where_t = f"step {t + 1} (trace.steps[{t}])"
        if not isinstance(cands, (tuple, list)) or not cands:
            raise ValueError(f"{where_t} has no candidates; every step proposes at least one continuation")
        if n_parents == 0:
            raise ValueError(f"{where_t} follows a step that kept no hypothesis: nothing was left to extend")
        for i, c in enumerate(cands):
            where = f"trace.steps[{t}][{i}]"
            if not isinstance(c, BeamCandidate):
                raise TypeError(f"{where} must be a BeamCandidate, got {type(c).__name__}")
            if c.status not in STATUSES:
                raise ValueError(f"{where} has status {c.status!r}; it must be one of {list(STATUSES)}")
            if isinstance(c.parent, bool) or not isinstance(c.parent, (int, np.integer)) \
                    or not 0 <= c.parent < n_parents:
                had = "the prompt is step 1's only parent" if t == 0 else f"step {t} kept {n_parents} hypotheses"
                raise ValueError(f"{where} has parent {c.parent!r}, but {had} (a parent is an index into the "
                                 f"previous step's kept candidates, in their order)")
            _check_token(c.token, vocab, where)
            lp = _check_number(c.logprob, f"{where}.logprob")
            tlp = _check_number(c.token_logprob, f"{where}.token_logprob")
            if abs(parent_lp[c.parent] + tlp - lp) > ATOL * max(1.0, abs(lp)):
                raise ValueError(f"{where}.logprob = {lp:.6g} is not its parent's log P {parent_lp[c.parent]:.6g} "
                                 f"plus its token's {tlp:.6g}: the trace does not hold together")
            if c.status == "finished" and c.token != trace.stop_id:
                raise ValueError(f"{where} is finished but its token {c.token} is not stop_id {trace.stop_id}")
            if c.status == "kept" and trace.stop_id is not None and c.token == trace.stop_id:
                raise ValueError(f"{where} ends with stop_id {trace.stop_id} but is marked kept; it is finished")
        kept = [c for c in cands if c.status == "kept"]
        if len(kept) > trace.beam_size:
            raise ValueError(f"{where_t} keeps {len(kept)} hypotheses, more than beam_size={trace.beam_size}")
        n_parents, parent_lp = len(kept), [float(c.logprob) for c in kept]
    greedy = list(trace.greedy or ())
    for s, g in enumerate(greedy):
        if not isinstance(g, (tuple, list)) or len(g) != 2:
            raise ValueError(f"trace.greedy[{s}] must be a (token, token_logprob) pair, got {g!r}")
        _check_token(g[0], vocab, f"trace.greedy[{s}]")
        _check_number(g[1], f"trace.greedy[{s}] token_logprob")
    n_nodes = 1 + sum(len(c) for c in steps) + len(greedy)
    if n_nodes > MAX_NODES:
        raise ValueError(f"the search has {n_nodes:,} nodes, more than the widget draws ({MAX_NODES:,}); use a "
                         f"smaller beam_size or max_new_tokens")

    # Drawing order: step by step; a step's candidates grouped by their parent's position, best ranked first;
    # then greedy's path, through the tree's nodes where the beam proposed the same hypothesis, and as greedy-only
    # nodes (last in their step) where it did not. A node is keyed by its path: the token ids from step 1 on.
    columns: list[list[tuple]] = [[((), None, KEPT, -1, 0.0)]]        # (path, parent path, status, token, log P)
    where: dict[tuple[int, ...], int] = {(): 0}                        # path -> position in its column
    kept_paths: list[tuple[int, ...]] = [()]
    for cands in steps:
        order = sorted(range(len(cands)), key=lambda i: (where[kept_paths[cands[i].parent]], i))
        column = []
        for i in order:
            c = cands[i]
            up = kept_paths[c.parent]
            if any(rec[0] == up + (int(c.token),) for rec in column):
                raise ValueError(f"step {len(columns)} proposes token {c.token} twice after the same hypothesis; "
                                 f"a beam proposes each continuation once")
            column.append((up + (int(c.token),), up, CODES[c.status], int(c.token), float(c.logprob)))
        kept_paths = [kept_paths[c.parent] + (int(c.token),) for c in cands if c.status == "kept"]
        where.update({rec[0]: pos for pos, rec in enumerate(column)})
        columns.append(column)
    known = {rec[0] for col in columns for rec in col}
    g_paths, up, g_lp = [], (), 0.0
    for s, (tok, tlp) in enumerate(greedy):
        g_lp += float(tlp)
        path = up + (int(tok),)
        if path not in known:
            while len(columns) <= s + 1:
                columns.append([])
            columns[s + 1].append((path, up, GREEDY_ONLY, int(tok), g_lp))
            known.add(path)
        g_paths.append(path)
        up = path
    flat = [rec for col in columns for rec in col]
    index = {rec[0]: n for n, rec in enumerate(flat)}
    step = [len(rec[0]) for rec in flat]
    parent = [-1 if rec[1] is None else index[rec[1]] for rec in flat]
    status, token, logprob = ([rec[k] for rec in flat] for k in (2, 3, 4))
    reached = {rec[0]: index[rec[0]] for rec in flat if rec[2] in (KEPT, FINISHED)}
    g_nodes = [index[p] for p in g_paths]
    n_steps = len(columns) - 1
    result = []
    for r, (ids, _) in enumerate(trace.hypotheses):
        n = reached.get(tuple(int(i) for i in ids))
        if n is None:
            raise ValueError(f"trace.hypotheses[{r}] {list(ids)} is not a kept or finished path of the trace")
        result.append(n)
    if root_label is None:
        prompt = [vocab[i] if 0 <= i < len(vocab) else str(i) for i in trace.prompt_ids]
        root_label = " ".join(prompt[-3:]) if len(prompt) <= 3 else "\u2026 " + " ".join(prompt[-2:])
    elif not isinstance(root_label, str):
        raise TypeError(f"root_label must be a str, got {type(root_label).__name__}")
    labels = [root_label] + [vocab[t] for t in token[1:]]
    return BeamData(step=np.array(step), parent=np.array(parent, dtype=np.int32),
                    status=np.array(status, dtype=np.uint8), token=np.array(token),
                    logprob=np.array(logprob, dtype=np.float64), labels=labels, greedy=g_nodes, result=result,
                    n_steps=n_steps)


class BeamTree(Described, anywidget.AnyWidget, LiveMode):
    """A recorded beam search drawn as a tree: a step slider, kept hypotheses highlighted, pruned ones faded,
    finished ones marked, greedy's path overlaid, and the beam at the chosen step listed with both scores.

    ``BeamTree(trace, tokens)`` takes what ``beam_search(..., trace=True)`` returns (its second item) and the
    vocabulary (a list id -> text, a ``Vocab``, or anything with ``itos``); ``BeamTree.from_search(model,
    prompt_ids, beam_size, max_new_tokens, stop_id=..., tokens=itos)`` runs the search (and greedy) itself.
    Traits the view follows: ``step`` (1..n_steps), ``show_pruned``, ``normalise`` (label nodes with
    log P / N^alpha instead of log P), ``alpha``.

    ``BeamTree.live("dates", date, options={"beam_size": 5, "length_penalty": 0.0})``: the shipped date model's beam
    search (with greedy's path) over ``date``, which the reader can replace by their own (see
    ``seqviz.widgets._live``).
    """

    _live_models = {"dates": "the beam search of the date model"}

    _esm = esm("beam_tree.js")  # the shared prelude + beam_tree.js
    _css = CSS

    parent = traitlets.Bytes(b"").tag(sync=True)    # int32 little-endian (N,), -1 for the root
    status = traitlets.Bytes(b"").tag(sync=True)    # uint8 (N,): 0 kept, 1 pruned, 2 finished, 3 greedy only
    logprob = traitlets.Bytes(b"").tag(sync=True)   # float64 little-endian (N,)
    token = traitlets.Bytes(b"").tag(sync=True)     # uint32 little-endian (N,): index into `vocab`
    vocab = traitlets.List(traitlets.Unicode()).tag(sync=True)   # the distinct labels the nodes use
    step_start = traitlets.List(traitlets.Int()).tag(sync=True)  # node offsets of steps 0..n_steps, then N
    greedy = traitlets.List(traitlets.Int()).tag(sync=True)      # greedy's node at steps 1, 2, ...
    result = traitlets.List(traitlets.Int()).tag(sync=True)      # returned hypotheses' nodes, best first
    beam_size = traitlets.Int(1).tag(sync=True)
    length_penalty = traitlets.Float(0.0).tag(sync=True)
    joiner = traitlets.Unicode(" ").tag(sync=True)   # between tokens of a hypothesis ("" for characters)
    step = traitlets.Int(1).tag(sync=True)
    show_pruned = traitlets.Bool(True).tag(sync=True)
    normalise = traitlets.Bool(False).tag(sync=True)
    alpha = traitlets.Float(1.0).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)

    def __init__(self, trace: BeamTrace, tokens, *, step: int | None = None, show_pruned: bool = True,
                 normalise: bool = False, alpha: float | None = None, root_label: str | None = None,
                 joiner: str = " ", title: str = "", **kwargs):
        super().__init__(**kwargs)
        self.title, self.joiner = title, joiner
        self.set_data(trace, tokens, root_label=root_label)
        self.alpha = (trace.length_penalty or 1.0) if alpha is None else alpha
        self.step = self._data.n_steps if step is None else step
        self.show_pruned, self.normalise = show_pruned, normalise

    @classmethod
    def from_search(cls, model, prompt_ids: Sequence[int], beam_size: int, max_new_tokens: int,
                    stop_id: int | None = None, length_penalty: float = 0.0, *, tokens, greedy: bool = True,
                    state=None, suppress_ids: Sequence[int] = (), **kwargs) -> "BeamTree":
        """Run ``seqviz.decode.beam_search`` with a trace (and greedy decoding, for comparison) and draw it.
        ``model`` is anything ``beam_search`` decodes from (a stepper, a decoder binding, a score function);
        keyword arguments other than the search's go to the widget (``title``, ``step``, ``joiner``, ...)."""
        _, trace = beam_search(model, prompt_ids, beam_size, max_new_tokens, stop_id, length_penalty, state=state,
                               suppress_ids=suppress_ids, trace=True, with_greedy=greedy)
        return cls(trace, tokens, **kwargs)

    @classmethod
    def _live_data(cls, spec, text, request):
        from seqviz.live import kernel

        k, lp = spec["beam_size"], spec["length_penalty"]
        enc, hyps, trace = kernel.dates_beam(text, k, lp)
        tgt = kernel.dates().extra["tgt_itos"]
        words = lambda ids: "".join(tgt[i] for i in ids if tgt[i] != "</s>")      # noqa: E731
        best, greedy = words(hyps[0][0]), words(t for t, _ in trace.greedy)
        return (trace, tgt), {}, {"notes": enc.notes,
                                  "status": f"beam of {k}: \u201c{best}\u201d; greedy: \u201c{greedy}\u201d"}

    def _live_shown(self, request, reply):
        self.step = self._data.n_steps                                           # the whole search

    @classmethod
    def live(cls, model, text, *, group=None, options=None, **kwargs):
        options = {"beam_size": 5, "length_penalty": 0.0, **(options or {})}
        options["beam_size"] = count(options["beam_size"], "beam_size", 1, 16)
        options["length_penalty"] = check_length_penalty(options["length_penalty"])
        return super().live(model, text, group=group, options=options, **{"joiner": "", **kwargs})

    def set_data(self, trace: BeamTrace, tokens, *, root_label: str | None = None) -> None:
        """Replace the search shown (checked as in :func:`prepare_beam`); the browser redraws."""
        d = prepare_beam(trace, tokens, root_label)
        self._data, self._trace = d, trace
        vocab = list(dict.fromkeys(d.labels))
        index = {t: i for i, t in enumerate(vocab)}
        starts = np.searchsorted(d.step, np.arange(d.n_steps + 1)).tolist() + [len(d.step)]
        with self.hold_sync():
            self.parent = d.parent.astype("<i4").tobytes()
            self.status = d.status.tobytes()
            self.logprob = d.logprob.astype("<f8").tobytes()
            self.token = np.array([index[t] for t in d.labels], dtype="<u4").tobytes()
            self.vocab = vocab
            self.step_start = starts
            self.greedy, self.result = d.greedy, d.result
            self.beam_size, self.length_penalty = trace.beam_size, float(trace.length_penalty)
            self.step = min(max(self.step, 1), d.n_steps)

    @traitlets.validate("step")
    def _check_step(self, proposal):
        n = self._data.n_steps if hasattr(self, "_data") else 1
        v = proposal["value"]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"step must be an int, got {type(v).__name__}")
        if not 1 <= v <= n:
            raise ValueError(f"step={v} is out of range; the search has steps 1 to {n}")
        return int(v)

    @traitlets.validate("alpha")
    def _check_alpha(self, proposal):
        # any exponent the search accepts (the default alpha is the search's own length_penalty)
        return check_length_penalty(proposal["value"], "alpha")

    @property
    def data(self) -> BeamData:
        """The checked, flattened search behind the widget."""
        return self._data

    @property
    def trace(self) -> BeamTrace:
        return self._trace

    def beam_at(self, step: int | None = None) -> list[tuple[str, float, float, str]]:
        """What the panel under the tree lists at ``step``: the live hypotheses of that step and those finished
        by then, as (text, log P, log P / N^alpha, "live" | "finished"), best first by the widget's scoring."""
        d = self._data
        t = self.step if step is None else check_index(step, d.n_steps + 1, "step")
        rows = [(n, "live") for n in range(len(d.step)) if d.step[n] == t and d.status[n] == KEPT] + \
               [(n, "finished") for n in range(len(d.step)) if 0 < d.step[n] <= t and d.status[n] == FINISHED]
        out = [(d.text(n, self.joiner), float(d.logprob[n]), d.score(n, self.alpha), what) for n, what in rows]
        return sorted(out, key=lambda r: r[2] if self.normalise else r[1], reverse=True)

    def to_figure(self, step: int | None = None, show_pruned: bool | None = None):
        """Static matplotlib rendering (for print/PDF): the tree up to ``step``, as the browser lays it out."""
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D

        d = self._data
        t = self.step if step is None else check_index(step, d.n_steps + 1, "step")
        pruned = self.show_pruned if show_pruned is None else bool(show_pruned)
        shown = [n for n in range(len(d.step)) if d.step[n] <= t and (pruned or d.status[n] != PRUNED)]
        row = {}
        for s in range(t + 1):
            for i, n in enumerate([n for n in shown if d.step[n] == s]):
                row[n] = i
        rows = max(row.values()) + 1
        width = max(len(plain(lab)) for lab in (d.labels[n] for n in shown))
        fig = Figure(figsize=(1.2 + (t + 1) * (0.9 + 0.075 * min(width, 14)), 1.0 + 0.28 * rows),
                     layout="constrained")
        ax = fig.subplots()
        colours = {KEPT: "#3b528b", PRUNED: "#b0b0b0", FINISHED: "#1b7837", GREEDY_ONLY: "#e4572e"}
        on_greedy = set(d.greedy[:t])
        for n in shown:
            if d.parent[n] >= 0:
                p = int(d.parent[n])
                ax.plot([d.step[p], d.step[n]], [row[p], row[n]], color=colours[d.status[n]], lw=0.8,
                        alpha=0.4 if d.status[n] == PRUNED else 0.9, zorder=1)
        gpath = [0] + [n for n in d.greedy[:t] if n in row]
        ax.plot([d.step[n] for n in gpath], [row[n] for n in gpath], color="#e4572e", lw=2.2, ls="--", zorder=2)
        for n in shown:
            st = int(d.status[n])
            score = d.score(n, self.alpha) if self.normalise else float(d.logprob[n])
            label = plain(d.labels[n])[:14] + ("" if n == 0 else f"  {score:.2f}")
            ax.text(d.step[n], row[n], label, ha="center", va="center", fontsize=8, zorder=3,
                    color="#595959" if st == PRUNED else "black",  # 7:1 on white: pruned reads, dimmed
                    bbox=dict(boxstyle="round,pad=0.25", lw=1.6 if n in on_greedy else 0.8,
                              fc="#eef1f8" if st == KEPT else "#e5f5e0" if st == FINISHED else "white",
                              ec="#e4572e" if n in on_greedy else colours[st],
                              ls="--" if st == GREEDY_ONLY else ":" if st == PRUNED else "-"))  # not colour alone
        ax.set_xlim(-0.5, t + 0.5)
        ax.set_ylim(rows - 0.5, -0.8)
        ax.set_xticks(range(t + 1), ["prompt"] + [f"step {s}" for s in range(1, t + 1)], fontsize=8)
        ax.set_yticks([])
        for side in ("left", "right", "top"):
            ax.spines[side].set_visible(False)
        score = f"log P / N^{self.alpha:g}" if self.normalise else "log P"
        handles = [Line2D([], [], color=colours[k], lw=2, ls=ls, label=lab) for k, lab, ls in
                   ((KEPT, "kept", "-"), (PRUNED, "pruned (dotted)", ":"), (FINISHED, "finished", "-"))]
        handles.append(Line2D([], [], color="#e4572e", lw=2, ls="--", label="greedy"))
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.06 - 0.6 / (1.0 + 0.28 * rows)),
                  fontsize=8, frameon=False, ncol=4)
        ax.set_title(self.title or f"beam of {self._trace.beam_size}, nodes labelled with {score}", fontsize=9)
        return fig
