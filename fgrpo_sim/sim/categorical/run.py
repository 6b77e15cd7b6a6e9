"""Run a grid of categorical simulations in batched chunks, record metrics, save a tidy table, resume.

One table row per (run, recorded step): the setting's columns, the run's (group_size, gamma, seed),
the step, and every metric of `categorical.METRICS`. Steps 0, stride, 2*stride, ... and the last
step are recorded. After each chunk of runs the whole table is rewritten atomically, so an
interrupted job loses at most one chunk and `resume` skips every finished run of the same setting.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from fgrpo_sim.atomic_io import atomic_path
from fgrpo_sim.sim.categorical.config import CategoricalConfig
from fgrpo_sim.sim.categorical.engine import METRICS, CategoricalBatch, resolve_backend
from fgrpo_sim.sim.executor import LOCAL, Executor
from fgrpo_sim.sim.result_table import TableSchema, read_result_table

RUN_COLUMNS = ("group_size", "gamma", "seed")
#: Metrics of the policy itself (mu_hat and focal_weight are NaN at step 0 by design: no batch drawn yet).
STATE_METRICS = ("q_pos", "m_ret", "entropy", "anchor_prob", "frac_correct_above_start", "worst_drop")
SETTING_COLUMNS = ("config_id", "surrogate", "optimizer", "lr", "beta1", "beta2", "eps", "weight_decay")


def recorded_steps(steps: int, stride: int) -> list[int]:
    marks = list(range(0, steps + 1, stride))
    if marks[-1] != steps:
        marks.append(steps)
    return marks


def _kind(path: Path) -> str:
    """The table format by suffix, in any case (out.CSV is a CSV file)."""
    return path.suffix.lower()


def write_table(table: pd.DataFrame, path: str | Path) -> Path:
    """Write atomically as parquet or CSV (by suffix)."""
    path = Path(path)
    if _kind(path) not in (".parquet", ".csv"):
        raise ValueError(f"out must end in .parquet or .csv, got {path.name!r}")
    with atomic_path(path) as tmp:
        if _kind(path) == ".parquet":
            table.to_parquet(tmp, index=False)
        else:
            table.to_csv(tmp, index=False)
    return path


#: What a reader of a refused `out` can do; callers without a --no-resume option (figures) pass their own.
FRESH_START_HINT = "pass --no-resume to overwrite it, or choose another file"


#: A result table's columns by kind; resume checks every row against them before keeping any
#: (`sim.result_table`, shared with the group-size study). The statistics of a drawn batch (mu_hat,
#: focal_weight, unsampled_correct_mass) are NaN at step 0; the policy's own metrics are never NaN
#: (simulate_chunk refuses a diverged run), so a NaN q_pos is damage.
TABLE_SCHEMA = TableSchema("categorical result table", text=("config_id", "surrogate", "optimizer"),
                           integers=("group_size", "seed", "step"),
                           numbers=("lr", "beta1", "beta2", "eps", "weight_decay", "gamma"),
                           metrics=METRICS, nan_metrics=tuple(m for m in METRICS if m not in STATE_METRICS),
                           key=("config_id", *RUN_COLUMNS, "step"),
                           bounds=(("group_size", 1, None), ("step", 0, None), ("gamma", 0, None),
                                   ("mu_hat", 0, 1)))


def _setting_rules(config: CategoricalConfig | None):
    """The rows' agreement with their setting (result_table's `rules`): every row of one config_id has the same
    setting columns (config_id hashes them), and the rows of `config`'s own id hold its setting and only the
    steps it records: a row at step 99 of a 2-step run is refused, not dropped and redone unread."""
    def rules(table: pd.DataFrame) -> list:
        found = []
        for col in SETTING_COLUMNS[1:]:
            first = table.groupby("config_id", sort=False)[col].transform("first")
            found.append((table[col] != first, lambda i, c=col, f=first: (
                f"{c} = {_cell(table[c].iloc[i])} contradicts config_id {table['config_id'].iloc[i]} (its first row "
                f"has {_cell(f.iloc[i])}: one config_id is one setting)")))
        if config is None:
            return found
        mine = table["config_id"] == config.config_id()
        setting = config.setting()
        for col in SETTING_COLUMNS[1:]:
            found.append((mine & (table[col] != setting[col]), lambda i, c=col: (
                f"{c} = {_cell(table[c].iloc[i])} contradicts config_id {config.config_id()}, this run's setting "
                f"(which has {c} = {_cell(setting[c])})")))
        steps = recorded_steps(config.steps, config.stride)
        found.append((mine & ~table["step"].isin(steps), lambda i: (
            f"step {table['step'].iloc[i]} is not one this run of config_id {config.config_id()} records "
            f"({config.steps} steps, every {config.stride})")))
        return found
    return rules


def _cell(value) -> str:
    return repr(value) if isinstance(value, str) else f"{value:g}"


def _read_existing(out: Path, hint: str = FRESH_START_HINT, config: CategoricalConfig | None = None) -> pd.DataFrame:
    """The table already in `out`, for resuming, validated row by row (and against `config`, the run resuming
    it); a file that is not one of ours is an error, never overwritten, and a damaged row is never carried forward."""
    return read_result_table(out, TABLE_SCHEMA, hint, rules=_setting_rules(config))


def finished_runs(table: pd.DataFrame, config: CategoricalConfig) -> set[tuple[int, float, int]]:
    """Runs of this setting whose every recorded step is already in `table`."""
    if table.empty or "config_id" not in table:
        return set()
    mine = table[table["config_id"] == config.config_id()]
    need = len(recorded_steps(config.steps, config.stride))
    done = set()
    for (n, g, s), rows in mine.groupby(list(RUN_COLUMNS)):
        if rows["step"].nunique() == need and rows["step"].max() == config.steps:
            done.add((int(n), float(g), int(s)))
    return done


def _joined(existing: pd.DataFrame, frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The kept rows, then the new chunks in order (one frame, as the local loop built it)."""
    parts = [f for f in (existing, *frames) if not f.empty]
    if not parts:
        return existing
    return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)


