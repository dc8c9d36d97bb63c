"""Benchmark: SmolLM2-135M in the book's own blocks (seqviz.transformer.smollm) against transformers' Llama on the
same GGUF file, same machine, same threads, side by side in one run.

    PYTHONPATH=src python bench/bench_smollm.py [--threads 1] [--repeats 3]

Run it with a Python that has transformers 5.x and accelerate besides seqviz's dependencies (transformers is not a
dependency of the book: e.g. a venv with ``pip install torch==2.13.0 transformers accelerate gguf==0.19.0`` and
``PYTHONPATH=src``). Without transformers it measures the book's model alone and says so.

Measured, best of ``--repeats`` (wall seconds): load (read the GGUF, dequantise, build the model); a forward pass over
a 200-token prompt; the prompt plus 20 greedy tokens with the key/value cache. Both produce the same 20 tokens
(checked). Ratios are book / transformers (below 1: the book is faster). Figures go to
src/seqviz/recorded/smollm.json.
"""
from __future__ import annotations

import argparse
import time

import torch
from _results import write_results

from seqviz.transformer.smollm import load_model, smollm2_path


def best(fn, repeats: int):
    t, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    prompt = torch.randint(100, 40000, (1, 200), generator=g)                 # (1, 200) ordinary tokens
    rows = {}
    t_load, ours = best(load_model, args.repeats)
    with torch.no_grad():
        t_fwd, _ = best(lambda: ours(prompt), args.repeats)
        t_gen, gen = best(lambda: ours.generate(prompt[0].tolist(), 20, greedy=True), args.repeats)
    rows["seqviz"] = {"load_s": round(t_load, 3), "forward_200_s": round(t_fwd, 3), "generate_200_20_s": round(t_gen, 3)}
    print(f"seqviz        load {t_load:6.2f} s  forward(200) {t_fwd:6.3f} s  200 + 20 greedy {t_gen:6.3f} s")
    try:
        from transformers import AutoModelForCausalLM
    except ImportError:
        print("transformers is not installed here: the book's model alone (see the docstring)")
    else:
        path = smollm2_path()
        load = lambda: AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name,  # noqa: E731
                                                            dtype=torch.float32).eval()
        t_load2, ref = best(load, args.repeats)
        with torch.no_grad():
            t_fwd2, _ = best(lambda: ref(prompt), args.repeats)
            t_gen2, out = best(lambda: ref.generate(prompt, max_new_tokens=20, min_new_tokens=20, do_sample=False,
                                                    use_cache=True), args.repeats)
        same = out[0, 200:].tolist() == gen
        rows["transformers"] = {"load_s": round(t_load2, 3), "forward_200_s": round(t_fwd2, 3),
                                "generate_200_20_s": round(t_gen2, 3), "same_tokens": same}
        rows["ratio_book_over_transformers"] = {k: round(rows["seqviz"][k] / rows["transformers"][k], 2)
                                                for k in rows["seqviz"]}
        print(f"transformers  load {t_load2:6.2f} s  forward(200) {t_fwd2:6.3f} s  200 + 20 greedy {t_gen2:6.3f} s"
              f"  same 20 tokens: {same}")
        print("book / transformers:", rows["ratio_book_over_transformers"])
    write_results("smollm", {"threads": args.threads, "repeats": args.repeats, **rows})


if __name__ == "__main__":
    main()
