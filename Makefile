# Two commands set up a fresh machine: `make run` and `make test`.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
PYTHON ?= $(shell command -v python3.11 || command -v python3)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False

# The demo corpus: three annual reports, the Natech guidance records, and five ICDAR 2013
# EU PDFs whose ruled, partly ruled, row-ruled and unruled tables the Chunk Explorer shows.
DEMO_TABLES := $(foreach n,001 004 013 017 027,data/benchmarks/icdar2013-eu/pdf/eu-$(n).pdf)
DEMO_SOURCES := data/benchmarks/grampian/pdf data/benchmarks/natech/guidance.csv $(DEMO_TABLES)

.PHONY: install run index test bench clean-index ocr-engine browser

# OCR of scanned pages uses Debian's tesseract-ocr (English model included); installed with
# apt when missing and possible (root or sudo), else ragloupe says "needs OCR" for scans.
ocr-engine:
	@command -v tesseract >/dev/null 2>&1 || { \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo "sudo -n"); \
	  ($$SUDO apt-get update -q >/dev/null && \
	   DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q tesseract-ocr >/dev/null) || \
	  echo "warning: could not install tesseract-ocr; scanned pages will not be OCR'd" >&2; }

# The browser tests drive Debian's chromium with Playwright (never a downloaded browser), at
# CHROMIUM; installed with apt like tesseract above, else make says why those tests will fail.
CHROMIUM ?= /usr/bin/chromium
browser:
	@test -x $(CHROMIUM) || { \
	  echo "installing Debian's chromium for the browser tests (apt-get)" >&2; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo "sudo -n"); \
	  ($$SUDO apt-get update -q >/dev/null && \
	   DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium >/dev/null) || \
	  echo "warning: could not install chromium (needs root or sudo); the browser tests will fail" >&2; }

# pip byte-compiles every file it installs, one after another: 386 MB of source, ~38 s here.
# Instead it installs with --no-compile and compileall does it on both cores, leaving out what
# nothing imports: the packages' own test suites, chromadb's kubernetes client, and transformers'
# 400 model architectures (ragloupe loads two: compiled on import, 0.7 MB): 45% of the source.
# The .pyc files must exist before the tests: with PYTHONDONTWRITEBYTECODE set, Python compiles
# torch & co. from source in every process, and a PDF extraction child under a low memory cap
# (the suite's 150 MB case) runs out of memory compiling pypdf. compileall's exit status is
# ignored: a few files are for newer Pythons (torch's py312_intrinsics.py); pip skips them too.
COMPILE := $(PY) -m compileall -qq -x '/tests?/|/kubernetes/|/transformers/models/' $(VENV)/lib

# pip installs one wheel after another, on one core. requirements.txt pins every package the
# project needs, dependencies included (`pip check` below fails the install if one is missing),
# so two pips with --no-deps install its alternate lines side by side: ~35 s instead of ~46 s here.
REQ_HALF = grep -E '^[A-Za-z0-9]' requirements.txt | awk 'NR % 2 == $(1)' > $(VENV)/.requirements-$(1)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip  # 2 s, and the new pip installs the wheels faster than 3.11's
	$(call REQ_HALF,0) && $(call REQ_HALF,1)
	$(PY) -m pip install -q --no-compile --no-deps -r $(VENV)/.requirements-0 & first=$$!; \
	  $(PY) -m pip install -q --no-compile --no-deps -r $(VENV)/.requirements-1; second=$$?; \
	  wait $$first && test $$second = 0
	$(COMPILE) -j 0 || true
	$(PY) -m pip install -q --no-deps -e .
	$(PY) -m pip check
	touch $(STAMP)

install: $(STAMP) ocr-engine

# The test tools (pytest, playwright) are not runtime dependencies: requirements-test.txt.
# pip byte-compiles them as it installs them (267 files); a second compileall over the whole
# venv only re-read 13,000 up-to-date .pyc files (3-8 s).
$(TEST_STAMP): $(STAMP) requirements-test.txt
	$(PY) -m pip install -q -r requirements-test.txt
	touch $(TEST_STAMP)

index: install
	$(VENV)/bin/ragloupe index --if-empty $(DEMO_SOURCES)

# The app starts at once; an empty index is filled with the demo corpus in the background.
run: install
	$(VENV)/bin/streamlit run app/streamlit_app.py --server.address 127.0.0.1 --server.port 8501 \
		--server.headless true --browser.gatherUsageStats false --server.fileWatcherType none \
		-- --index-if-empty $(DEMO_SOURCES)

test: install $(TEST_STAMP) browser
	$(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder

bench: install
	$(PY) benchmarks/index_speed.py
	$(PY) benchmarks/search_latency.py

clean-index:
	rm -rf data/index
