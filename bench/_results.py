"""Where the benchmarks put their figures: ``src/seqviz/recorded/NAME.json``, with the machine they were measured on.

Every ``bench/bench_NAME.py`` prints its figures and also hands them to :func:`write_results`, which writes
``src/seqviz/recorded/NAME.json`` of this repository: package data, so the chapters read the same figures wherever the
package is installed (a clone, a wheel on Colab). The files of the reference run are committed. A quick or partial run
under another name (``summarize_dev``, ``transformer_dev``, ...) goes to ``_build/bench/`` instead, never into the
package. This module is the writing side. The reading side (``read_results``, ``all_results``, ``missing``,
``html_table``, ``machine_line``, ``sections``, ``ladder``, ...) lives in the package, :mod:`seqviz.results`, which the
book's Measured appendix and the chapter recaps (:mod:`seqviz.recap`) use; it is imported here, so a bench reads with
the same code, from the same folder. What a file may hold: see :mod:`seqviz.results`.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path

from seqviz import results as _reader
from seqviz.results import ORDER, fmt, html_table, ladder, machine_line, plot_rungs, sections  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
#: the recorded results of the repository (package data of seqviz)
RESULTS = ROOT / "src" / "seqviz" / "recorded"
#: where a run under a name that is no bench's (a quick or partial run) writes: a build output, not package data
SCRATCH = ROOT / "_build" / "bench"


def _load() -> float | None:
    """The 1-minute load average (None where the OS has none): timings taken on a busy machine are pessimistic."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


#: the load when the bench started (this module is imported at its start), recorded beside the load at the end
_LOAD_AT_START = _load()


def machine() -> dict:
    """Date, CPU model, core count, torch version, threads and the command run: what a figure depends on."""
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    command = " ".join(["python", f"bench/{Path(sys.argv[0]).name}", *sys.argv[1:]]) if sys.argv and sys.argv[0] else ""
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "cpu": cpu,
            "cores": os.cpu_count(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "command": command,  # e.g. a --quick run, so the appendix says which figures it shows
            "load": [_LOAD_AT_START, _load()]}  # 1-min load average at the start and the end of the run


def results_path(name: str) -> Path:
    """Where NAME.json is written: the recorded results for a bench's own name (``seqviz.results.BENCHES``), else
    ``_build/bench/``."""
    return (RESULTS if name in _reader.BENCHES else SCRATCH) / f"{name}.json"


def write_results(name: str, figures: dict) -> Path:
    """Write ``{"machine": machine(), **figures}`` to :func:`results_path` and return the path."""
    path = results_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"machine": machine(), **figures}, indent=1, default=float) + "\n")
    print(f"figures written to {path.relative_to(ROOT)}")
    return path


# ---- reading them back: seqviz.results, from the same folders ---------------------------------------------------------
def read_results(name: str, root: Path | None = None) -> dict | None:
    """The figures in ``root/NAME.json`` (default: where :func:`write_results` writes NAME), or None when that bench
    has not been run here."""
    return _reader.read_results(name, results_path(name).parent if root is None else root)


def all_results(root: Path | None = None) -> dict[str, dict]:
    """Every results file in ``root`` (default: :data:`RESULTS`), in lecture order: {name: figures}."""
    return _reader.all_results(RESULTS if root is None else root)


def missing(root: Path | None = None) -> list[str]:
    """Benches whose results file is absent (default folder: :data:`RESULTS`), each as the command that writes it."""
    return _reader.missing(RESULTS if root is None else root)
