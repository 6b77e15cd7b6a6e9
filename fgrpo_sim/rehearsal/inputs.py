"""The files `fgrpo llm rehearse` builds for itself: no hub, every file in the schema of the real source.

* `deepscaler.jsonl`: DeepScaleR's columns (problem, answer, solution) with what `prepare-data` must remove:
  over-long problems (length filter), a problem listed twice with conflicting answers (both copies dropped),
  one listed twice with equivalent answers (one copy kept) and a row without an answer. PREPARE_EXPECTED is
  the report `prepare-data` must print for it.
* `math500.jsonl` (HuggingFaceH4/MATH-500: problem, answer, unique_id), `gpqa_diamond.jsonl`
  (Idavidrein/gpqa's columns), `ifeval.jsonl` (google/IFEval's public schema: key, prompt,
  instruction_id_list, kwargs; one row with the hub's null-padded kwargs), `synlogic.jsonl` (MiniMaxAI/SynLogic:
  data_source, question, extra_info.game_data_str).
* `synlogic-standin/`: a stand-in for a clone of https://github.com/MiniMax-AI/SynLogic with the same
  layout (task2verifier.py, base/data.py, base/verifier.py, games/tasks/<task>/scripts/<task>_verifier.py),
  so the grader imports and calls it exactly as it calls the real checkout. Its one task checks an
  <answer> tag as the real verifiers do.

Problems are short (the tiny model has a character tokenizer and a 512-token context).
"""

from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path

from fgrpo_sim.atomic_io import write_text_atomic

#: prompts longer than this many tokens (chat template and the paper's system prompt included) are dropped
MAX_PROMPT_TOKENS = 96
#: what `fgrpo llm prepare-data` must report for deepscaler.jsonl (rows_read = kept + dropped)
PREPARE_EXPECTED = {"rows_read": 23, "kept": 16,
                    "dropped": {"bad row: has no answer": 1, "conflicting answers": 2, "duplicate": 1, "prompt too long": 3}}
SYNLOGIC_TASK = "parity"


def _jsonl(path: Path, rows: list[dict]) -> Path:
    write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def _sums(rng: random.Random, count: int, exclude: set[str]) -> list[tuple[str, str]]:
    """Single-digit sums: a random model's last digit is right often enough (~1 in 12) for GRPO to see
    groups with mixed rewards, so the runs move apart within a few steps."""
    out = []
    while len(out) < count:
        a = rng.randint(0, 9)
        b = rng.randint(0, 9 - a)
        problem = f"{a}+{b}="
        if problem not in exclude:
            exclude.add(problem)
            out.append((problem, str(a + b)))
    return out


