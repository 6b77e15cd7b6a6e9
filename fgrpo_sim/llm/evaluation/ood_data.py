"""Loaders for the paper's out-of-domain benchmarks: GPQA-Diamond, IFEval, SynLogic.

Each returns one dict per problem with the math loaders' keys (problem_id, problem, answer) plus what
its grader needs. Sources: a local .json/.jsonl/.parquet file (read by `fgrpo_sim.llm.evaluation.data.read_records`)
or, when online, a hub dataset id (`HUB_SOURCES`). `load_any_benchmark` picks the loader by name and
leaves the six math loaders (`fgrpo_sim.llm.evaluation.data.load_benchmark`) unchanged.

Input schemas (first key present wins):

* gpqa_diamond (Idavidrein/gpqa, config gpqa_diamond): "Question", "Correct Answer", "Incorrect Answer 1",
  "Incorrect Answer 2", "Incorrect Answer 3", id "Record ID"; or the short form question / correct_answer /
  incorrect_answers (list of 3) / problem_id.
  Output adds: choices (the 4 options in shown order), answer (the correct letter A-D), choice_order
  (choice_order[i] = index of shown option i in [correct, incorrect 1, 2, 3]), shuffle_seed.
  The order is a fixed permutation seeded by crc32("gpqa_diamond/" + problem_id): stable across runs and
  machines, and recorded in every eval line.
* ifeval (google/IFEval): key, prompt, instruction_id_list, kwargs (list of dicts, one per instruction;
  the hub copy lists every field with None for the unused ones). Output: problem = prompt, answer = ""
  (no reference answer), instruction_id_list, kwargs (None fields dropped).
* synlogic (MiniMaxAI/SynLogic): a task name under "task" or "data_source"; the SynLogic `Data` object as a
  dict under "game_data", or as a JSON string under "game_data_str" or extra_info.game_data_str
  ({question, answer, difficulty, metadata}); the prompt under "question"/"prompt" (a list of chat messages
  is reduced to its last user turn), else the Data object's question.
  Output: problem, answer (the Data answer, as text), task, game_data.
"""

from __future__ import annotations

import random
import re
import zlib
from pathlib import Path
from typing import Any

from fgrpo_sim.llm.evaluation.data import finish_benchmark, load_benchmark, read_records
from fgrpo_sim.llm.evaluation.prompts import GPQA_LETTERS, OOD_ALIASES, OOD_BENCHMARKS, canonical_benchmark
from fgrpo_sim.validation import check_integer

OOD_NAMES = tuple(OOD_BENCHMARKS)  # prompts.py holds the one list of OOD benchmarks
#: Hub datasets tried when --data is not a local file (online only): (dataset id, config, split).
HUB_SOURCES = {
    "gpqa_diamond": ("Idavidrein/gpqa", "gpqa_diamond", "train"),
    "ifeval": ("google/IFEval", None, "train"),
    "synlogic": ("MiniMaxAI/SynLogic", "synlogic_easy", "validation"),
}
LETTERS = GPQA_LETTERS
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def _rows(name: str, source: str | Path) -> list[tuple[int, dict[str, Any]]]:
    path = Path(source)
    if not path.exists() and _HUB_ID.match(str(source)):
        from datasets import load_dataset

        from fgrpo_sim.llm.hub import require_loadable

        require_loadable(str(source), "dataset")  # offline: one line now, not a minute of retries

        hub_id, config, split = HUB_SOURCES[name]
        dataset = load_dataset(str(source), config if str(source) == hub_id else None, split=split)
        return list(enumerate((dict(r) for r in dataset), start=1))
    return read_records(path)


