"""Benchmark: a German -> English translator (``seqviz.transformer.translator``, chapter 7's encoder-decoder
transformer on 18 times chapter 5's pairs): its recipe chosen by a sweep on a GPU, a checkpoint scored on the CPU.

    .venv/bin/python bench/bench_translator.py data --out .gpu/data.pkl.gz   # the training data, built once (~1 min)
    python bench/bench_translator.py sweep --data .gpu/data.pkl.gz --device cuda --budget 380 --out DIR
                          # the recipes of VARIANTS side by side, one process each, stage 1 then stage 2 (a GPU)
  .venv/bin/python bench/bench_translator.py score DIR/dropout_0_1.pt --sha256 SHA --sweep DIR/sweep.json --threads 1
                          # a checkpoint on the CPU, as a reader loads it: BLEU greedy and beam 5 on the 591 test
                          # pairs, the paired bootstrap of beam vs greedy and of the translator vs the GRU
    .venv/bin/python bench/bench_translator.py gru-data DIR/dropout_0_1.pt --sha256 SHA --gru-passes 3
                          # chapter 5's GRU with attention on the translator's pairs: data or architecture?

``sweep`` trains every variant in its own process on one device at once. A variant's number of passes is fixed
before it starts, from its measured speed (``calibrate``: 100 steps, once every variant has reached that point, so the
others run beside it) and the budget (seconds of stage-1 training), so each is an ordinary recipe with a fixed
schedule, the one ``make translator`` rebuilds; the passes chosen are in its record. Stage 2 is ``SHIPPED_FINETUNE``.
The variants are compared on the **validation** pairs (greedy BLEU); each build's record also holds its test greedy
BLEU, which plays no part in the choice. On a machine without the corpora (a GPU machine with no network), carry the
``data`` file and trans-de-en's ``de-en`` file, and point ``SEQVIZ_DATA_DIR`` at a folder holding it as
``trans-de-en/usr/share/trans/de-en`` (stage 2 reads the example sentences again). ``score`` writes
src/seqviz/recorded/translator.json (the sweep's record as ``sweep`` and ``sweep_machine``); the GRU with attention it
compares against is retrained by ``bench_attention.py``'s recipe on one thread (about 13 minutes) unless
``--quick`` (which only prints).
"""
from __future__ import annotations

import argparse
import datetime
import gzip
import hashlib
import json
import math
import os
import pickle
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

#: what differs between the recipes the sweep compares (on top of ``BASE``); the shipped one is recorded in
#: ``seqviz.transformer.translator.SHIPPED_TRANSLATOR`` once chosen
VARIANTS = {"dropout 0.1": {"dropout": 0.1},
            "dropout 0.3": {"dropout": 0.3},
            "dropout 0.3, lr 2e-3": {"dropout": 0.3, "lr": 2e-3}}


def base_recipe():
    """The data and model every variant shares (batches of 256 pairs): the module's ``TranslationRecipe()``, whose
    defaults are the recipe the sweep of 2026-11-27 chose (``SHIPPED_TRANSLATOR``)."""
    from seqviz.transformer.translator import TranslationRecipe
    return TranslationRecipe()


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name).strip("_")


def build_data(out: Path) -> None:
    from seqviz.transformer.translator import translation_data
    t0 = time.perf_counter()
    data = translation_data(base_recipe())
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wb", compresslevel=6) as f:
        pickle.dump(data, f, protocol=pickle.HIGHEST_PROTOCOL)
    print(f"{data[2]} in {time.perf_counter() - t0:.0f} s; wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")


def barrier(out: Path, name: str, timeout: float = 90.0) -> None:
    """Wait until every variant of the sweep has reached this point (or ``timeout`` seconds), so that each one's
    calibration runs while the others run beside it, as its training will."""
    (out / f"ready_{slug(name)}").touch()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout and not all((out / f"ready_{slug(n)}").exists() for n in VARIANTS):
        time.sleep(0.2)


