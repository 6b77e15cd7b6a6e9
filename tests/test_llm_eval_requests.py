"""`fgrpo llm eval` request shape: vLLM gets one request per problem with n samples and a per-chunk seed, all
problems in one call (a fake `vllm` module records the calls; vLLM itself is not installed here); the
transformers backend stops on every end-of-sequence id of the generation config."""

from __future__ import annotations

import importlib.machinery
import json
import sys
import types
from pathlib import Path

import pytest
from extras import require

require("transformers")

from fgrpo_sim.llm.evaluation.evaluate import EvalSettings, run_eval  # noqa: E402

PROBLEMS = [{"problem_id": f"p{i}", "problem": f"What is {i}+{i}?", "answer": str(2 * i)} for i in range(3)]


class _FakeTokenizer:
    def apply_chat_template(self, messages, add_generation_prompt, tokenize):
        return " | ".join(m["content"] for m in messages) + " ->"


def _fake_vllm(calls: list):
    """A stand-in for the `vllm` package: records LLM(...) and generate(...) and answers with boxed numbers."""
    module = types.ModuleType("vllm")
    module.__spec__ = importlib.machinery.ModuleSpec("vllm", None)  # library probes call find_spec("vllm")

    class SamplingParams:
        def __init__(self, **kwargs):
            self.__dict__.update(kwargs)

    class LLM:
        def __init__(self, **kwargs):
            calls.append(("init", kwargs))

        def get_tokenizer(self):
            return _FakeTokenizer()

        def generate(self, prompts, params, use_tqdm=True):
            calls.append(("generate", list(prompts), params))
            outputs = []
            for prompt, p in zip(prompts, params, strict=True):
                number = int(prompt.split("What is ")[1].split("+")[0]) * 2
                samples = [types.SimpleNamespace(text=f"\\boxed{{{number if k % 2 == 0 else -1}}}",
                                                 token_ids=[7] * (k + 1), finish_reason="stop" if k else "length")
                           for k in range(p.n)]
                outputs.append(types.SimpleNamespace(outputs=samples))
            return outputs

    module.LLM, module.SamplingParams = LLM, SamplingParams
    return module


def _records(path: Path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_vllm_one_request_per_problem_all_at_once_with_fresh_seeds_on_resume(monkeypatch, tmp_path):
    calls: list = []
    monkeypatch.setitem(sys.modules, "vllm", _fake_vllm(calls))
    out = tmp_path / "eval.jsonl"
    settings = EvalSettings(model="some/model", data="d.jsonl", benchmark="generic", n=5, backend="vllm",
                            max_new_tokens=64, seed=3)
    summary = run_eval(settings, PROBLEMS, out, progress=False)
    assert calls[0] == ("init", {"model": "some/model", "seed": 3})
    generates = [c for c in calls if c[0] == "generate"]
    assert len(generates) == 1  # every problem in one call: the engine schedules
    _, prompts, params = generates[0]
    assert len(prompts) == 3 and [p.n for p in params] == [5, 5, 5]
    assert all(p.max_tokens == 64 and p.temperature == 1.0 and p.top_p == 1.0 for p in params)
    first_seeds = [p.seed for p in params]
    assert len(set(first_seeds)) == 3
    records = _records(out)
    assert sorted((r["problem_id"], r["sample_index"]) for r in records) == [
        (f"p{i}", k) for i in range(3) for k in range(5)]
    assert [r["correct"] for r in records if r["problem_id"] == "p1"] == [True, False, True, False, True]
    assert [r["finished"] for r in records if r["problem_id"] == "p1"] == [False, True, True, True, True]
    assert summary["samples"] == 15

    calls.clear()
    settings.n = 8  # resume with more samples: only the missing three per problem, with other seeds
    run_eval(settings, PROBLEMS, out, progress=False)
    _, _, params = [c for c in calls if c[0] == "generate"][0]
    assert [p.n for p in params] == [3, 3, 3]
    assert not set(p.seed for p in params) & set(first_seeds)
    keys = [(r["problem_id"], r["sample_index"]) for r in _records(out)]
    assert len(keys) == len(set(keys)) == 24

    calls.clear()
    settings.n, settings.problems_per_call = 9, 2  # resume points every two problems
    run_eval(settings, PROBLEMS, out, progress=False)
    assert [len(c[1]) for c in calls if c[0] == "generate"] == [2, 1]


def test_transformers_stops_on_every_eos_id_of_the_generation_config(tmp_path):
    from fgrpo_sim.llm.evaluation.evaluate import TransformersSampler, stop_token_ids
    from fgrpo_sim.llm.tiny import build_tiny

    model, tokenizer = build_tiny(seed=0)
    settings = EvalSettings(model="tiny", data="d.jsonl", benchmark="generic", n=4, max_new_tokens=8)
    plain = TransformersSampler(model, tokenizer, settings).sample([("1+1", 4, 0)])[0]
    assert any(n > 0 for _, n, _ in plain)  # a random model rarely says <eos> at once
    # Every token id an end of sequence (as Qwen lists <|im_end|> and <|endoftext|>): each sample stops at once.
    model.generation_config.eos_token_id = list(range(model.config.vocab_size))
    assert stop_token_ids(model, tokenizer)[:3] == [0, 1, 2]
    stopped = TransformersSampler(model, tokenizer, settings).sample([("1+1", 4, 0), ("2+2", 2, 1)])
    assert [len(rows) for rows in stopped] == [4, 2]
    assert all(n == 0 and finished for rows in stopped for _, n, finished in rows)
