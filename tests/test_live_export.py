"""seqviz.live: the shipped checkpoints exported for the browser run equal to PyTorch in onnxruntime, with dynamic
lengths, and an export that no longer matches the package is refused.

The export runs once per session (15-90 s on a busy 2-core machine: the dynamo exporter traces each graph) into a
temporary folder; every check below runs onnxruntime (Python, one thread) on that folder's files.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from seqviz.live import export as live_export
from seqviz.live import graphs

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is a dev extra: pip install -e '.[dev]'")

ROOT = Path(__file__).resolve().parents[1]
TOL = 1e-4
PROMPT = "ROMEO.\nBut, soft! what light through yonder window breaks?\nIt is the east"   # 73 characters
DATES = ["3rd of March 1999", "March 3, 1999", "03-MAR-99", "Wednesday the 3rd of March 1999", "12/25/2031"]


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    """(folder, manifest, seconds) of one export of every model, made once per test session; or, where the build
    folder holds one that check_folder finds up to date with this package (`make test` builds the book, and so
    exports, just before pytest: the same checkpoints, exporter code, limits and files), a copy of that one (seconds
    None), which is what the page serves."""
    out = tmp_path_factory.mktemp("live-models")
    build = ROOT / live_export.DEFAULT_OUT
    try:
        live_export.check_folder(build)
    except (FileNotFoundError, live_export.StaleExport) as e:
        print(f"\nexporting here: {e}")
    else:
        shutil.copytree(build, out, dirs_exist_ok=True)
        print(f"\nthe build's export in {build} is up to date: tested as it is")
        return out, live_export.read_manifest(out), None
    t0 = time.perf_counter()
    manifest = live_export.export_all(out, log=lambda s: None)
    seconds = time.perf_counter() - t0
    each = ", ".join(f"{n} {e['seconds']:.1f} s" for n, e in manifest["models"].items())
    print(f"\nexported {each}; {seconds:.1f} s in all")
    return out, manifest, seconds


def session(exported, name, role):
    folder, manifest, _ = exported
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    path = folder / manifest["models"][name]["files"][role]["file"]
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def run(sess, **feeds):
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, {k: np.ascontiguousarray(v) for k, v in feeds.items()})))


def close(got, want, what):
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else want
    assert got.shape == want.shape, f"{what}: shape {got.shape}, PyTorch {want.shape}"
    diff = float(np.abs(got - want).max())
    assert diff <= TOL, f"{what}: max |onnxruntime - PyTorch| = {diff:.2e} > {TOL}"
    return diff


# -- the character transformer LM ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def char_lm():
    from seqviz.transformer import load_char_lm

    model, itos, _ = load_char_lm()
    return model, {c: i for i, c in enumerate(itos)}


def lm_run(exported, ids, past=None):
    """The char LM graph on ids (B, T) after ``past`` (k, v) (None: nothing read before)."""
    B = ids.shape[0]
    if past is None:
        past = (np.zeros((B, 4, 4, 0, 40), np.float32),) * 2                    # (B, L, H, 0, d_k)
    return run(session(exported, "char_lm", "lm"), ids=np.asarray(ids), past_k=past[0], past_v=past[1])


@pytest.mark.parametrize("T", [64, 9])
def test_char_lm_logits_attention_and_qkv_equal_pytorch(exported, char_lm, T):
    from seqviz.transformer.inspect import queries_keys_values

    model, stoi = char_lm
    ids = torch.tensor([[stoi[ch] for ch in PROMPT[-T:]]])                       # (1, T)
    out = lm_run(exported, ids.numpy())
    with torch.no_grad():
        logits, _, attn = model(ids, return_attention=True)                       # (1, T, V), (1, L, H, T, T)
    close(out["logits"], logits, "logits")
    close(out["attention"], attn, "attention")
    qkv = queries_keys_values(model, ids[0])                                     # (L, H, T, d_k) each
    for name in "qkv":
        close(out[name][0], getattr(qkv, name), name)
    assert out["attention"].shape == (1, 4, 4, T, T)                              # the length is really dynamic


def test_char_lm_runs_a_batch_of_rows(exported, char_lm):
    model, stoi = char_lm
    ids = torch.tensor([[stoi[ch] for ch in PROMPT[i:i + 5]] for i in range(3)])  # (3, 5)
    out = lm_run(exported, ids.numpy())
    with torch.no_grad():
        close(out["logits"], model(ids)[0], "logits of 3 rows")


def test_char_lm_steps_through_its_key_value_cache_as_the_model_does(exported, char_lm):
    """The graph's k and v are the cache: reading 2 then 1 more token after a prefix of 20 gives the logits and the
    cache of ``TransformerLM.step`` (seqviz.decode's stepper)."""
    model, stoi = char_lm
    ids = torch.tensor([[stoi[ch] for ch in PROMPT[:23]]] * 2)                    # (2, 23), two rows
    out = lm_run(exported, ids[:, :20].numpy())
    state = None
    with torch.no_grad():
        logits, state = model.step(ids[:, :20], state)
        close(out["logits"][:, -1], logits, "logits after the prefix")
        for new in (ids[:, 20:22], ids[:, 22:23]):
            out = lm_run(exported, new.numpy(), (out["k"], out["v"]))
            logits, state = model.step(new, state)
            close(out["logits"][:, -1], logits, f"logits after {state.ids.shape[1]} tokens")
            for layer, kv in enumerate(state.caches):                             # (B, H, T_past, d_k) each
                close(out["k"][:, layer], kv.K, f"layer {layer} cached keys")
                close(out["v"][:, layer], kv.V, f"layer {layer} cached values")
    assert out["attention"].shape == (2, 4, 4, 1, 23)                             # one query, 23 keys


# -- the character LSTM ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("T", [40, 7])
def test_char_lstm_steps_give_the_gates_states_and_logits_of_pytorch(exported, T):
    from seqviz.char_lstm import load_char_lstm

    model, vocab, _ = load_char_lstm()
    ids = torch.tensor([vocab.encode(list(PROMPT[:T]))])                        # (1, T)
    sess = session(exported, "char_lstm", "step")
    L, d_h = model.config.num_layers, model.config.d_h
    h = c = np.zeros((L, 1, d_h), np.float32)
    steps = []
    for t in range(T):                                                            # the page's loop over time
        out = run(sess, x=ids[:, t].numpy(), h_prev=h, c_prev=c)
        h, c = out["h"], out["c"]
        steps.append(out)
    with torch.no_grad():
        logits, _, (h_n, c_n) = model(ids, return_state=True)                     # (1, T, V), (L, 1, d_h) each
    traces = model.trace(ids)                                                     # L x LSTMTrace (1, T, d_h)
    close(np.stack([s["logits"] for s in steps], 1), logits, "logits")
    for layer, tr in enumerate(traces):
        for g in graphs.GATE_NAMES:
            close(np.stack([s[g][layer] for s in steps], 1), getattr(tr, g), f"layer {layer} gate {g}")
        close(np.stack([s["c"][layer] for s in steps], 1), tr.c, f"layer {layer} c")
        close(np.stack([s["h"][layer] for s in steps], 1), tr.h, f"layer {layer} h")
    close(h, h_n, "h_T")
    close(c, c_n, "c_T")


# -- the dates encoder-decoder -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dates():
    from seqviz.transformer.pretrained import load_checkpoint

    model, vocab, _ = load_checkpoint("dates_transformer")
    return model, {c: i for i, c in enumerate(vocab["src"])}


@pytest.mark.parametrize("text, T", [(DATES[0], 11), (DATES[2], 4)])
def test_dates_encoder_and_decoder_equal_pytorch(exported, dates, text, T):
    model, src_stoi = dates
    src = torch.tensor([[src_stoi[ch] for ch in text]])                           # (1, S)
    tgt_in = torch.tensor([[model.config.bos_id] + [4 + i % 10 for i in range(T - 1)]])   # (1, T) <s> then digits
    enc = run(session(exported, "dates", "encoder"), src=src.numpy())
    dec = run(session(exported, "dates", "decoder"), tgt_in=tgt_in.numpy(), memory=enc["memory"])
    with torch.no_grad():
        memory, enc_w = model.encode(src, need_weights=True)                      # (1, S, d), (1, L, H, S, S)
        logits, _, w = model(src, tgt_in=tgt_in, return_attention=True)
    close(enc["memory"], memory, "memory")
    close(enc["attention"], enc_w, "encoder self-attention")
    close(dec["logits"], logits, "decoder logits")
    close(dec["self_attention"], w["decoder"], "decoder self-attention")
    close(dec["cross_attention"], w["cross"], "cross-attention")
    assert dec["cross_attention"].shape[-2:] == (T, len(text))                   # both lengths are dynamic


def test_dates_greedy_through_the_exported_graphs_decodes_as_the_model(exported, dates):
    """Five dates decoded greedily by re-reading the prefix through the decoder graph (what the page does) give the
    ids of ``EncoderDecoderTransformer.greedy`` (cached, batched)."""
    model, src_stoi = dates
    enc, dec = session(exported, "dates", "encoder"), session(exported, "dates", "decoder")
    c = model.config
    for text in DATES:
        src = torch.tensor([[src_stoi[ch] for ch in text]])
        memory = run(enc, src=src.numpy())["memory"]
        ids = [c.bos_id]
        for _ in range(c.max_len):
            logits = run(dec, tgt_in=np.array([ids]), memory=memory)["logits"]    # (1, len(ids), V_tgt)
            ids.append(int(logits[0, -1].argmax()))
            if ids[-1] == c.eos_id:
                break
        assert ids[1:] == model.greedy(src)[0], text


def test_every_graph_declares_its_lengths_and_batch_dynamic(exported):
    import onnx

    folder, manifest, _ = exported
    for name, entry in manifest["models"].items():
        for role, f in entry["files"].items():
            model = onnx.load(folder / f["file"])
            assert model.opset_import[0].version >= 18
            for inp in model.graph.input:
                dims = inp.type.tensor_type.shape.dim
                symbolic = [d.dim_param for d in dims if d.dim_param]
                want = {"x": 1, "h_prev": 1, "c_prev": 1}.get(inp.name, 2)       # batch (and a length)
                assert len(symbolic) == want, f"{f['file']} input {inp.name}: {dims}"


def test_weights_are_stored_half_and_computed_in_float32(exported):
    import onnx
    from onnx import TensorProto

    folder, manifest, _ = exported
    model = onnx.load(folder / manifest["models"]["char_lm"]["files"]["lm"]["file"])
    halves = [i for i in model.graph.initializer if i.data_type == TensorProto.FLOAT16]
    casts = {n.input[0]: n for n in model.graph.node if n.op_type == "Cast"}
    assert len(halves) >= 20 and all(casts[i.name].attribute[0].i == TensorProto.FLOAT for i in halves)
    assert manifest["models"]["char_lm"]["files"]["lm"]["bytes"] < 3e6              # 5.1 MB if stored float32


def test_store_half_keeps_what_float16_cannot_hold(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    exact = np.arange(2048, dtype=np.float32).reshape(2, 1024) / 8                # float16 holds these exactly
    inexact = exact + np.float32(1e-3)                                             # these it does not
    small = np.full((1,), 0.5, np.float32)                                       # too small to bother
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, None])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, None])
    nodes = [helper.make_node("Add", ["x", "a"], ["s"]), helper.make_node("Add", ["s", "b"], ["t"]),
             helper.make_node("Add", ["t", "c"], ["y"])]
    inits = [numpy_helper.from_array(exact, "a"), numpy_helper.from_array(inexact, "b"),
             numpy_helper.from_array(small, "c")]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 20)])
    saved = live_export.store_half(model)
    assert saved == exact.nbytes // 2
    kinds = {i.name: i.data_type for i in model.graph.initializer}
    assert kinds == {"a__f16": TensorProto.FLOAT16, "b": TensorProto.FLOAT, "c": TensorProto.FLOAT}
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    inp = np.ones((2, 1024), np.float32)
    assert np.array_equal(sess.run(None, {"x": inp})[0], inp + exact + inexact + small)


