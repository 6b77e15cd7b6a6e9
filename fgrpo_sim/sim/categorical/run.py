"""Run a grid of categorical simulations in batched chunks, record metrics, save a tidy table, resume.

One table row per (run, recorded step): the setting's columns, the run's (group_size, gamma, seed),
the step, and every metric of `categorical.METRICS`. Steps 0, stride, 2*stride, ... and the last
step are recorded. After each chunk of runs the whole table is rewritten atomically, so an
interrupted job loses at most one chunk and `resume` skips every finished run of the same setting.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from fgrpo_sim.atomic_io import atomic_path
from fgrpo_sim.sim.categorical.config import CategoricalConfig
from fgrpo_sim.sim.categorical.engine import METRICS, CategoricalBatch, resolve_backend

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


def read_table(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    if _kind(path) == ".parquet":
        return pd.read_parquet(path)
    if _kind(path) == ".csv":  # a hex config_id can look like a number: keep it a string
        return pd.read_csv(path, dtype={"config_id": str})
    raise ValueError(f"out must end in .parquet or .csv, got {path.name!r}")


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


#: Column kinds of a result table; resume checks every row against them before keeping any.
_TEXT_COLUMNS = ("config_id", "surrogate", "optimizer")
_INT_COLUMNS = ("group_size", "seed", "step")
_FLOAT_COLUMNS = ("lr", "beta1", "beta2", "eps", "weight_decay", "gamma")


def _plain(value):
    """A cell as Python shows it (0.5, 'abc'), not numpy's repr (np.float64(0.5))."""
    return value.item() if hasattr(value, "item") else value


def _check_columns(columns, source: str | Path, hint: str) -> None:
    """A file without every column of a result table is not one of ours: never replaced, even when it has
    no rows (a header-only CSV of another schema is someone's file too)."""
    needed = (*SETTING_COLUMNS, *RUN_COLUMNS, "step", *METRICS)
    missing = [c for c in needed if c not in columns]
    if missing:
        raise ValueError(f"out {source} exists but is not a categorical result table (no column {missing[0]!r}); "
                         f"{hint}")


def validate_table(table: pd.DataFrame, source: str | Path, hint: str = FRESH_START_HINT) -> pd.DataFrame:
    """`table` with every column at its proper dtype, or ValueError naming `source` and its first bad row.

    Checked on every row (other settings' rows are rewritten too, so they must be sound): the columns
    of a result table exist; setting and run columns are non-empty, numbers where numbers belong,
    integers where integers belong; metrics are finite numbers (NaN allowed); no (setting, run, step) twice.
    Rows are numbered from 1 in file order (the CSV line is one more, for the header).
    """
    _check_columns(table.columns, source, hint)
    table = table.reset_index(drop=True)
    problems: list[tuple[int, str]] = []  # (row index, what is wrong); the smallest index is reported

    def first(mask, why) -> None:
        bad = mask.to_numpy().nonzero()[0]
        if bad.size:
            problems.append((int(bad[0]), why(int(bad[0]))))

    fixed = {}
    for col in _TEXT_COLUMNS:
        values = table[col]
        first(values.isna() | values.astype(str).str.strip().eq(""), lambda i, c=col: f"{c} is empty")
        fixed[col] = values.astype(str)
    for col in (*_INT_COLUMNS, *_FLOAT_COLUMNS, *METRICS):
        numbers = pd.to_numeric(table[col], errors="coerce").astype("float64")
        if col in METRICS:  # a metric may be NaN (e.g. no batch yet), but must not be text or infinite
            bad = (numbers.isna() & table[col].notna()) | numbers.abs().eq(float("inf"))
        else:
            bad = numbers.isna() | ~numbers.abs().lt(float("inf"))
        if col in _INT_COLUMNS:
            bad |= numbers.notna() & (numbers != numbers.round())
        first(bad, lambda i, c=col: f"{c} = {_plain(table[c].iloc[i])!r} is not "
                                    f"{'an integer' if c in _INT_COLUMNS else 'a finite number'}")
        fixed[col] = numbers
    if not problems:
        for col in _INT_COLUMNS:
            fixed[col] = fixed[col].astype("int64")
        key = pd.DataFrame({c: fixed[c] for c in ("config_id", *RUN_COLUMNS, "step")})
        first(key.duplicated(), lambda i: "it repeats an earlier row's (config_id, group_size, gamma, seed, step)")
    if problems:
        row, why = min(problems)
        raise ValueError(f"cannot resume from {source}: row {row + 1}: {why}; fix or delete that row, or "
                         f"{hint}")
    return table.assign(**fixed)


