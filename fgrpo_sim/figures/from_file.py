"""`fgrpo figures NAME --from FILE`: read the user's own simulation output for a figure to draw.

Every table goes through `sim.result_table` (the one checked reader of our result tables: csv_rows or pyarrow,
every row checked by column kind), so a wrong file is one line naming it and the column or row at fault.
"""

from __future__ import annotations

from pathlib import Path

from fgrpo_sim.sim.result_table import TableSchema, read_result_table

#: `fgrpo simulate population` (per-prompt mode): the columns the population figures draw.
POPULATION_SCHEMA = TableSchema("population table", text=("method", "variant", "bucket"),
                                integers=("N", "run", "step"), numbers=("gamma", "lr"),
                                metrics=("pass@1", "pass@256", "rare_mass_retained"),
                                key=("method", "variant", "N", "run", "step", "bucket"))
#: `fgrpo simulate population --sharing shared`: the same with a split (train / heldout) per row.
SHARED_SCHEMA = TableSchema("shared-population table", text=(*POPULATION_SCHEMA.text, "split"),
                            integers=POPULATION_SCHEMA.integers, numbers=POPULATION_SCHEMA.numbers,
                            metrics=POPULATION_SCHEMA.metrics, key=(*POPULATION_SCHEMA.key, "split"))


def existing(path: str | Path) -> Path:
    """`path` when it is a file, else the one-line error."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"--from {path}: no such file" if not path.exists() else f"--from {path} is not a file")
    return path


def read_table(path: str | Path, schema: TableSchema, command: str, refuse_column: tuple[str, str] | None = None):
    """The table in `path` (.csv or .parquet), every row checked against `schema`; `command` is what writes
    such a table (named in the error); `refuse_column`: (a column that marks another command's table, what it is)."""
    path = existing(path)
    hint = f"pass the --out table of `{command}`"
    if refuse_column:
        from fgrpo_sim.csv_rows import table_columns

        column, why = refuse_column
        try:
            columns = table_columns(path)
        except Exception:  # noqa: BLE001 - a damaged file: the checked reader below names what is wrong
            columns = []
        if column in columns:  # another command's table that holds every column asked for, and more
            raise ValueError(f"--from {path} has a column {column!r}: {why}; {hint}")
    try:
        table = read_result_table(path, schema, hint, label="--from")
    except ValueError as exc:  # the reader's other callers resume from the file; here it is only read
        raise ValueError(str(exc).replace("cannot resume from ", "cannot read --from ", 1)) from None
    if table.empty:
        raise ValueError(f"--from {path} holds no rows; {hint}")
    return table


def one_group_size(frame, preferred: int = 8) -> int:
    """The N a one-N figure draws from a table of several: `preferred` (the figure's own) when present, else
    the smallest."""
    sizes = sorted(int(n) for n in set(frame["N"]))
    return preferred if preferred in sizes else sizes[0]
