# The README's two commands: `make site` and `make test`. Both set up .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: site test bench serve clean install browser

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# The CPU wheel first: a bare `torch` requirement would pull GBs of CUDA.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[test,ray,mkdocs]'
	touch $(STAMP)

# Browser assets (markdown-it, DOMPurify, onnxruntime-web) and JS test tools, from the lock file.
NODE_STAMP := node_modules/.installed-stamp
$(NODE_STAMP): package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

install: $(STAMP) $(NODE_STAMP)

# Extra build flags, e.g. SITE_FLAGS='--base-url /my-repo/' for a GitHub Pages project site.
SITE_FLAGS ?=

site: $(STAMP) $(NODE_STAMP)
	$(BIN)/pipeline build content --out site --config build/site.toml $(SITE_FLAGS)

# The browser test drives Debian's headless Chromium (Playwright's download needs the internet).
browser:
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		(apt-get update && apt-get install -y chromium chromium-driver)

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
