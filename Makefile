# `make figures` and `make test` work on a fresh clone: both create their virtual environments when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# cluster: Ray for `--executor ray` (tests/test_ray_executor.py runs on a local Ray in `make test`)
EXTRAS := dev,llm,notebooks,cluster
STAMP := $(VENV)/.installed
BASE_STAMP := $(VENV)/.installed-base
# verl gets a venv of its own: its hydra-core pins antlr4 4.9, under which math-verify cannot parse
# percentages ("10\%" vs "10" grades wrong), so sharing one venv would change the TRL path's math grading.
VERL_VENV := .venv-verl
VERL_EXTRAS := dev,llm,verl
VERL_STAMP := $(VERL_VENV)/.installed
# the base dependencies and Ray alone (`make install-cluster`); a full install also satisfies it
CLUSTER_STAMP := $(VENV)/.installed-cluster
# the lowest versions pyproject.toml allows (constraints-oldest.txt), in a scratch venv of their own
OLDEST_VENV := .venv-oldest
OLDEST_STAMP := $(OLDEST_VENV)/.installed
# what `make test-oldest` runs on the floors: the CLI reliability corpus, the CLI, core, theory, metrics, planner,
# simulator-stream and doc-command suites, the LLM grading and trainer suites (TRL/transformers floors), the notebooks
OLDEST_TESTS := tests/test_bad_input_corpus.py tests/test_cli_*.py tests/test_validation.py tests/test_core_*.py \
	tests/test_theory_*.py tests/test_metrics.py tests/test_bootstrap.py tests/test_planner.py tests/test_sim_streams.py \
	tests/test_doc_commands.py tests/test_llm_grading.py tests/test_llm_rewards.py tests/test_llm_trainer.py \
	tests/test_notebooks.py

.PHONY: install install-verl install-cluster test test-oldest rehearsal figures figures-commit notebooks gpu-check mutation docs theory-generated clean

# uv installs the venvs (about 5x faster here, benchmarks/RESULTS.md "Install times"): the uv on PATH, else one that
# pip puts into a venv of its own, build/uv (one wheel, seconds), so a fresh clone gets the fast installs too; where
# that fails (no uv wheel on the index) the venvs install with pip. `make UV=` forces pip. uv ignores pip.conf and
# PIP_*, so tools/uv_index_args.py hands it pip's package sources.
UV_BOOT := build/uv/bin/uv
UV ?= $(or $(shell command -v uv 2>/dev/null),$(UV_BOOT))
# the bootstrap runs only when UV is the bootstrapped one (an order-only prerequisite of each install)
UV_NEEDED := $(if $(filter $(UV_BOOT),$(UV)),$(UV_BOOT))
install_into = if [ -n "$(UV)" ] && [ -x "$(UV)" ]; then \
	  $(UV) pip install -q --python $(1)/bin/python $$($(PYTHON) tools/uv_index_args.py) -c $(or $(3),constraints.txt) -e ".$(if $(2),[$(2)])"; \
	else $(1)/bin/pip install -q -c $(or $(3),constraints.txt) -e ".$(if $(2),[$(2)])"; fi

$(UV_BOOT):
	$(PYTHON) -m venv build/uv && build/uv/bin/pip install -q uv || echo "make: could not install uv into build/uv; installing with pip (slower)"

$(STAMP): pyproject.toml constraints.txt | $(UV_NEEDED)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(call install_into,$(VENV),$(EXTRAS))
	touch $(STAMP) $(BASE_STAMP)

# the base dependencies alone (what `make figures` needs); a full install above also satisfies it
$(BASE_STAMP): pyproject.toml constraints.txt | $(UV_NEEDED)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	test -f $(STAMP) -a $(STAMP) -nt pyproject.toml -a $(STAMP) -nt constraints.txt || $(call install_into,$(VENV),)
	touch $(BASE_STAMP)

$(VERL_STAMP): pyproject.toml constraints.txt | $(UV_NEEDED)
	test -x $(VERL_VENV)/bin/python || $(PYTHON) -m venv $(VERL_VENV)
	$(call install_into,$(VERL_VENV),$(VERL_EXTRAS))
	touch $(VERL_STAMP)

$(OLDEST_STAMP): pyproject.toml constraints-oldest.txt | $(UV_NEEDED)
	test -x $(OLDEST_VENV)/bin/python || $(PYTHON) -m venv $(OLDEST_VENV)
	$(call install_into,$(OLDEST_VENV),$(EXTRAS),constraints-oldest.txt)
	touch $(OLDEST_STAMP)

install: $(STAMP)

install-verl: $(VERL_STAMP)