def simulate_chunk(config: CategoricalConfig, runs: list[tuple[int, float, int]], progress=None) -> pd.DataFrame:
    """Simulate `runs` as one batch; returns their tidy rows."""
    batch = CategoricalBatch(config, [r[0] for r in runs], [r[1] for r in runs], [r[2] for r in runs])
    marks = set(recorded_steps(config.steps, config.stride))
    frames = []

    def record(step: int) -> None:
        m = {k: v.detach().to("cpu", torch.float64).numpy() for k, v in batch.metrics().items()}
        state = np.stack([m[k] for k in STATE_METRICS])
        if not np.isfinite(state).all():  # never write NaN/inf as a result: say which run diverged
            r = int(np.nonzero(~np.isfinite(state).all(axis=0))[0][0])
            raise ValueError(f"run (N = {runs[r][0]}, gamma = {runs[r][1]:g}, seed = {runs[r][2]}) diverged at step "
                             f"{step} (non-finite policy); use a smaller --lr or --dtype float64")
        frame = pd.DataFrame({"group_size": [r[0] for r in runs], "gamma": [r[1] for r in runs],
                              "seed": [r[2] for r in runs], "step": step, **{k: m[k] for k in METRICS}})
        frames.append(frame)

    record(0)
    for t in range(1, config.steps + 1):
        batch.step()
        if t in marks:
            record(t)
        if progress is not None:
            progress.update(1)
    table = pd.concat(frames, ignore_index=True)
    setting = config.setting()
    for col in reversed(SETTING_COLUMNS):
        table.insert(0, col, config.config_id() if col == "config_id" else setting[col])
    for key, value in config.metadata.items():
        table[key] = value
    return table


def run_grid(config: CategoricalConfig, out: str | Path | None = None, *, resume: bool = True,
             progress: bool = True, wait_for_lock: bool = False,
             fresh_start_hint: str = FRESH_START_HINT, executor: Executor = LOCAL) -> pd.DataFrame:
    """Simulate every run of `config` (skipping finished ones found in `out` when `resume`), save, return the table.

    Rows of other settings already in `out` are kept, so several settings can share one file.
    The returned table holds only this setting's rows. While it reads, simulates and rewrites `out`
    the run holds `out`'s lock (fgrpo_sim.output_lock): a second run on the same file fails at once
    with a ValueError naming the lock, or with `wait_for_lock` waits for the first and then resumes.
    `executor` ray runs each chunk as a Ray task (sim.executor); the table is the local run's.
    """
    import contextlib

    from fgrpo_sim.atomic_io import check_writable
    from fgrpo_sim.output_lock import output_lock

    if not executor.is_ray:  # the driver of a cluster may lack the workers' device and compiler
        resolve_backend(config)  # fail before the progress bar, not inside it
    if out is not None:
        out = Path(out)
        if _kind(out) not in (".parquet", ".csv"):
            raise ValueError(f"out must end in .parquet or .csv, got {out.name!r}")
        check_writable(out, "out")
    with output_lock(out, wait=wait_for_lock, name="out") if out is not None else contextlib.nullcontext():
        return _run_grid_locked(config, out, resume=resume, progress=progress, hint=fresh_start_hint,
                                executor=executor)


def _run_grid_locked(config: CategoricalConfig, out: Path | None, *, resume: bool, progress: bool,
                     hint: str, executor: Executor = LOCAL) -> pd.DataFrame:
    from fgrpo_sim.progress import bar as progress_bar

    existing = pd.DataFrame()
    if out is not None and resume and out.exists():
        existing = _read_existing(out, hint, config)
    done = finished_runs(existing, config) if resume else set()
    if not existing.empty:  # drop half-written runs of this setting; they are redone
        cid = config.config_id()
        keep = existing["config_id"] != cid
        keep |= pd.Series([(int(n), float(g), int(s)) in done for n, g, s in
                           zip(existing["group_size"], existing["gamma"], existing["seed"])], index=existing.index)
        existing = existing[keep]
    todo = [r for r in config.runs() if r not in done]
    chunks = [todo[i:i + config.chunk_runs] for i in range(0, len(todo), config.chunk_runs)]
    finished: dict[int, pd.DataFrame] = {}

    def keep(index: int, frame: pd.DataFrame) -> None:
        """Save after every chunk, the finished ones in the local run's order whatever order they arrive in."""
        finished[index] = frame
        if out is not None:
            write_table(_joined(existing, [finished[i] for i in sorted(finished)]), out)

    if executor.is_ray:
        from fgrpo_sim.sim.executor import ray_session, run_on_ray

        with ray_session(executor, config.device) as (device, gpus):
            run_on_ray(simulate_chunk, [(replace(config, device=device), chunk) for chunk in chunks], keep,
                       executor=executor, gpus=gpus, progress=progress, desc="categorical chunks")
    else:
        bar = progress_bar(total=len(chunks) * config.steps, progress=progress and bool(chunks), desc="categorical",
                           unit="step", leave=False)
        try:
            for index, chunk in enumerate(chunks):
                keep(index, simulate_chunk(config, chunk, bar))
        finally:
            bar.close()
    table = _joined(existing, [finished[i] for i in sorted(finished)])
    if table.empty:
        return table
    mine = table[table["config_id"] == config.config_id()]
    return mine.sort_values(list(RUN_COLUMNS) + ["step"]).reset_index(drop=True)
