"""Reading back a result table to resume from: every row checked before any row is kept.

Three resumable writers share this reader: the categorical simulator (`categorical.run.run_grid`), the
group-size study (`group_size_resume`) and the population sweep (`population_resume`). A resume keeps the rows already in the output and writes them out
again beside the new ones, so one damaged row would be carried forward and reported on for good; the
table is therefore checked whole, against its `TableSchema`, before the run starts:

- CSV through `csv_rows` (the one CSV reader): UTF-8, every row the header's field count, and a last row
  without its line end refused (its write was cut short, so `0.98...` may have been cut to `0`).
  pandas' `read_csv` checks none of these: it pads a short row with NaN and names no line.
- Parquet through pyarrow: a truncated or foreign file is one line naming it.
- Per column kind: text columns non-empty; integers where integers belong; numbers finite; metrics finite
  (NaN only in the columns the schema names); a parquet number column stored as text refused (pandas would
  parse it); values within the schema's bounds (a step of -1); no two rows with the same key.
- Per run (`rules`, from the writer that knows its configuration): a row's settings agree with its setting's
  id, its step is one the run records (a row at step 99 of a 2-step run is refused, never dropped unread).

Errors read "cannot resume from FILE line L: WHY; fix or delete that row, or HINT" (CSV lines count the
header; parquet says "row R", from 1), which the CLI prints as one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class TableSchema:
    """The columns a result table must hold, by kind; other columns are carried along unchecked."""

    name: str  # in messages: "out X exists but is not a NAME"
    text: tuple[str, ...] = ()
    integers: tuple[str, ...] = ()
    numbers: tuple[str, ...] = ()  # finite
    metrics: tuple[str, ...] = ()  # finite, or NaN in the `nan_metrics` columns (e.g. a statistic with no batch yet)
    nan_metrics: tuple[str, ...] = ()
    key: tuple[str, ...] = ()  # no two rows share these values
    bounds: tuple[tuple[str, float | None, float | None], ...] = ()  # (column, low, high): a value outside is refused

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.text, *self.integers, *self.numbers, *self.metrics)


def check_columns(schema: TableSchema, columns, source, hint: str, label: str = "out") -> None:
    """A file without every column of the schema is not one of ours: never resumed from or replaced, even
    when it has no rows (a header-only CSV of another schema is someone's file too)."""
    missing = [c for c in schema.columns if c not in set(columns)]
    if missing:
        raise ValueError(f"{label} {source} exists but is not a {schema.name} (no column {missing[0]!r}); {hint}")


#: A run's own row checks: (the typed table) -> [(bad-row mask, why(row index))], beyond what the schema says.
Rules = Callable[[pd.DataFrame], list[tuple[Any, Callable[[int], str]]]]


def read_result_table(path: str | Path, schema: TableSchema, hint: str, label: str = "out",
                      rules: Rules | None = None, action: str = "resume from") -> pd.DataFrame:
    """The table in `path` (.csv or .parquet, by suffix in any case), every row checked against `schema`
    and the run's `rules`, its columns at their proper dtype; an empty DataFrame when it holds a header only.
    `action` words the refusal ("cannot resume from FILE ...", or "cannot read" for a committed record)."""
    path = Path(path)
    kind = path.suffix.lower()
    if kind == ".csv":
        from fgrpo_sim.csv_rows import read_csv_rows

        try:  # bytes that are not UTF-8, a row whose field count is not the header's, a last row cut short
            header, rows = read_csv_rows(path, label, complete=True)
        except ValueError as exc:
            raise ValueError(f"cannot {action} {exc}; fix or delete that row, or {hint}") from None
        if not header:
            raise ValueError(f"{label} {path} exists but is not a readable result table (it is empty); {hint}")
        check_columns(schema, header, path, hint, label)
        if not rows:
            return pd.DataFrame()
        table = pd.DataFrame([fields for _, fields in rows], columns=header, dtype=object)
        return validate_rows(schema, table, path, hint, lines=[line for line, _ in rows], rules=rules, action=action)
    if kind == ".parquet":
        try:
            table = pd.read_parquet(path)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds for a damaged or foreign file
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise ValueError(f"{label} {path} exists but is not a readable result table ({reason}); {hint}") from None
        check_columns(schema, table.columns, path, hint, label)
        return pd.DataFrame() if table.empty else validate_rows(schema, table, path, hint, rules=rules, action=action)
    raise ValueError(f"{label} must end in .parquet or .csv, got {path.name!r}")


def _plain(value) -> str:
    """repr of a cell as Python's own value: True, 0.5, 'abc' (never numpy's np.True_ or np.float64(0.5))."""
    return repr(value.item() if hasattr(value, "item") else value)


def _shown(value) -> str:
    """A cell as its reader wrote it: 0.5, 'abc' (a CSV field that reads as a number unquoted; never numpy's
    np.float64(0.5))."""
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return repr(value)
        return value.strip()
    return _plain(value)


def _numbers(values: pd.Series) -> tuple[pd.Series, pd.Series]:
    """(the column as numbers, where a cell is missing): CSV text or parquet values alike. An empty CSV
    field and "nan" are missing (pandas writes NaN as an empty field); other text is NaN and not missing."""
    if values.dtype.kind in "iuf":  # a typed (parquet) column: nothing to parse
        return values, values.isna()
    text = values.astype(object).where(values.notna(), "").astype(str).str.strip().str.lower()
    missing = values.isna() | text.isin(["", "nan"])
    numbers = pd.to_numeric(text.where(~missing, np.nan), errors="coerce")
    return numbers, missing


def validate_rows(schema: TableSchema, table: pd.DataFrame, source, hint: str,
                  lines: list[int] | None = None, rules: Rules | None = None,
                  action: str = "resume from") -> pd.DataFrame:
    """`table` with the schema's columns at their dtype, or ValueError naming `source` and its first bad row
    (`lines`: each row's CSV line; without them, a typed (parquet) table, rows are numbered from 1 in file
    order); `rules`: the run's own checks of the typed rows (module doc)."""
    table = table.reset_index(drop=True)

    def where(i: int) -> str:
        return f"line {lines[i]}" if lines is not None else f"row {i + 1}"

    problems: list[tuple[int, str]] = []  # (row index, what is wrong); the first row at fault is reported

    def first(mask, why) -> None:
        bad = np.asarray(mask, dtype=bool).nonzero()[0]
        if bad.size:
            problems.append((int(bad[0]), why(int(bad[0]))))

    fixed = {}
    for col in schema.text:
        values = table[col]
        first(values.isna() | values.astype(str).str.strip().eq(""), lambda i, c=col: f"{c} is empty")
        fixed[col] = values.astype(str)
    for col in (*schema.integers, *schema.numbers, *schema.metrics):
        if lines is None and table[col].dtype.kind not in "iuf":  # parquet keeps types: text is not a number
            first(np.ones(len(table), dtype=bool), lambda i, c=col: f"{c} = {_plain(table[c].iloc[i])} is stored "
                  f"as {table[c].dtype.name if table[c].dtype.kind != 'O' else 'text'}, not as numbers")
            fixed[col] = pd.Series(np.nan, index=table.index)
            continue
        numbers, missing = _numbers(table[col])
        finite = np.isfinite(numbers.astype("float64"))
        if col in schema.nan_metrics:
            bad = ~finite & ~missing  # NaN allowed, text and +-inf are not
        else:
            bad = ~finite
        what = "a finite number"
        if col in schema.integers:
            what = "an integer"
            if numbers.dtype.kind == "f":  # an integer written as 4.0 is one; 4.5 or 1e19 is not
                bad |= finite & ((numbers != numbers.round()) | (numbers.abs() >= 2.0**63))
            elif numbers.dtype.kind == "u":  # pandas parses an integer column beyond int64 as uint64
                bad |= numbers > np.iinfo(np.int64).max
        first(bad, lambda i, c=col, w=what: f"{c} = {_shown(table[c].iloc[i])} is not {w}")
        fixed[col] = numbers
    for col, low, high in schema.bounds:  # NaN compares False: a missing metric is judged above, not here
        values = fixed[col].astype("float64")
        outside = (values < low if low is not None else False) | (values > high if high is not None else False)
        span = f"in [{low:g}, {high:g}]" if low is not None and high is not None else \
            f">= {low:g}" if low is not None else f"<= {high:g}"
        first(np.asarray(outside) & np.isfinite(values), lambda i, c=col, sp=span: f"{c} = "
              f"{_shown(table[c].iloc[i])} is not {sp}")
    if not problems:
        for col in schema.integers:
            fixed[col] = fixed[col].astype("int64")
        for col in (*schema.numbers, *schema.metrics):
            fixed[col] = fixed[col].astype("float64")
        for mask, why in (rules(table.assign(**fixed)) if rules is not None else []):
            first(mask, why)
        if schema.key:
            key = pd.DataFrame({c: fixed[c] for c in schema.key})
            repeats = key.duplicated()
            if repeats.any():
                later = int(repeats.to_numpy().nonzero()[0][0])
                earlier = int((key == key.iloc[later]).all(axis=1).to_numpy().nonzero()[0][0])
                problems.append((later, f"it repeats {where(earlier)} (the same {', '.join(schema.key)})"))
    if problems:
        row, why = min(problems)
        raise ValueError(f"cannot {action} {source} {where(row)}: {why}; fix or delete that row, or {hint}")
    if lines is not None:  # CSV: the columns outside the schema as pandas would type them
        for col in table.columns.difference(list(fixed)):
            numbers, missing = _numbers(table[col])
            fixed[col] = numbers if not (numbers.isna() & ~missing).any() else table[col].where(~missing, np.nan)
    return table.assign(**fixed)


__all__ = ["TableSchema", "check_columns", "read_result_table", "validate_rows"]
