# `make figures` and `make test` work on a fresh clone: both create their virtual environments when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
EXTRAS := dev,llm,notebooks
STAMP := $(VENV)/.installed
# verl gets a venv of its own: its hydra-core pins antlr4 4.9, under which math-verify cannot parse
# percentages ("10\%" vs "10" grades wrong), so sharing one venv would change the TRL path's math grading.
VERL_VENV := .venv-verl
VERL_EXTRAS := dev,llm,verl
VERL_STAMP := $(VERL_VENV)/.installed

.PHONY: install install-verl test rehearsal figures notebooks gpu-check clean

# uv installs the venvs when it is on PATH (about 5x faster here, benchmarks/RESULTS.md "Install times"), else pip;
# `make UV=` forces pip. uv ignores pip.conf and PIP_*, so tools/uv_index_args.py hands it pip's package sources.
UV ?= $(shell command -v uv 2>/dev/null)
install_into = $(if $(UV),$(UV) pip install -q --python $(1)/bin/python $$($(PYTHON) tools/uv_index_args.py),$(1)/bin/pip install -q) -c constraints.txt -e ".[$(2)]"

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(call install_into,$(VENV),$(EXTRAS))
	touch $(STAMP)

$(VERL_STAMP): pyproject.toml constraints.txt
	test -x $(VERL_VENV)/bin/python || $(PYTHON) -m venv $(VERL_VENV)
	$(call install_into,$(VERL_VENV),$(VERL_EXTRAS))
	touch $(VERL_STAMP)

install: $(STAMP)

install-verl: $(VERL_STAMP)

# Everything but verl in .venv, then the verl tests in .venv-verl (a missing verl is an error there, not a skip).
test: $(STAMP) $(VERL_STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -q tests --ignore-glob='tests/test_verl*'
	$(VERL_VENV)/bin/python -c "import verl"
	$(VERL_VENV)/bin/python -m pytest -n 2 --dist loadfile -q tests/test_verl*.py

# The paper's LLM protocol in miniature on CPU (fgrpo llm rehearse, docs/llm.md): every stage, verl's in .venv-verl.
rehearsal: $(STAMP) $(VERL_STAMP)
	rm -rf build/rehearsal
	$(BIN)/fgrpo llm rehearse --out build/rehearsal --verl-python $(VERL_VENV)/bin/python

figures: $(STAMP)
	$(BIN)/fgrpo figures --out figures

# executes notebooks/NN_*.py into build/notebooks/NN_*.ipynb with their outputs (see notebooks/execute.py)
notebooks: $(STAMP)
	$(BIN)/python notebooks/execute.py --out build/notebooks

# On a GPU machine, offline: every CUDA path verified and timed in <= 5 minutes, one JSON summary in
# build/gpu-check/summary.json. Uses the image's Python (GPU_PYTHON=...), not .venv (whose torch is the CPU wheel);
# missing pure-Python packages come from a wheel folder (how to fill it: benchmarks/gpu_check.sh's header).
gpu-check:
	PYTHON=$${GPU_PYTHON:-python3} bash benchmarks/gpu_check.sh build/gpu-check

clean:
	rm -rf $(VENV) $(VERL_VENV) build *.egg-info .pytest_cache
