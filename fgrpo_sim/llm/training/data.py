"""DeepScaleR as the paper trained on it: read, de-duplicate, filter by prompt length, write JSON lines; and
the prepared file back as a `datasets.Dataset` for TRL. Rows are read and normalised exactly as the
benchmark loaders read theirs (`fgrpo_sim.llm.evaluation.data`), into the same schema plus `prompt`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from fgrpo_sim.jsonl import dumps
from fgrpo_sim.llm.evaluation.data import normalise_record, read_records
from fgrpo_sim.llm.evaluation.prompts import MATH_INSTRUCTION as PAPER_SYSTEM_PROMPT
from fgrpo_sim.validation import check_integer


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
            from fgrpo_sim.packaged import did_you_mean

            raise FileNotFoundError(f"data file not found: {source}{did_you_mean(source)}")
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
