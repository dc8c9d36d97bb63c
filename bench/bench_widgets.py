"""Widget benchmarks in the real browser (Debian chromium through Playwright): prints figures, asserts nothing.

1. AttentionHeatmap with 12 layers x 12 heads x 128 tokens: Python preparation time and payload size, then in the
   browser the first render and the re-render after a selection change (layer/head select, one head and the
   all-heads grid). Target from issue 3: a re-render within 16 ms (one frame at 60 Hz).
   BeamTree (issue 24) at the size of chapter 5's translator: a beam of 5 over 20 steps (~1,000 candidates): the
   re-render after a step change, a switch of the node scores and of the pruned nodes (the first switch lays the
   other tree out, its max; later ones swap the two layouts, the median). AttentionSteps at the size of
   chapter 7's character model, 4 layers x 4 heads x 64 characters, d_k = 40: the re-render after a query change (the
   browser recomputes that query's attention), a mask switch and a layer/head change.
2. Payload of each widget as a page stores it (state JSON + base64 buffers, its ES module included), at sizes a
   chapter uses.
3. Page weight of the built "Visual tools" page (`make book` first): every byte the page loads, by kind; and the size
   of the JS/fonts vendored for reading offline (served with every page, loaded only as needed).

The figures are printed and written to src/seqviz/recorded/widgets.json (with date, CPU, core count and torch version).
Run: .venv/bin/python bench/bench_widgets.py [--quick] [--layers 12 --heads 12 --tokens 128 --repeats 60]
     [--beam 5 --beam-steps 20]
"""
from __future__ import annotations

import argparse
import base64
import functools
import http.server
import json
import statistics
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from _results import write_results  # bench/ is not a package: the benchmarks run as scripts
from seqviz.attention import causal_mask
from seqviz.decode import beam_search
from seqviz.widgets import (AttentionHeatmap, AttentionSteps, BeamTree, LSTMGates, NextTokenDistribution,
                            PositionalMatrix)

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

# The widget's own ES module, rendered with a minimal model (get/set/on/off; set fires change:<name> as a kernel
# update does). Each measurement: set the trait, let the view's coalesced redraw run, force style and layout.
HARNESS = """<!doctype html><meta charset="utf-8"><body><div id="w"></div><script type="module">
const listeners = {};
const model = {
  get: (k) => window.state[k],
  set: (k, v) => { window.state[k] = v; (listeners["change:" + k] || []).forEach((f) => f()); },
  on: (e, f) => { (listeners[e] = listeners[e] || []).push(f); },
  off: () => {}, save_changes: () => {}, send: () => {},
};
window.start = async (esm) => {
  const mod = await import(URL.createObjectURL(new Blob([esm], { type: "text/javascript" })));
  const el = document.getElementById("w");
  const t0 = performance.now();
  mod.default.render({ model, el });
  el.getBoundingClientRect();
  return performance.now() - t0;
};
const flush = () => new Promise((r) => queueMicrotask(r));
const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
window.change = async (k, v) => {
  const el = document.getElementById("w");
  const t0 = performance.now();
  model.set(k, v);
  await flush();            // the view redraws in one microtask
  el.getBoundingClientRect(); // style + layout of what changed
  const t1 = performance.now();
  await frame();
  return [t1 - t0, performance.now() - t0];
};
window.ready = true;
</script>"""


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def serve(directory: Path):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=directory))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}/"


def summarize(ms: list[float]) -> str:
    q = np.percentile(ms, [50, 95])
    return f"median {q[0]:6.2f} ms   p95 {q[1]:6.2f} ms   max {max(ms):6.2f} ms"


