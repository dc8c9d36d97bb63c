"""The live models in the real browser (Debian chromium through Playwright, headless): prints figures, asserts nothing.

The bare live page of scripts/vendor_js.py (LIVE_PAGE) is served on 127.0.0.1 with the live bundle (onnxruntime-web's
WebAssembly build, the runtime module vendor/live/live.js, the export of `make live-models`: _build/live-models when
it is fresh, else a fresh export into a temporary folder). Medians and 95th percentiles of:

1. load: onnxruntime-web and one model, from nothing (a fresh browser context each time, so nothing cached): the char
   transformer LM (the budget's model), the char LSTM and the dates encoder-decoder;
2. the char transformer LM on a 64-character prompt: one forward pass with every head's attention, q, k, v and the
   next-character distribution (softmax of the last logits);
3. generating 200 characters with it, greedily, from a short prompt (7 characters: 57 steps through the key/value
   cache, then a full window per step) and from a 64-character one (a full window every step); and by sampling;
4. the dates model: greedy decoding of one date (encoder, decoder steps, the output's cross-attention) and a beam of 5
   with its trace and greedy's path (what BeamTree draws), up to the model's 40 tokens, ranked by the plain sum of
   log-probabilities (decode's default) and with a length penalty of 0.6 (the stop rule's bound is looser then);
5. the char LSTM's gates and states over 64 characters (64 steps of the step graph).

Budgets from issue 34: load <= 1.5 s, 64-character forward + attention <= 20 ms, 200 characters <= 2 s, dates greedy
<= 50 ms, beam 5 <= 250 ms. The figures go to src/seqviz/recorded/live.json (bench/_results.py: one file per bench,
with the machine they were measured on), with the bundle's size and its gzip size.
Run: .venv/bin/python bench/bench_live.py [--quick] [--repeats 30]
"""
from __future__ import annotations

import argparse
import functools
import http.server
import importlib.util
import statistics
import tempfile
import threading
from pathlib import Path

from _results import write_results  # bench/ is not a package: the benchmarks run as scripts

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
BUDGETS_MS = {"load char_lm": 1500, "char_lm 64-character forward + attention": 20, "char_lm 200 characters": 2000,
              "char_lm 200 characters after a 64-character prompt": 2000,
              "char_lm 200 characters sampled after a 64-character prompt": 2000, "dates greedy": 50,
              "dates beam 5": 250}
PROMPT_64 = "ROMEO.\nBut, soft! what light through yonder window breaks?\nIt is"[-64:]
SHORT = "ROMEO.\n"
DATE = "Wednesday the 3rd of March 1999"

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


def stats(ms: list[float]) -> dict:
    s = sorted(ms)
    p95 = s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]
    return {"median_ms": round(statistics.median(s), 2), "p95_ms": round(p95, 2), "n": len(s),
            "min_ms": round(s[0], 2), "max_ms": round(s[-1], 2)}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def site(folder: Path) -> tuple[dict, Path]:
    """The live page and bundle in ``folder``: the build's export when fresh, else one made now."""
    from seqviz.live import DEFAULT_OUT, StaleExport, check_folder, export_all

    models = ROOT / DEFAULT_OUT
    try:
        check_folder(models)
    except (FileNotFoundError, StaleExport) as e:
        print(f"{e}: exporting into a temporary folder")
        models = folder / "export"
        export_all(models)
    info = vendor_js.live_site(folder / "site", models)
    sizes = {f.relative_to(folder / "site").as_posix(): f.stat().st_size
             for f in sorted((folder / "site" / "vendor").rglob("*")) if f.is_file()}
    return {**info, "files": sizes}, folder / "site"


def page_of(browser, url: str):
    ctx = browser.new_context()
    external, errors = [], []
    ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith(url.rsplit("/", 1)[0])
              else (external.append(r.request.url), r.abort()))
    page = ctx.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url)
    page.wait_for_function("window.liveReady === true")
    return page, external, errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30, help="timed calls per figure (generation: a fifth of them)")
    ap.add_argument("--loads", type=int, default=8, help="cold loads per model, each in a fresh browser context")
    ap.add_argument("--quick", action="store_true", help="short run: 5 repeats, 2 loads")
    args = ap.parse_args()
    if args.quick:
        args.repeats, args.loads = 5, 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        bundle, root = site(Path(tmp))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=root))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
        figures, problems = {}, []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS, headless=True)
            for name in ("char_lm", "char_lstm", "dates"):
                ms = []
                for _ in range(args.loads):
                    page, external, errors = page_of(browser, url)
                    ms.append(page.evaluate(LOAD, name))
                    problems += external + errors
                    page.context.close()
                figures[f"load {name}"] = stats(ms)
                print(f"load {name:9s} {figures[f'load {name}']}")
            page, external, errors = page_of(browser, url)
            arg = {"prompt": PROMPT_64, "short": SHORT, "date": DATE}
            for what, label, repeats in [
                    ("forward", "char_lm 64-character forward + attention", args.repeats),
                    ("generate_short", "char_lm 200 characters", max(3, args.repeats // 5)),
                    ("generate_64", "char_lm 200 characters after a 64-character prompt", max(3, args.repeats // 5)),
                    ("sample_64", "char_lm 200 characters sampled after a 64-character prompt",
                     max(3, args.repeats // 5)),
                    ("dates_greedy", "dates greedy", args.repeats),
                    ("dates_beam5", "dates beam 5", args.repeats),
                    ("dates_beam5_norm", "dates beam 5, length penalty 0.6", args.repeats),
                    ("lstm_trace_64", "char_lstm gates over 64 characters", args.repeats)]:
                ms = page.evaluate(TIMED, {"what": what, "repeats": repeats, "warm": 2, **arg})
                figures[label] = stats(ms)
                print(f"{label:58s} {figures[label]}")
            problems += external + errors
            threads = page.evaluate("async () => (await window.live.loadRuntime()).env.wasm.numThreads")
            version = page.evaluate("async () => (await window.live.loadRuntime()).env.versions.web")
            page.context.close()
            browser.close()
        server.shutdown()
    if problems:
        raise SystemExit(f"the page made requests that left the machine or logged errors: {problems}")
    timings = [{"measure": k, **v, "budget_ms": BUDGETS_MS.get(k),
                "within_budget": None if k not in BUDGETS_MS else v["median_ms"] <= BUDGETS_MS[k]}
               for k, v in figures.items()]
    print(f"bundle {bundle['bytes'] / 1e6:.2f} MB, {bundle['gzip_bytes'] / 1e6:.2f} MB gzipped; medians within "
          f"budget: {all(r['within_budget'] for r in timings if r['within_budget'] is not None)}")
    # every value a list of rows, so the Measured appendix draws each as a table
    write_results("live", {
        "rows": timings,
        "bundle": [{"file": f, "bytes": n} for f, n in bundle["files"].items()]
        + [{"file": "all (uncompressed / gzip -6)", "bytes": bundle["bytes"], "gzip_bytes": bundle["gzip_bytes"]}],
        "setup": [{"browser": "Debian chromium, headless", "onnxruntime_web": version, "threads": threads,
                   "models": ", ".join(bundle["models"] or []), "quick": args.quick, "repeats": args.repeats,
                   "loads": args.loads, "prompt_64": PROMPT_64, "short_prompt": SHORT, "date": DATE}]})

if __name__ == "__main__":
    main()
