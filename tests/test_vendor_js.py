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
    versions = vendor_js.vendor(out)
    assert set(versions) == {"requirejs", "@jupyter-widgets/html-manager", "anywidget", "mathjax"}
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
