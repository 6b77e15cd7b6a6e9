"""What `simulate group-size` keeps of its earlier output when it resumes (issue 38).

The study saves after each (optimizer, parametrisation) chunk, the whole table rewritten atomically, so a
sound file holds whole chunks only. Before any chunk is skipped, the file is read through the shared
result-table reader (`sim.result_table`: csv_rows for CSV, a torn last row refused; every row's columns
by kind; no (chunk, setting, step) twice) and each chunk it keeps is checked whole:

- a chunk this run plans (same id, so the same settings) must hold exactly the rows the study makes:
  every trained row of `study_rows` at each evaluation step (0, every `eval_every` steps, its last);
- any other chunk kept in the file (another setting) must still be a whole grid: its settings a full
  product of their values (as `study_rows` makes them), each trained row with its first and last
  evaluation, and rows with the same step count recorded at the same steps.

A chunk of a planned (rare_correct_prob, optimizer, parametrisation) with other settings is dropped (it
is trained afresh), so only its rows are checked, not its completeness.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fgrpo_sim.sim.group_size_study import METRICS, GroupSizeStudySpec, chunk_id, chunk_key, chunks, study_rows
from fgrpo_sim.sim.result_table import TableSchema, read_result_table

#: One trained row's settings (with `chunk`); with `step` they name one line of the table.
SETTINGS = ("view", "rare_mass", "population", "N", "base_lr", "variant", "seed")
#: What the study gives each trained row beside its settings (a resumed row must agree).
RUN_VALUES = ("gamma", "lr", "steps")
TABLE_SCHEMA = TableSchema(
    "group-size study table",
    text=("chunk", "optimizer", "parametrisation", "view", "variant"),
    integers=("population", "N", "seed", "steps", "step", "rollouts"),
    numbers=("rare_correct_prob", "rare_mass", "base_lr", "gamma", "lr"),
    metrics=(*(f"{split}_{m}" for split in ("train", "heldout") for m in METRICS), "train_dnll_rare"),
    key=("chunk", *SETTINGS, "step"),
    bounds=(("population", 0, None), ("N", 1, None), ("steps", 0, None), ("step", 0, None), ("rollouts", 0, None),
            ("rare_correct_prob", 0, 1), ("rare_mass", 0, 1), ("base_lr", 0, None), ("lr", 0, None),
            ("gamma", 0, None)))


def _row_rules(spec: GroupSizeStudySpec):
    """Each row agrees with its run (result_table's `rules`, refused by line): its step within its `steps`; its
    rare_correct_prob, optimizer and parametrisation the ones its chunk id names; and in a chunk this run plans,
    its gamma, lr and steps the ones the study gives that trained row (a chunk id fingerprints them)."""
    def rules(table: pd.DataFrame) -> list:
        found = [(table["step"] > table["steps"], lambda i: f"step {table['step'].iloc[i]} is beyond its row's "
                  f"{table['steps'].iloc[i]} steps")]
        named = [chunk_key(*values) for values in
                 table[["rare_correct_prob", "optimizer", "parametrisation"]].itertuples(index=False, name=None)]
        found.append((table["chunk"].str.split("#").str[0] != pd.Series(named, index=table.index), lambda i: (
            f"rare_correct_prob, optimizer and parametrisation ({named[i]}) contradict its chunk "
            f"{table['chunk'].iloc[i]!r}")))
        planned = []
        for opt, kind in chunks(spec):
            rows = study_rows(spec, opt, kind)
            planned.append(rows[[*SETTINGS, *RUN_VALUES]].assign(chunk=chunk_id(spec, opt, kind)))
        given = table[["chunk", *SETTINGS]].merge(pd.concat(planned), how="left", on=["chunk", *SETTINGS])
        for col in RUN_VALUES:  # a row the study does not plan (NaN here) is judged by the chunk check after
            # to a relative 1e-12, not bit for bit: a CSV's decimal lr goes through the reader's float parser, whose
            # last bit differs between library versions (pandas 2.1 on the dependency floors), so exact equality
            # refused a sound table there; a wrong lr differs by far more
            planned_values = given[col].to_numpy(dtype=float)
            close = np.isclose(table[col].to_numpy(dtype=float), planned_values, rtol=1e-12, atol=0.0)
            wrong = given[col].notna().to_numpy() & ~close
            found.append((wrong, lambda i, c=col: f"{c} = {table[c].iloc[i]:g} contradicts its chunk "
                          f"{table['chunk'].iloc[i]!r}, where this row has {c} = {given[c].iloc[i]:g}"))
        return found
    return rules


HINT = "pass --no-resume to overwrite it, or choose another file"


def evaluation_steps(steps: int, eval_every: int) -> list[int]:
    """The steps a row trained for `steps` is evaluated at (the study's schedule): 0, every `eval_every`, its last."""
    return sorted({0, steps, *range(eval_every, steps + 1, eval_every)})


def expected_keys(spec: GroupSizeStudySpec, optimizer: str, parametrisation: str) -> set[tuple]:
    """Every (chunk, *SETTINGS, step) the study writes for one chunk of `spec`."""
    ident = chunk_id(spec, optimizer, parametrisation)
    rows = study_rows(spec, optimizer, parametrisation)
    return {(ident, *settings, step)
            for *settings, steps in rows[[*SETTINGS, "steps"]].itertuples(index=False, name=None)
            for step in evaluation_steps(int(steps), spec.eval_every)}


def _row_key(values: tuple) -> str:
    return ", ".join(f"{name} {value}" for name, value in zip((*SETTINGS, "step"), values))


def _whole_grid_problem(rows: pd.DataFrame) -> str | None:
    """What makes one chunk's rows less than the grid the study writes (its spec unknown here), or None."""
    settings = rows[list(SETTINGS)].drop_duplicates()
    full = 1
    for name in SETTINGS:
        full *= settings[name].nunique()
    if len(settings) != full:
        return f"holds {len(settings)} trained rows where its settings make {full} (whole rows are missing)"
    schedule: dict[int, set] = {}
    for keys, group in rows.groupby([*SETTINGS, "steps"], sort=False)["step"]:
        steps, got = keys[-1], set(group)
        if not {0, steps} <= got:
            return f"lacks the {'first' if 0 not in got else 'last'} evaluation of a row trained {steps} steps"
        if schedule.setdefault(steps, got) != got:
            return f"records rows trained {steps} steps at different steps (rows are missing)"
    return None


def read_kept_chunks(out: str | Path, spec: GroupSizeStudySpec, hint: str = HINT) -> pd.DataFrame:
    """The rows of `out` a resumed run keeps (whole chunks; a planned key's chunk with other settings dropped),
    each row and each kept chunk checked; ValueError naming the file and the line or chunk otherwise."""
    out = Path(out)
    table = read_result_table(out, TABLE_SCHEMA, hint, label="--out", rules=_row_rules(spec))
    if table.empty:  # a header only: nothing to keep, but the columns it needs
        return pd.DataFrame(columns=list(TABLE_SCHEMA.columns))
    planned = {chunk_id(spec, opt, kind): (opt, kind) for opt, kind in chunks(spec)}
    planned_keys = {c.split("#")[0] for c in planned}
    # a chunk of the same (rare_correct_prob, optimizer, parametrisation) but other settings is replaced, not mixed
    stale = table["chunk"].str.split("#").str[0].isin(planned_keys) & ~table["chunk"].isin(planned)
    table = table[~stale].reset_index(drop=True)
    for ident, rows in table.groupby("chunk", sort=False):
        if ident in planned:
            expected = expected_keys(spec, *planned[ident])
            got = set(rows[list(TABLE_SCHEMA.key)].itertuples(index=False, name=None))
            if got != expected:
                missing = sorted(expected - got, key=str)
                what = (f"lacks {len(missing)} of its {len(expected)} rows (e.g. {_row_key(missing[0][1:])})"
                        if missing else f"holds rows the study never writes (e.g. {_row_key(sorted(got - expected, key=str)[0][1:])})")
                raise ValueError(f"cannot resume from {out}: chunk {ident!r} {what}; delete that chunk's rows, or {hint}")
        else:
            why = _whole_grid_problem(rows)
            if why is not None:
                raise ValueError(f"cannot resume from {out}: chunk {ident!r} {why}; delete that chunk's rows, or {hint}")
    return table


__all__ = ["TABLE_SCHEMA", "SETTINGS", "evaluation_steps", "expected_keys", "read_kept_chunks"]
