"""Copy the browser libraries the built book needs from node_modules/ into _vendor/ so the book reads offline.

`make setup` runs `npm ci` (package.json / package-lock.json pin the versions); this script copies what the pages
load into `_vendor/vendor/`, which `_config.yml` lists in `html_extra_path`, so Sphinx serves it as `vendor/` next to
the pages:

    vendor/require.js                      require.js (AMD loader the widget html-manager needs)
    vendor/seqviz-offline.js               points require.js at the copies below (written by this script)
    vendor/html-manager/embed-amd.js       @jupyter-widgets/html-manager: renders the widget state stored in the page
    vendor/anywidget/index.js              anywidget's front end (runs each widget's ES module)
    vendor/mathjax/tex-mml-chtml.js + fonts and TeX/MathML extensions (see MATHJAX_PARTS for what is left out)
    vendor/onnxruntime-web/                onnxruntime-web's WebAssembly build (ORT_FILES): runs the live models
    vendor/live/live.js                    the live runtime, one ES module: the package's widgets/static/
                                           _random.js, live_decode.js and live.js
    vendor/live/models/                    the export of `make live-models` (python -m seqviz.live export), checked
                                           fresh against the package's checkpoints; left out, with a warning, when
                                           there is none

The live bundle (vendor/onnxruntime-web/ and vendor/live/) loads only when a reader asks for a live model; it must
stay within LIVE_BUDGET bytes uncompressed (the script fails otherwise) and its gzip size is printed.

`_config.yml` always points at these paths. Without node_modules (no npm) the script writes tiny forwarding files
in their place that load the same libraries from the public CDNs, and says so loudly: the book then still works,
but only online. Run: `.venv/bin/python scripts/vendor_js.py [--check] [--out DIR] [--live-models DIR]`.
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE = ROOT / "node_modules"
OUT = ROOT / "_vendor" / "vendor"

STATIC = ROOT / "src" / "seqviz" / "widgets" / "static"
LIVE_MODELS = ROOT / "_build" / "live-models"

HTML_MANAGER = "1.0.15"
# onnxruntime-web's files the live runtime loads: the WebAssembly bundle without WebGPU/WebGL (the others fetch a
# 28 MB .wasm and ran 2x slower on a CPU), its Emscripten loader and the SIMD build it fetches (one thread)
ORT_FILES = ["ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"]
# the live runtime's one ES module: these package files, in this order
LIVE_JS = ["_random.js", "live_decode.js", "live.js"]
#: the live bundle (onnxruntime-web + the runtime + every model), uncompressed
LIVE_BUDGET = 25_000_000
CDN = {
    "require": "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.4/require.min.js",
    "embed": f"https://cdn.jsdelivr.net/npm/@jupyter-widgets/html-manager@{HTML_MANAGER}/dist/embed-amd.js",
    "widgets": "https://cdn.jsdelivr.net/npm/",
    "mathjax": "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js",
}
# What MathJax loads at run time, relative to its es5/ folder (the rest of the 24 MB package is not needed). Left out
# although the context menu could load them on demand: the speech rule engine and its explorer (a11y/, sre/: 4.3 MB,
# no page uses them), ui/ (the menu is inside tex-mml-chtml.js) and the SVG output. MATHJAX_MENU_CONFIG turns off the
# menu items that would load them, so no reader can trigger a request that fails. The hidden MathML that screen
# readers read (assistive MathML) is part of tex-mml-chtml.js and stays on.
MATHJAX_PARTS = ["tex-mml-chtml.js", "output/chtml/fonts/woff-v2", "input/tex/extensions", "input/mml/extensions"]
MATHJAX_LEFT_OUT = ["a11y", "sre", "ui", "output/svg.js"]

# Put in front of the vendored tex-mml-chtml.js (which is otherwise MathJax's file, unchanged): it runs after the
# page's own `window.MathJax = {...}` configuration and before MathJax starts.
MATHJAX_MENU_CONFIG = """\
/* Added by seqviz's scripts/vendor_js.py in front of MathJax 3's tex-mml-chtml.js (Apache-2.0; the rest of this file
   is MathJax's, unchanged). The book serves MathJax without its speech/explorer parts (a11y/, sre/) and without the
   SVG output, which only the context menu would load: switch those menu items off, and forget a saved choice of them,
   so a reader can never trigger a request that fails. Assistive MathML (hidden MathML for screen readers) stays on. */
