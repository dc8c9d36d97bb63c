"""Export the shipped checkpoints for the browser: ONNX graphs (``torch.onnx``, the dynamo exporter) plus a manifest.

``export_all(out)`` writes, for each model of :data:`MODELS`, its graphs (:mod:`seqviz.live.graphs`) as ``.onnx``
files and ``manifest.json``: per model the checkpoint's SHA-256, the vocabulary, the sizes the page needs (context,
layers, heads, special ids), its cropping rule and each file's own SHA-256 and size (the page checks both before it
runs a graph), and the limits of every request (:mod:`seqviz.live.limits`). ``stale(manifest)`` says why an export
no longer matches the package: another checkpoint, other code (:data:`SOURCES`: the graphs, the model code they call,
the dates task), an entry that is not what the shipped checkpoint gives now, files missing or changed;
``check_folder(out)`` raises with those reasons.

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
from .limits import crop_rule, limits

__all__ = ["MODELS", "OPSET", "FORMAT", "DEFAULT_OUT", "SOURCES", "export_all", "export_model", "store_half", "stale",
           "check_folder", "StaleExport", "exporter_sha256", "read_manifest", "manifest_entry", "make_manifest",
           "graph_files"]

#: the manifest's format; the page refuses another (2: cropping rules, limits; the page checks each file's SHA-256)
FORMAT = 2
OPSET = 20
DEFAULT_OUT = Path("_build") / "live-models"
#: a weight is stored as float16 when it has at least this many values and float16 holds each exactly
HALF_MIN_VALUES = 1024
#: the seqviz package folder whose SOURCES the export's hash covers
PACKAGE = Path(__file__).resolve().parents[1]
#: the code an export depends on, relative to PACKAGE: the graphs and this exporter, the limits, the model code the
#: graphs call (projections and head merge, LayerNorm, position tables, feed-forward layers, the LSTM cell's
#: forward_traced, the recurrent LM's embedding and output layer), the loaders that rebuild each model from its
#: checkpoint, the vocabulary class and the dates task (the manifest's formats). tests/test_live_export.py checks that
#: every seqviz module graphs.py imports, and every one the builders below import, is here.
SOURCES = ("live/graphs.py", "live/export.py", "live/limits.py",
           "transformer/layers.py", "transformer/lm.py", "transformer/encdec.py", "transformer/pretrained.py",
           "lstm.py", "rnn/layer.py", "rnn/lm.py", "char_lstm.py", "data/text.py", "data/tasks.py")


class StaleExport(ValueError):
    """An export that no longer matches the package's checkpoints or graph code."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def exporter_sha256(package: Path | None = None) -> str:
    """SHA-256 of the code an export depends on (:data:`SOURCES`, each file's path and bytes): an export made by other
    code is stale even from the same checkpoint."""
    root = PACKAGE if package is None else Path(package)
    h = hashlib.sha256()
    for name in SOURCES:
        data = (root / name).read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


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
            "causal": bool(c.causal), "crop": crop_rule("char_lm", c.max_len)}
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
            "d_emb": c.d_emb, "specials": specials, "gates": list(graphs.GATE_NAMES), "crop": crop_rule("char_lstm")}
    return {"step": graph}, meta


def _dates():
    from seqviz.data.tasks import date_patterns
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
            "task": info["recipe"]["task"], "formats": date_patterns(), "crop": crop_rule("dates", c.max_len)}
    return {"encoder": enc, "decoder": dec}, meta


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


def graph_files(name: str) -> dict[str, str]:
    """The file name of each graph (role -> file) of model ``name``: ``name.onnx``, or ``name_role.onnx`` for a model
    of several graphs."""
    roles = _built(name)[0]
    return {role: f"{name}.onnx" if len(roles) == 1 else f"{name}_{role}.onnx" for role in roles}


def _built(name: str) -> tuple[dict[str, GraphSpec], dict]:
    specs = _specs()
    if name not in specs:
        raise ValueError(f"no exported model is called {name!r}; the models are {', '.join(MODELS)}")
    return specs[name].build()


def manifest_entry(name: str, folder: str | Path, built: tuple[dict[str, GraphSpec], dict] | None = None) -> dict:
    """The manifest entry of model ``name`` whose graphs lie in ``folder`` (under :func:`graph_files`' names): the
    checkpoint and its SHA-256, each file's SHA-256, size, inputs and outputs, and what the page needs (vocabulary,
    sizes, the cropping rule, the date forms), read from the shipped checkpoint."""
    graph_specs, meta = built if built is not None else _built(name)
    spec = _specs()[name]
    files = {}
    for role, file in graph_files(name).items():
        data = (Path(folder) / file).read_bytes()
        g = graph_specs[role]
        files[role] = {"file": file, "sha256": _sha256(data), "bytes": len(data), "inputs": list(g.input_names),
                       "outputs": list(g.module.output_names)}
    return {"checkpoint": spec.checkpoint, "checkpoint_sha256": spec.sha256, "files": files, **meta}


