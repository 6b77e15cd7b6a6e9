"""Reading evaluation results for pass@k: JSON lines, one object per line.

Two line kinds, which may not be mixed for the same problem:

* per sample: ``{"problem_id": "aime24/3", "correct": true, ...}``: one line per generation
  (`fgrpo llm eval` writes this); n and c are counted per problem;
* per problem: ``{"problem_id": "aime24/3", "n": 1024, "c": 17, ...}``: one line per problem.

`problem_id` is a string or an integer (compared as its text, so 3 and "3" are the same problem);
`correct` must be a JSON boolean; `n` >= 1 and 0 <= `c` <= `n` integers. An optional integer
`sample_index` on per-sample lines (as `fgrpo llm eval` writes) is used to reject a sample that
appears twice, which would otherwise be counted twice. Other keys are ignored.
Blank lines are skipped. Anything else (bad JSON, a missing key, a wrong type, a second per-problem
line for one problem) is an error naming the file and line: nothing is silently dropped.
Problems keep the order in which they first appear; n may differ between problems.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class ResultCounts:
    """Per-problem sample counts read from one results file."""

    path: str
    problem_ids: list[str]
    n: np.ndarray
    c: np.ndarray
    first_line: list[int] = field(repr=False)
    sample_lines: int = 0
    count_lines: int = 0

    def summary(self) -> dict:
        return {
            "file": self.path,
            "problems": len(self.problem_ids),
            "n_min": int(self.n.min()),
            "n_max": int(self.n.max()),
            "samples": int(self.n.sum()),
            "correct": int(self.c.sum()),
            "sample_lines": self.sample_lines,
            "count_lines": self.count_lines,
        }


MAX_SAMPLES = 2**53  # per problem; beyond this the counts are no longer exact in float64


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_results_jsonl(path: str | os.PathLike) -> ResultCounts:
    """Parse a results file into per-problem (n, c); ValueError "FILE line L: ..." on any bad line.

    A uniform file (every line the first line's keys, e.g. what `fgrpo llm eval` writes) is read column by
    column (`jsonl.read_json_columns`: pyarrow, only these five columns kept, 10x faster than a dict per
    line); anything that reader cannot vouch for, or that these checks would refuse, is read line by line
    (`_read_lines`), so every error names its line."""
    counts = _read_columns(Path(path))
    return counts if counts is not None else _read_lines(Path(path))


_COLUMNS = ("problem_id", "correct", "sample_index", "n", "c")


def _read_columns(path: Path) -> ResultCounts | None:
    """The file's counts from its columns, or None where the line-by-line reader must decide (an error to
    name, or a file the columnar reader cannot read)."""
    import pyarrow as pa

    from fgrpo_sim.jsonl import read_json_columns

    columns = read_json_columns(path, _COLUMNS)
    if columns is None or columns["problem_id"] is None:
        return None
    pids = columns["problem_id"]
    if pids.null_count or not (pa.types.is_string(pids.type) or pa.types.is_int64(pids.type)):
        return None
    arrays = {name: _column(array) for name, array in columns.items() if array is not None and name != "problem_id"}
    if any(array is None for array in arrays.values()):
        return None  # a null, or a type these lines never hold: the line reader names the line
    pids = pids.combine_chunks().dictionary_encode()  # codes in the order of first appearance
    codes = _numpy(pids.indices).astype(np.int64)
    problems = len(pids.dictionary)
    if set(arrays) <= {"correct", "sample_index"} and arrays.get("correct", np.int64(0)).dtype == np.bool_:
        if "sample_index" in arrays:
            index = arrays["sample_index"]
            if index.dtype != np.int64 or (index < 0).any():
                return None
            order = np.lexsort((index, codes))
            if ((np.diff(codes[order]) == 0) & (np.diff(index[order]) == 0)).any():
                return None  # a sample given twice: the line reader names both lines
        n = np.bincount(codes, minlength=problems)
        c = np.bincount(codes[arrays["correct"]], minlength=problems)
        sample_lines, count_lines = len(codes), 0
    elif set(arrays) == {"n", "c"} and problems == len(codes):  # one line per problem: codes are 0, 1, 2, ...
        n, c = arrays["n"], arrays["c"]
        if n.dtype != np.int64 or c.dtype != np.int64 or (n < 1).any() or (n > MAX_SAMPLES).any() \
                or (c < 0).any() or (c > n).any():
            return None
        sample_lines, count_lines = 0, len(codes)
    else:
        return None  # both kinds of line, or neither
    first_row = np.unique(codes, return_index=True)[1]
    return ResultCounts(str(path), [str(pid) for pid in pids.dictionary.to_pylist()], n.astype(np.int64),
                        c.astype(np.int64), [int(row) + 1 for row in first_row], sample_lines, count_lines)


def _column(array) -> np.ndarray | None:
    """A column as numpy, or None when it holds a null or a type these files never hold (bool or int64)."""
    import pyarrow as pa

    if array.null_count or not (pa.types.is_int64(array.type) or pa.types.is_boolean(array.type)):
        return None
    return _numpy(array.combine_chunks())


def _numpy(array) -> np.ndarray:
    """A null-free bool or integer pyarrow array as numpy, from its data buffer (pyarrow's to_numpy imports
    pandas: seconds on a cold start)."""
    data = np.frombuffer(array.buffers()[1], dtype=np.uint8)
    if array.type.bit_width == 1:  # booleans: one bit each, least significant first
        return np.unpackbits(data, bitorder="little")[array.offset: array.offset + len(array)].astype(bool)
    return data.view(f"<i{array.type.bit_width // 8}")[array.offset: array.offset + len(array)]


def _read_lines(path: Path) -> ResultCounts:
    """The strict reader: one dict per line, every check with the line it failed on."""
    from fgrpo_sim.jsonl import read_json_objects
    from fgrpo_sim.validation import integral

    order: dict[str, int] = {}
    n: list[int] = []
    c: list[int] = []
    kind: list[str] = []
    first_line: list[int] = []
    sample_lines = count_lines = 0
    sample_seen: dict[tuple[str, int], int] = {}
    for lineno, row in read_json_objects(path, "results file"):
        where = f"{path} line {lineno}"
        if "problem_id" not in row:
            raise ValueError(f"{where}: missing key 'problem_id'")
        pid = row["problem_id"]
        if not (isinstance(pid, str) or _is_int(pid)):
            raise ValueError(f"{where}: problem_id must be a string or an integer, got {pid!r}")
        pid = str(pid)
        has_sample = "correct" in row
        has_counts = "n" in row or "c" in row
        if has_sample and has_counts:
            raise ValueError(f"{where}: give either 'correct' (one sample) or 'n' and 'c' (one problem), not both")
        if not has_sample and not has_counts:
            raise ValueError(f"{where}: needs 'correct' (true/false, one sample) or 'n' and 'c' (one problem)")
        line_kind = "sample" if has_sample else "counts"
        if has_sample:
            if not isinstance(row["correct"], bool):
                raise ValueError(f"{where}: 'correct' must be true or false, got {row['correct']!r}")
            add_n, add_c = 1, int(row["correct"])
            sample_lines += 1
            if "sample_index" in row:
                index = integral(row["sample_index"])
                if index is None or index < 0:
                    raise ValueError(f"{where}: 'sample_index' must be an integer >= 0, got {row['sample_index']!r}")
                if (pid, index) in sample_seen:
                    raise ValueError(
                        f"{where}: problem {pid!r} sample_index {index} already appeared on line "
                        f"{sample_seen[(pid, index)]} (duplicate sample)"
                    )
                sample_seen[(pid, index)] = lineno
        else:
            if "n" not in row or "c" not in row:
                raise ValueError(f"{where}: a per-problem line needs both 'n' and 'c'")
            rn, rc = integral(row["n"]), integral(row["c"])  # 4 or 4.0 (a count written as a float)
            if rn is None or not 1 <= rn <= MAX_SAMPLES:
                raise ValueError(f"{where}: 'n' must be an integer in [1, {MAX_SAMPLES}], got {row['n']!r}")
            if rc is None or not 0 <= rc <= rn:
                raise ValueError(f"{where}: 'c' must be an integer in [0, n = {rn}], got {row['c']!r}")
            add_n, add_c = rn, rc
            count_lines += 1
        if pid not in order:
            order[pid] = len(n)
            n.append(0)
            c.append(0)
            kind.append(line_kind)
            first_line.append(lineno)
        i = order[pid]
        if kind[i] != line_kind:
            raise ValueError(
                f"{where}: problem {pid!r} mixes per-sample and per-problem lines (first seen on line {first_line[i]})"
            )
        if line_kind == "counts" and n[i] > 0:
            raise ValueError(f"{where}: problem {pid!r} already has an 'n'/'c' line (line {first_line[i]})")
        n[i] += add_n
        c[i] += add_c
    if not n:
        raise ValueError(f"{path}: no results (the file is empty)")
    return ResultCounts(str(path), list(order), np.array(n, dtype=np.int64), np.array(c, dtype=np.int64),
                        first_line, sample_lines, count_lines)


def align_problems(a: ResultCounts, b: ResultCounts) -> np.ndarray:
    """Indices into b matching a's problem order; ValueError if the problem sets differ."""
    in_b = {pid: i for i, pid in enumerate(b.problem_ids)}
    missing_in_b = [pid for pid in a.problem_ids if pid not in in_b]
    in_a = set(a.problem_ids)
    missing_in_a = [pid for pid in b.problem_ids if pid not in in_a]
    if missing_in_b or missing_in_a:
        parts = []
        for missing, where, other in ((missing_in_b, b.path, a.path), (missing_in_a, a.path, b.path)):
            if missing:
                shown = ", ".join(repr(p) for p in missing[:3]) + (", ..." if len(missing) > 3 else "")
                parts.append(f"{where} lacks {len(missing)} problem(s) of {other} ({shown})")
        raise ValueError("the compared files must cover the same problems: " + "; ".join(parts))
    return np.array([in_b[pid] for pid in a.problem_ids], dtype=np.int64)


__all__ = ["ResultCounts", "read_results_jsonl", "align_problems"]