(function () {
  var key = "MathJax-Menu-Settings";
  try {
    var saved = JSON.parse(window.localStorage.getItem(key) || "null");
    if (saved && (saved.explorer || saved.collapsible || saved.autocollapse || saved.renderer === "SVG")) {
      delete saved.explorer; delete saved.collapsible; delete saved.autocollapse;
      if (saved.renderer === "SVG") delete saved.renderer;
      window.localStorage.setItem(key, JSON.stringify(saved));
    }
  } catch (e) { /* no localStorage (e.g. a file: page in some browsers): nothing saved to clean up */ }
  var config = window.MathJax = window.MathJax || {};
  var options = config.options = config.options || {};
  var menu = options.menuOptions = options.menuOptions || {};
  menu.settings = Object.assign({}, menu.settings, { explorer: false, collapsible: false, autocollapse: false });
  var startup = config.startup = config.startup || {};
  var ready = startup.ready;
  startup.ready = function () {
    if (ready) ready(); else window.MathJax.startup.defaultReady();
    var doc = window.MathJax.startup.document;
    var items = doc && doc.menu && doc.menu.menu;
    if (!items) return;
    [["Accessibility", "Activate"], ["Accessibility", "Collapsible"], ["Accessibility", "AutoCollapse"],
     ["Settings", "Renderer", "SVG"]].forEach(function (path) {
      var item = items.findID.apply(items, path);
      if (item) item.disable();
    });
  };
})();
"""

OFFLINE_JS = """\
// Written by scripts/vendor_js.py: make the widget html-manager load anywidget (and everything else) from the copies
// served with the book in this folder, never from a CDN, so the book reads offline.
(function () {
  var script = document.currentScript;
  var base = script.src.slice(0, script.src.lastIndexOf("/") + 1);
  // The html-manager reads this attribute from the page's script tags as the place to fetch unknown widget modules.
  script.setAttribute("data-jupyter-widgets-cdn", base + "npm/");
  window.requirejs.config({
    paths: {
      anywidget: base + "anywidget/index",
      // each module of the html-manager (its own, base's, controls') finds its icon fonts relative to its address
      "@jupyter-widgets/html-manager/dist": base + "html-manager",
      "@jupyter-widgets": base + "html-manager",
    },
  });
})();
"""

FALLBACK_NOTE = ("// Written by scripts/vendor_js.py because node_modules/ was missing:\n"
                 "// loads from a public CDN, so the book needs a network.\n")


def _pkg_version(name: str) -> str:
    return json.loads((NODE / name / "package.json").read_text())["version"]


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copy2(src, dst)


def missing_packages() -> list[str]:
    need = ["requirejs/require.js", "@jupyter-widgets/html-manager/dist/embed-amd.js", "anywidget/dist/index.js",
            "mathjax/es5/tex-mml-chtml.js"]
    return [n for n in need if not (NODE / n).is_file()]


def missing_live() -> list[str]:
    """onnxruntime-web files node_modules/ should have and lacks (the live models cannot run without them)."""
    return [f"onnxruntime-web/dist/{f}" for f in ORT_FILES if not (NODE / "onnxruntime-web" / "dist" / f).is_file()]


def live_module() -> str:
    """The live runtime's ES module: the package's _random.js (the seeded PRNG), live_decode.js, then live.js (each
    uses the functions of the files before it)."""
    head = ("// seqviz live runtime, written by scripts/vendor_js.py from the package's widgets/static/"
            + " + ".join(LIVE_JS) + "\n")
    return head + "\n".join((STATIC / name).read_text(encoding="utf-8") for name in LIVE_JS)


def vendor_live(out: Path, models: Path | None) -> dict:
    """Copy onnxruntime-web, write the runtime and copy the export in ``models`` (if it has one; a stale one is an
    error) into ``out``; return what the bundle holds. Raises ValueError when it is over LIVE_BUDGET."""
    ort = out / "onnxruntime-web"
    for name in ORT_FILES:                                                        # each starts with its MIT notice
        _copy(NODE / "onnxruntime-web" / "dist" / name, ort / name)
    (out / "live").mkdir(parents=True, exist_ok=True)
    (out / "live" / "live.js").write_text(live_module(), encoding="utf-8")
    info = {"models": None}
    if models is not None and (models / "manifest.json").is_file():
        from seqviz.live import check_folder                                     # raises StaleExport, saying why

        manifest = check_folder(models)
        files = ["manifest.json"] + [f["file"] for e in manifest["models"].values() for f in e["files"].values()]
        for name in files:
            _copy(models / name, out / "live" / "models" / name)
        info["models"] = sorted(manifest["models"])
    parts = [f for d in (ort, out / "live") for f in sorted(d.rglob("*")) if f.is_file()]
    info["bytes"] = sum(f.stat().st_size for f in parts)
    info["gzip_bytes"] = sum(len(gzip.compress(f.read_bytes(), 6)) for f in parts)
    if info["bytes"] > LIVE_BUDGET:
        raise ValueError(f"the live bundle (vendor/onnxruntime-web/ and vendor/live/) is {info['bytes'] / 1e6:.1f} "
                         f"MB, over its budget of {LIVE_BUDGET / 1e6:.0f} MB: export smaller models or drop one")
    return info


# How a page of the built book imports the live runtime, as the live widgets do (widgets/static/_live.js): from the
# book's vendor/ folder, found by the seqviz-offline.js script every page and slide deck loads from it; the module is
# window.live afterwards, configured for the book's copies (tests/browser/test_live_models.py, bench/bench_live.py).
LIVE_IMPORT_JS = """async () => {
  const s = document.querySelector('script[src*="vendor/seqviz-offline.js"]');
  const u = new URL(s.src); u.search = "";
  const vendor = u.href.slice(0, u.href.lastIndexOf("/") + 1);
  window.live = await import(vendor + "live/live.js");
  window.live.configureLive({ ort: vendor + "onnxruntime-web/", models: vendor + "live/models/" });
  window.vendorUrl = vendor;
}"""


def check_versions() -> list[str]:
    """Problems with the installed npm packages (empty when they match what the book's Python side needs)."""
    problems = []
    try:
        pip_any = version("anywidget")
    except PackageNotFoundError:
        pip_any = None
    npm_any = _pkg_version("anywidget")
    if pip_any is not None and pip_any != npm_any:
        problems.append(f"npm anywidget {npm_any} differs from the Python anywidget {pip_any}: set "
                        f'"anywidget": "{pip_any}" in package.json and run `npm install`')
    hm = _pkg_version("@jupyter-widgets/html-manager")
    if hm != HTML_MANAGER:
        problems.append(f"@jupyter-widgets/html-manager is {hm}, expected {HTML_MANAGER}: run `npm ci`")
    if not _pkg_version("mathjax").startswith("3."):
        problems.append(f"mathjax {_pkg_version('mathjax')} is not MathJax 3: run `npm ci`")
    return problems


def vendor(out: Path = OUT, models: Path | None = LIVE_MODELS) -> dict[str, str]:
    """Copy the libraries into ``out`` (default _vendor/vendor/, replacing what was there) with the live bundle (the
    export in ``models``, if there is one); return {package: version}."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    _copy(NODE / "requirejs" / "require.js", out / "require.js")
    hm = NODE / "@jupyter-widgets" / "html-manager" / "dist"
    for f in hm.iterdir():  # the bundle and the icon fonts it references by hashed file name
        if f.name == "embed-amd.js" or f.suffix in {".woff2", ".woff"}:  # browsers take woff2 before .ttf/.eot/.svg
            _copy(f, out / "html-manager" / f.name)
    _copy(NODE / "anywidget" / "dist" / "index.js", out / "anywidget" / "index.js")
    mj = NODE / "mathjax" / "es5"
    for part in MATHJAX_PARTS:
        _copy(mj / part, out / "mathjax" / part)
    bundle = out / "mathjax" / "tex-mml-chtml.js"
    bundle.write_text(MATHJAX_MENU_CONFIG + bundle.read_text(encoding="utf-8"), encoding="utf-8")
    (out / "seqviz-offline.js").write_text(OFFLINE_JS)
    live = vendor_live(out, models)
    versions, notice = {}, {}
    for pkg, sub in [("requirejs", "."), ("@jupyter-widgets/html-manager", "html-manager"),
                     ("anywidget", "anywidget"), ("mathjax", "mathjax"), ("onnxruntime-web", "onnxruntime-web")]:
        meta = json.loads((NODE / pkg / "package.json").read_text())
        versions[pkg] = meta["version"]
        notice[pkg] = {"version": meta["version"], "license": meta.get("license", "see the package"),
                       "copied_to": f"vendor/{sub}".rstrip("/.")}
        lic = NODE / pkg / "LICENSE"
        if lic.is_file() and sub != ".":
            _copy(lic, out / sub / "LICENSE")
    notice["mathjax"].update(left_out=MATHJAX_LEFT_OUT,
                             modified="tex-mml-chtml.js: a menu configuration put in front (scripts/vendor_js.py)")
    notice["onnxruntime-web"].update(files=ORT_FILES)
    (out / "versions.json").write_text(json.dumps({"mode": "offline", "packages": notice, "live": live}, indent=2)
                                       + "\n")
    return versions


def write_cdn_fallback(out: Path = OUT) -> None:
    """Forwarding files at the vendored paths that load the public CDN copies (the book then needs a network)."""
    if out.exists():
        shutil.rmtree(out)
    (out / "html-manager").mkdir(parents=True)
    (out / "mathjax").mkdir()
    (out / "require.js").write_text(
        FALLBACK_NOTE + f"document.write('<script src=\"{CDN['require']}\"><\\/script>');\n")
    (out / "seqviz-offline.js").write_text(FALLBACK_NOTE + "// (nothing to configure: modules come from the CDN)\n")
    (out / "html-manager" / "embed-amd.js").write_text(
        FALLBACK_NOTE + f"document.write('<script src=\"{CDN['embed']}\" "
        f"data-jupyter-widgets-cdn=\"{CDN['widgets']}\"><\\/script>');\n")
    (out / "mathjax" / "tex-mml-chtml.js").write_text(
        FALLBACK_NOTE + "(function () { var s = document.createElement('script');\n"
        f"  s.src = '{CDN['mathjax']}'; s.async = true; document.head.appendChild(s); }})();\n")
    (out / "versions.json").write_text(json.dumps({"mode": "cdn"}, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check node_modules; exit 1 if it cannot be vendored")
    ap.add_argument("--out", type=Path, default=OUT, help="folder to write (default: _vendor/vendor, which the "
                    "book serves as vendor/)")
    ap.add_argument("--live-models", type=Path, default=LIVE_MODELS, help="the export of `make live-models` to "
                    "serve as vendor/live/models/ (default: _build/live-models)")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    missing = missing_packages()
    if missing:
        msg = (f"WARNING: node_modules/ lacks {', '.join(missing)} (is npm installed? run `npm ci`).\n"
               f"WARNING: the book will load MathJax, require.js, the widget manager and anywidget from public CDNs:\n"
               f"WARNING: it will NOT read offline (math and widgets blank without a network).")
        print(msg, file=sys.stderr)
        if args.check:
            return 1
        write_cdn_fallback(out)
        print(f"wrote CDN forwarding files to {out}/", file=sys.stderr)
        return 0
    problems = check_versions() + [f"node_modules/ lacks {m}, which the live models need: run `npm ci`"
                                   for m in missing_live()]
    if problems:
        for p in problems:
            print(f"ERROR: {p}", file=sys.stderr)
        return 1
    if args.check:
        print("node_modules/ has everything the book needs")
        return 0
    try:
        versions = vendor(out, args.live_models.resolve())
    except ValueError as e:                                                       # over budget, or a stale export
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"vendored for offline reading into {out}/ ({size / 1e6:.1f} MB): "
          + ", ".join(f"{k} {v}" for k, v in versions.items()))
    live = json.loads((out / "versions.json").read_text())["live"]
    if live["models"] is None:
        print(f"WARNING: no live-model export in {args.live_models}: the book's live models will not load; run "
              f"`make live-models` (python -m seqviz.live export) first", file=sys.stderr)
    print(f"live bundle (vendor/onnxruntime-web/, vendor/live/): {live['bytes'] / 1e6:.1f} MB, "
          f"{live['gzip_bytes'] / 1e6:.1f} MB gzipped; models: {', '.join(live['models'] or ['none'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