def calibrate(recipe, task, device, steps: int = 100, skip: int = 20) -> float:
    """Seconds per training step of ``recipe`` on ``device`` (a throwaway model, real batches)."""
    from seqviz.transformer import EncoderDecoderTransformer
    from seqviz.transformer.pretrained import _adamw
    from seqviz.transformer.translator import _train_loss

    model = EncoderDecoderTransformer(recipe.model_config(task.src_vocab, task.tgt_vocab)).to(device).train()
    opt = _adamw(model, recipe.lr, recipe.weight_decay, recipe.betas)

    def cycle():
        while True:
            yield from task.train

    it, t0 = cycle(), None
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
    for i in range(steps):
        if i == skip:
            sync()
            t0 = time.perf_counter()
        b = next(it).to(device)
        loss = _train_loss(model, b, recipe.label_smoothing)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.clip)
        opt.step()
    sync()
    return (time.perf_counter() - t0) / (steps - skip)


def valid_bleu(path: Path, device) -> float:
    """Greedy BLEU of the checkpoint at ``path`` on the validation pairs (what the sweep compares)."""
    from seqviz.metrics import bleu
    from seqviz.seq2seq import translate
    from seqviz.transformer.translator import load_translator

    tr = load_translator(path, sha256=None)
    tr.model.to(device)
    pairs = tr.held_out("valid")
    return round(bleu(translate(tr.model, tr.task(pairs), 1), [p.target for p in pairs]), 2)


def train_variant(name: str, data: Path, device: str, budget: float, out: Path, smoke: bool = False) -> None:
    from seqviz.transformer.translator import SHIPPED_FINETUNE, build_finetuned, build_translator

    t_start = time.perf_counter()
    with gzip.open(data, "rb") as f:
        task, bpe, counts = pickle.load(f)
    finetune = SHIPPED_FINETUNE
    if smoke:       # the pipeline end to end on the CPU in a minute: 2 batches a pass, one fine-tuning pass
        task.train.sources, task.train.targets = task.train.sources[:512], task.train.targets[:512]
        finetune = replace(finetune, epochs=1)
    data_fields = {"merges", "max_tokens", "max_len", "sentence_repeats", "phrases", "phrase_min_words", "ddtp",
                   "batch_size", "max_words", "seed"}
    if data_fields & set(VARIANTS[name]):
        raise SystemExit(f"variant {name!r} changes {sorted(data_fields & set(VARIANTS[name]))}, which the data "
                         f"file fixed when it was built: build one data file per such variant")
    recipe = replace(base_recipe(), **VARIANTS[name])
    torch.zeros(1, device=device)             # start the device's context before the barrier
    barrier(out, name)
    step_s = calibrate(recipe, task, device, *((6, 2) if smoke else ()))
    # 12 % kept back for the per-pass validation and for the speed's drift: the budget is a bound, not a target
    epochs = max(1, math.floor(0.88 * budget / (step_s * len(task.train))))
    recipe = replace(recipe, epochs=epochs)
    print(f"[{name}] {step_s * 1000:.1f} ms a step x {len(task.train)} steps a pass: {epochs} passes", flush=True)
    base = out / f"{slug(name)}_base.pt"
    _, info1 = build_translator(recipe, progress=False, path=base, device=device, data=(task, bpe, counts),
                                beam=False)
    print(f"[{name}] stage 1: {json.dumps(info1['epochs'])}", flush=True)
    final = out / f"{slug(name)}.pt"
    digest, info = build_finetuned(base, finetune, progress=False, path=final, device=device, beam=False)
    record = {"variant": name, "step_ms_calibrated": round(step_s * 1000, 2), "epochs": epochs,
              "valid_bleu_greedy": valid_bleu(final, device), "sha256": digest,
              "seconds": round(time.perf_counter() - t_start, 1),
              "info": {k: v for k, v in info.items() if k != "data"}, "data": counts}
    (out / f"{slug(name)}.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"[{name}] valid BLEU greedy {record['valid_bleu_greedy']}, test greedy {info['bleu_greedy']}, "
          f"{record['seconds']:.0f} s", flush=True)