def make_manifest(entries: dict[str, dict]) -> dict:
    """The manifest of an export holding ``entries`` (model -> :func:`manifest_entry`): the format, the versions, the
    hash of the code it was made by and the limits of every live request (seqviz.live.limits)."""
    return {"format": FORMAT, "seqviz": __version__, "torch": torch.__version__, "opset": OPSET,
            "exporter_sha256": exporter_sha256(), "limits": limits(), "models": entries}


def export_model(name: str, out: Path, log: Callable[[str], None] = print) -> dict:
    """Export model ``name`` of :data:`MODELS` into ``out``; return its manifest entry (with ``seconds``, the
    export's wall time, which the manifest does not keep)."""
    t0 = time.perf_counter()
    built = _built(name)
    for role, file in graph_files(name).items():
        export_graph(built[0][role], out / file)
    entry = manifest_entry(name, out, built)
    seconds = time.perf_counter() - t0
    files = entry["files"].values()
    log(f"{name}: {', '.join(f['file'] for f in files)} ({sum(f['bytes'] for f in files) / 1e6:.2f} MB) in "
        f"{seconds:.1f} s")
    return {**entry, "seconds": seconds}


def export_all(out: str | Path = DEFAULT_OUT, names=MODELS, log: Callable[[str], None] = print) -> dict:
    """Export ``names`` into the folder ``out`` and write its ``manifest.json``; return the manifest (each entry with
    the export's ``seconds``, which the file leaves out)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    manifest = make_manifest({name: export_model(name, out, log) for name in names})
    kept = {**manifest, "models": {n: {k: v for k, v in e.items() if k != "seconds"}
                                   for n, e in manifest["models"].items()}}
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


def _shown(value) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def stale(manifest: dict, folder: str | Path | None = None) -> list[str]:
    """Why the export described by ``manifest`` no longer matches this package (empty: it is up to date): a model
    missing; exported from another checkpoint than the one shipped (its SHA-256) or by other code (:data:`SOURCES`);
    limits other than seqviz.live.limits'; an entry whose vocabulary, sizes, cropping rule or date forms are not
    what the shipped checkpoint and the dates task give now; graphs missing from the entry or listed with other
    inputs or outputs; and (with ``folder``) a file missing, of another length or changed since the export."""
    if manifest.get("format") != FORMAT:
        return [f"the manifest has format {manifest.get('format')!r}, this seqviz writes format {FORMAT}"]
    reasons, specs, entries = [], _specs(), manifest.get("models", {})
    if manifest.get("exporter_sha256") != exporter_sha256():
        reasons.append("the export was made by other code than this seqviz's (exporter_sha256 differs: the graphs, "
                       "the model code they call or the dates task changed)")
    if manifest.get("limits") != limits():
        reasons.append(f"its limits {_shown(manifest.get('limits'))} are not seqviz.live.limits' {_shown(limits())}")
    reasons += [f"{name}: not a model this seqviz exports" for name in entries if name not in specs]
    for name in MODELS:
        entry = entries.get(name)
        if entry is None:
            reasons.append(f"{name}: not exported")
            continue
        if entry.get("checkpoint_sha256") != specs[name].sha256:
            reasons.append(f"{name}: exported from checkpoint SHA-256 {entry.get('checkpoint_sha256')}, but the "
                           f"shipped {specs[name].checkpoint} has {specs[name].sha256}")
        graph_specs, meta = _built(name)
        for key, want in meta.items():
            if entry.get(key) != want:
                reasons.append(f"{name}: its {key} {_shown(entry.get(key))} is not the shipped model's "
                               f"{_shown(want)}")
        files, want_files = entry.get("files") or {}, graph_files(name)
        if set(files) != set(want_files):
            reasons.append(f"{name}: lists the graphs {sorted(files)}, the model has {sorted(want_files)}")
        for role, f in files.items():
            if role not in want_files:
                continue
            g = graph_specs[role]
            if (f.get("file"), f.get("inputs"), f.get("outputs")) != (want_files[role], list(g.input_names),
                                                                        list(g.module.output_names)):
                reasons.append(f"{name}: its {role} graph is listed as {_shown(f.get('file'))} with inputs "
                               f"{f.get('inputs')} and outputs {f.get('outputs')}, not {want_files[role]} with "
                               f"{list(g.input_names)} and {list(g.module.output_names)}")
                continue
            if not (isinstance(f.get("bytes"), int) and f["bytes"] > 0 and isinstance(f.get("sha256"), str)
                    and len(f["sha256"]) == 64):
                reasons.append(f"{name}: {f['file']} has no size or SHA-256 in the manifest")
                continue
            if folder is None:
                continue
            path = Path(folder) / f["file"]
            if not path.is_file():
                reasons.append(f"{name}: {f['file']} is missing")
            elif path.stat().st_size != f["bytes"]:
                reasons.append(f"{name}: {f['file']} has {path.stat().st_size} bytes, the manifest says {f['bytes']}")
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
