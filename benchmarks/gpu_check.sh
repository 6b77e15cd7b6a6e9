#!/usr/bin/env bash
# Verify and time every CUDA path of fgrpo-sim on a fresh GPU machine with no internet, in at most 5 minutes;
# one JSON summary (printed last and written to OUT/summary.json). `make gpu-check` runs it.
#
#   bash benchmarks/gpu_check.sh [OUT]        (from the repository root; OUT defaults to build/gpu-check)
#
# Stages, cheapest first, each under its own time limit (the test suite gets what is left of BUDGET_S):
#   env          python, torch, CUDA device, the packages found
#   install      what `import` says is missing, from the wheel folder (below); the project itself, editable
#   torch_step   benchmarks/categorical_torch_backend.py: ops/syncs of a mixed-N step, graph and eager step
#                times on CUDA, the same chunk on this machine's CPU
#   graph_equal  a 12-step mixed-N run with and without the CUDA graph: equal bit for bit, counts sum to N
#   grid         benchmarks/categorical.py: the full Fig 2 grid on CUDA, beside 20 CPU steps scaled
#   check        fgrpo check --device cuda --json (the Monte Carlo checks of the theory)
#   population   benchmarks/population.py on CUDA and on CPU
#   group_size   benchmarks/population_group_size.py on CUDA (the default study) and on CPU (2 steps)
#   llm_train    a tiny F-GRPO run (recipes/tiny/f-grpo.yaml) in bf16 on the GPU, 4 steps
#   llm_eval     fgrpo llm eval of that model on the GPU (transformers backend)
#   tests        the suite (verl's tests excepted) with CUDA as the auto device, pytest -n (cores)
#
# Offline wheels. A GPU image may hold another torch/transformers and no TRL, datasets or math-verify. On a
# machine with the registry, for the image's Python (3.12 on the H100/H200 images), fetch the project's
# pure-Python dependencies once and copy the folder beside the clone (default: shared/wheels, else wheels/):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 -d wheels \
#     "trl>=1.16,<1.17" accelerate datasets math-verify latex2sympy2_extended "antlr4-python3-runtime==4.13.2" \
#     typer click rich shellingham typing-extensions pyyaml dill multiprocess fsspec huggingface-hub tqdm \
#     hypothesis sortedcontainers pytest pytest-xdist execnet pluggy iniconfig sympy mpmath
# (add `--platform manylinux2014_x86_64` and e.g. xxhash, pyarrow, aiohttp if the image lacks those binary
# ones). The script installs only the modules it cannot import, with `pip install --no-index --no-deps
# --find-links WHEELS`, so the image's torch and CUDA stay untouched. Use a venv made with
# --system-site-packages (PYTHON=.venv-gpu/bin/python) to keep the image's Python clean.
set -u
cd "$(dirname "$0")/.."
OUT=${1:-build/gpu-check}
PYTHON=${PYTHON:-python3}
BUDGET_S=${BUDGET_S:-300}
WHEELS=${WHEELS:-$( [ -d shared/wheels ] && echo shared/wheels || echo wheels )}
mkdir -p "$OUT"
START=$(date +%s)
export FGRPO_CACHE_DIR=${FGRPO_CACHE_DIR:-$PWD/build/cache} PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
: > "$OUT/stages.tsv"

# stage NAME LIMIT_S COMMAND...: runs COMMAND with its output in OUT/NAME.log, records status and seconds
stage() {
  local name=$1 limit=$2; shift 2
  local left=$(( BUDGET_S - ($(date +%s) - START) ))
  if [ "$left" -le 5 ]; then
    printf '%s\tskipped\t0\tno time left in the %s s budget\n' "$name" "$BUDGET_S" >> "$OUT/stages.tsv"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$(date +%s) rc
  timeout -s INT -k 10 "$limit" "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  local status=ok
  [ $rc -ne 0 ] && status="failed (exit $rc)"
  [ $rc -eq 124 ] && status="timed out after $limit s"
  printf '%s\t%s\t%s\t\n' "$name" "$status" "$(( $(date +%s) - t0 ))" >> "$OUT/stages.tsv"
  echo "gpu-check: $name: $status" >&2
}

