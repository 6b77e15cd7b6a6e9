# `make figures` and `make test` work on a fresh clone: both create .venv when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
EXTRAS := dev,llm,notebooks,verl
STAMP := $(VENV)/.installed

.PHONY: install test figures clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -c constraints.txt -e ".[$(EXTRAS)]"
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -q tests

figures: $(STAMP)
	$(BIN)/fgrpo figures --out figures

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