def sweep(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    procs = []
    for name in VARIANTS:
        (out / f"ready_{slug(name)}").unlink(missing_ok=True)
    for name in VARIANTS:
        log = open(out / f"{slug(name)}.log", "w")
        procs.append((name, log, subprocess.Popen(
            [sys.executable, __file__, "train", "--variant", name, "--data", args.data, "--device", args.device,
             "--budget", str(args.budget), "--out", str(out), "--threads", str(args.threads)]
            + (["--smoke"] if args.smoke else []),
            stdout=log, stderr=subprocess.STDOUT)))
    failed = []
    for name, log, p in procs:
        p.wait()
        log.close()
        print(f"{name}: exit {p.returncode}", flush=True)
        if p.returncode:
            failed.append(name)
    records = [json.loads((out / f"{slug(n)}.json").read_text()) for n in VARIANTS
               if (out / f"{slug(n)}.json").is_file()]
    best = max(records, key=lambda r: r["valid_bleu_greedy"]) if records else None
    summary = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
               "torch": torch.__version__, "budget_s": args.budget, "variants": records,
               "chosen": best and best["variant"]}
    (out / "sweep.json").write_text(json.dumps(summary, indent=1) + "\n")
    for r in records:
        print(f"{r['variant']:>22}: {r['epochs']} passes, valid BLEU greedy {r['valid_bleu_greedy']}, "
              f"test greedy {r['info']['bleu_greedy']}, valid loss {r['info']['valid_loss']}")
    print(f"chosen on the validation pairs: {summary['chosen']}")
    if failed:
        raise SystemExit(f"{len(failed)} variant(s) failed ({', '.join(failed)}): their logs are in {out}")


def sweep_record(raw: dict) -> tuple[list[dict], dict]:
    """A sweep.json as results rows (one flat dict per variant, chosen first by validation BLEU) and its machine."""
    rows = []
    for r in sorted(raw["variants"], key=lambda r: -r["valid_bleu_greedy"]):
        info = r["info"]
        rows.append({"variant": r["variant"], "chosen": r["variant"] == raw["chosen"], "passes": r["epochs"],
                     "batch_size": info["recipe"]["batch_size"], "steps": info["steps"],
                     "step_ms": r["step_ms_calibrated"], "stage1_wall_s": info["wall_seconds"],
                     "stage1_valid_loss": info["base_valid_loss"],
                     "finetune_best_pass": info["finetune"]["best_epoch"],
                     "valid_loss": info["valid_loss"], "valid_bleu_greedy": r["valid_bleu_greedy"],
                     "test_bleu_greedy": info["bleu_greedy"], "sha256": r["sha256"],
                     "valid_loss_per_pass": [e["valid_loss"] for e in info["epochs"]],
                     "finetune_valid_loss_per_pass": [e["valid_loss"]
                                                  for e in info["finetune"]["epochs"]]})
    machine = {"date": raw.get("date"), "device": raw["device"], "torch": raw["torch"], "budget_s": raw["budget_s"],
               "variants_at_once": len(raw["variants"]), "pairs": raw["variants"][0]["data"],
               "command": f"python bench/bench_translator.py sweep --device cuda --budget {raw['budget_s']:g}"}
    return rows, machine