def stored_size(widget) -> dict:
    """Bytes a page stores for one widget: its state as JSON plus its byte buffers as base64 (as the widget-state
    script of a built page holds them); of which the ES module and the buffers."""
    state = widget.get_state()
    buffers = {k: bytes(v) for k, v in state.items() if isinstance(v, (bytes, memoryview))}
    json_part = {k: v for k, v in state.items() if k not in buffers}
    return {"stored_bytes": len(json.dumps(json_part)) + sum(len(b64(v)) for v in buffers.values()),
            "esm_bytes": len(state.get("_esm", "").encode()),
            "buffer_bytes": sum(len(v) for v in buffers.values()), "buffers": sorted(buffers)}


def bench_payloads(L: int, H: int, T: int) -> list[dict]:
    """Stored size of each widget at a size a chapter uses (seeded random data: sizes do not depend on values)."""
    rng = np.random.default_rng(0)
    scores = np.where(causal_mask(T), rng.normal(size=(L, H, T, T)), -np.inf)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)  # (L, H, T, T)
    steps, units, vocab = 60, 64, 10_000
    gates = {n: rng.uniform(0, 1, size=(steps, units)) for n in "fio"}  # (T, units)
    gates["g"] = rng.uniform(-1, 1, size=(steps, units))
    gates["c"] = rng.normal(size=(steps, units)) * 2
    gates["h"] = gates["o"] * np.tanh(gates["c"])
    widgets = [
        (f"AttentionHeatmap {L}x{H}x{T}x{T}, causal mask", AttentionHeatmap(w, [f"t{i}" for i in range(T)],
                                                                             mask="causal")),
        (f"LSTMGates 6 traces x {steps} steps x {units} units", LSTMGates(gates, [f"w{i}" for i in range(steps)])),
        ("PositionalMatrix (computed in the browser)", PositionalMatrix()),
        (f"NextTokenDistribution V={vocab:,}", NextTokenDistribution(rng.normal(size=vocab),
                                                                      [f"w{i}" for i in range(vocab)])),
        ("BeamTree, a beam of 5 over 20 steps", beam_widget(5, 20)),
        ("AttentionSteps 4x4 heads x 64 tokens, d_k = 40", steps_widget(4, 4, 64, 40)),
    ]
    rows = []
    print("Payload stored in the page per widget (state JSON + base64 buffers; of which its ES module):")
    for name, widget in widgets:
        r = {"widget": name, **stored_size(widget)}
        rows.append(r)
        print(f"  {name:48s} {r['stored_bytes'] / 1e3:9.1f} kB   ES module {r['esm_bytes'] / 1e3:5.1f} kB   "
              f"buffers {', '.join(r['buffers']) or '-'}")
    return rows


