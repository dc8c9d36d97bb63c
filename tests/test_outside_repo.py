"""scripts/outside_repo.py, CI's Colab run: its environment refuses to read the repository, and it will not work
inside one (the nbval run itself is `make test`'s other half)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import outside_repo  # noqa: E402


def _python_with_the_hook(tmp_path, code: str) -> subprocess.CompletedProcess:
    (tmp_path / "sitecustomize.py").write_text(outside_repo.SITECUSTOMIZE)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), SEQVIZ_FORBIDDEN_ROOT=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path)


@pytest.mark.parametrize("read", ["open(R + '/README.md').read()", "__import__('os').listdir(R + '/bench')",
                                  "list(__import__('os').scandir(R + '/notebooks'))",
                                  "__import__('pathlib').Path(R, 'src/seqviz/recorded/book.json').read_text()"])
def test_the_environment_refuses_the_repository(tmp_path, read):
    done = _python_with_the_hook(tmp_path, f"R = {str(ROOT)!r}\n{read}")
    assert done.returncode != 0 and "PermissionError" in done.stderr and "package data" in done.stderr, done.stderr


def test_the_environment_reads_everything_else(tmp_path):
    (tmp_path / "data.txt").write_text("fine")
    done = _python_with_the_hook(tmp_path, "print(open('data.txt').read(), len(__import__('os').listdir('/tmp')) >= 0)")
    assert done.returncode == 0 and done.stdout.split() == ["fine", "True"], done.stderr


def test_it_will_not_run_inside_the_repository():
    with pytest.raises(SystemExit, match="inside the repository"):
        outside_repo.build(ROOT / "_build" / "outside")


def test_it_runs_nbval_as_make_nbval_does():
    """The same options as the repository's nbval (make nbval), so the two runs compare outputs alike."""
    makefile = (ROOT / "Makefile").read_text()
    for opt in ("--nbval-current-env", "--nbval-sanitize-with", "--nbval-cell-timeout=600"):
        assert opt in makefile and opt in outside_repo.NBVAL
    assert "scripts/outside_repo.py" in makefile.split("\ntest:")[1].split("\n\n")[0]  # make test runs it