def score(args) -> None:
    """A stage-2 checkpoint (``make translator``'s, or a sweep's) on this machine's CPU, as a reader loads it (float16
    weights): BLEU greedy and beam 5 on the test pairs, the paired bootstrap of beam vs greedy and (unless --quick)
    of the translator vs the chapter's GRU with attention retrained by bench_attention.py's recipe on one thread;
    writes src/seqviz/recorded/translator.json (not with --quick), keeping the sweep's record (``--sweep``: a sweep.json
    to add)."""
    from _results import read_results, write_results

    from seqviz.data import load_corpus
    from seqviz.metrics import bleu, paired_bootstrap
    from seqviz.seq2seq import translate
    from seqviz.transformer.translator import load_translator

    old = read_results("translator") or {}
    if args.sweep:
        old["sweep"], old["sweep_machine"] = sweep_record(json.loads(Path(args.sweep).read_text()))
    corpus = load_corpus("trans_de_en")
    tr = load_translator(args.checkpoint, sha256=None if args.sha256.lower() == "none" else args.sha256)
    if "finetune" not in tr.info:
        raise SystemExit(f"{args.checkpoint} is a stage-1 file (no fine-tuning record): score the stage-2 checkpoint "
                         f"that `python -m seqviz.transformer make translator` wrote from it")
    digest = hashlib.sha256(Path(args.checkpoint).read_bytes()).hexdigest()
    chosen = next((r for r in old.get("sweep", []) if r.get("chosen")), None)
    label = ("transformer (the sweep's choice)" if chosen and chosen["sha256"] == digest
             else f"transformer ({Path(args.checkpoint).name}, trained on {tr.info.get('device', 'cpu')})")
    test = tr.held_out("test", corpus)
    refs, task = [p.target for p in test], tr.task(test)
    hyps, rows = {}, []
    t0 = time.perf_counter()
    hyps["transformer", "greedy"] = translate(tr.model, task, 1)
    greedy_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    hyps["transformer", "beam"] = translate(tr.model, task, 5)
    beam_s = time.perf_counter() - t0
    info = tr.info
    rows.append({"model": label, "train_pairs": info["data"]["train_pairs"],
                 "test_pairs": len(refs), "valid_loss": info["valid_loss"],
                 "bleu_greedy": round(bleu(hyps["transformer", "greedy"], refs), 2),
                 "bleu_beam5": round(bleu(hyps["transformer", "beam"], refs), 2),
                 "passes": info["recipe"]["epochs"], "steps": info["steps"],
                 "finetune_best_pass": info["finetune"]["best_epoch"],     # 0: stage 2 kept stage 1's weights
                 "device_trained": info.get("device"),
                 "train_wall_s": round(info.get("wall_seconds", 0) + info["finetune"].get("wall_seconds", 0)),
                 "decode_greedy_s": round(greedy_s, 1), "decode_beam5_s": round(beam_s, 1)})
    comparisons = [(("transformer", "beam"), ("transformer", "greedy"), "transformer: beam 5 minus greedy")]
    if not args.quick:
        from bench_attention import train_translation_model

        from seqviz.data import translation_pairs
        gru_task, _ = translation_pairs(corpus, num_merges=2000, batch_size=64, max_words=10)
        assert [t for _, t in gru_task.test_text] == refs, "the GRU's test pairs are not the translator's"
        threads = torch.get_num_threads()
        torch.set_num_threads(1)                  # the recorded run's thread count: its figures repeat to the digit
        model, hist, train_s = train_translation_model(gru_task, "small", "general", 30, 2e-3, "cpu")
        torch.set_num_threads(threads)
        hyps["gru", "greedy"] = translate(model, gru_task, 1)
        hyps["gru", "beam"] = translate(model, gru_task, 5, length_penalty=1.0)
        rows.append({"model": "GRU with attention (chapter 5)", "train_pairs": len(gru_task.train.sources),
                     "test_pairs": len(refs), "valid_perplexity": hist.best["valid_perplexity"],
                     "bleu_greedy": round(bleu(hyps["gru", "greedy"], refs), 2),
                     "bleu_beam5": round(bleu(hyps["gru", "beam"], refs), 2), "passes": 30,
                     "device_trained": "cpu", "train_wall_s": round(train_s)})
        comparisons += [(("transformer", "beam"), ("gru", "beam"), "transformer minus GRU with attention, beam 5"),
                        (("transformer", "greedy"), ("gru", "greedy"),
                         "transformer minus GRU with attention, greedy")]
    for r in rows:
        print(f"{r['model']:>32}: BLEU greedy {r['bleu_greedy']:.2f}, beam 5 {r['bleu_beam5']:.2f}")
    significance = []
    for a, b, what in comparisons:
        res = paired_bootstrap(hyps[a], hyps[b], refs, n=1000, seed=0)
        significance.append({"comparison": what, "delta": res["delta"], "ci95": list(res["ci95"]),
                             "p_value": res["p_value"], "n": res["n"], "test_pairs": len(refs)})
        print(f"{what}: {res['delta']:+.2f} BLEU, 95% CI [{res['ci95'][0]:+.2f}, {res['ci95'][1]:+.2f}], "
              f"p = {res['p_value']:.3f}")
    examples = [{"source": p.source, "reference": p.target, "greedy": g, "beam5": b}
                for p, g, b in list(zip(test, hyps["transformer", "greedy"], hyps["transformer", "beam"]))[:12]]
    if args.quick:
        print("a --quick run: src/seqviz/recorded/translator.json is left as it was")
        return
    keep = {k: v for k, v in old.items() if k.startswith("sweep")}
    write_results("translator", {**keep, "rows": rows, "significance": significance, "examples": examples,
                                 "checkpoint_sha256": digest})


