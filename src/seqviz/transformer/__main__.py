"""``python -m seqviz.transformer make char|dates|translator-base|translator``: rebuild a shipped checkpoint by its
recipe (``seqviz.transformer.pretrained``, ``seqviz.transformer.translator``), on one thread unless told otherwise, and
print what it measured and its SHA-256 (for ``seqviz.transformer.pretrained.SHA256``). The translator has two stages:
``translator-base`` writes stage 1 to ``_build/checkpoints/`` (not committed), ``translator`` fine-tunes it."""
import argparse
import time
from pathlib import Path

import torch

from .pretrained import CHECKPOINTS, build
from .translator import BASE_PATH, NAME as TRANSLATOR, build_finetuned, build_translator


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m seqviz.transformer", description=__doc__.split("\n")[0])
    p.add_argument("command", choices=["make"])
    p.add_argument("name", choices=["char", "dates", "translator-base", "translator"],
                   help="char: shakespeare_char.pt; dates: dates_transformer.pt; translator-base: stage 1 of "
                        "translator_de_en.pt (into _build/checkpoints/); translator: stage 2, translator_de_en.pt")
    p.add_argument("--base", default=str(BASE_PATH), help="translator: the stage-1 file to fine-tune")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default=None,
                   help="translator-base, translator: train and measure there (cpu, cuda; default: the CPU)")
    p.add_argument("--out", default=None, help="where to write (default: the package's checkpoints folder)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    if args.name == "translator-base":
        Path(args.out or BASE_PATH).parent.mkdir(parents=True, exist_ok=True)
        digest, info = build_translator(progress=True, path=args.out or BASE_PATH, device=args.device)
    elif args.name == "translator":
        digest, info = build_finetuned(args.base, progress=True, path=args.out, device=args.device)
    else:
        if args.device not in (None, "cpu"):
            p.error(f"--device is for the translator; {args.name} is built on the CPU")
        digest, info = build(args.name, progress=True, path=args.out)
    out = args.out or {"char": CHECKPOINTS / "shakespeare_char.pt", "dates": CHECKPOINTS / "dates_transformer.pt",
                       "translator-base": BASE_PATH, "translator": CHECKPOINTS / f"{TRANSLATOR}.pt"}[args.name]
    shown = {k: v for k, v in info.items() if k != "recipe"}
    print(f"{args.name}: {shown}")
    print(f"built in {time.perf_counter() - t0:.0f} s wall ({info['cpu_seconds']:.0f} s CPU training) on "
          f"{args.threads} thread(s){'' if args.device in (None, 'cpu') else ' and ' + args.device}; wrote {out}, "
          f"SHA-256 {digest}")


if __name__ == "__main__":
    main()
