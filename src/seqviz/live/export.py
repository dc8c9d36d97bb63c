"""Export the shipped checkpoints for the browser: ONNX graphs (``torch.onnx``, the dynamo exporter) plus a manifest.

``export_all(out)`` writes, for each model of :data:`MODELS`, its graphs (:mod:`seqviz.live.graphs`) as ``.onnx``
files and ``manifest.json``: per model the checkpoint's SHA-256, the vocabulary, the sizes the page needs (context,
layers, heads, special ids) and each file's own SHA-256 and size. ``stale(manifest)`` says why an export no longer
matches the package (another checkpoint, other graph code); ``check_folder(out)`` raises with those reasons.

Each graph is exported with ``dynamo=True``, opset :data:`OPSET`, dynamic batch and length dimensions
(``torch.export.Dim``; examples of size >= 2, since a size of 1 silently makes a dimension static) and one file per
graph (``external_data=False``). The page computes in float32, and so does every graph; the checkpoints hold float16
values, so :func:`store_half` stores each large weight that float16 holds exactly as float16 with a ``Cast`` to
float32 in front of its use (onnxruntime folds the cast when it loads the graph): the same numbers at half the bytes.
Exports are build outputs (``make live-models``), never committed.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from seqviz import __version__

from . import graphs

__all__ = ["MODELS", "OPSET", "FORMAT", "DEFAULT_OUT", "export_all", "export_model", "store_half", "stale",
           "check_folder", "StaleExport", "exporter_sha256", "read_manifest"]

#: the manifest's format; the page refuses another
FORMAT = 1
OPSET = 20
DEFAULT_OUT = Path("_build") / "live-models"
#: a weight is stored as float16 when it has at least this many values and float16 holds each exactly
HALF_MIN_VALUES = 1024


class StaleExport(ValueError):
    """An export that no longer matches the package's checkpoints or graph code."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def exporter_sha256() -> str:
    """SHA-256 of the code that defines the exported graphs (graphs.py and this file): an export made by other code
    is stale even from the same checkpoint."""
    here = Path(__file__).resolve().parent
    return _sha256(b"".join((here / name).read_bytes() for name in ("graphs.py", "export.py")))


# ----------------------------------------------------------------------------------------------------------------
# The models: checkpoint, graphs with example inputs and dynamic dimensions, what the page needs to know
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GraphSpec:
    """One graph to export: the module, example inputs (every dynamic size >= 2), input names and dynamic shapes."""

    module: torch.nn.Module
    args: tuple
    input_names: tuple[str, ...]
    dynamic_shapes: tuple


@dataclass(frozen=True)
class ModelSpec:
    checkpoint: str             # the checkpoint's file name in seqviz/checkpoints
    sha256: str                 # the SHA-256 the package loads it with
    build: Callable[[], tuple[dict[str, GraphSpec], dict]]   # -> ({role: graph}, what the page needs)


def _char_lm():
    from seqviz.transformer.pretrained import load_char_lm

    model, itos, _ = load_char_lm()
    c = model.config
    B, T = torch.export.Dim("B", min=1, max=256), torch.export.Dim("T", min=1, max=c.max_len)
    P = torch.export.Dim("P", min=0, max=c.max_len - 1)                          # tokens cached before
    ids = torch.arange(2 * 3).remainder(c.vocab_size).view(2, 3)                 # (2, 3) example ids
    d_k = c.d_model // c.num_heads
    past = torch.zeros(2, c.num_layers, c.num_heads, 4, d_k)                     # (2, L, H, 4, d_k)
    graph = GraphSpec(graphs.CharLMGraph(model), (ids, past, past.clone()), ("ids", "past_k", "past_v"),
                      ({0: B, 1: T}, {0: B, 3: P}, {0: B, 3: P}))
    meta = {"kind": "transformer_lm", "itos": list(itos), "vocab_size": c.vocab_size, "context": c.max_len,
            "layers": c.num_layers, "heads": c.num_heads, "d_model": c.d_model, "d_k": c.d_model // c.num_heads,
            "causal": bool(c.causal)}
    return {"lm": graph}, meta