def _pick(record: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        value = record.get(key)
        if value is not None and (not isinstance(value, str) or value.strip()):
            return value
    return None


def shuffle_seed(problem_id: str) -> int:
    """The per-problem seed of the GPQA option order (stable: derived from the id only)."""
    return zlib.crc32(f"gpqa_diamond/{problem_id}".encode())


def gpqa_record(raw: dict[str, Any], row: int, source: str) -> dict[str, Any]:
    """One GPQA row -> problem text with lettered options, the correct letter and the recorded order."""
    question = _pick(raw, "Question", "question", "problem")
    correct = _pick(raw, "Correct Answer", "correct_answer")
    wrong = raw.get("incorrect_answers") or [raw.get(f"Incorrect Answer {i}") for i in (1, 2, 3)]
    if question is None or correct is None:
        raise ValueError(f"{source}: row {row} needs Question and Correct Answer (or question, correct_answer)")
    if not isinstance(wrong, list) or len(wrong) != 3 or any(w is None or not str(w).strip() for w in wrong):
        raise ValueError(f"{source}: row {row} needs exactly 3 incorrect answers")
    problem_id = str(_pick(raw, "problem_id", "Record ID", "id") or f"gpqa_diamond-{row}")
    options = [str(correct).strip()] + [str(w).strip() for w in wrong]
    seed = shuffle_seed(problem_id)
    order = list(range(4))
    random.Random(seed).shuffle(order)
    choices = [options[i] for i in order]
    letter = LETTERS[order.index(0)]
    text = str(question).strip() + "\n\n" + "\n".join(f"{LETTERS[i]}) {c}" for i, c in enumerate(choices))
    return {"problem_id": problem_id, "problem": text, "answer": letter, "choices": choices,
            "choice_order": order, "shuffle_seed": seed}


def ifeval_record(raw: dict[str, Any], row: int, source: str) -> dict[str, Any]:
    """One IFEval row, checked as the grader reads it (`grading.ifeval_instructions`): every instruction id
    known to the checker (none silently skipped), one kwargs dict per instruction."""
    from fgrpo_sim.llm.evaluation.grading import ifeval_instructions

    try:
        prompt, ids, kwargs = ifeval_instructions(raw)
    except ValueError as error:
        raise ValueError(f"{source}: row {row}: {error}") from None
    if not prompt.strip():
        raise ValueError(f"{source}: row {row}: ifeval record field 'prompt' is empty")
    return {"problem_id": str(_pick(raw, "key", "problem_id", "id") or f"ifeval-{row}"), "problem": prompt,
            "answer": "", "instruction_id_list": ids, "kwargs": kwargs}


def synlogic_record(raw: dict[str, Any], row: int, source: str) -> dict[str, Any]:
    """One SynLogic row -> task name and the SynLogic Data object (as a dict) its verifier needs."""
    task = _pick(raw, "task", "data_source")
    game = raw.get("game_data")
    text = _pick(raw, "game_data_str") or (raw.get("extra_info") or {}).get("game_data_str")
    if game is None and text is not None:
        from fgrpo_sim.jsonl import loads

        game = loads(text, f"{source}: row {row}: game_data_str")
    if task is None or not isinstance(game, dict) or "answer" not in game:
        raise ValueError(f"{source}: row {row} needs task (or data_source) and game_data with an answer "
                         "(or game_data_str / extra_info.game_data_str)")
    prompt = _pick(raw, "question", "prompt", "problem")
    if isinstance(prompt, list):  # verl-style chat messages
        users = [m.get("content") for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        prompt = users[-1] if users else None
    prompt = prompt if prompt is not None else game.get("question")
    if prompt is None:
        raise ValueError(f"{source}: row {row} has no question or prompt")
    return {"problem_id": str(_pick(raw, "problem_id", "id") or f"synlogic-{row}"), "problem": str(prompt),
            "answer": str(game["answer"]), "task": str(task), "game_data": game}


_BUILDERS = {"gpqa_diamond": gpqa_record, "ifeval": ifeval_record, "synlogic": synlogic_record}


def load_ood_benchmark(name: str, source: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Problems of an OOD benchmark (see the module docstring for schemas); duplicate ids are an error.
    `name` in any spelling `canonical_benchmark` knows (GPQA-Diamond, gpqa, IFEval, SynLogic)."""
    canonical = canonical_benchmark(name)
    if canonical not in _BUILDERS:
        raise ValueError(f"benchmark must be one of {', '.join(OOD_NAMES)} (any case; also "
                         f"{', '.join(OOD_ALIASES)}), got {name!r}")
    name = canonical
    if limit is not None:
        check_integer("limit", limit, 1)
    rows = [_BUILDERS[name](raw if isinstance(raw, dict) else {}, row, str(source)) for row, raw in _rows(name, source)]
    return finish_benchmark(rows, source, limit)


def load_any_benchmark(name: str, source: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    """OOD benchmarks through `load_ood_benchmark`, everything else through the math `load_benchmark`."""
    name = canonical_benchmark(name)  # any case / '-' / alias; an unknown name is a ValueError listing them
    if name in OOD_NAMES:
        return load_ood_benchmark(name, source, limit)
    return load_benchmark(name, source, limit=limit)