# -- the manifest and its staleness check ----------------------------------------------------------------------------
def test_the_manifest_holds_what_the_page_needs(exported):
    folder, manifest, _ = exported
    on_disk = json.loads((folder / "manifest.json").read_text())
    assert on_disk["format"] == live_export.FORMAT and on_disk["opset"] >= 18
    m = on_disk["models"]
    assert set(m) == set(live_export.MODELS)
    assert m["char_lm"]["context"] == 64 and len(m["char_lm"]["itos"]) == m["char_lm"]["vocab_size"] == 84
    assert m["char_lstm"]["specials"] == {"pad": 0, "unk": 1, "bos": 2, "eos": 3} and m["char_lstm"]["layers"] == 2
    assert m["dates"]["tgt_itos"][m["dates"]["eos_id"]] == "</s>" and m["dates"]["max_len"] == 40
    for entry in m.values():
        assert "seconds" not in entry                                             # the export time is printed only
        for f in entry["files"].values():
            assert (folder / f["file"]).stat().st_size == f["bytes"]
    assert live_export.stale(on_disk, folder) == []


def test_a_fresh_export_is_not_stale_and_a_mismatching_one_is(exported, tmp_path):
    folder, _, _ = exported
    live_export.check_folder(folder)                                              # fresh: no error
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["models"]["dates"]["checkpoint_sha256"] = "0" * 64                   # made from another checkpoint
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(live_export.StaleExport, match=r"dates: exported from checkpoint SHA-256 0{64}, but the "
                                                      r"shipped dates_transformer.pt has ef98.*make live-models"):
        live_export.check_folder(copy)
    reasons = live_export.stale({**manifest, "exporter_sha256": "1" * 64}, copy)
    assert any("made by other code" in r for r in reasons)
    del manifest["models"]["char_lm"]
    assert "char_lm: not exported" in live_export.stale(manifest)
    data = bytearray((copy / "char_lstm.onnx").read_bytes())
    data[-1] ^= 1
    (copy / "char_lstm.onnx").write_bytes(bytes(data))
    assert "char_lstm: char_lstm.onnx changed since the export (its SHA-256 differs)" in live_export.stale(
        manifest, copy)
    assert live_export.stale({"format": 0}) == [f"the manifest has format 0, this seqviz writes format "
                                                f"{live_export.FORMAT}"]


