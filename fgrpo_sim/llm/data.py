"""Training and evaluation data: DeepScaleR preparation and benchmark loaders with one schema.

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
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from fgrpo_sim.jsonl import dumps
from fgrpo_sim.llm.config import PAPER_SYSTEM_PROMPT
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
        raise FileNotFoundError(f"data file not found: {path}")
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


def build_prompt(problem: str, system_prompt: str | None = PAPER_SYSTEM_PROMPT) -> list[dict[str, str]]:
    """Conversational prompt (TRL applies the tokenizer's chat template): system prompt, then the problem."""
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return messages + [{"role": "user", "content": problem}]


def prompt_token_count(tokenizer, messages: list[dict[str, str]]) -> int:
    """Tokens of the prompt as the model sees it (chat template with generation prompt, when there is one)."""
    if getattr(tokenizer, "chat_template", None):
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return len(ids)
    return len(tokenizer("\n".join(m["content"] for m in messages))["input_ids"])


def _normalise_problem_text(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _bad_row_reason(message: str) -> str:
    """The reason of a normalise_record error without file and row ("has no answer", ...), for counting."""
    reason = re.sub(r"^.*?\brow \d+\s*", "", message)
    return reason.split(" (")[0].strip() or "bad row"


def answers_equivalent(first: str, second: str, verifier=None) -> bool:
    """True when two reference answers agree: equal up to whitespace, or math-verify equivalent both ways
    ("\\frac{1}{2}", "1/2" and "0.5" agree). A check that times out or fails counts as disagreement."""
    if re.sub(r"\s+", "", first) == re.sub(r"\s+", "", second):
        return True
    from fgrpo_sim.llm.rewards import MathVerifier

    verifier = verifier if verifier is not None else MathVerifier()
    return all(verifier.score("\\boxed{" + b + "}", a).correct for a, b in ((first, second), (second, first)))


@dataclass
class PrepareReport:
    """What `prepare_deepscaler` kept and dropped, with the row numbers of bad rows.

    `dropped` counts the rows removed by reason: "bad row: <reason>" (no problem, no answer, ...),
    "conflicting answers" (every copy of a problem whose copies' answers are not math-equivalent),
    "duplicate" (extra copies of a problem with agreeing answers; one copy is kept) and
    "prompt too long". rows_read = kept + sum(dropped).
    """

    rows_read: int = 0
    kept: int = 0
    bad_rows: list[str] = field(default_factory=list)
    too_long: int = 0
    duplicates_merged: int = 0
    conflicting_dropped: int = 0
    dropped: dict[str, int] = field(default_factory=dict)

    def drop(self, reason: str, count: int = 1) -> None:
        if count:
            self.dropped[reason] = self.dropped.get(reason, 0) + count

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows_read": self.rows_read, "kept": self.kept, "dropped": dict(sorted(self.dropped.items())),
            "bad_rows": len(self.bad_rows), "bad_row_messages": self.bad_rows[:20], "too_long": self.too_long,
            "duplicates_merged": self.duplicates_merged, "conflicting_dropped": self.conflicting_dropped,
        }


def prepare_deepscaler(
    source: str | Path,
    tokenizer=None,
    *,
    max_prompt_tokens: int = 1024,
    system_prompt: str | None = PAPER_SYSTEM_PROMPT,
    split: str = "train",
) -> tuple[list[dict[str, Any]], PrepareReport]:
    """DeepScaleR as the paper used it: (rows, report).

    `source` is a local JSON/JSONL/parquet file (a `.json` file may hold a JSON list or JSON lines) or,
    when online, a hub dataset id (e.g. "agentica-org/DeepScaleR-Preview-Dataset"). Steps: drop rows
    without problem/answer (reported with row numbers); group identical problems
    (whitespace/case-insensitive): keep one copy when all answers are math-equivalent (see
    `answers_equivalent`), drop all copies when they conflict; prepend the system prompt; with a
    tokenizer, drop prompts longer than `max_prompt_tokens` tokens. Each row: problem_id, problem,
    answer, and `prompt` (system + user messages) for TRL. The report counts each reason for a drop.
    """
    check_integer("max_prompt_tokens", max_prompt_tokens, 1)
    report = PrepareReport()
    if Path(source).exists():
        records = read_records(source)
    else:
        if str(source).endswith((".json", ".jsonl", ".parquet")):
            raise FileNotFoundError(f"data file not found: {source}")
        from datasets import load_dataset

        from fgrpo_sim.llm.hub import require_loadable

        require_loadable(source, "dataset")
        records = list(enumerate(load_dataset(str(source), split=split), start=1))
    report.rows_read = len(records)
    by_problem: dict[str, list[dict[str, str]]] = {}
    for row, record in records:
        try:
            item = normalise_record(record, row, str(source), f"deepscaler-{row}")
        except ValueError as exc:
            report.bad_rows.append(str(exc))
            report.drop("bad row: " + _bad_row_reason(str(exc)))
            continue
        by_problem.setdefault(_normalise_problem_text(item["problem"]), []).append(item)
    verifier = None
    rows = []
    for copies in by_problem.values():
        if len(copies) > 1:
            if verifier is None:
                from fgrpo_sim.llm.rewards import MathVerifier

                verifier = MathVerifier()
            if not all(answers_equivalent(copies[0]["answer"], c["answer"], verifier) for c in copies[1:]):
                report.conflicting_dropped += len(copies)
                report.drop("conflicting answers", len(copies))
                continue
        report.duplicates_merged += len(copies) - 1
        report.drop("duplicate", len(copies) - 1)
        item = dict(copies[0])
        item["prompt"] = build_prompt(item["problem"], system_prompt)
        if tokenizer is not None and prompt_token_count(tokenizer, item["prompt"]) > max_prompt_tokens:
            report.too_long += 1
            report.drop("prompt too long")
            continue
        rows.append(item)
    report.kept = len(rows)
    return rows, report


def write_jsonl(rows: Iterable[dict[str, Any]], path: str | Path) -> Path:
    """Write rows as JSON lines, atomically."""
    from fgrpo_sim.atomic_io import atomic_path

    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(dumps(row, ensure_ascii=False) + "\n")
    return Path(path)


def load_prepared(path: str | Path, system_prompt: str | None = PAPER_SYSTEM_PROMPT):
    """A `datasets.Dataset` for TRL from a prepared JSONL (or any benchmark-schema file): prompt + answer.

    Every prompt is built here from the row's problem and `system_prompt` (the recipe's, or the
    `--system_prompt` override; None = no system message), so the prompt the run asks for is the one
    it trains on, whatever system prompt `prepare-data` stored in the file. When they differ, a
    warning says so (the file's length filter counted the stored prompt).
    """
    import warnings

    from datasets import Dataset

    rows, stored_prompts = [], set()
    for row, record in read_records(path):
        item = normalise_record(record, row, str(path), f"row-{row}")
        stored = record.get("prompt")
        if isinstance(stored, list):
            stored_prompts.add(_system_message(stored))
        rows.append({"prompt": build_prompt(item["problem"], system_prompt), "answer": item["answer"],
                     "problem_id": item["problem_id"]})
    if not rows:
        raise ValueError(f"{path}: no rows")
    wanted = system_prompt or None
    if stored_prompts and stored_prompts != {wanted}:
        warnings.warn(f"{path} was prepared with another system prompt; using the run's system_prompt "
                      f"{wanted!r} (re-run `fgrpo llm prepare-data` with it to redo the length filter)", stacklevel=2)
    return Dataset.from_list(rows)


def _system_message(messages: list[Any]) -> str | None:
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "system":
            return message.get("content") or None
    return None