install_missing() {
  # module:distribution pairs; find_spec looks without importing (one process, a second or two)
  local missing
  missing=$("$PYTHON" - <<'PY'
import importlib.util
pairs = """torch:torch numpy:numpy scipy:scipy sympy:sympy mpmath:mpmath pandas:pandas pyarrow:pyarrow
matplotlib:matplotlib typer:typer click:click tqdm:tqdm yaml:pyyaml transformers:transformers accelerate:accelerate
datasets:datasets trl:trl math_verify:math-verify latex2sympy2_extended:latex2sympy2_extended
antlr4:antlr4-python3-runtime pytest:pytest xdist:pytest-xdist execnet:execnet hypothesis:hypothesis
sortedcontainers:sortedcontainers dill:dill multiprocess:multiprocess fsspec:fsspec huggingface_hub:huggingface-hub
rich:rich shellingham:shellingham""".split()
print(" ".join(d for m, d in (p.split(":") for p in pairs) if importlib.util.find_spec(m) is None))
PY
)
  echo "missing before install: ${missing:-none}"
  if [ -n "$missing" ]; then
    if [ -d "$WHEELS" ]; then
      # shellcheck disable=SC2086
      "$PYTHON" -m pip install -q --no-index --no-deps --find-links "$WHEELS" $missing || true
    else
      echo "no wheel folder $WHEELS: cannot install $missing"
    fi
  fi
  "$PYTHON" -c "import fgrpo_sim" 2>/dev/null ||
    "$PYTHON" -m pip install -q --no-index --no-deps --no-build-isolation -e . || true
  "$PYTHON" -c "import fgrpo_sim, torch; assert torch.cuda.is_available(), 'no CUDA device'; print('ready')"
}

stage env 20 bash -c "nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; lscpu | head -20; \
  uptime; $PYTHON -c 'import sys, torch; print(sys.version); print(torch.__version__, torch.version.cuda, \
  torch.cuda.is_available() and torch.cuda.get_device_name())'"
export -f install_missing
export PYTHON WHEELS
stage install 40 bash -c install_missing
FGRPO=("$PYTHON" -m fgrpo_sim)

stage torch_step 45 "$PYTHON" benchmarks/categorical_torch_backend.py --device cuda --steps 50 --cpu-steps 2
stage graph_equal 30 "$PYTHON" - <<'EOF'
# a short mixed-N run with and without the CUDA graph must give the same logits bit for bit
import json, torch
from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig
cfg = CategoricalConfig(device="cuda", sampler="torch", num_actions=20000, num_correct=2000)
runs = cfg.runs()[: cfg.chunk_runs]
out = []
for graph in (True, False):
    b = CategoricalBatch(cfg, [r[0] for r in runs], [r[1] for r in runs], [r[2] for r in runs], cuda_graph=graph)
    for _ in range(12):
        b.step()
    out.append((b.logits.clone(), b.last_mu_hat.clone(), b.metrics()["q_pos"].clone()))
same = all(torch.equal(a, b) for a, b in zip(*out))
counts_ok = bool((b.torch_step.counts.sum(1).cpu() == torch.tensor([float(r[0]) for r in runs])).all())
print(json.dumps({"graph_equals_eager": same, "counts_sum_to_n": counts_ok}))
assert same and counts_ok
EOF
stage grid 75 "$PYTHON" benchmarks/categorical.py --json --device cuda --reference-steps 0 --cpu-steps 20
stage check 45 "${FGRPO[@]}" check --device cuda --json --no-progress
stage population 25 bash -c "$PYTHON benchmarks/population.py --device cuda --steps 100 && \
  $PYTHON benchmarks/population.py --device cpu --steps 100"
# the default study (36,000 models) on CUDA; the CPU beside it on 2 steps (seconds_per_step compares them)
stage group_size 90 bash -c "$PYTHON benchmarks/population_group_size.py --device cuda && \
  $PYTHON benchmarks/population_group_size.py --device cpu --steps 2"
stage llm_train 60 "${FGRPO[@]}" llm train --config recipes/tiny/f-grpo.yaml --no-progress --use_cpu false \
  --bf16 true --max_steps 4 --output_dir "$OUT/tiny-f-grpo"
stage llm_eval 40 "${FGRPO[@]}" llm eval --model "$OUT/tiny-f-grpo" --data recipes/tiny/arith.jsonl --limit 8 \
  --samples 16 --max-new-tokens 12 --no-system-prompt --fallback-last-number --backend transformers --no-progress --json \
  --out "$OUT/tiny-eval.jsonl"
stage tests 600 "$PYTHON" -m pytest -q -p no:cacheprovider -n "$(nproc)" --dist loadfile tests \
  --ignore-glob='tests/test_verl*'

"$PYTHON" benchmarks/gpu_check_summary.py "$OUT" "$START"
