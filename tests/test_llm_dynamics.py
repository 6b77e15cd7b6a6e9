"""In-training dynamics (paper App. P): the held-out pass@k callback and the llm-dynamics figure."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch
from extras import require

require("trl")

from fgrpo_sim.figures.llm_dynamics import compute, draw, ema, find_runs, read_dynamics_log  # noqa: E402
from fgrpo_sim.figures.registry import FigureOptions  # noqa: E402
from fgrpo_sim.llm.training.dynamics import (  # noqa: E402
    HeldOutPassAtK,
    default_ks,
    pass_at_k_record,
    transformers_count_correct,
)
from fgrpo_sim.llm.tiny import build_char_tokenizer  # noqa: E402

PROBLEMS = [{"problem_id": "a", "problem": "1+1=", "answer": "2"},
            {"problem_id": "b", "problem": "2+2=", "answer": "4"},
            {"problem_id": "c", "problem": "3+3=", "answer": "6"}]


class ScriptedModel:
    """Stands in for a causal LM in `generate`: answers 1+1= with 2 always, 2+2= with 4 then 5 alternately,
    3+3= with 7 always. So 4 samples per problem give 4, 2 and 0 correct."""

    def __init__(self, tokenizer):
        self.tokenizer, self.training, self.device, self.calls = tokenizer, True, torch.device("cpu"), {}

    def eval(self):
        self.training = False
        return self

    def train(self, mode=True):
        self.training = mode
        return self

    def generate(self, input_ids, attention_mask=None, max_new_tokens=8, **kwargs):
        rows = []
        for row in input_ids.tolist():
            prompt = self.tokenizer.decode([t for t in row if t != self.tokenizer.pad_token_id])
            seen = self.calls.get(prompt, 0)
            self.calls[prompt] = seen + 1
            answer = {"1+1=": "2", "2+2=": "4" if seen % 2 == 0 else "5", "3+3=": "7"}[prompt.strip().splitlines()[-1]]
            new = self.tokenizer.encode(f"so {answer}", add_special_tokens=False) + [self.tokenizer.eos_token_id]
            new = (new + [self.tokenizer.pad_token_id] * max_new_tokens)[:max_new_tokens]
            rows.append(row + new)
        return torch.tensor(rows)


def test_callback_logs_unbiased_pass_at_k_of_a_scripted_model(tmp_path):
    tokenizer = build_char_tokenizer()
    model = ScriptedModel(tokenizer)
    count = transformers_count_correct(max_new_tokens=8, system_prompt=None, fallback_last_number=True, batch_size=5)
    callback = HeldOutPassAtK(PROBLEMS, count, every=2, n=4, log_file=tmp_path / "dynamics.jsonl")
    state = SimpleNamespace(global_step=0, log_history=[], is_world_process_zero=True)
    callback.on_train_begin(None, state, None, model=model, processing_class=tokenizer)
    for step in (1, 2):
        state.global_step = step
        callback.on_step_end(None, state, None, model=model, processing_class=tokenizer)
    assert [r["step"] for r in state.log_history] == [0, 2]  # step 0 and every 2nd step
    record = state.log_history[0]
    # counts 4, 2, 0 of n = 4: pass@1 = (1 + 1/2 + 0)/3; pass@2 = (1 + (1 - C(2,2)/C(4,2)) + 0)/3; pass@4 = 2/3
    assert record["dynamics/pass@1"] == pytest.approx(0.5)
    assert record["dynamics/pass@2"] == pytest.approx((1 + 5 / 6) / 3)
    assert record["dynamics/pass@4"] == pytest.approx(2 / 3)
    assert model.training, "the callback gives the model back in training mode"
    lines = [json.loads(x) for x in (tmp_path / "dynamics.jsonl").read_text().splitlines()]
    assert lines == state.log_history


def test_pass_at_k_record_and_default_ks():
    assert default_ks(64) == [1, 2, 4, 8, 16, 32, 64] and default_ks(6) == [1, 2, 4, 6]
    rec = pass_at_k_record(8, [8, 0, 1], [1, 8])
    assert rec == pytest.approx({"dynamics/pass@1": (1 + 0 + 1 / 8) / 3, "dynamics/pass@8": 2 / 3})
    with pytest.raises(ValueError, match="c must be in"):
        pass_at_k_record(4, [5], [1])
    with pytest.raises(ValueError, match="k must be in"):
        HeldOutPassAtK(PROBLEMS, lambda *a: [0, 0, 0], n=4, ks=[8])


def test_callback_runs_inside_a_tiny_training(tmp_path):
    from test_llm_helpers import common_args, parity_reward, tiny_prompts

    from fgrpo_sim.llm.training.config import FocalGRPOConfig
    from fgrpo_sim.llm.tiny import build_tiny
    from fgrpo_sim.llm.training.trainer import FocalGRPOTrainer

    model, tokenizer = build_tiny(seed=0)
    config = FocalGRPOConfig(focal_gamma=0.5, **common_args(tmp_path, max_steps=2))
    trainer = FocalGRPOTrainer(model=model, reward_funcs=parity_reward, args=config, train_dataset=tiny_prompts(),
                               processing_class=tokenizer)
    seen_steps = []

    def count(m, tok, problems, n):  # scripted: problem i has i correct at every evaluation
        assert m is trainer.model and tok is tokenizer
        seen_steps.append(trainer.state.global_step)
        return [min(i, n) for i in range(len(problems))]

    trainer.add_callback(HeldOutPassAtK(PROBLEMS, count, every=1, n=2, log_file=tmp_path / "dynamics.jsonl"))
    trainer.train()
    records = [h for h in trainer.state.log_history if "dynamics/pass@1" in h]
    assert [r["step"] for r in records] == [0, 1, 2] == seen_steps
    assert records[-1]["dynamics/pass@1"] == pytest.approx((0 + 0.5 + 1) / 3)
    assert read_dynamics_log(tmp_path / "dynamics.jsonl")["steps"].tolist() == [0, 1, 2]


def test_dynamics_config_is_validated(tmp_path):
    from fgrpo_sim.llm.training.config import FocalGRPOConfig

    with pytest.raises(ValueError, match="dynamics_every"):
        FocalGRPOConfig(output_dir=str(tmp_path), dynamics_every=0, use_cpu=True)
    with pytest.raises(ValueError, match="dynamics_eval_data must be an existing"):
        FocalGRPOConfig(output_dir=str(tmp_path), dynamics_eval_data=str(tmp_path / "aime25.jsonl"), use_cpu=True)
    with pytest.raises(ValueError, match="dynamics_k"):
        FocalGRPOConfig(output_dir=str(tmp_path), dynamics_k=[128], use_cpu=True)


def test_figure_reads_both_log_formats_and_smooths_with_ema(tmp_path):
    assert ema([0.0, 1.0, 1.0]).tolist() == pytest.approx([0.0, 0.08, 0.08 + 0.92 * 0.08])
    run_a = tmp_path / "runs" / "grpo"
    run_a.mkdir(parents=True)
    (run_a / "dynamics.jsonl").write_text("".join(
        json.dumps({"step": s, "dynamics/pass@1": 0.01 * s, "dynamics/pass@64": 0.5}) + "\n" for s in (0, 25, 50)))
    ckpt = tmp_path / "runs" / "f-grpo" / "checkpoint-50"
    ckpt.mkdir(parents=True)
    history = [{"step": 1, "loss": 0.3}] + [{"step": s, "dynamics/pass@1": 0.2, "dynamics/pass@64": 0.6} for s in (0, 25, 50)]
    (ckpt / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    assert set(find_runs(tmp_path / "runs")) == {"grpo", "f-grpo"}
    data = compute(FigureOptions(data_dir=tmp_path / "runs"))
    assert data["grpo"]["pass"][1].tolist() == pytest.approx([0.0, 0.25, 0.5])
    assert data["f-grpo"]["steps"].tolist() == [0, 25, 50]
    fig = draw(data)
    assert [ax.get_title() for ax in fig.axes] == ["held-out pass@1", "held-out pass@64"]
    with pytest.raises(ValueError, match="no run logs"):
        compute(FigureOptions(data_dir=tmp_path / "empty"))