def _read_existing(out: Path, hint: str = FRESH_START_HINT) -> pd.DataFrame:
    """The table already in `out`, for resuming, validated row by row; a file that is not one of ours is an
    error, never overwritten, and a damaged row is never carried forward."""
    if _kind(out) == ".csv":  # pandas pads a torn row with NaN and names no line: csv_rows checks first
        from fgrpo_sim.csv_rows import read_csv_rows

        try:  # bytes that are not UTF-8, a row whose field count is not the header's, a last row cut short
            header, _ = read_csv_rows(out, "out", complete=True)
        except ValueError as exc:
            raise ValueError(f"cannot resume from {exc}; fix or delete that row, or {hint}") from None
        if header:  # an empty file is pandas' "not readable" below
            _check_columns(header, out, hint)
    try:
        table = read_table(out)
    except Exception as exc:  # pandas/pyarrow raise many kinds for a foreign or damaged file
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"out {out} exists but is not a readable result table ({reason}); {hint}") from None
    if table.empty:  # nothing to keep (a header-only table of ours)
        _check_columns(table.columns, out, hint)
        return pd.DataFrame()
    return validate_table(table, out, hint)


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
             fresh_start_hint: str = FRESH_START_HINT) -> pd.DataFrame:
    """Simulate every run of `config` (skipping finished ones found in `out` when `resume`), save, return the table.

    Rows of other settings already in `out` are kept, so several settings can share one file.
    The returned table holds only this setting's rows. While it reads, simulates and rewrites `out`
    the run holds `out`'s lock (fgrpo_sim.output_lock): a second run on the same file fails at once
    with a ValueError naming the lock, or with `wait_for_lock` waits for the first and then resumes.
    """
    import contextlib

    from fgrpo_sim.atomic_io import check_writable
    from fgrpo_sim.output_lock import output_lock

    resolve_backend(config)  # fail before the progress bar, not inside it
    if out is not None:
        out = Path(out)
        if _kind(out) not in (".parquet", ".csv"):
            raise ValueError(f"out must end in .parquet or .csv, got {out.name!r}")
        check_writable(out, "out")
    with output_lock(out, wait=wait_for_lock, name="out") if out is not None else contextlib.nullcontext():
        return _run_grid_locked(config, out, resume=resume, progress=progress, hint=fresh_start_hint)


def _run_grid_locked(config: CategoricalConfig, out: Path | None, *, resume: bool, progress: bool,
                     hint: str) -> pd.DataFrame:
    from fgrpo_sim.progress import bar as progress_bar

    existing = pd.DataFrame()
    if out is not None and resume and out.exists():
        existing = _read_existing(out, hint)
    done = finished_runs(existing, config) if resume else set()
    if not existing.empty:  # drop half-written runs of this setting; they are redone
        cid = config.config_id()
        keep = existing["config_id"] != cid
        keep |= pd.Series([(int(n), float(g), int(s)) in done for n, g, s in
                           zip(existing["group_size"], existing["gamma"], existing["seed"])], index=existing.index)
        existing = existing[keep]
    todo = [r for r in config.runs() if r not in done]
    chunks = [todo[i:i + config.chunk_runs] for i in range(0, len(todo), config.chunk_runs)]
    bar = progress_bar(total=len(chunks) * config.steps, progress=progress and bool(chunks), desc="categorical",
                       unit="step", leave=False)
    table = existing
    try:
        for chunk in chunks:
            new = simulate_chunk(config, chunk, bar)
            table = new if table.empty else pd.concat([table, new], ignore_index=True)
            if out is not None:
                write_table(table, out)
    finally:
        bar.close()
    if table.empty:
        return table
    mine = table[table["config_id"] == config.config_id()]
    return mine.sort_values(list(RUN_COLUMNS) + ["step"]).reset_index(drop=True)
