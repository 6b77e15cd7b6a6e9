# `make figures` and `make test` work on a fresh clone: both create .venv when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
EXTRAS := dev,llm,notebooks
STAMP := $(VENV)/.installed

.PHONY: install test figures notebooks clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -c constraints.txt -e ".[$(EXTRAS)]"
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -q tests

figures: $(STAMP)
	$(BIN)/fgrpo figures --out figures

# executes notebooks/NN_*.py into build/notebooks/NN_*.ipynb with their outputs (see notebooks/execute.py)
notebooks: $(STAMP)
	$(BIN)/python notebooks/execute.py --out build/notebooks

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