def test_the_check_command_fails_on_a_stale_export_and_says_why(exported, tmp_path):
    folder, _, _ = exported
    ok = subprocess.run([sys.executable, "-m", "seqviz.live", "check", "--dir", str(folder)], capture_output=True,
                        text=True)
    assert ok.returncode == 0 and "up to date" in ok.stdout
    missing = subprocess.run([sys.executable, "-m", "seqviz.live", "check", "--dir", str(tmp_path)],
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "manifest.json missing" in missing.stderr and "make live-models" in \
        missing.stderr


def test_the_build_folders_export_is_fresh_when_there_is_one():
    """`make live-models` writes _build/live-models; an export left there from another checkpoint or graph code is
    stale (re-run the target)."""
    folder = ROOT / live_export.DEFAULT_OUT
    if not (folder / "manifest.json").is_file():
        pytest.skip(f"no export in {folder}: `make live-models` has not run here")
    live_export.check_folder(folder)


def test_an_unknown_model_name_is_refused():
    with pytest.raises(ValueError, match="no exported model is called 'gpt2'; the models are char_lm, char_lstm, "
                                         "dates"):
        live_export.export_model("gpt2", live_export.DEFAULT_OUT)


def test_importing_seqviz_live_needs_no_onnx():
    code = "import sys, seqviz.live; print(any(m == 'onnx' or m.startswith(('onnx.', 'onnxscript')) " \
           "for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- staleness without an export: stand-in files under a manifest the package writes ----------------------------------
def stand_in_export(folder: Path) -> dict:
    """A folder with a small stand-in file for every graph and the manifest the exporter writes for those files (the
    staleness check reads hashes, sizes and the manifest, not graphs)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in live_export.MODELS:
        for file in live_export.graph_files(name).values():
            (folder / file).write_bytes(f"stand-in for {file}".encode())
    manifest = live_export.make_manifest({n: live_export.manifest_entry(n, folder) for n in live_export.MODELS})
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return manifest


def test_a_manifest_that_is_not_the_checkpoints_is_refused(tmp_path):
    """Hashes are not enough: the vocabulary, context and date forms must be what the shipped checkpoint and the
    dates task give, and every graph must be listed, exist and have its length."""
    manifest = stand_in_export(tmp_path)
    assert live_export.stale(manifest, tmp_path) == []
    entry = manifest["models"]["char_lm"]
    bad = json.loads(json.dumps(manifest))
    bad["models"]["char_lm"].update(itos=["?"], context=1, files={})
    bad["models"]["dates"]["formats"] = {}
    reasons = live_export.stale(bad, tmp_path)
    assert {r.split(" ", 3)[2] for r in reasons if " its " in r} == {"itos", "context", "formats"}
    assert "char_lm: lists the graphs [], the model has ['lm']" in reasons
    (tmp_path / "manifest.json").write_text(json.dumps(bad))
    with pytest.raises(live_export.StaleExport, match=r"char_lm: its itos \["):
        live_export.check_folder(tmp_path)
    crop = json.loads(json.dumps(manifest))
    crop["models"]["dates"]["crop"]["keep"] = "end"                               # another cropping rule
    assert live_export.stale(crop, tmp_path) == ['dates: its crop {"keep": "end", "max": 40, "why": null} is not '
                                                 'the shipped model\'s {"keep": "start", "max": 40, "why": null}']
    limits = {**manifest, "limits": {"n": [1, 500], "seed": [0, 2**32 - 1]}}
    assert any("limits" in r for r in live_export.stale(limits, tmp_path))
    (tmp_path / entry["files"]["lm"]["file"]).write_bytes(b"longer than the stand-in")
    assert live_export.stale(manifest, tmp_path) == [f"char_lm: char_lm.onnx has 24 bytes, the manifest says "
                                                     f"{entry['files']['lm']['bytes']}"]
    (tmp_path / "char_lm.onnx").unlink()
    assert live_export.stale(manifest, tmp_path) == ["char_lm: char_lm.onnx is missing"]


def test_a_source_change_in_a_dependency_makes_the_export_stale(tmp_path, monkeypatch):
    """The export's hash covers the code the graphs call (a projection in transformer/layers.py, the LSTM cell in
    lstm.py) and the dates task (the manifest's forms), not only graphs.py and export.py."""
    manifest = stand_in_export(tmp_path / "export")
    package = tmp_path / "seqviz"
    for name in live_export.SOURCES:
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(live_export.PACKAGE / name, package / name)
    assert live_export.exporter_sha256(package) == manifest["exporter_sha256"]
    monkeypatch.setattr(live_export, "PACKAGE", package)
    for name in ("transformer/layers.py", "lstm.py", "data/tasks.py", "transformer/encdec.py"):
        original = (package / name).read_bytes()
        (package / name).write_bytes(original + b"\n# changed\n")
        assert any("made by other code" in r for r in live_export.stale(manifest, tmp_path / "export")), name
        (package / name).write_bytes(original)
    assert live_export.stale(manifest, tmp_path / "export") == []


def test_the_hash_covers_every_seqviz_module_the_export_and_its_graphs_import():
    import ast

    def imported(path: Path) -> set[str]:
        out = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:                  # relative: seqviz.live.x
                out.add(f"seqviz.live.{node.module}" if node.module else "seqviz.live")
            elif isinstance(node, ast.ImportFrom) and node.module.startswith("seqviz"):
                out.add(node.module)
            elif isinstance(node, ast.Import):
                out |= {a.name for a in node.names if a.name.startswith("seqviz")}
        return out

    live = live_export.PACKAGE / "live"
    modules = imported(live / "graphs.py") | imported(live / "export.py")
    files = set()
    for m in modules - {"seqviz"}:                                                # seqviz: __version__, recorded
        rel = m.removeprefix("seqviz.").replace(".", "/")
        files.add(f"{rel}.py" if (live_export.PACKAGE / f"{rel}.py").is_file() else f"{rel}/__init__.py")
    missing = sorted(f for f in files if f not in live_export.SOURCES and not f.endswith("__init__.py"))
    assert not missing, f"the export depends on {missing}: add them to seqviz.live.export.SOURCES"
    assert {"transformer/layers.py", "lstm.py", "data/tasks.py"} <= set(live_export.SOURCES)
    assert all((live_export.PACKAGE / f).is_file() for f in live_export.SOURCES)
