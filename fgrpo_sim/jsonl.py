"""Reading and writing JSON with errors that name the file and line (shared by every reader and writer).

`read_json_objects(path)` returns (line number, object) pairs for the non-blank lines; a missing file,
a folder, bytes that are not UTF-8, a line that is not JSON or not a JSON object, a key given twice in
one object, or an integer too long to convert each raise ValueError ("FILE line L: ..."), which the CLI
prints as one line. Lines are split on "\n" only: U+2028 and U+0085 are legal raw inside a JSON string
and `str.splitlines` would cut the record there.

`read_json_columns(path, names)` is the columnar fast path of a large, uniform JSON-lines file (an eval file of
512k lines): pyarrow's streaming reader, every key typed from the first line, so pyarrow itself refuses what the
strict reader refuses (a key given twice, a lone surrogate, bad JSON, bytes that are not UTF-8, an integer out of
range); it returns None where it cannot vouch for the file, and the caller then reads it with
`read_json_objects`, whose errors name the line.

`dumps(obj)` is the one JSON writer of every output file and every `--json`: standard JSON only
(non-finite numbers become null, never the bare NaN / Infinity that other JSON readers refuse).
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any


def read_text_file(path: str | os.PathLike, what: str = "file", expected: str = "JSON lines") -> str:
    """The UTF-8 text of `path` (a leading BOM dropped); ValueError naming `what`, the path and the line
    when it is missing, a folder or not UTF-8."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{what} not found: {path}")
    if path.is_dir():
        raise ValueError(f"{what} is a folder, not a file: {path}")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"{what} {path}: cannot read it ({exc.strerror or exc})") from None
    return decode_utf8(raw, path, expected)


