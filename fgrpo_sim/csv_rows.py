"""The one CSV reader of every CSV input (planner pilot files, `llm report` manifests and paper CSV, the
categorical result table a run resumes from), with `jsonl`'s guarantees.

`read_csv_rows(path)` returns the header and (line number, fields) for each row. UTF-8 only (a BOM
dropped; bad bytes named by line, through `jsonl.read_text_file`); a column named twice, a field over
the csv module's limit (131,072 characters), bad quoting and a row whose field count differs from the
header's are each a ValueError "FILE line L: ..." that the CLI prints as one line, never `_csv.Error`.

`complete=True` is the resume readers' check: a file whose last line has no line end was cut short
mid-write (our writers end every row with one), so its last row may hold a truncated number even when
its field count is right; it is refused, naming that line, rather than counted as finished.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path


def parse_csv_rows(path: str | os.PathLike, text: str, *, complete: bool = False
                   ) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """(header with names stripped, [(line of the row's start, fields)]) of the CSV `text` read from `path`.

    Blank lines are skipped; an empty text has the header [] and no rows."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    rows: list[tuple[int, list[str]]] = []
    start = 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:  # e.g. "field larger than field limit (131072)"
            raise ValueError(f"{path} line {start}: not readable as CSV ({exc})") from None
        line, start = start, reader.line_num + 1  # a quoted field may span lines: the row starts at `line`
        if not fields or (len(fields) == 1 and not fields[0].strip()):
            continue
        if header is None:
            header = [name.strip() for name in fields]
            twice = next((name for i, name in enumerate(header) if name and name in header[:i]), None)
            if twice is not None:  # which of the two would be read?
                raise ValueError(f"{path} line {line}: column {twice!r} appears twice in the header")
            continue
        if len(fields) != len(header):  # pandas pads a short row with NaN; DictReader with None
            raise ValueError(f"{path} line {line}: {len(fields)} fields where the header has {len(header)} "
                             "(a damaged or cut-short row)")
        rows.append((line, fields))
    if complete and rows and not text.endswith(("\n", "\r")):
        raise ValueError(f"{path} line {rows[-1][0]}: the last row has no line end, so its write was cut short")
    return header or [], rows


def read_csv_rows(path: str | os.PathLike, what: str = "file", *, complete: bool = False
                  ) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """`parse_csv_rows` of the file `path` (missing, a folder, not UTF-8: ValueError naming `what` and path)."""
    from fgrpo_sim.jsonl import read_text_file

    return parse_csv_rows(Path(path), read_text_file(path, what, expected="CSV"), complete=complete)


def read_csv_dicts(path: str | os.PathLike, what: str = "file") -> list[tuple[int, dict[str, str]]]:
    """(line, {column: stripped field}) per row of the CSV file `path` (unnamed columns dropped)."""
    header, rows = read_csv_rows(path, what)
    return [(line, {name: value.strip() for name, value in zip(header, fields) if name}) for line, fields in rows]


def table_columns(path: str | os.PathLike) -> list[str]:
    """The column names of a result table (.parquet by its schema, else the CSV header line): how a writer
    recognises its own earlier output (atomic_io.check_replaceable). Raises on a file that is neither."""
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    from fgrpo_sim.jsonl import decode_utf8

    with open(path, "rb") as fh:  # the header only: a table may be large
        first = fh.readline(1 << 24)
    return parse_csv_rows(path, decode_utf8(first, path, "CSV"))[0]


__all__ = ["parse_csv_rows", "read_csv_rows", "read_csv_dicts", "table_columns"]
