"""``python -m seqviz.live export [--out DIR] [--only NAME ...]``: export the shipped checkpoints for the browser
(what ``make live-models`` runs); ``python -m seqviz.live check [--dir DIR]``: exit 1, saying why, when an export no
longer matches the package."""
import argparse
import sys

import torch

from .export import DEFAULT_OUT, MODELS, StaleExport, check_folder, export_all


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m seqviz.live", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="write the .onnx files and manifest.json")
    ex.add_argument("--out", default=str(DEFAULT_OUT), help=f"folder to write (default {DEFAULT_OUT})")
    ex.add_argument("--only", nargs="+", choices=MODELS, default=list(MODELS), help="export only these models")
    ch = sub.add_parser("check", help="fail if the export in DIR is stale")
    ch.add_argument("--dir", default=str(DEFAULT_OUT), help=f"the export's folder (default {DEFAULT_OUT})")
    args = p.parse_args(argv)
    if args.command == "export":
        torch.set_num_threads(1)
        manifest = export_all(args.out, args.only)
        total = sum(f["bytes"] for e in manifest["models"].values() for f in e["files"].values())
        print(f"wrote {args.out}/manifest.json: {len(manifest['models'])} models, {total / 1e6:.2f} MB, "
              f"{sum(e['seconds'] for e in manifest['models'].values()):.1f} s")
        return 0
    try:
        manifest = check_folder(args.dir)
    except (StaleExport, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{args.dir}: the export of {', '.join(manifest['models'])} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