def _char_lstm():
    from seqviz.char_lstm import load_char_lstm

    model, vocab, _ = load_char_lstm()
    c = model.config
    L, d_h = c.num_layers, c.d_h
    B = torch.export.Dim("B", min=1, max=256)
    x = torch.tensor([vocab.bos_id, len(vocab) - 1])                              # (2,) example ids
    h, cell = torch.zeros(L, 2, d_h), torch.zeros(L, 2, d_h)                      # (L, 2, d_h)
    graph = GraphSpec(graphs.LSTMStepGraph(model), (x, h, cell), ("x", "h_prev", "c_prev"),
                      ({0: B}, {1: B}, {1: B}))
    specials = {"pad": vocab.pad_id, "unk": vocab.unk_id, "bos": vocab.bos_id, "eos": vocab.eos_id}
    meta = {"kind": "lstm_lm", "itos": list(vocab.itos), "vocab_size": c.vocab_size, "layers": L, "d_h": d_h,
            "d_emb": c.d_emb, "specials": specials, "gates": list(graphs.GATE_NAMES)}
    return {"step": graph}, meta


def _dates():
    from seqviz.transformer.pretrained import load_checkpoint

    model, vocab, info = load_checkpoint("dates_transformer")
    c = model.config
    B = torch.export.Dim("B", min=1, max=256)
    S, T = torch.export.Dim("S", min=1, max=c.max_len), torch.export.Dim("T", min=1, max=c.max_len)
    src = torch.arange(2 * 6).remainder(c.src_vocab_size - 4).add(4).view(2, 6)  # (2, 6) example ids, no specials
    tgt = torch.arange(2 * 5).remainder(c.tgt_vocab_size).view(2, 5)             # (2, 5)
    memory = torch.zeros(2, 6, c.d_model)                                          # (2, 6, d_model)
    enc = GraphSpec(graphs.EncoderGraph(model), (src,), ("src",), ({0: B, 1: S},))
    dec = GraphSpec(graphs.DecoderGraph(model), (tgt, memory), ("tgt_in", "memory"), ({0: B, 1: T}, {0: B, 1: S}))
    src_itos, tgt_itos = list(vocab["src"]), list(vocab["tgt"])
    meta = {"kind": "encoder_decoder", "src_itos": src_itos, "tgt_itos": tgt_itos, "max_len": c.max_len,
            "layers": c.num_layers, "heads": c.num_heads, "d_model": c.d_model,
            "src_specials": {s: src_itos.index(t) for s, t in (("pad", "<pad>"), ("unk", "<unk>"))},
            "bos_id": c.bos_id, "eos_id": c.eos_id, "pad_id": c.pad_id,
            "task": info["recipe"]["task"], "formats": date_patterns()}
    return {"encoder": enc, "decoder": dec}, meta


def date_patterns() -> dict[str, str]:
    """A regular expression for each surface form of the dates task (``seqviz.data.tasks.DATE_FORMATS``), made from
    the form's own text for a probe date, so the page can say when a date is written in a form the model never saw.
    It checks the shape (names, numbers, punctuation), not the calendar."""
    import datetime
    import re

    from seqviz.data.tasks import _MONTHS, _WEEKDAYS, DATE_FORMATS

    probe = datetime.date(2033, 11, 22)                                           # every field tells itself apart
    month, weekday = _MONTHS[probe.month - 1], _WEEKDAYS[probe.weekday()]
    any_of = lambda words: "(?:" + "|".join(words) + ")"                          # noqa: E731
    fields = [(weekday, any_of(_WEEKDAYS)),                                       # "November" is cut before "Nov"
              (month, any_of(_MONTHS)), (month.lower(), any_of(m.lower() for m in _MONTHS)),
              (month[:3], any_of(m[:3] for m in _MONTHS)),
              (month[:3].upper(), any_of(m[:3].upper() for m in _MONTHS)),
              ("22nd", r"\d{1,2}(?:st|nd|rd|th)"), ("2033", r"\d{4}"), ("33", r"\d{2}"), ("22", r"\d{1,2}"),
              ("11", r"\d{1,2}")]
    literal = lambda text: re.escape(text).replace("\\ ", " ")                  # noqa: E731  (JS reads it too)
    out = {}
    for form, write in DATE_FORMATS.items():
        parts = [(False, write(probe))]                                           # (is a pattern, text)
        for field, pattern in fields:
            parts = [q for is_pattern, text in parts
                     for q in ([(True, text)] if is_pattern else _cut(text, field, pattern))]
        out[form] = "^" + "".join(t if is_pattern else literal(t) for is_pattern, t in parts) + "$"
    return out


