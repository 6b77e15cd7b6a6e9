"""Paper Tables 8/9 prompts per model family, and `fgrpo llm eval` end to end on an OOD file (tiny model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from extras import require

from fgrpo_sim.llm.evaluation.prompts import (MATH_INSTRUCTION, QWEN25_GENERAL_SYSTEM, build_messages, detect_family,
                                   prompt_spec, render_text)

GPQA_FILE = Path(__file__).resolve().parent / "data" / "gpqa_diamond_tiny.jsonl"

#: (family, benchmark) -> (system prompt, chat-template keywords, max new tokens): paper Tables 8 and 9.
TABLE9 = {
    ("qwen2.5", "math500"): (MATH_INSTRUCTION, {}, 8192),
    ("qwen2.5", "gpqa_diamond"): (MATH_INSTRUCTION, {}, 8192),
    ("qwen2.5", "ifeval"): (QWEN25_GENERAL_SYSTEM, {}, 8192),
    ("qwen2.5", "synlogic"): (QWEN25_GENERAL_SYSTEM, {}, 8192),
    ("qwen3-base", "aime24"): (MATH_INSTRUCTION, {"enable_thinking": True}, 4096),
    ("qwen3-base", "gpqa_diamond"): (MATH_INSTRUCTION, {"enable_thinking": True}, 4096),
    ("qwen3-base", "ifeval"): (None, {"enable_thinking": False}, 4096),
    ("qwen3-base", "synlogic"): (None, {"enable_thinking": True}, 4096),
    ("llama-3.2-instruct", "minerva"): (MATH_INSTRUCTION, {"date_string": "26 Jul 2024"}, 8192),
    ("llama-3.2-instruct", "ifeval"): (None, {"date_string": "26 Jul 2024"}, 8192),
    ("llama-3.2-instruct", "synlogic"): (None, {"date_string": "26 Jul 2024"}, 8192),
}


@pytest.mark.parametrize("family, bench_name", list(TABLE9))  # not `benchmark`: pytest-benchmark owns it
def test_prompt_spec_matches_tables_8_and_9(family, bench_name):
    spec = prompt_spec(family, bench_name)
    assert (spec.system_prompt, spec.chat_template_kwargs, spec.max_new_tokens) == TABLE9[(family, bench_name)]
    assert (spec.temperature, spec.top_p, spec.top_k) == (1.0, 1.0, None)


def test_family_detection_from_config_and_name(tmp_path):
    def folder(name, model_type, name_or_path):
        path = tmp_path / name
        path.mkdir()
        (path / "config.json").write_text(json.dumps({"model_type": model_type, "_name_or_path": name_or_path}))
        return str(path)

    assert detect_family(folder("a", "qwen2", "Qwen/Qwen2.5-7B")) == "qwen2.5"
    assert detect_family(folder("ckpt-epoch3", "qwen3", "")) == "qwen3-base"
    assert detect_family(folder("b", "llama", "meta-llama/Llama-3.2-3B-Instruct")) == "llama-3.2-instruct"
    assert detect_family(folder("c", "qwen2", "")) == "generic"  # e.g. the tiny test model
    assert detect_family("Qwen/Qwen3-4B-Base") == "qwen3-base"
    assert detect_family("tiny") == "generic"
    with pytest.raises(ValueError, match="model_family must be one of"):
        prompt_spec("gpt", "math500")


def test_chat_template_receives_thinking_and_date():
    from fgrpo_sim.llm.tiny import build_char_tokenizer

    tokenizer = build_char_tokenizer()
    tokenizer.chat_template = ("{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}"
                               "|think={{ enable_thinking }}|date={{ date_string }}")
    spec = prompt_spec("qwen3-base", "ifeval")
    text = render_text(tokenizer, "Q", spec.system_prompt, spec.chat_template_kwargs)
    assert text == "[user]Q|think=False|date="
    spec = prompt_spec("llama-3.2-instruct", "math500")
    assert render_text(tokenizer, "Q", spec.system_prompt, spec.chat_template_kwargs) == \
        f"[system]{MATH_INSTRUCTION}[user]Q|think=|date=26 Jul 2024"
    tokenizer.chat_template = None  # no template: the dated header is written by us
    assert render_text(tokenizer, "Q", None, {"date_string": "1 Jan 2025"}) == \
        "Cutting Knowledge Date: December 2023\nToday Date: 1 Jan 2025\nQ\n"
    assert build_messages("Q", None) == [{"role": "user", "content": "Q"}]


def test_tiny_model_evaluates_gpqa_end_to_end(run_cli, tmp_path):
    require("trl")
    from fgrpo_sim.llm.training.config import PAPER_SYSTEM_PROMPT
    from fgrpo_sim.llm.tiny import build_tiny, save_tiny

    assert MATH_INSTRUCTION == PAPER_SYSTEM_PROMPT  # Table 9's math prompt is the training prompt

    model_dir = save_tiny(*build_tiny(seed=0), tmp_path / "model")
    out = tmp_path / "gpqa.jsonl"
    result = run_cli("llm", "eval", "--model", model_dir, "--data", GPQA_FILE, "--benchmark", "gpqa_diamond",
                     "--out", out, "--samples", "2", "--max-new-tokens", "4", "--batch-size", "8", "--no-progress",
                     "--model-family", "qwen3-base", "--json")
    assert result.exit_code == 0, result.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 6 and {r["problem_id"] for r in records} == {"tiny-1", "tiny-2", "tiny-3"}
    for r in records:
        assert sorted(r["choice_order"]) == [0, 1, 2, 3] and r["gold"] in "ABCD"
        assert r["correct"] == (r["extracted"] == r["gold"]) and r["status"] in ("correct", "wrong", "no_answer")
    meta = json.loads(out.with_name(out.name + ".meta.json").read_text())
    assert meta["model_family"] == "qwen3-base" and meta["chat_template_kwargs"] == {"enable_thinking": True}
    assert meta["system_prompt"] == MATH_INSTRUCTION and meta["benchmark"] == "gpqa_diamond"
    summary = json.loads(result.stdout)
    assert summary["problems"] == 3 and summary["samples"] == 6


def test_eval_synlogic_without_checkout_is_one_line(run_cli, tmp_path, monkeypatch):
    monkeypatch.delenv("SYNLOGIC_REPO", raising=False)
    data = tmp_path / "s.jsonl"
    data.write_text(json.dumps({"task": "sudoku", "question": "q", "game_data": {"question": "q", "answer": "1"}}) + "\n")
    result = run_cli("llm", "eval", "--model", "tiny", "--data", data, "--benchmark", "synlogic",
                     "--out", tmp_path / "o.jsonl", "--no-progress")
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0 and "git clone https://github.com/MiniMax-AI/SynLogic" in result.stderr
    assert not (tmp_path / "o.jsonl").exists()
