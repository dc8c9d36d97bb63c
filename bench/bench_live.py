"""The live models in the built book, in the real browser (Debian chromium through Playwright, headless): prints
figures, asserts nothing.

The built book (`make book`; SEQVIZ_BOOK_HTML for another build) is served on 127.0.0.1 and its Visual tools page
opened: its "Try the models" widgets load the live bundle from the book's own vendor/ folder (onnxruntime-web's
WebAssembly build, the runtime module vendor/live/live.js, the export of `make live-models`). Medians and 95th
percentiles of two kinds of figure:

- the runtime, called as the widgets call it (its module imported from the page's vendor/ folder):
  1. load: onnxruntime-web and one model, from nothing (a fresh browser context each time, so nothing cached): the
     char transformer LM (the budget's model), the char LSTM and the dates encoder-decoder;
  2. the char transformer LM on a 64-character prompt: one forward pass with every head's attention, q, k, v and the
     next-character distribution (softmax of the last logits);
  3. generating 200 characters with it, greedily, from a short prompt (7 characters: 57 steps through the key/value
     cache, then a full window per step) and from a 64-character one (a full window every step); and by sampling;
  4. the dates model: greedy decoding of one date (encoder, decoder steps, the output's cross-attention) and a beam
     of 5 with its trace and greedy's path (what BeamTree draws), up to the model's 40 tokens, ranked by the plain
     sum of log-probabilities (decode's default) and with a length penalty of 0.6;
  5. the char LSTM's gates and states over 64 characters (64 steps of the step graph);
- the widgets, as a reader uses them (a button pressed in the page, until every widget of its group has drawn the
  result and the browser has painted a frame):
  6. "Run live on your own input" on the next-character widget of a fresh page: the runtime and the model load, and
     the three char-LM widgets (next character, every layer and head, one query's steps) draw the recorded prompt;
  7. Run on a 64-character prompt: the three char-LM widgets redraw;
  8. "greedy" with 200 characters: generated, then the three widgets redraw for the longer prompt;
  9. a date run: the cross-attention heatmap and the beam tree of 5 redraw; the LSTM's gates over 64 characters.

Budgets from issue 34: load <= 1.5 s, 64-character forward + attention <= 20 ms, 200 characters <= 2 s, dates greedy
<= 50 ms, beam 5 <= 250 ms. The figures go to src/seqviz/recorded/live.json (bench/_results.py: one file per bench,
with the machine they were measured on), with the bundle's size and its gzip size.
Run: .venv/bin/python bench/bench_live.py [--quick] [--repeats 30]
"""
from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import importlib.util
import os
import statistics
import threading
from pathlib import Path

from _results import write_results  # bench/ is not a package: the benchmarks run as scripts

ROOT = Path(__file__).resolve().parent.parent
BOOK = Path(os.environ.get("SEQVIZ_BOOK_HTML", ROOT / "_build" / "html")).resolve()
PAGE = "book/visual_tools.html"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
BUDGETS_MS = {"load char_lm": 1500, "char_lm 64-character forward + attention": 20, "char_lm 200 characters": 2000,
              "char_lm 200 characters after a 64-character prompt": 2000,
              "char_lm 200 characters sampled after a 64-character prompt": 2000, "dates greedy": 50,
              "dates beam 5": 250, "widgets: Run live, first time (runtime + model + three widgets drawn)": 1500,
              "widgets: 200 characters greedy, then three widgets drawn": 2000}
PROMPT_64 = "ROMEO.\nBut, soft! what light through yonder window breaks?\nIt is"[-64:]
SHORT = "ROMEO.\n"
DATE = "Wednesday the 3rd of March 1999"
# the live widgets of the page's "Try the models" section, in page order
WIDGETS = ["next", "heads", "steps", "gates", "cross", "beam"]

_spec = importlib.util.spec_from_file_location("vendor_js", ROOT / "scripts" / "vendor_js.py")
vendor_js = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(vendor_js)

LOAD = """async (name) => {
  const t0 = performance.now();
  await window.live.loadModel(name);
  return performance.now() - t0;
}"""

# Each timing runs the call `repeats` times after `warm` untimed calls; returns the milliseconds of each.
TIMED = """async ({what, repeats, warm, prompt, short, date}) => {
  const live = window.live;
  const lm = await live.loadModel("char_lm"), lstm = await live.loadModel("char_lstm");
  const dates = await live.loadModel("dates");
  const { softmaxWithTemperature } = live;
  const ids64 = lm.encode(prompt).ids, idsShort = lm.encode(short).ids, src = dates.encode(date).ids;
  const calls = {
    forward: async () => { const f = await lm.forward(ids64); softmaxWithTemperature(f.next, 1); },
    generate_short: () => lm.generate(idsShort, 200, { greedy: true }),
    generate_64: () => lm.generate(ids64, 200, { greedy: true }),
    sample_64: () => lm.generate(ids64, 200, { temperature: 0.8, topK: 20, seed: 1 }),
    dates_greedy: () => dates.greedy(src),
    dates_beam5: () => dates.beam(src, 5, { trace: true, withGreedy: true }),
    dates_beam5_norm: () => dates.beam(src, 5, { lengthPenalty: 0.6, trace: true, withGreedy: true }),
    lstm_trace_64: () => lstm.trace(lstm.encode(prompt).ids),
  };
  for (let i = 0; i < warm; i++) await calls[what]();
  const ms = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    await calls[what]();
    ms.push(performance.now() - t0);
  }
  return ms;
}"""