def bench_attention(browser, L: int, H: int, T: int, repeats: int) -> dict:
    rng = np.random.default_rng(0)
    allowed = causal_mask(T)
    scores = rng.normal(size=(L, H, T, T)) * 2
    scores = np.where(allowed, scores, -np.inf)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)  # (L, H, T, T), rows sum to 1
    tokens = [f"tok{i}" for i in range(T)]
    t0 = time.perf_counter()
    widget = AttentionHeatmap(w, tokens, mask=allowed)
    prep = time.perf_counter() - t0
    state = widget.get_state()
    buffers = {k: v for k, v in state.items() if isinstance(v, (bytes, memoryview))}
    json_part = {k: v for k, v in state.items() if k not in buffers}
    stored = stored_size(widget)["stored_bytes"]
    out = {"shape": [L, H, T, T], "prepare_ms": prep * 1000, "weights_bytes": len(widget.weights),
           "stored_bytes": stored, "rows": []}
    print(f"AttentionHeatmap {L} layers x {H} heads x {T} tokens ({w.size:,} weights)")
    print(f"  Python: check + quantise            {prep * 1000:8.1f} ms")
    print(f"  payload: weights {len(widget.weights) / 1e6:.2f} MB uint8 (float64 JSON would be "
          f"~{w.size * 20 / 1e6:.0f} MB); stored in the page as base64 + JSON: {stored / 1e6:.2f} MB")

    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "index.html").write_text(HARNESS)
        srv, base = serve(Path(tmp))
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(base + "index.html")
        page.wait_for_function("() => window.ready === true")
        state_js = {k: v for k, v in json_part.items()}
        page.evaluate("""([s, bufs]) => {
            window.state = s;
            for (const [k, v] of Object.entries(bufs)) {
              const bin = atob(v); const u8 = new Uint8Array(bin.length);
              for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
              window.state[k] = new DataView(u8.buffer);
            }
          }""", [state_js, {k: b64(bytes(v)) for k, v in buffers.items()}])
        first = page.evaluate("esm => window.start(esm)", state["_esm"])
        out["first_render_ms"] = first
        print(f"  browser: first render               {first:8.1f} ms")
        for label, steps in [
            ("layer/head change, one head", [("layer", i % L) if k % 2 else ("head", (i * 5) % H)
                                             for k, i in enumerate(range(1, repeats + 1))]),
            ("layer change, all-heads grid", [("view", "grid")] + [("layer", i % L) for i in range(1, repeats + 1)]),
        ]:
            js, frames = [], []
            for name, value in steps:
                a, b = page.evaluate("([k, v]) => window.change(k, v)", [name, value])
                if name != "view":
                    js.append(a)
                    frames.append(b)
            print(f"  re-render, {label:28s} {summarize(js)}   (to next frame: median "
                  f"{statistics.median(frames):.1f} ms)")
            q = np.percentile(js, [50, 95])
            out["rows"].append({"re-render": label, "median_ms": q[0], "p95_ms": q[1], "max_ms": max(js),
                                "to_next_frame_median_ms": statistics.median(frames), "repeats": len(js)})
        if errors:
            print("  page errors:", errors)
        out["page_errors"] = errors
        page.close()
        srv.shutdown()
    return out


def beam_widget(beam: int, steps: int, vocab: int = 500) -> BeamTree:
    """A traced beam search over a seeded random bigram model of ``vocab`` words (no stop token: every step is full,
    2 x beam continuations of each of the beam's hypotheses)."""
    g = np.random.default_rng(0)
    table = g.normal(size=(vocab, vocab)) * 3                         # (V, V) next-word scores after each word
    _, trace = beam_search(lambda ctx: table[ctx[-1]], [0], beam, steps, trace=True, with_greedy=True)
    return BeamTree(trace, [f"word{i}" for i in range(vocab)], step=1)


def steps_widget(L: int, H: int, T: int, d_k: int) -> AttentionSteps:
    g = np.random.default_rng(0)
    q, k, v = (g.normal(size=(L, H, T, d_k)).astype(np.float32) for _ in range(3))   # (L, H, T, d_k) each
    return AttentionSteps(q, k, v, [f"c{i}" for i in range(T)], causal=True)


