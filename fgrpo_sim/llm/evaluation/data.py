"""Benchmark loaders: every math benchmark file read into one schema (DeepScaleR preparation, which
reads rows the same way, is `fgrpo_sim.llm.training.data`).

Files are JSON (a list of objects, or an object with a "data"/"rows"/"train"/"test" list), JSON lines
(`.jsonl`) or parquet. Rows are numbered from 1 in every message: the line of a `.jsonl` file, the
position in a JSON list or a parquet table.

Normalised schema of every loader (one dict per problem):
    problem_id : str   stable id (the file's id column, else "<benchmark>-<row number>")
    problem    : str   the question text
    answer     : str   the reference final answer, checked with math-verify against the model's last \\boxed{}
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

from fgrpo_sim.validation import check_choice, check_integer

#: Column names tried in order for each field (first present and non-empty wins).
PROBLEM_KEYS = ("problem", "question", "prompt", "Problem", "Question")
ANSWER_KEYS = ("answer", "final_answer", "gt_answer", "ground_truth", "expected_answer", "Answer")
ID_KEYS = ("problem_id", "unique_id", "id", "idx", "ID")

#: The benchmarks of the paper's in-domain table and where their public copies keep each field
#: (all resolved through the KEYS above; listed here as documentation and for `--benchmark` choices).
BENCHMARKS: dict[str, str] = {
    "math500": "HuggingFaceH4/MATH-500: problem, answer, unique_id",
    "aime24": "HuggingFaceH4/aime_2024: problem, answer, id",
    "aime25": "math-ai/aime25 (or yentinglin/aime_2025): problem, answer, id",
    "amc23": "math-ai/amc23: question, answer, id",
    "minerva": "math-ai/minervamath: question, answer",
    "olympiadbench": "math-ai/olympiadbench / Hothan/OlympiadBench: question, final_answer (list; first item used), id",
    "generic": "any file with a problem/question column and an answer/final_answer column",
}


def read_records(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """(row number from 1, record) pairs from a JSON, JSONL or parquet file."""
    from fgrpo_sim.jsonl import parse_json_objects, read_text_file

    path = Path(path)
    if not path.exists():
        from fgrpo_sim.packaged import did_you_mean

        raise FileNotFoundError(f"data file not found: {path}{did_you_mean(path)}")
    suffix = path.suffix.lower()
    if suffix == ".parquet" and path.is_file():
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow's errors for a damaged or foreign file
            raise ValueError(f"{path}: not a readable parquet file ({' '.join(str(exc).split())})") from None
        return list(enumerate(table.to_pylist(), start=1))
    text = read_text_file(path, "data file")
    if suffix == ".jsonl" or (suffix != ".json" and not text.lstrip().startswith(("[", "{\n"))):
        return parse_json_objects(path, text)
    from fgrpo_sim.jsonl import loads

    try:
        data = loads(text, str(path))  # duplicate keys and over-long integers named with the file
    except ValueError as exc:
        if "(Extra data at" in str(exc) and text.lstrip().startswith("{"):  # JSON lines saved as .json
            return parse_json_objects(path, text)
        raise
    if isinstance(data, dict):
        for key in ("data", "rows", "train", "test", "examples"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of objects (or an object holding one under 'data')")
    return list(enumerate(data, start=1))


def _first(record: dict[str, Any], keys: Iterable[str]) -> Any:
    """The first present, non-empty field among `keys` (raw: lists and dicts are judged by the caller)."""
    for key in keys:
        value = record.get(key)
        if isinstance(value, (list, dict)):
            if value:
                return value
            continue
        if value is not None and str(value).strip():
            return value
    return None


def _scalar_text(value: Any, what: str, source: str, row: int, first_of_list: bool = False) -> str:
    """A problem or answer as text: a string, or a finite int/float; anything else is a bad row.

    A list or dict is refused rather than printed as "['a', 'b']" or "{'x': 1}", and NaN/inf rather
    than turned into "nan"/"inf": either would become a training target or a reference answer no
    model can match. A one-item list counts as its item; `first_of_list` takes the first item of a
    longer one (OlympiadBench's documented final_answer convention, for that benchmark only).
    """
    if isinstance(value, list) and (len(value) == 1 or (first_of_list and value)):
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        kind = f"a list of {len(value)} items" if isinstance(value, list) else f"a {type(value).__name__}"
        raise ValueError(f"{source}: row {row} has {what} that is {kind}, not text or a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{source}: row {row} has {what} {value}, not a finite number")
    return str(value)


def _answer_text(value: Any) -> str:
    text = str(value).strip()
    if text.startswith("$") and text.endswith("$") and len(text) > 1:
        text = text.strip("$").strip()
    return text


def normalise_record(record: Any, row: int, source: str, default_id: str, *,
                     first_of_answer_list: bool = False) -> dict[str, str]:
    """Map one raw record to {problem_id, problem, answer}; ValueError naming the row when a field is
    missing, or is a list, an object, true/false or a non-finite number (see `_scalar_text`)."""
    if not isinstance(record, dict):
        raise ValueError(f"{source}: row {row} must be an object, got {type(record).__name__}")
    problem = _first(record, PROBLEM_KEYS)
    if problem is None:
        raise ValueError(f"{source}: row {row} has no problem (looked for {', '.join(PROBLEM_KEYS)})")
    answer = _first(record, ANSWER_KEYS)
    if answer is None:
        raise ValueError(f"{source}: row {row} has no answer (looked for {', '.join(ANSWER_KEYS)})")
    problem_id = _first(record, ID_KEYS)
    problem_text = _scalar_text(problem, "a problem", source, row).strip()
    answer_text = _answer_text(_scalar_text(answer, "an answer", source, row, first_of_answer_list))
    if not problem_text or not answer_text:
        raise ValueError(f"{source}: row {row} has an empty {'problem' if not problem_text else 'answer'}")
    return {
        "problem_id": _scalar_text(problem_id, "a problem_id", source, row) if problem_id is not None else default_id,
        "problem": problem_text,
        "answer": answer_text,
    }


def load_benchmark(name: str, path: str | Path, limit: int | None = None) -> list[dict[str, str]]:
    """Problems of benchmark `name` (see BENCHMARKS) from a local file, in the normalised schema.

    Raises ValueError for a row without problem or answer (with its row number) and for duplicate ids.
    """
    check_choice("benchmark", name, tuple(BENCHMARKS))
    if limit is not None:
        check_integer("limit", limit, 1)
    rows = [normalise_record(rec, row, str(path), f"{name}-{row}", first_of_answer_list=name == "olympiadbench")
            for row, rec in read_records(path)]
    return finish_benchmark(rows, path, limit)


def finish_benchmark(rows: list[dict], source: str | Path, limit: int | None) -> list[dict]:
    """The checks every benchmark loader ends with (math and OOD alike): at least one problem, unique
    problem ids (both rows named), then the first `limit` (checked by the caller before reading)."""
    if not rows:
        raise ValueError(f"{source}: no problems (the file has no rows)")
    seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        if row["problem_id"] in seen:
            raise ValueError(f"{source}: problem_id {row['problem_id']!r} appears twice (rows {seen[row['problem_id']] + 1} and {i + 1})")
        seen[row["problem_id"]] = i
    return rows[:limit] if limit is not None else rows