# A reader's action on the widgets: put `text` in the first widget's field (unless null), set its "append n" field,
# press `button`, and time until every widget of `group` has finished a run and drawn it, and a frame was painted.
WIDGET_ACTION = """async ({which, text, n, button}) => {
  const all = document.querySelectorAll(".seqviz[data-live]");
  if (all.length !== 6) throw new Error(`the page has ${all.length} live widgets, not 6`);
  const roots = which.map((k) => all[k]);
  const first = roots[0];
  const open = first.querySelector("button.sv-live-open");
  if (text !== null) first.querySelector(".sv-live-input").value = text;
  if (n !== null) first.querySelector("input.sv-live-n").value = String(n);
  const before = roots.map((r) => Number(r.dataset.liveRuns || 0));
  const drawn = roots.map((r, i) => new Promise((resolve, reject) => {
    const done = () => Number(r.dataset.liveRuns || 0) > before[i];
    const observer = new MutationObserver(() => { if (done()) { observer.disconnect(); resolve(); } });
    observer.observe(r, { attributes: true, attributeFilter: ["data-live-runs"] });
    setTimeout(() => reject(new Error(`widget ${which[i]}: no run in 60 s`)), 60000);
  }));
  const t0 = performance.now();
  (button === "open" ? open : first.querySelector(button)).click();
  await Promise.all(drawn);
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));  // painted
  const ms = performance.now() - t0;
  const bad = roots.filter((r) => r.dataset.live !== "ready")
    .map((r) => r.querySelector(".sv-live-problem").textContent);
  if (bad.length) throw new Error(`the widgets did not run: ${bad}`);
  return ms;
}"""


def stats(ms: list[float]) -> dict:
    s = sorted(ms)
    p95 = s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]
    return {"median_ms": round(statistics.median(s), 2), "p95_ms": round(p95, 2), "n": len(s),
            "min_ms": round(s[0], 2), "max_ms": round(s[-1], 2)}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def bundle() -> dict:
    """The live bundle the built book serves (vendor/onnxruntime-web/, vendor/live/): each file's bytes, the total and
    its gzip size; and which models it holds."""
    import json

    parts = [f for d in ("onnxruntime-web", "live") for f in sorted((BOOK / "vendor" / d).rglob("*")) if f.is_file()]
    manifest = json.loads((BOOK / "vendor" / "live" / "models" / "manifest.json").read_text())
    return {"files": {f.relative_to(BOOK).as_posix(): f.stat().st_size for f in parts},
            "bytes": sum(f.stat().st_size for f in parts),
            "gzip_bytes": sum(len(gzip.compress(f.read_bytes(), 6)) for f in parts),
            "models": sorted(manifest["models"])}