def time_changes(browser, widget, plans: list[tuple[str, list[tuple[str, object]]]]) -> dict:
    """First render of ``widget``'s ES module in the harness, then each plan's trait changes one by one: the time
    until its coalesced redraw has run and the layout is done (and to the next frame)."""
    state = widget.get_state()
    buffers = {k: b64(bytes(v)) for k, v in state.items() if isinstance(v, (bytes, memoryview))}
    json_part = {k: v for k, v in state.items() if k not in buffers}
    out = {"rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "index.html").write_text(HARNESS.replace("<body>", f"<style>{state['_css']}</style><body>"))
        srv, base = serve(Path(tmp))
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(base + "index.html")
        page.wait_for_function("() => window.ready === true")
        page.evaluate("""([s, bufs]) => {
            window.state = s;
            for (const [k, v] of Object.entries(bufs)) {
              const bin = atob(v); const u8 = new Uint8Array(bin.length);
              for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
              window.state[k] = new DataView(u8.buffer);
            }
          }""", [json_part, buffers])
        out["first_render_ms"] = page.evaluate("esm => window.start(esm)", state["_esm"])
        for label, changes in plans:
            js, frames = [], []
            for name, value in changes:
                a, b = page.evaluate("([k, v]) => window.change(k, v)", [name, value])
                js.append(a)
                frames.append(b)
            q = np.percentile(js, [50, 95])
            out["rows"].append({"re-render": label, "median_ms": q[0], "p95_ms": q[1], "max_ms": max(js),
                                "to_next_frame_median_ms": statistics.median(frames), "repeats": len(js)})
            print(f"  re-render, {label:34s} {summarize(js)}   (to next frame: median "
                  f"{statistics.median(frames):.1f} ms)")
        out["page_errors"] = errors
        if errors:
            print("  page errors:", errors)
        page.close()
        srv.shutdown()
    return out


def bench_beam_tree(browser, beam: int, steps: int, repeats: int) -> dict:
    t0 = time.perf_counter()
    widget = beam_widget(beam, steps)
    prep = time.perf_counter() - t0
    n = len(widget.data.step)
    print(f"BeamTree: a beam of {beam} over {steps} steps, {n:,} nodes (search + checks: {prep * 1000:.0f} ms; "
          f"stored {stored_size(widget)['stored_bytes'] / 1e3:.1f} kB)")
    out = time_changes(browser, widget, [
        ("step slider", [("step", 1 + (i * 7) % steps) for i in range(1, repeats + 1)]),
        ("node scores log P <-> log P / N^a", [("normalise", i % 2 == 1) for i in range(1, repeats + 1)]),
        ("pruned nodes shown <-> hidden", [("show_pruned", i % 2 == 0) for i in range(1, min(repeats, 20) + 1)]),
    ])
    print(f"  browser: first render               {out['first_render_ms']:8.1f} ms")
    out.update({"beam": beam, "steps": steps, "nodes": n, "prepare_ms": prep * 1000})
    return out


def bench_attention_steps(browser, L: int, H: int, T: int, d_k: int, repeats: int) -> dict:
    widget = steps_widget(L, H, T, d_k)
    print(f"AttentionSteps: {L} layers x {H} heads x {T} tokens, d_k = d_v = {d_k} "
          f"(stored {stored_size(widget)['stored_bytes'] / 1e3:.1f} kB)")
    out = time_changes(browser, widget, [
        ("query change (recomputed)", [("query", (i * 11) % T) for i in range(1, repeats + 1)]),
        ("causal mask on <-> off", [("causal", i % 2 == 0) for i in range(1, repeats + 1)]),
        ("layer/head change", [("layer", i % L) if i % 2 else ("head", (i * 3) % H) for i in range(1, repeats + 1)]),
    ])
    print(f"  browser: first render               {out['first_render_ms']:8.1f} ms")
    out.update({"shape": [L, H, T, T, d_k, d_k]})
    return out


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if folder.is_dir() else 0


def bench_page_weight(browser, book: Path) -> dict | None:
    path = "book/visual_tools.html"
    if not (book / path).is_file():
        print(f"page weight: {book / path} is missing: run `make book` first")
        return None
    srv, base = serve(book)
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    responses = []
    page.on("response", lambda r: responses.append(r))
    page.goto(base + path, wait_until="networkidle")
    page.wait_for_timeout(500)
    sizes: dict[str, int] = {}
    in_page, external = 0, []
    for r in responses:
        if r.url.startswith(("blob:", "data:")):
            in_page += 1  # widget ES modules imported from the page's own state, inline images
        elif not r.url.startswith(base):
            external.append(r.url)
        elif r.status == 200:
            sizes[r.url[len(base):].split("?")[0]] = len(r.body())
    page.close()
    srv.shutdown()
    kinds = defaultdict(int)
    for url, n in sizes.items():
        if url == path:
            kinds["page HTML (text, code, widget state, MathJax source)"] += n
        elif url.startswith("vendor/mathjax/"):
            kinds["MathJax 3 (vendored)"] += n
        elif url.startswith("vendor/"):
            kinds["require.js + widget manager + anywidget (vendored)"] += n
        elif url.startswith("_images/"):
            kinds["figures (static renderings)"] += n
        else:
            kinds["theme CSS/JS/icon fonts, search (_static/)"] += n
    html = (book / path).read_text()
    state_start = html.find('type="application/vnd.jupyter.widget-state+json"')
    state_len = html.find("</script>", state_start) - state_start if state_start >= 0 else 0
    total = sum(sizes.values())
    print(f"Page weight of {path}: {total / 1e6:.2f} MB in {len(sizes)} requests to the book's server "
          f"(+{in_page} blob:/data: loads; outside loopback: {len(external)})")
    for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {k:55s} {n / 1e6:7.3f} MB")
    n_views = html.count('application/vnd.jupyter.widget-view+json')
    print(f"  of the HTML, embedded widget state ({n_views} widgets){' ' * 9}{state_len / 1e6:7.3f} MB")
    cacheable = sum(n for u, n in sizes.items() if u != path and not u.startswith("_images/"))
    print(f"  page-specific (HTML + figures): {(total - cacheable) / 1e6:.2f} MB; shared by every page: "
          f"{cacheable / 1e6:.2f} MB")
    vendored = {"all (vendor/)": folder_bytes(book / "vendor"), "MathJax (vendor/mathjax/)":
                folder_bytes(book / "vendor" / "mathjax")}
    print(f"Vendored for reading offline: {vendored['all (vendor/)'] / 1e6:.2f} MB in vendor/, of which MathJax "
          f"{vendored['MathJax (vendor/mathjax/)'] / 1e6:.2f} MB")
    return {"page": path, "loaded_bytes": total, "requests": len(sizes), "outside_loopback": len(external),
            "by_kind_bytes": dict(kinds), "widget_state_bytes": state_len,
            "page_specific_bytes": total - cacheable, "vendored_bytes": vendored}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=60)
    ap.add_argument("--book", type=Path, default=ROOT / "_build" / "html")
    ap.add_argument("--beam", type=int, default=5, help="BeamTree: the beam size")
    ap.add_argument("--beam-steps", type=int, default=20, help="BeamTree: the number of steps")
    ap.add_argument("--quick", action="store_true", help="short run: 4 layers x 4 heads x 64 tokens, 10 repeats")
    args = ap.parse_args()
    if args.quick:
        args.layers, args.heads, args.tokens, args.repeats = 4, 4, 64, 10
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS, headless=True)
        attention = bench_attention(browser, args.layers, args.heads, args.tokens, args.repeats)
        beam = bench_beam_tree(browser, args.beam, args.beam_steps, args.repeats)
        steps = bench_attention_steps(browser, 4, 4, 64, 40, args.repeats)
        payloads = bench_payloads(args.layers, args.heads, args.tokens)
        weight = bench_page_weight(browser, args.book)
        browser.close()
    name = f"AttentionHeatmap {args.layers}x{args.heads}x{args.tokens}x{args.tokens}"
    rows = [{"widget": name, **r} for r in attention.pop("rows")]
    rows += [{"widget": f"BeamTree, beam {args.beam} x {args.beam_steps} steps ({beam['nodes']:,} nodes)", **r}
             for r in beam.pop("rows")]
    rows += [{"widget": "AttentionSteps 4x4 heads x 64 tokens, d_k = 40", **r} for r in steps.pop("rows")]
    figures = {"rows": rows, "attention": attention, "beam_tree": beam, "attention_steps": steps, "payload": payloads,
               "settings": {"quick": args.quick, "layers": args.layers, "heads": args.heads, "tokens": args.tokens,
                            "repeats": args.repeats, "beam": args.beam, "beam_steps": args.beam_steps,
                            "browser": "Debian chromium, headless"}}
    if weight is not None:
        figures["page_weight"] = weight
    write_results("widgets", figures)


if __name__ == "__main__":
    main()
