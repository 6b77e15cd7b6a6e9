#!/usr/bin/env bash
# Time the two venv installs of `make test` (pip vs uv) in a fresh clone, one install at a time, with the
# load average before and after each. Usage: benchmarks/install_times.sh [CLONE_DIR] (default /tmp/fgrpo-install-bench).
# Needs `uv` on PATH for the uv rows; uv's cache goes to CLONE_DIR/uv-cache (cold on the first uv install).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-/tmp/fgrpo-install-bench}
rm -rf "$dir" && git clone -q "$repo" "$dir/clone" && cd "$dir/clone"
export UV_CACHE_DIR="$dir/uv-cache"
uv_args=$(python3 tools/uv_index_args.py)
run() {  # label venv extras installer
    local label=$1 venv=$2 extras=$3 tool=$4 t0 t1 l0 l1
    rm -rf "$venv"; l0=$(cut -d' ' -f1 /proc/loadavg); t0=$(date +%s.%N)
    if [ "$tool" = pip ]; then
        python3 -m venv "$venv" && "$venv/bin/pip" install -q -c constraints.txt -e ".[$extras]"
    else
        python3 -m venv "$venv" && uv pip install -q --python "$venv/bin/python" $uv_args -c constraints.txt -e ".[$extras]"
    fi
    t1=$(date +%s.%N); l1=$(cut -d' ' -f1 /proc/loadavg)
    printf '{"install": "%s", "seconds": %.0f, "load_before": %s, "load_after": %s}\n' "$label" "$(echo "$t1 - $t0" | bc)" "$l0" "$l1"
}
run "pip .venv" .venv dev,llm,notebooks pip
run "pip .venv-verl" .venv-verl dev,llm,verl pip
if command -v uv >/dev/null; then
    run "uv .venv (cold uv cache)" .venv dev,llm,notebooks uv
    run "uv .venv-verl" .venv-verl dev,llm,verl uv
    run "uv .venv (warm uv cache)" .venv dev,llm,notebooks uv
fi