def page_of(browser, url: str):
    """A fresh context (nothing cached) on the built page, every request leaving the book's server refused."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    external, errors = [], []
    base = url.split("/book/")[0]
    ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith(base)
              else (external.append(r.request.url), r.abort()))
    page = ctx.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url, wait_until="load")
    page.wait_for_function("() => document.querySelectorAll('.seqviz .sv-live-open').length >= 6", timeout=60_000)
    return page, external, errors


def widget(page, names: list[str], text, button: str, n=None) -> float:
    return page.evaluate(WIDGET_ACTION, {"which": [WIDGETS.index(k) for k in names], "text": text, "n": n,
                                         "button": button})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30, help="timed calls per figure (generation: a fifth of them)")
    ap.add_argument("--loads", type=int, default=8, help="cold loads per model, each in a fresh browser context")
    ap.add_argument("--quick", action="store_true", help="short run: 5 repeats, 2 loads")
    args = ap.parse_args()
    if args.quick:
        args.repeats, args.loads = 5, 2
    if not (BOOK / PAGE).is_file() or not (BOOK / "vendor" / "live" / "models" / "manifest.json").is_file():
        raise SystemExit(f"no built book with live models at {BOOK}: run `make book` (or set SEQVIZ_BOOK_HTML)")
    from playwright.sync_api import sync_playwright

    sizes = bundle()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=BOOK))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{PAGE}"
    figures, problems = {}, []
    few = max(3, args.repeats // 5)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS, headless=True)
        # -- the runtime --
        for name in ("char_lm", "char_lstm", "dates"):
            ms = []
            for _ in range(args.loads):
                page, external, errors = page_of(browser, url)
                page.evaluate(vendor_js.LIVE_IMPORT_JS)
                ms.append(page.evaluate(LOAD, name))
                problems += external + errors
                page.context.close()
            figures[f"load {name}"] = stats(ms)
            print(f"load {name:9s} {figures[f'load {name}']}")
        page, external, errors = page_of(browser, url)
        page.evaluate(vendor_js.LIVE_IMPORT_JS)
        arg = {"prompt": PROMPT_64, "short": SHORT, "date": DATE}
        for what, label, repeats in [
                ("forward", "char_lm 64-character forward + attention", args.repeats),
                ("generate_short", "char_lm 200 characters", few),
                ("generate_64", "char_lm 200 characters after a 64-character prompt", few),
                ("sample_64", "char_lm 200 characters sampled after a 64-character prompt", few),
                ("dates_greedy", "dates greedy", args.repeats),
                ("dates_beam5", "dates beam 5", args.repeats),
                ("dates_beam5_norm", "dates beam 5, length penalty 0.6", args.repeats),
                ("lstm_trace_64", "char_lstm gates over 64 characters", args.repeats)]:
            ms = page.evaluate(TIMED, {"what": what, "repeats": repeats, "warm": 2, **arg})
            figures[label] = stats(ms)
            print(f"{label:62s} {figures[label]}")
        threads = page.evaluate("async () => (await window.live.loadRuntime()).env.wasm.numThreads")
        version = page.evaluate("async () => (await window.live.loadRuntime()).env.versions.web")
        problems += external + errors
        page.context.close()
        # -- the widgets --
        lm_group = ["next", "heads", "steps"]
        ms = []
        for _ in range(args.loads):
            page, external, errors = page_of(browser, url)
            ms.append(widget(page, lm_group, None, "open"))
            problems += external + errors
            page.context.close()
        label = "widgets: Run live, first time (runtime + model + three widgets drawn)"
        figures[label] = stats(ms)
        print(f"{label:62s} {figures[label]}")
        page, external, errors = page_of(browser, url)
        widget(page, lm_group, None, "open")
        timed = {
            "widgets: a 64-character prompt, three widgets drawn":
                [widget(page, lm_group, PROMPT_64[:-1] + "abcdefgh"[i % 8], "button.sv-live-run")
                 for i in range(args.repeats)],
            "widgets: 200 characters greedy, then three widgets drawn":
                [widget(page, lm_group, SHORT, "button.sv-live-greedy", n=200) for _ in range(few)],
        }
        widget(page, ["gates"], None, "open")
        timed["widgets: the LSTM's gates over 64 characters drawn"] = [
            widget(page, ["gates"], PROMPT_64[:-1] + "abcdefgh"[i % 8], "button.sv-live-run")
            for i in range(args.repeats)]
        widget(page, ["cross", "beam"], None, "open")
        dates = ["3rd of March 1999", "March 3, 1999", "03-MAR-99", DATE, "12/25/2031"]
        timed["widgets: a date, cross-attention (greedy) and the beam tree of 5 drawn"] = [
            widget(page, ["cross", "beam"], dates[i % 5], "button.sv-live-run") for i in range(args.repeats)]
        for label, ms in timed.items():
            figures[label] = stats(ms)
            print(f"{label:62s} {figures[label]}")
        problems += external + errors
        page.context.close()
        browser.close()
    server.shutdown()
    if problems:
        raise SystemExit(f"the page made requests that left the machine or logged errors: {problems}")
    timings = [{"measure": k, **v, "budget_ms": BUDGETS_MS.get(k),
                "within_budget": None if k not in BUDGETS_MS else v["median_ms"] <= BUDGETS_MS[k]}
               for k, v in figures.items()]
    print(f"bundle {sizes['bytes'] / 1e6:.2f} MB, {sizes['gzip_bytes'] / 1e6:.2f} MB gzipped; medians within "
          f"budget: {all(r['within_budget'] for r in timings if r['within_budget'] is not None)}")
    # every value a list of rows, so the Measured appendix draws each as a table
    write_results("live", {
        "rows": timings,
        "bundle": [{"file": f, "bytes": n} for f, n in sizes["files"].items()]
        + [{"file": "all (uncompressed / gzip -6)", "bytes": sizes["bytes"], "gzip_bytes": sizes["gzip_bytes"]}],
        "setup": [{"browser": "Debian chromium, headless", "page": PAGE, "onnxruntime_web": version,
                   "threads": threads, "models": ", ".join(sizes["models"]), "quick": args.quick,
                   "repeats": args.repeats, "loads": args.loads, "prompt_64": PROMPT_64, "short_prompt": SHORT,
                   "date": DATE}]})


if __name__ == "__main__":
    main()