def gru_same_data(args) -> None:
    """Chapter 5's GRU with attention (its ``small`` preset and recipe, one thread) on the translator's own pairs and
    BPE (the ``data`` file, re-batched at chapter 5's 64), ``--gru-passes`` passes, the best by validation loss kept;
    scored on the same 591 test pairs beside the translator checkpoint's decodes, with the paired bootstrap. So the
    translator's lead over chapter 5's GRU splits into what the data gives and what the architecture gives. Adds
    ``gru_same_data`` (and its significance and machine) to src/seqviz/recorded/translator.json, keeping the rest."""
    from dataclasses import replace as dc_replace

    from _results import machine, read_results, write_results
    from bench_attention import train_translation_model

    from seqviz.data import PairBatches
    from seqviz.metrics import bleu, paired_bootstrap
    from seqviz.seq2seq import translate
    from seqviz.transformer.translator import load_translator

    old = read_results("translator")
    if not old or not old.get("rows"):
        raise SystemExit("run `score` first: this mode adds to src/seqviz/recorded/translator.json")
    with gzip.open(args.data, "rb") as f:
        task, _, counts = pickle.load(f)
    task = dc_replace(task, train=PairBatches(task.train.sources, task.train.targets, 64, task.src_vocab.pad_id,
                                              shuffle=True, seed=0, bucket=True))
    refs = [t for _, t in task.test_text]
    tr = load_translator(args.checkpoint, sha256=None if args.sha256.lower() == "none" else args.sha256)
    test = tr.held_out("test")
    assert [p.target for p in test] == refs, "the data file's test pairs are not the translator's"
    hyps = {("transformer", "greedy"): translate(tr.model, tr.task(test), 1),
            ("transformer", "beam"): translate(tr.model, tr.task(test), 5)}
    torch.set_num_threads(1)
    t0 = time.process_time()
    model, hist, train_s = train_translation_model(task, "small", "general", args.gru_passes, 2e-3, "cpu")
    cpu_s = time.process_time() - t0
    hyps["gru", "greedy"] = translate(model, task, 1)
    hyps["gru", "beam"] = translate(model, task, 5, length_penalty=1.0)
    row = {"model": "GRU with attention, the translator's pairs", "train_pairs": len(task.train.sources),
           "test_pairs": len(refs), "passes": args.gru_passes,
           "best_pass": hist.eval_steps.index(hist.best["step"]) + 1,
           "valid_loss": round(hist.best["valid_loss"], 4),
           "valid_loss_per_pass": [round(v, 4) for v in hist.valid_loss],
           "bleu_greedy": round(bleu(hyps["gru", "greedy"], refs), 2),
           "bleu_beam5": round(bleu(hyps["gru", "beam"], refs), 2), "steps": hist.steps,
           "train_cpu_s": round(cpu_s), "train_wall_s": round(train_s), "parameters": sum(
               p.numel() for p in model.parameters())}
    print(f"{row['model']}: BLEU greedy {row['bleu_greedy']:.2f}, beam 5 {row['bleu_beam5']:.2f}, valid loss "
          f"{row['valid_loss']} (best pass {row['best_pass']} of {args.gru_passes}), {cpu_s / 60:.0f} CPU min")
    significance = []
    for dec, name in (("beam", "beam 5"), ("greedy", "greedy")):
        res = paired_bootstrap(hyps["transformer", dec], hyps["gru", dec], refs, n=1000, seed=0)
        significance.append({"comparison": f"transformer minus GRU with attention on the same pairs, {name}",
                             "delta": res["delta"], "ci95": list(res["ci95"]), "p_value": res["p_value"],
                             "n": res["n"], "test_pairs": len(refs)})
        print(f"{significance[-1]['comparison']}: {res['delta']:+.2f} BLEU, 95% CI [{res['ci95'][0]:+.2f}, "
              f"{res['ci95'][1]:+.2f}], p = {res['p_value']:.3f}")
    write_results("translator", {**old, "gru_same_data": [row], "gru_same_data_significance": significance,
                                 "gru_same_data_machine": machine()})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", nargs="?", choices=["data", "sweep", "train", "score", "gru-data"],
                    help="none (as `make bench` runs it): score the checkpoint `make translator` writes, if any")
    ap.add_argument("checkpoint", nargs="?", help="score: the checkpoint to score")
    ap.add_argument("--data", default=".gpu/data.pkl.gz")
    ap.add_argument("--out", default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--budget", type=float, default=360.0, help="seconds of stage-1 training per variant")
    ap.add_argument("--variant", choices=list(VARIANTS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sweep", default=None, help="score: the sweep.json of the sweep that chose the recipe")
    ap.add_argument("--sha256", default=None,
                    help="score: the checkpoint's SHA-256 (the one its build printed), or 'none' for no check")
    ap.add_argument("--quick", action="store_true",
                    help="score: without the GRU, and the recorded figures are not replaced (printed only)")
    ap.add_argument("--gru-passes", type=int, default=3, help="gru-data: passes over the translator's pairs")
    ap.add_argument("--smoke", action="store_true",
                    help="sweep, train: 512 training pairs and one fine-tuning pass (checks the pipeline, not a run)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.mode in ("sweep", "train") and not args.out:
        ap.error(f"{args.mode} needs --out, the folder for its checkpoints, logs and records")
    if args.mode == "train" and not args.variant:
        ap.error(f"train needs --variant, one of {list(VARIANTS)}")
    if args.mode == "data":
        build_data(Path(args.out or args.data))
    elif args.mode == "train":
        train_variant(args.variant, Path(args.data), args.device, args.budget, Path(args.out), args.smoke)
    elif args.mode == "sweep":
        sweep(args)
    elif args.mode == "gru-data":
        if not args.checkpoint or args.sha256 is None:
            ap.error("gru-data needs the translator checkpoint's path and --sha256 (or --sha256 none)")
        gru_same_data(args)
    else:
        if args.mode is None:
            from seqviz.transformer.pretrained import CHECKPOINTS
            made = CHECKPOINTS / "translator_de_en.pt"
            if not made.is_file():
                print(f"no translator at {made}, so nothing to score: `make translator` builds one (hours on two CPU "
                      "cores), or see this file's docstring for the sweep on a GPU. The recorded figures stay.")
                return
            args.checkpoint, args.sha256 = str(made), "none"       # no translator is committed: no hash to check
        if not args.checkpoint:
            ap.error("score needs the checkpoint's path")
        if args.sha256 is None:
            ap.error("score needs --sha256: the SHA-256 the checkpoint's build printed, or 'none' to skip the check")
        score(args)


if __name__ == "__main__":
    main()