def _cut(text: str, field: str, pattern: str) -> list[tuple[bool, str]]:
    """``text`` as literal pieces with ``pattern`` wherever ``field`` was."""
    pieces = text.split(field)
    out = [(False, pieces[0])]
    for piece in pieces[1:]:
        out += [(True, pattern), (False, piece)]
    return [(is_pattern, t) for is_pattern, t in out if t]


def _specs() -> dict[str, ModelSpec]:
    from seqviz.char_lstm import CHECKPOINT_SHA256
    from seqviz.transformer.pretrained import SHA256

    return {"char_lm": ModelSpec("shakespeare_char.pt", SHA256["shakespeare_char"], _char_lm),
            "char_lstm": ModelSpec("shakespeare_char_lstm.pt", CHECKPOINT_SHA256, _char_lstm),
            "dates": ModelSpec("dates_transformer.pt", SHA256["dates_transformer"], _dates)}


#: the exported models: chapter 7's character transformer LM, chapter 4's character LSTM, chapter 7's dates model
MODELS = ("char_lm", "char_lstm", "dates")


# ----------------------------------------------------------------------------------------------------------------
# Export
# ----------------------------------------------------------------------------------------------------------------
def store_half(model, min_values: int = HALF_MIN_VALUES) -> int:
    """Store every float32 initializer of the ONNX ``model`` with at least ``min_values`` values that float16 holds
    exactly as float16, read through a ``Cast`` to float32 under its old name (in place). Returns the bytes saved."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    g = model.graph
    casts, kept, saved = [], [], 0
    for init in g.initializer:
        a = numpy_helper.to_array(init)
        half = a.astype(np.float16)
        if a.dtype != np.float32 or a.size < min_values or not np.array_equal(half.astype(np.float32), a):
            kept.append(init)
            continue
        stored = numpy_helper.from_array(half, f"{init.name}__f16")
        kept.append(stored)
        casts.append(helper.make_node("Cast", [stored.name], [init.name], to=TensorProto.FLOAT,
                                      name=f"{init.name}__cast"))
        saved += a.nbytes - half.nbytes
    del g.initializer[:]
    g.initializer.extend(kept)
    nodes = casts + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    return saved


@contextlib.contextmanager
def _quiet(logger: str):
    """Silence ``logger``'s warnings (the exporter's "torchvision is not installed" lines) for a block."""
    log = logging.getLogger(logger)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def export_graph(spec: GraphSpec, path: Path) -> None:
    """Export one graph to ``path`` (one file, opset :data:`OPSET`, half-stored weights)."""
    import onnx

    spec.module.eval()
    with torch.no_grad(), warnings.catch_warnings(), _quiet("torch.onnx"):
        warnings.simplefilter("ignore", (FutureWarning, UserWarning))             # the exporter's own notices
        program = torch.onnx.export(spec.module, spec.args, dynamo=True, dynamic_shapes=spec.dynamic_shapes,
                                     input_names=list(spec.input_names),
                                     output_names=list(spec.module.output_names), opset_version=OPSET,
                                     external_data=False, verbose=False)
    model = program.model_proto
    store_half(model)
    onnx.checker.check_model(model, full_check=True)
    path.write_bytes(model.SerializeToString())


def export_model(name: str, out: Path, log: Callable[[str], None] = print) -> dict:
    """Export model ``name`` of :data:`MODELS` into ``out``; return its manifest entry (with ``seconds``, the
    export's wall time, which the manifest does not keep)."""
    specs = _specs()
    if name not in specs:
        raise ValueError(f"no exported model is called {name!r}; the models are {', '.join(MODELS)}")
    spec = specs[name]
    t0 = time.perf_counter()
    graph_specs, meta = spec.build()
    files = {}
    for role, g in graph_specs.items():
        path = out / (f"{name}.onnx" if len(graph_specs) == 1 else f"{name}_{role}.onnx")
        export_graph(g, path)
        data = path.read_bytes()
        files[role] = {"file": path.name, "sha256": _sha256(data), "bytes": len(data),
                       "inputs": list(g.input_names), "outputs": list(g.module.output_names)}
    seconds = time.perf_counter() - t0
    log(f"{name}: {', '.join(f['file'] for f in files.values())} "
        f"({sum(f['bytes'] for f in files.values()) / 1e6:.2f} MB) in {seconds:.1f} s")
    return {"checkpoint": spec.checkpoint, "checkpoint_sha256": spec.sha256, "files": files, **meta,
            "seconds": seconds}


def export_all(out: str | Path = DEFAULT_OUT, names=MODELS, log: Callable[[str], None] = print) -> dict:
    """Export ``names`` into the folder ``out`` and write its ``manifest.json``; return the manifest (each entry with
    the export's ``seconds``, which the file leaves out)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    entries = {name: export_model(name, out, log) for name in names}
    manifest = {"format": FORMAT, "seqviz": __version__, "torch": torch.__version__, "opset": OPSET,
                "exporter_sha256": exporter_sha256(), "models": entries}
    kept = {**manifest, "models": {n: {k: v for k, v in e.items() if k != "seconds"} for n, e in entries.items()}}
    (out / "manifest.json").write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


# ----------------------------------------------------------------------------------------------------------------
# Staleness
# ----------------------------------------------------------------------------------------------------------------
def read_manifest(folder: str | Path) -> dict:
    path = Path(folder) / "manifest.json"
    if not path.is_file():
        raise FileNotFoundError(f"no live-model export in {folder} (manifest.json missing): run `make live-models` "
                                f"(python -m seqviz.live export --out {folder})")
    return json.loads(path.read_text(encoding="utf-8"))


def stale(manifest: dict, folder: str | Path | None = None) -> list[str]:
    """Why the export described by ``manifest`` no longer matches this package (empty: it is up to date): a model
    missing, exported from another checkpoint than the one shipped (its SHA-256), by other graph code, or (with
    ``folder``) a file missing or changed since the export."""
    if manifest.get("format") != FORMAT:
        return [f"the manifest has format {manifest.get('format')!r}, this seqviz writes format {FORMAT}"]
    reasons, specs, entries = [], _specs(), manifest.get("models", {})
    if manifest.get("exporter_sha256") != exporter_sha256():
        reasons.append("the export was made by other graph code than this seqviz.live (exporter_sha256 differs)")
    for name in MODELS:
        entry = entries.get(name)
        if entry is None:
            reasons.append(f"{name}: not exported")
            continue
        if entry.get("checkpoint_sha256") != specs[name].sha256:
            reasons.append(f"{name}: exported from checkpoint SHA-256 {entry.get('checkpoint_sha256')}, but the "
                           f"shipped {specs[name].checkpoint} has {specs[name].sha256}")
        for role, f in entry.get("files", {}).items() if folder is not None else ():
            path = Path(folder) / f["file"]
            if not path.is_file():
                reasons.append(f"{name}: {f['file']} is missing")
            elif _sha256(path.read_bytes()) != f["sha256"]:
                reasons.append(f"{name}: {f['file']} changed since the export (its SHA-256 differs)")
    return reasons


def check_folder(folder: str | Path = DEFAULT_OUT) -> dict:
    """The manifest of the export in ``folder``, or :class:`StaleExport` saying every way it is stale."""
    manifest = read_manifest(folder)
    reasons = stale(manifest, folder)
    if reasons:
        raise StaleExport(f"the live-model export in {folder} is stale: " + "; ".join(reasons)
                          + ". Re-export with `make live-models` (python -m seqviz.live export)")
    return manifest
