"""``python -m seqviz.transformer make char|dates``: rebuild a shipped checkpoint of chapter 7 by its recipe
(``seqviz.transformer.pretrained``), on one thread unless told otherwise, and print what it measured and its SHA-256
(for ``seqviz.transformer.pretrained.SHA256``)."""
import argparse
import time

import torch

from .pretrained import CHECKPOINTS, build


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m seqviz.transformer", description=__doc__.split("\n")[0])
    p.add_argument("command", choices=["make"])
    p.add_argument("name", choices=["char", "dates"], help="char: shakespeare_char.pt; dates: dates_transformer.pt")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=None, help="where to write (default: the package's checkpoints folder)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    digest, info = build(args.name, progress=True, path=args.out)
    out = args.out or CHECKPOINTS / {"char": "shakespeare_char.pt", "dates": "dates_transformer.pt"}[args.name]
    shown = {k: v for k, v in info.items() if k != "recipe"}
    print(f"{args.name}: {shown}")
    print(f"built in {time.perf_counter() - t0:.0f} s wall ({info['cpu_seconds']:.0f} s CPU training) on "
          f"{args.threads} thread(s); wrote {out}, SHA-256 {digest}")


if __name__ == "__main__":
    main()