def decode_utf8(raw: bytes, path: str | os.PathLike, expected: str = "text") -> str:
    """`raw` as UTF-8 without a leading BOM; ValueError naming `path`, the line and the byte otherwise."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ValueError(f"{path} line {line}: not UTF-8 text (byte {exc.start}); expected {expected}") from None
    return text[1:] if text.startswith("\ufeff") else text


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for key, value in pairs:
        if key in record:  # json.loads would keep the last silently
            raise _DuplicateKey(key)
        record[key] = value
    return record


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def loads(text: str, where: str) -> Any:
    """json.loads of `text` (read from `where`, e.g. "FILE line 3"), refusing keys given twice in an object;
    every failure is a ValueError that starts with `where`."""
    try:
        value = json.loads(text, object_pairs_hook=_refuse_duplicate_keys)
    except _DuplicateKey as exc:
        raise ValueError(f"{where}: key {exc.key!r} appears twice in one object; give each key once") from None
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno} column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        raise ValueError(f"{where}: not valid JSON ({exc.msg} at {at})") from None
    except RecursionError:  # e.g. 100,000 nested brackets: Python's parser recurses once per level
        raise ValueError(f"{where}: JSON nested too deeply to read (expected a flat record)") from None
    except ValueError as exc:  # an integer of more than 4300 digits (Python's int conversion limit)
        raise ValueError(f"{where}: number out of range ({' '.join(str(exc).split()[:8])} ...)") from None
    if _SURROGATE_ESCAPE.search(text):  # only a \uD800-\uDFFF escape can make one (UTF-8 bytes cannot)
        _refuse_lone_surrogates(value, where)
    return value


#: A JSON escape of a UTF-16 surrogate; a pair of them is one character, a lone one is not text.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_lone_surrogates(value: Any, where: str) -> None:
    """A string with a lone surrogate ("\\udc00x") cannot be written as UTF-8: found when read, not when
    an output is written after the work (which would leave a half-made output behind)."""
    strings: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            strings.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            strings.append(item)
    for s in strings:
        try:
            s.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"{where}: the string {s[:40]!r} holds a lone surrogate escape "
                             f"(\\u{ord(s[exc.start]):04x}), which is not text; fix that escape") from None


def read_json_file(path: str | os.PathLike, what: str = "file") -> Any:
    """The JSON document in `path` (e.g. a config.json or trainer_state.json), errors naming the file."""
    path = Path(path)
    return loads(read_text_file(path, what, expected="JSON"), str(path))


def split_lines(text: str) -> list[str]:
    """Lines of a JSON-lines text: split on "\n" only (a trailing "\r" is JSON whitespace and harmless)."""
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def parse_json_objects(path: str | os.PathLike, text: str) -> list[tuple[int, dict[str, Any]]]:
    """(line number from 1, object) for each non-blank line of `text`, read from `path`."""
    rows = []
    for number, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        record = loads(line, f"{path} line {number}")
        if not isinstance(record, dict):
            raise ValueError(f"{path} line {number}: expected a JSON object, got {type(record).__name__}")
        rows.append((number, record))
    return rows


def read_json_objects(path: str | os.PathLike, what: str = "file") -> list[tuple[int, dict[str, Any]]]:
    """(line number from 1, object) for each non-blank line of the JSON-lines file `path`."""
    return parse_json_objects(path, read_text_file(path, what))


def first_json_object(path: str | os.PathLike, what: str = "file") -> dict[str, Any] | None:
    """The first non-blank line of the JSON-lines file `path` as an object (None when it has none), read
    without reading the rest: how a reader tells which kind of file it was given."""
    path = Path(path)
    if not path.is_file():
        read_text_file(path, what)  # its error: missing, a folder
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                read_text_file(path, what)  # decoding the whole file names the line and byte
                raise
            if line.strip():
                record = loads(line, f"{path} line {number}")
                if not isinstance(record, dict):
                    raise ValueError(f"{path} line {number}: expected a JSON object, got {type(record).__name__}")
                return record
    return None


#: pyarrow's block: a line longer than this cannot be read by the fast path (the strict reader reads it).
#: 1 MiB keeps the streaming reader's memory flat (16 MiB blocks read ahead to ~650 MB on a 600 MB file).
COLUMN_BLOCK_BYTES = 1 << 20


def read_json_columns(path: str | os.PathLike, names: list[str] | tuple[str, ...]):
    """{name: pyarrow.ChunkedArray or None (a key the file lacks)} of a uniform JSON-lines file, through
    pyarrow's streaming reader; None when the fast path cannot vouch for the file: the caller then reads it
    with `read_json_objects`, which names the bad line (or reads what pyarrow cannot, e.g. a line over
    `COLUMN_BLOCK_BYTES`).

    Every key of the first line is typed from its value there and parsed on every line (a key it lacks is an
    error, not a new column), so pyarrow refuses, as `loads` does, a key given twice (also one the caller does
    not read), a lone surrogate escape, bad JSON or bytes that are not UTF-8 (each batch is validated), an
    integer beyond int64; its memory is that of one block, whatever the unread fields hold. A null is read as a
    missing value, and one row per line is checked by counting the lines: a blank line, or two objects on one
    line, sends the file to the strict reader.
    """
    try:
        import pyarrow as pa
        import pyarrow.compute as pa_compute
        import pyarrow.json as pa_json
    except ImportError:  # pragma: no cover - pyarrow is a dependency; the strict reader still works
        return None
    path = Path(path)
    if not path.is_file():
        return None
    try:
        first = first_json_object(path)
        if not first or not all(isinstance(key, str) and key for key in first):
            return None
        schema = pa.schema([(key, _arrow_type(value)) for key, value in first.items()])
        reader = pa_json.open_json(path, read_options=pa_json.ReadOptions(block_size=COLUMN_BLOCK_BYTES),
                                   parse_options=pa_json.ParseOptions(explicit_schema=schema,
                                                                      unexpected_field_behavior="error"))
        chunks: dict[str, list] = {name: [] for name in names if name in first}
        floats = [key for key, value in first.items() if isinstance(value, float)]
        rows = 0
        for batch in reader:
            batch.validate(full=True)  # UTF-8 of every string: pyarrow's parser does not check it
            if any(pa_compute.any(pa_compute.is_inf(batch.column(key))).as_py() for key in floats):
                return None  # an infinity, or an integer too long for Python that pyarrow read as one
            rows += batch.num_rows
            for name in chunks:
                chunks[name].append(batch.column(name))
    except (ValueError, TypeError, OverflowError, UnicodeError, OSError, ImportError, pa.ArrowException):
        return None  # the strict reader names what is wrong, or reads what pyarrow cannot
    if rows != _count_lines(path):
        return None
    return {name: pa.chunked_array(chunks[name], schema.field(name).type) if name in chunks else None
            for name in names}


def _arrow_type(value: Any):
    """The pyarrow type a first line's value fixes for its key (null: a string; a list: its one element type).
    Not pyarrow's own inference: pa.array() imports pandas, seconds on a cold start."""
    import pyarrow as pa

    if value is None or isinstance(value, str):
        return pa.string()
    if isinstance(value, bool):
        return pa.bool_()
    if isinstance(value, int):
        return pa.int64()
    if isinstance(value, float):
        return pa.float64()
    if isinstance(value, dict):
        return pa.struct([(key, _arrow_type(item)) for key, item in value.items()])
    kinds = {_arrow_type(item) for item in value if item is not None}  # a list
    if len(kinds) > 1:
        raise TypeError("a list of mixed types")  # the strict reader reads it
    return pa.list_(kinds.pop() if kinds else pa.string())


def _count_lines(path: Path) -> int:
    """Lines of `path` (a last line without "\n" counts), in blocks: memory stays flat."""
    lines, last = 0, b"\n"
    with open(path, "rb") as fh:
        while block := fh.read(1 << 24):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n")


def has_keys(path: str | os.PathLike, keys, lines: bool = False) -> bool:
    """Is `path` a JSON object (with `lines`: JSON lines whose first record is one) holding every key of
    `keys`? How a writer recognises its own earlier output (atomic_io.check_replaceable); raises on a file
    that is not JSON."""
    if lines:
        with open(path, "rb") as fh:  # the first line only: a prepared data set may be large
            first = fh.readline(1 << 24)
        record = loads(decode_utf8(first, path), str(path))
    else:
        record = read_json_file(path)
    return isinstance(record, dict) and set(keys) <= set(record)


def finite_or_none(value: Any) -> Any:
    """`value` with every non-finite float (also numpy's) replaced by None, through dicts, lists and tuples."""
    if isinstance(value, dict):
        return {k: finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "dtype") and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:  # numpy scalar
        return finite_or_none(value.item())
    return value


def dumps(obj: Any, **kwargs: Any) -> str:
    """json.dumps as standard JSON: NaN and +-inf written as null (allow_nan=False guards the rest)."""
    return json.dumps(finite_or_none(obj), allow_nan=False, **kwargs)


__all__ = ["read_text_file", "decode_utf8", "loads", "read_json_file", "has_keys", "split_lines", "parse_json_objects",
           "read_json_objects", "first_json_object", "read_json_columns", "finite_or_none", "dumps"]
