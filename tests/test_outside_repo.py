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


@pytest.fixture(scope="module")
def guarded_venv(tmp_path_factory) -> Path:
    """A venv made as the script (and the Makefile) makes one, ``python -m venv`` from the base interpreter (no pip:
    the guard needs nothing installed), with the guard installed by the script's own function; its python."""
    venv = tmp_path_factory.mktemp("guarded") / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    outside_repo.install_guard(venv / "bin" / "python")
    return venv / "bin" / "python"


def _run(py: Path, code: str, cwd: Path, forbid: bool = True, **extra: str) -> subprocess.CompletedProcess:
    """``code`` run by ``py`` with nothing of this session's on its path (no PYTHONPATH: the venv alone loads the
    guard), as outside_repo.main runs the pages."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "SEQVIZ_FORBIDDEN"))}
    if forbid:
        env["SEQVIZ_FORBIDDEN_ROOT"] = str(ROOT)
    env.update(extra)
    return subprocess.run([str(py), "-c", code], env=env, capture_output=True, text=True, cwd=cwd)


def refused(done: subprocess.CompletedProcess) -> bool:
    return done.returncode != 0 and "PermissionError" in done.stderr and "package data" in done.stderr


@pytest.mark.parametrize("read", ["open(R + '/README.md').read()", "__import__('os').listdir(R + '/bench')",
                                  "list(__import__('os').scandir(R + '/notebooks'))",
                                  "__import__('pathlib').Path(R, 'src/seqviz/recorded/book.json').read_text()"])
def test_the_environment_refuses_the_repository(guarded_venv, tmp_path, read):
    done = _run(guarded_venv, f"R = {str(ROOT)!r}\n{read}", tmp_path)
    assert refused(done), done.stderr


def test_relative_paths_count_too(guarded_venv, tmp_path):
    """From a folder outside (a path with ..), and from inside the repository (the current folder itself too)."""
    up = os.path.relpath(ROOT / "README.md", tmp_path)
    assert up.startswith("..")
    assert refused(_run(guarded_venv, f"open({up!r}).read()", tmp_path))
    for code in ("open('README.md').read()", "open('./notebooks/../README.md').read()",
                 "__import__('os').listdir()", "list(__import__('os').scandir())"):
        done = _run(guarded_venv, code, ROOT)
        assert refused(done), (code, done.stderr)


def test_the_guard_is_a_pth_file_so_another_sitecustomize_cannot_hide_it(guarded_venv, tmp_path):
    """Debian's python3 loads its own /usr/lib/python3.X/sitecustomize.py, which is ahead of the venv's site-packages
    on sys.path; a .pth file there is read anyway. A sitecustomize.py put ahead of the venv's stands for Debian's."""
    site = Path(_run(guarded_venv, "import sysconfig; print(sysconfig.get_paths()['purelib'])", tmp_path).stdout
                .strip())
    assert (site / outside_repo.GUARD_PTH).read_text().startswith("import ")
    assert not (site / "sitecustomize.py").exists()
    debian = tmp_path / "debian"
    debian.mkdir()
    (debian / "sitecustomize.py").write_text("DEBIAN = True\n")
    readme = str(ROOT / "README.md")
    done = _run(guarded_venv, f"import sitecustomize; assert sitecustomize.DEBIAN; open({readme!r}).read()", tmp_path,
                PYTHONPATH=str(debian))
    assert refused(done), done.stderr
    done = _run(guarded_venv, f"print(len(open({readme!r}).read()) > 0)", tmp_path, forbid=False)
    assert done.returncode == 0 and done.stdout.split() == ["True"], done.stderr      # only when asked to refuse


def test_on_debians_own_python3(tmp_path):
    """Where the machine has Debian's python3 (with its own sitecustomize.py), the guard holds in a venv made by it:
    the case the issue found, where a guard written as the venv's sitecustomize.py was never loaded."""
    debian = Path("/usr/bin/python3")
    if not debian.exists():
        pytest.skip("no /usr/bin/python3 here")
    own = subprocess.run([str(debian), "-c", "import sitecustomize; print(sitecustomize.__file__)"],
                         capture_output=True, text=True).stdout.strip()
    if not own.startswith("/usr/lib/python3"):
        pytest.skip(f"/usr/bin/python3 has no sitecustomize.py of its own ({own or 'none'})")
    subprocess.run([str(debian), "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    py = tmp_path / "venv" / "bin" / "python"
    outside_repo.install_guard(py)
    assert _run(py, "import sitecustomize; print(sitecustomize.__file__)", tmp_path).stdout.strip() == own
    assert refused(_run(py, f"open({str(ROOT / 'README.md')!r}).read()", tmp_path))
    assert refused(_run(py, "open('README.md').read()", ROOT))


def test_the_environment_reads_everything_else(guarded_venv, tmp_path):
    (tmp_path / "data.txt").write_text("fine")
    done = _run(guarded_venv, "print(open('data.txt').read(), len(__import__('os').listdir('/tmp')) >= 0, "
                              "len(__import__('os').listdir()))", tmp_path)
    assert done.returncode == 0 and done.stdout.split() == ["fine", "True", "1"], done.stderr


def test_it_will_not_run_inside_the_repository():
    with pytest.raises(SystemExit, match="inside the repository"):
        outside_repo.build(ROOT / "_build" / "outside")


def test_it_runs_nbval_as_make_nbval_does():
    """The same options as the repository's nbval (make nbval), so the two runs compare outputs alike."""
    makefile = (ROOT / "Makefile").read_text()
    for opt in ("--nbval-current-env", "--nbval-sanitize-with", "--nbval-cell-timeout=600"):
        assert opt in makefile and opt in outside_repo.NBVAL
    assert "scripts/outside_repo.py" in makefile.split("\ntest:")[1].split("\n\n")[0]  # make test runs it


def test_the_pages_run_where_compiled_modules_are_kept(tmp_path):
    """The venv is installed with pip's --no-compile: with PYTHONDONTWRITEBYTECODE passed on, each of the 13 kernels
    compiled torch, numpy... anew (~2.5 CPU-s each). The runner's environment drops it, and the others it drops."""
    py = tmp_path / "venv" / "bin" / "python"
    env = outside_repo.runner_env(py, {"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin", "VIRTUAL_ENV": "/x",
                                       "PYTHONPATH": "/y", "HOME": "/h"})
    assert env == {"PATH": f"{py.parent}{os.pathsep}/usr/bin", "HOME": "/h",
                   "SEQVIZ_FORBIDDEN_ROOT": str(outside_repo.ROOT)}
