"""Fig. 7-style in-training dynamics of LLM runs (paper App. P): held-out pass@1 and pass@k over steps.

Data in: the records `fgrpo_sim.llm.training.dynamics.HeldOutPassAtK` logs, read from a run's `dynamics.jsonl` or
its `trainer_state.json` (`log_history`). `fgrpo figures llm-dynamics --data-dir RUNS` collects every run
below RUNS (one curve per run folder) and draws the raw points faintly with an exponential moving
average on top. Smoothing: the paper says "EMA smoothing 0.08"; we read 0.08 as the weight of each new
point, s_t = 0.08 x_t + 0.92 s_(t-1), s_0 = x_0 (the paper does not spell out its convention).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from fgrpo_sim.figures.registry import FigureOptions, add_figure

PAPER_EMA = 0.08
_PREFIX = "dynamics/pass@"


def ema(values: Sequence[float], alpha: float = PAPER_EMA) -> np.ndarray:
    """Exponential moving average s_t = alpha x_t + (1 - alpha) s_(t-1), s_0 = x_0."""
    from fgrpo_sim.validation import check_range

    check_range("alpha", alpha, 0.0, 1.0, low_open=True)
    x = np.asarray(values, dtype=float)
    out = np.empty_like(x)
    for i, v in enumerate(x):
        out[i] = v if i == 0 else alpha * v + (1 - alpha) * out[i - 1]
    return out


def _log_records(path: Path) -> list[tuple[str, Any]]:
    """(where, record) of a dynamics.jsonl (one per line) or a trainer_state.json (its log_history)."""
    from fgrpo_sim.jsonl import read_json_file, read_json_objects

    if path.suffix == ".json":
        state = read_json_file(path, "trainer state")
        history = state.get("log_history", []) if isinstance(state, dict) else None
        if not isinstance(history, list):
            raise ValueError(f"{path}: expected a JSON object whose log_history is a list (a trainer_state.json), "
                             f"got {type(state if history is None else history).__name__}")
        return [(f"{path} log_history[{i}]", r) for i, r in enumerate(history)]
    return [(f"{path} line {number}", r) for number, r in read_json_objects(path, "dynamics log")]


def _pass_k(where: str, key: str) -> int:
    text = key[len(_PREFIX):]
    if not (text.isascii() and text.isdigit() and int(text) >= 1):
        raise ValueError(f"{where}: field {key!r}: k must be an integer >= 1")
    return int(text)


def _is_dynamics(record: Any) -> bool:
    return isinstance(record, dict) and any(str(k).startswith(_PREFIX) for k in record)


def read_dynamics_log(path: str | Path) -> dict[str, Any]:
    """{"steps": array, "pass": {k: array}} from a dynamics.jsonl or a trainer_state.json; a record without
    an integer step, a pass@k with k < 1 or a value outside [0, 1] is a ValueError naming file and field."""
    from fgrpo_sim.validation import file_number

    path = Path(path)
    records = [(where, r) for where, r in _log_records(path) if _is_dynamics(r)]
    if not records:
        raise ValueError(f"{path}: no dynamics records (keys {_PREFIX}k; enable dynamics_eval_data when training)")
    by_step: dict[int, dict] = {}
    ks: set[int] = set()
    for where, r in records:
        step = file_number(r.get("step"), where, "field 'step'", 0, integer=True)
        for key, value in r.items():
            if str(key).startswith(_PREFIX):
                ks.add(_pass_k(where, str(key)))
                file_number(value, where, f"field {key!r}", 0.0, 1.0, what="a probability")
        by_step[step] = r  # a resumed run may log a step twice: keep the last
    steps = np.array(sorted(by_step))
    curves = {k: np.array([by_step[s].get(f"{_PREFIX}{k}", np.nan) for s in steps], dtype=float) for k in sorted(ks)}
    return {"steps": steps, "pass": curves, "source": str(path)}


def find_runs(folder: str | Path) -> dict[str, Path]:
    """Run name -> log file under `folder`: dynamics.jsonl preferred, else the newest trainer_state.json."""
    folder = Path(folder)
    runs: dict[str, Path] = {}
    for path in sorted(folder.rglob("dynamics.jsonl")):
        runs[path.parent.name] = path
    for path in sorted(folder.rglob("trainer_state.json")):
        run = path.parent.parent if path.parent.name.startswith("checkpoint-") else path.parent
        if run.name not in runs and _has_dynamics(path):
            runs[run.name] = path
    return runs


def _has_dynamics(path: Path) -> bool:
    """Whether a trainer_state.json logged dynamics records (a damaged one is an error naming it)."""
    return any(_is_dynamics(r) for _, r in _log_records(path))


def compute(options: FigureOptions) -> dict[str, Any]:
    folder = Path(options.data_dir) if options.data_dir is not None else Path("runs")
    runs = find_runs(folder) if folder.is_dir() else {}
    if not runs:
        raise ValueError(f"no run logs with dynamics records under {folder}; pass --data-dir RUNS_FOLDER "
                         "(a folder holding dynamics.jsonl or trainer_state.json files)")
    return {name: read_dynamics_log(path) for name, path in sorted(runs.items())}


def draw(data: dict[str, Any], alpha: float = PAPER_EMA):
    import matplotlib.pyplot as plt

    k_big = max(max(run["pass"]) for run in data.values())
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharex=True)
    for ax, which in zip(axes, (1, k_big)):
        for i, (name, run) in enumerate(data.items()):
            values = run["pass"].get(which)
            if values is None:
                continue
            color = f"C{i % 10}"
            ax.plot(run["steps"], 100 * values, color=color, alpha=0.25, lw=1)
            ax.plot(run["steps"], 100 * ema(values, alpha), color=color, lw=2, label=name)
        ax.set_title(f"held-out pass@{which}")
        ax.set_xlabel("training step")
        ax.set_ylabel("%")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"In-training dynamics (paper App. P; EMA {alpha:g}, faint: raw)", fontsize=10)
    fig.tight_layout()
    return fig


add_figure("llm-dynamics", "Held-out pass@1 / pass@k over training steps of LLM runs (App. P; needs --data-dir RUNS)",
           compute, draw, in_default_set=False)