# `--executor ray` on the simulate commands: the cluster extra into .venv (what every node of a cluster needs)
$(CLUSTER_STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	test -f $(STAMP) -a $(STAMP) -nt pyproject.toml -a $(STAMP) -nt constraints.txt || $(call install_into,$(VENV),cluster)
	touch $(CLUSTER_STAMP)

install-cluster: $(CLUSTER_STAMP)

# Everything but verl in .venv, then the verl tests in .venv-verl. FGRPO_TEST_EXTRAS names the extras each venv
# promises: a test whose extra is promised fails when its package is missing; elsewhere it skips (tests/extras.py).
test: $(STAMP) $(VERL_STAMP)
	FGRPO_TEST_EXTRAS=$(EXTRAS) $(BIN)/python -m pytest -n 2 --dist loadfile -q tests --ignore-glob='tests/test_verl*'
	FGRPO_TEST_EXTRAS=$(VERL_EXTRAS) $(VERL_VENV)/bin/python -m pytest -n 2 --dist loadfile -q tests/test_verl*.py

# The dependency floors: every lowest version pyproject.toml allows, installed and tested (constraints-oldest.txt).
test-oldest: $(OLDEST_STAMP)
	FGRPO_TEST_EXTRAS=$(EXTRAS) $(OLDEST_VENV)/bin/python -m pytest -n 2 --dist loadfile -q $(OLDEST_TESTS)

# The paper's LLM protocol in miniature on CPU (fgrpo llm rehearse, docs/llm.md): every stage, verl's in .venv-verl.
rehearsal: $(STAMP) $(VERL_STAMP)
	rm -rf build/rehearsal
	$(BIN)/fgrpo llm rehearse --out build/rehearsal --verl-python $(VERL_VENV)/bin/python

# Figures need only the base dependencies: a base install (no extras) is enough, and `make test`'s full install
# counts as one. They go to build/figures (git-ignored), so `make figures` leaves the clone clean on any machine
# (simulated numbers, hence pixels, differ in the last digits across CPUs); `make figures-commit` replaces the
# committed copies in figures/, deliberately.
figures: $(BASE_STAMP)
	$(BIN)/fgrpo figures --out build/figures

figures-commit: $(BASE_STAMP)
	$(BIN)/fgrpo figures --out figures

# Runs notebooks/NN_*.py into build/notebooks/NN_*.ipynb with their outputs: jupytext's own --execute, on a kernel
# that is this venv's interpreter (its spec lives inside the venv, so no other "python3" kernel is picked up). The
# kernel logs errors only: ipykernel >= 7 warns at every start that loopback TCP is unencrypted, and neither
# jupytext nor nbconvert can ask for the IPC transport.
# `make notebooks NB=03` runs one notebook (the files whose names start with NB).
NB_KERNEL := $(VENV)/share/jupyter/kernels/fgrpo-sim/kernel.json
NB ?= [0-9][0-9]_
notebooks: $(STAMP)
	mkdir -p $(dir $(NB_KERNEL)) build/notebooks
	printf '{"argv": ["%s", "-m", "ipykernel_launcher", "-f", "{connection_file}", "--IPKernelApp.log_level=ERROR"], "display_name": "fgrpo-sim (.venv)", "language": "python"}\n' "$(abspath $(BIN))/python" > $(NB_KERNEL)
	for nb in notebooks/$(NB)*.py; do \
	  test -f $$nb || { echo "make: no notebook notebooks/$(NB)*.py (e.g. NB=01)"; exit 2; }; \
	  $(BIN)/jupytext --quiet --to ipynb --set-kernel fgrpo-sim --execute --run-path . --output build/notebooks/$$(basename $$nb .py).ipynb $$nb || exit 1; \
	  echo "$$nb -> build/notebooks/$$(basename $$nb .py).ipynb"; \
	done

# On a GPU machine, offline: every CUDA path verified and timed in <= 5 minutes, one JSON summary in
# build/gpu-check/summary.json. Uses the image's Python (GPU_PYTHON=...), not .venv (whose torch is the CPU wheel);
# missing pure-Python packages come from a wheel folder (how to fill it: benchmarks/gpu_check.sh's header).
gpu-check:
	PYTHON=$${GPU_PYTHON:-python3} bash benchmarks/gpu_check.sh build/gpu-check

# Rewrites the generated regions of README.md and docs/*.md (`<!-- generated: fgrpo ... -->`) with their
# commands' output; tests/test_doc_numbers.py fails while one is stale.
docs: $(STAMP)
	cd tests && ../$(BIN)/python doc_census.py

# Rewrites fgrpo_sim/theory/_generated/ (the lambdified closed forms, shipped as package source) from the sympy
# derivations marked @closed_form; tests/test_theory_generated.py fails while one is stale.
theory-generated: $(STAMP)
	$(BIN)/python -m fgrpo_sim.theory.generate

# Mutation testing (benchmarks/mutation.py; a benchmark, not part of `make test`): mutmut in a venv of its own that
# sees .venv's packages through a .pth file, so the pinned set stays as it is and the mutants run on it.
MUT_VENV := .venv-mut
MUTMUT_VERSION := 3.8.1
MUTATION_MODULES ?= core,metrics
MUTATION_MODES ?= unit
$(MUT_VENV)/.installed: $(STAMP)
	test -x $(MUT_VENV)/bin/python || $(PYTHON) -m venv $(MUT_VENV)
	$(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" \
		> "$$($(MUT_VENV)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/zz-fgrpo-venv.pth"
	$(MUT_VENV)/bin/pip install -q mutmut==$(MUTMUT_VERSION)
	touch $@

mutation: $(MUT_VENV)/.installed
	$(BIN)/python benchmarks/mutation.py --modules $(MUTATION_MODULES) --modes $(MUTATION_MODES)

clean:
	rm -rf $(VENV) $(VERL_VENV) $(OLDEST_VENV) $(MUT_VENV) build *.egg-info .pytest_cache
