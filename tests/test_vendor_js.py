"""scripts/vendor_js.py: what the built book serves for reading offline, and nothing that no page uses."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("vendor_js", ROOT / "scripts" / "vendor_js.py")
vendor_js = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vendor_js)

needs_node_modules = pytest.mark.skipif(bool(vendor_js.missing_packages()),
                                        reason="node_modules/ is not installed (no npm): `npm ci` or `make setup`")


@needs_node_modules
def test_vendored_mathjax_leaves_out_speech_explorer_and_svg_and_configures_the_menu(tmp_path):
    out = tmp_path / "vendor"
    versions = vendor_js.vendor(out, models=None)
    assert set(versions) == {"requirejs", "@jupyter-widgets/html-manager", "anywidget", "mathjax", "onnxruntime-web"}
    mj = out / "mathjax"
    for part in vendor_js.MATHJAX_LEFT_OUT:
        assert not (mj / part).exists(), part
    assert (vendor_js.NODE / "mathjax" / "es5" / "sre").is_dir()  # left out here, not missing from the package
    original = (vendor_js.NODE / "mathjax" / "es5" / "tex-mml-chtml.js").read_text()
    bundle = (mj / "tex-mml-chtml.js").read_text()
    assert bundle == vendor_js.MATHJAX_MENU_CONFIG + original  # MathJax's own file follows unchanged
    for needed in ("output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff", "input/tex/extensions/boldsymbol.js"):
        assert (mj / needed).is_file(), needed
    size = sum(f.stat().st_size for f in mj.rglob("*") if f.is_file())
    assert size < 3.5e6, f"vendored MathJax is {size / 1e6:.1f} MB"
    notice = json.loads((out / "versions.json").read_text())
    assert notice["mode"] == "offline" and notice["packages"]["mathjax"]["left_out"] == vendor_js.MATHJAX_LEFT_OUT


def test_menu_config_switches_off_each_item_that_would_load_a_left_out_part():
    cfg = vendor_js.MATHJAX_MENU_CONFIG
    for item in ('["Accessibility", "Activate"]', '["Accessibility", "Collapsible"]',
                 '["Accessibility", "AutoCollapse"]', '["Settings", "Renderer", "SVG"]'):
        assert item in cfg
    assert "explorer: false, collapsible: false" in cfg and "MathJax-Menu-Settings" in cfg


def test_cdn_fallback_writes_forwarders_at_the_same_paths(tmp_path):
    out = tmp_path / "vendor"
    vendor_js.write_cdn_fallback(out)
    for path in ("require.js", "seqviz-offline.js", "html-manager/embed-amd.js", "mathjax/tex-mml-chtml.js"):
        assert (out / path).is_file(), path
    assert json.loads((out / "versions.json").read_text()) == {"mode": "cdn"}


# -- the live bundle: onnxruntime-web, the runtime module, the export of `make live-models` --------------------------
def fake_export(folder: Path) -> dict:
    """A folder that passes seqviz.live's staleness check: small stand-in files for the graphs under the manifest the
    exporter writes for them (the checks read the manifest, hashes and sizes, not graphs)."""
    from seqviz.live import export as live_export

    folder.mkdir(parents=True)
    for name in live_export.MODELS:
        for file in live_export.graph_files(name).values():
            (folder / file).write_bytes(f"stand-in for {file}".encode())
    manifest = live_export.make_manifest({n: live_export.manifest_entry(n, folder) for n in live_export.MODELS})
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return manifest


@needs_node_modules
def test_live_bundle_holds_onnxruntime_the_runtime_module_and_a_fresh_export(tmp_path):
    fake_export(tmp_path / "export")
    info = vendor_js.vendor_live(tmp_path / "vendor", tmp_path / "export")
    ort = tmp_path / "vendor" / "onnxruntime-web"
    assert sorted(p.name for p in ort.iterdir()) == sorted(vendor_js.ORT_FILES)
    for name in vendor_js.ORT_FILES:                                               # copied unchanged
        assert (ort / name).read_bytes() == (vendor_js.NODE / "onnxruntime-web" / "dist" / name).read_bytes()
    module = (tmp_path / "vendor" / "live" / "live.js").read_text()
    prng, decode, runtime = ((vendor_js.STATIC / n).read_text() for n in vendor_js.LIVE_JS)
    assert module.index(prng) < module.index(decode) < module.index(runtime)      # each uses the ones before
    assert info["models"] == ["char_lm", "char_lstm", "dates"]
    models = tmp_path / "vendor" / "live" / "models"
    assert sorted(p.name for p in models.iterdir()) == ["char_lm.onnx", "char_lstm.onnx", "dates_decoder.onnx",
                                                          "dates_encoder.onnx", "manifest.json"]
    assert 14e6 < info["bytes"] <= vendor_js.LIVE_BUDGET and info["gzip_bytes"] < info["bytes"]


@needs_node_modules
def test_live_bundle_refuses_a_stale_export_and_one_over_budget(tmp_path, monkeypatch):
    from seqviz.live import StaleExport

    manifest = fake_export(tmp_path / "export")
    manifest["models"]["char_lstm"]["checkpoint_sha256"] = "0" * 64
    (tmp_path / "export" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(StaleExport, match="char_lstm: exported from checkpoint SHA-256 0{64}"):
        vendor_js.vendor_live(tmp_path / "a", tmp_path / "export")
    info = vendor_js.vendor_live(tmp_path / "b", tmp_path / "nothing-here")      # no export: runtime only
    assert info["models"] is None and not (tmp_path / "b" / "live" / "models").exists()
    monkeypatch.setattr(vendor_js, "LIVE_BUDGET", 10_000_000)
    with pytest.raises(ValueError, match=r"the live bundle .* is 14\.\d MB, over its budget of 10 MB"):
        vendor_js.vendor_live(tmp_path / "c", None)


@needs_node_modules
def test_missing_onnxruntime_web_fails_clearly(tmp_path, monkeypatch, capsys):
    node = tmp_path / "node_modules"
    node.mkdir()
    for pkg in vendor_js.NODE.iterdir():                                          # everything but onnxruntime-web
        if pkg.name != "onnxruntime-web":
            (node / pkg.name).symlink_to(pkg)
    monkeypatch.setattr(vendor_js, "NODE", node)
    assert vendor_js.missing_live() == [f"onnxruntime-web/dist/{f}" for f in vendor_js.ORT_FILES]
    assert vendor_js.main(["--out", str(tmp_path / "vendor")]) == 1
    err = capsys.readouterr().err
    assert "ERROR: node_modules/ lacks onnxruntime-web/dist/ort.wasm.min.mjs, which the live models need: run " \
           "`npm ci`" in err


def test_live_module_is_one_es_module_that_parses(tmp_path):
    import shutil
    import subprocess

    module = vendor_js.live_module()
    assert module.startswith("// seqviz live runtime, written by scripts/vendor_js.py")
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (npm is a requirement of make book)")
    path = tmp_path / "live.mjs"
    path.write_text(module)
    done = subprocess.run([node, "--check", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
