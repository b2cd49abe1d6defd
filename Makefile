# Two entry points, both idempotent (a second run reinstalls nothing unless pyproject.toml changed):
#   make serve   install cofiviz into .venv, serve every dashboard on :5006 (the kernels compile behind the server)
#   make test    install cofiviz with its test extras (and Debian's chromium), run the whole suite
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 5006
PYTEST_ARGS ?=
# the suite runs in PYTEST_WORKERS pytest-xdist processes, a test file to each (its module fixtures, such as a
# served page, shared by its tests), each computing on one thread (tests/conftest.py); 0 runs it in one process
# whose kernels use every core
PYTEST_WORKERS ?= 2
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: serve test install chromium clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	@rm -f $(VENV)/.installed-* && touch $@

install: $(STAMP)

chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
	  echo "installing Debian's chromium for the browser tests"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi

# every app of apps/ with the landing page at http://localhost:$(PORT)/ (cofiviz/dashboards/serving.py); the server
# answers at once and compiles the numba kernels in the background (cofiviz/background/kernels.py)
serve: $(STAMP)
	$(BIN)/cofiviz serve --port $(PORT)

# the kernels are compiled once before the tests (a fresh clone has none cached), not by whichever test comes first
test: $(STAMP) chromium
	$(BIN)/cofiviz warmup
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
