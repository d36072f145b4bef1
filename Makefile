# The two set-up commands of the README are `make run` and `make test`; every target
# creates or updates .venv itself, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
TRAIN_STAMP := $(VENV)/.installed-train
BROWSER_STAMP := $(VENV)/.installed-browser
# Debian packages, with sudo unless already root.
APT_INSTALL = SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); $$SUDO apt-get update -qq && \
	$$SUDO apt-get install -y -qq

.PHONY: run test lint typecheck unit models eval bench soak clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(TEST_STAMP): pyproject.toml $(STAMP)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# The browser tests drive Debian's Chromium (Playwright's own browser download is not
# possible here); the emoji font draws the animal dice; systemd-analyze checks the unit;
# node runs the pages' scripts against a stub page.
$(BROWSER_STAMP): | $(BIN)/python
	{ command -v chromium && command -v systemd-analyze && command -v node; } >/dev/null 2>&1 \
	  || { $(APT_INSTALL) chromium fonts-noto-color-emoji systemd nodejs; }
	touch $@

# The embedder learns from emoji of Debian's Noto Color Emoji font painted on dice.
$(TRAIN_STAMP): pyproject.toml $(STAMP)
	$(BIN)/pip install --quiet -e '.[train]'
	test -f /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf \
	  || { $(APT_INSTALL) fonts-noto-color-emoji; }
	touch $@

run: $(STAMP)
	$(BIN)/kniffel serve --camera demo

lint: $(TEST_STAMP)
	$(BIN)/ruff check game vision web hardware models tests

typecheck: $(TEST_STAMP)
	$(BIN)/mypy --strict game vision web hardware

unit: $(TEST_STAMP) $(BROWSER_STAMP)
	$(BIN)/pytest -q

test: lint typecheck unit

models: $(TRAIN_STAMP)
	$(BIN)/python models/build.py

eval: $(TEST_STAMP)
	$(BIN)/python models/evaluate.py

bench: $(STAMP)
	$(BIN)/python models/bench.py

# The table left running on the demo camera for an hour (SOAK_MINUTES): does it hold?
SOAK_MINUTES ?= 60
soak: $(STAMP)
	$(BIN)/python tests/soak.py --minutes $(SOAK_MINUTES)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