def training_rows(seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    used = {"3+4=", "2+2="}
    rows = [{"problem": p, "answer": a, "solution": f"{p}{a}"} for p, a in _sums(rng, 15, used)]
    rows += [{"problem": "2+2=", "answer": "4", "solution": "2+2=4"},
             {"problem": " 2+2=\n", "answer": "4.0", "solution": "4"},  # same problem, equivalent answer: one kept
             {"problem": "3+4=", "answer": "7", "solution": "3+4=7"},
             {"problem": "3+4=", "answer": "8", "solution": "typo"},  # conflicting answers: both dropped
             {"problem": "9+9=", "answer": None, "solution": "no answer given"}]  # bad row
    long_text = "Add the two numbers that follow, then write the sum as digits and nothing else: "
    rows += [{"problem": f"{long_text}{a}+{b}=", "answer": str(a + b), "solution": ""} for a, b in ((1, 2), (3, 5), (4, 4))]
    rng.shuffle(rows)
    return rows


def math_rows() -> list[dict]:
    return [{"problem": p, "answer": a, "unique_id": f"test/arith/{i}.json"}
            for i, (p, a) in enumerate(_sums(random.Random(1), 6, set()))]


def gpqa_rows() -> list[dict]:
    questions = [("Which gas do plants take in?", "CO2", ["O2", "N2", "He"]),
                 ("How many legs has a spider?", "8", ["6", "4", "10"]),
                 ("What is H2O?", "water", ["salt", "iron", "air"]),
                 ("Which is a prime?", "7", ["8", "9", "10"])]
    return [{"Record ID": f"rec{i}", "Question": q, "Correct Answer": c, "Incorrect Answer 1": w[0],
             "Incorrect Answer 2": w[1], "Incorrect Answer 3": w[2]} for i, (q, c, w) in enumerate(questions)]


def ifeval_rows() -> list[dict]:
    # The hub's parquet pads each kwargs dict with every argument name set to null; the first row does that.
    padded = {"num_highlights": None, "relation": None, "num_words": None, "forbidden_words": None, "keywords": None}
    return [
        {"key": 1001, "prompt": "Say hi without commas.", "instruction_id_list": ["punctuation:no_comma"],
         "kwargs": [padded]},
        {"key": 1002, "prompt": "Reply in lowercase only.", "instruction_id_list": ["change_case:english_lowercase"],
         "kwargs": [{}]},
        {"key": 1003, "prompt": "Do not say zebra.", "instruction_id_list": ["keywords:forbidden_words"],
         "kwargs": [{"forbidden_words": ["zebra"]}]},
        {"key": 1004, "prompt": "Fewer than 9 words, no commas.",
         "instruction_id_list": ["length_constraints:number_words", "punctuation:no_comma"],
         "kwargs": [{"relation": "less than", "num_words": 9}, {}]},
    ]


def synlogic_rows() -> list[dict]:
    rows = []
    for i, number in enumerate((4, 7, 12, 15)):
        answer = "even" if number % 2 == 0 else "odd"
        game = {"question": f"Is {number} even or odd?", "answer": answer, "difficulty": 1,
                "metadata": {"number": number}}
        rows.append({"data_source": SYNLOGIC_TASK, "question": f"Is {number} even or odd? Answer in <answer></answer>.",
                     "extra_info": {"game_data_str": json.dumps(game)}, "problem_id": f"parity-{i}"})
    return rows


STANDIN_FILES = {
    "README.md": """
        Stand-in for a clone of https://github.com/MiniMax-AI/SynLogic, written by `fgrpo llm rehearse`:
        the same layout and entry points (task2verifier.verifier_classes, base.data.Data, base.verifier.Verifier),
        one task. Grade real SynLogic data with a real clone.
    """,
    "base/__init__.py": "",
    "base/data.py": """
        class Data:
            def __init__(self, question, answer, difficulty=1, metadata=None, **kwargs):
                self.question, self.answer, self.difficulty, self.metadata = question, answer, difficulty, metadata

            @classmethod
            def from_json_dict(cls, json_dict):
                return cls(**json_dict)
    """,
    "base/verifier.py": """
        import re


        class Verifier:
            def verify(self, data, test_answer):
                raise NotImplementedError

            def extract_answer(self, test_solution):
                text = test_solution.split("</think>")[-1]
                match = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL)
                return match.group(1).strip() if match else ""
    """,
    f"games/tasks/{SYNLOGIC_TASK}/scripts/{SYNLOGIC_TASK}_verifier.py": """
        from base.verifier import Verifier


        class ParityVerifier(Verifier):
            def verify(self, data, test_solution):
                return self.extract_answer(test_solution).lower() == data.answer
    """,
    "task2verifier.py": f"""
        import os
        import sys

        sys.path.append(os.path.dirname(os.path.abspath(__file__)))
        from games.tasks.{SYNLOGIC_TASK}.scripts.{SYNLOGIC_TASK}_verifier import ParityVerifier

        verifier_classes = {{"{SYNLOGIC_TASK}": ParityVerifier}}
    """,
}


def write_synlogic_standin(root: Path) -> list[Path]:
    written = []
    for rel, text in STANDIN_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, textwrap.dedent(text).lstrip())
        written.append(path)
    return written


def write_inputs(folder: Path) -> dict[str, Path]:
    """Write every input file under `folder`; name -> path (the stand-in checkout under "synlogic_repo")."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"deepscaler": _jsonl(folder / "deepscaler.jsonl", training_rows()),
             "math500": _jsonl(folder / "math500.jsonl", math_rows()),
             "gpqa_diamond": _jsonl(folder / "gpqa_diamond.jsonl", gpqa_rows()),
             "ifeval": _jsonl(folder / "ifeval.jsonl", ifeval_rows()),
             "synlogic": _jsonl(folder / "synlogic.jsonl", synlogic_rows())}
    write_synlogic_standin(folder / "synlogic-standin")
    paths["synlogic_repo"] = folder / "synlogic-standin"
    return paths
