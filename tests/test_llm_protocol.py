"""The paper's training protocol (issue 15): every recipe resolves, the Table 3 controls train and are
what they claim (entropy gradient, KL at beta 0, DS-GRPO rewards), the focal weight stays single."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from extras import require

require("trl")

from test_llm_helpers import common_args, parity_reward, tiny_prompts  # noqa: E402

from fgrpo_sim.core import focal_weight, group_success_rate  # noqa: E402
from fgrpo_sim.llm.training.config import FocalGRPOConfig  # noqa: E402
from fgrpo_sim.llm.training.controls import (  # noqa: E402
    apply_differential_smoothing,
    differential_smoothing_rewards,
    ds_grpo_advantages,
    save_reference_for_kl,
)
from fgrpo_sim.llm.tiny import build_tiny  # noqa: E402
from fgrpo_sim.llm.training.trainer import FocalGRPOTrainer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RECIPES = sorted(p for p in (ROOT / "recipes").rglob("*.yaml")
                 if p.name != "base.yaml" and p.parent.name != "accelerate")


# ---------------------------------------------------------------- recipes and index

def test_every_recipe_resolves_with_dry_run(run_cli, tmp_path):
    assert len(RECIPES) >= 48  # 47 paper arms + the tiny smoke test
    # The recipes name data/deepscaler.jsonl, absent here: a small stand-in file takes its place.
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"problem": f"{i}+1=", "answer": str(i + 1)}) + "\n" for i in range(256)))
    for path in RECIPES:
        result = run_cli("llm", "train", "--config", path, "--dry-run", "--json", "--train_data", data)
        assert result.exit_code == 0, (path, result.stderr)
        resolved = json.loads(result.stdout)
        # the same config the trainer would build (data files need not exist for a dry run)
        config = FocalGRPOConfig(**resolved["config"])
        assert config.output_dir == resolved["config"]["output_dir"]


@pytest.fixture
def resolve(run_cli, tmp_path):
    """rel path -> (run keys, FocalGRPOConfig) exactly as `fgrpo llm train --dry-run` resolves the recipe."""
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"problem": f"{i}+1=", "answer": str(i + 1)}) + "\n" for i in range(256)))

    def _resolve(rel: str) -> tuple[dict, FocalGRPOConfig]:
        result = run_cli("llm", "train", "--config", ROOT / "recipes" / rel, "--dry-run", "--json", "--train_data", data)
        assert result.exit_code == 0, (rel, result.stderr)
        out = json.loads(result.stdout)
        return out["run"], FocalGRPOConfig(**out["config"])

    return _resolve


def test_control_recipes_carry_the_paper_values(resolve):
    from fgrpo_sim.theory import lr_multiplier

    _, low_lr = resolve("qwen2.5-7b/grpo-low-lr.yaml")
    assert low_lr.learning_rate == pytest.approx(round(1e-6 * float(lr_multiplier(0.5)), 8)) == 6.8e-7
    for tag, value in (("1e-3", 1e-3), ("1e-4", 1e-4)):
        _, cfg = resolve(f"qwen2.5-7b/grpo-entropy-{tag}.yaml")
        assert cfg.entropy_coef == value and cfg.beta == 0.0 and not cfg.use_adaptive_entropy
    for tag, value in (("1e-3", 1e-3), ("1e-2", 1e-2)):
        _, cfg = resolve(f"qwen2.5-7b/grpo-kl-{tag}.yaml")
        assert cfg.beta == value and cfg.entropy_coef == 0.0
    _, ds = resolve("qwen2.5-7b/ds-grpo.yaml")
    assert ds.ds_gamma_correct > 0 and ds.ds_gamma_incorrect == 0.0
    for name in ("grpo-low-lr", "grpo-entropy-1e-3", "grpo-kl-1e-3", "ds-grpo"):
        _, cfg = resolve(f"qwen2.5-7b/{name}.yaml")
        assert cfg.method == "grpo" and cfg.focal_gamma == 0.0 and cfg.num_generations == 8


@pytest.mark.parametrize("model, hub_id, picked", [
    ("qwen2.5-7b", "Qwen/Qwen2.5-7B", {"grpo": 0.5, "dapo": 0.5, "cispo": 1.0}),
    ("qwen3-4b-base", "Qwen/Qwen3-4B-Base", {"grpo": 0.5, "dapo": 0.5, "cispo": 0.5}),
    ("llama-3.2-3b-instruct", "meta-llama/Llama-3.2-3B-Instruct", {"grpo": 0.5, "dapo": 1.0, "cispo": 0.5}),
])
def test_gamma_sweep_and_models(resolve, model, hub_id, picked):
    from fgrpo_sim.llm.training.config import PAPER_SYSTEM_PROMPT

    sweep = {}
    for method in ("grpo", "dapo", "cispo"):
        run, base = resolve(f"{model}/{method}.yaml")
        assert run["model"] == hub_id and base.focal_gamma == 0.0 and base.method == method
        _, chosen = resolve(f"{model}/f-{method}.yaml")
        assert chosen.focal_gamma == picked[method]  # Table 7
        for path in (ROOT / "recipes" / model).glob(f"f-{method}*.yaml"):
            run, cfg = resolve(f"{model}/{path.name}")
            assert cfg.method == method and cfg.num_generations == 8
            sweep.setdefault(method, set()).add(cfg.focal_gamma)
            assert run["system_prompt"] == PAPER_SYSTEM_PROMPT
            if model == "llama-3.2-3b-instruct":  # one date, the one eval pins (not the template's "today")
                from fgrpo_sim.llm.evaluation.prompts import DEFAULT_LLAMA_DATE

                assert cfg.chat_template_kwargs == {"date_string": DEFAULT_LLAMA_DATE}
            if model == "qwen3-4b-base":  # thinking on, 4096-token responses (Tables 8, 9)
                assert cfg.chat_template_kwargs == {"enable_thinking": True}
                assert cfg.max_completion_length == 4096 and cfg.vllm_max_model_length == 1024 + 4096
            else:
                assert cfg.max_completion_length == 8192
    assert sweep == {m: {0.5, 1.0, 2.0} for m in ("grpo", "dapo", "cispo")}  # Table 6


@pytest.mark.parametrize("model", ["qwen2.5-7b", "qwen3-4b-base", "llama-3.2-3b-instruct"])
def test_paper_optimiser_values_live_in_the_recipes(resolve, model):
    """FocalGRPOConfig keeps TRL's defaults (issue 29): the recipes carry Table 5's optimiser values themselves."""
    for arm in ("grpo", "f-grpo", "cispo"):
        _, cfg = resolve(f"{model}/{arm}.yaml")
        assert (cfg.weight_decay, cfg.lr_scheduler_type, cfg.warmup_steps) == (0.01, "constant_with_warmup", 60)
        assert cfg.learning_rate == 1e-6 and cfg.max_grad_norm == 1.0 and cfg.beta == 0.0


def test_docs_name_the_recipes_ds_logprob():
    from fgrpo_sim.llm.training.recipe import load_recipe

    value = load_recipe(ROOT / "recipes" / "qwen2.5-7b" / "ds-grpo.yaml")["ds_logprob"]
    docs = " ".join((ROOT / "docs" / "recipes.md").read_text().split())  # lines wrap anywhere
    assert f"`ds_logprob: {value}` (the rule as written; what the recipes set" in docs
    assert value == "sum"


def test_recipe_index_lists_every_arm(run_cli, tmp_path):
    from fgrpo_sim.llm.training.recipe_index import classify, estimate_gpu_hours, recipe_index

    arms = recipe_index(ROOT / "recipes")
    assert {a.recipe.resolve() for a in arms} == {p.resolve() for p in RECIPES if "tiny" not in p.relative_to(ROOT / "recipes").parts}
    table3 = sorted(a.arm for a in arms if a.paper == "Table 3 / 11")
    assert table3 == ["ds-grpo", "grpo-entropy-1e-3", "grpo-kl-1e-3", "grpo-low-lr"]
    with pytest.raises(ValueError, match="matches no paper arm"):
        classify("qwen2.5-7b", "my-experiment")
    # the estimate is linear in the rollout count and counts the reference model's forward pass
    one = estimate_gpu_hours(7.6, 8, 8192)
    assert estimate_gpu_hours(7.6, 16, 8192)["gpu_h"] == pytest.approx(2 * one["gpu_h"])
    assert estimate_gpu_hours(7.6, 8, 8192, with_reference=True)["training_gpu_h"] == pytest.approx(
        one["training_gpu_h"] * 10 / 8)
    result = run_cli("llm", "recipes", "--root", ROOT / "recipes", "--json")
    rows = json.loads(result.stdout)
    assert result.exit_code == 0 and len(rows) == len(arms)
    assert all(r["command"].startswith("fgrpo llm train --config ") and r["est_gpu_h"] > 0 for r in rows)
    bad = run_cli("llm", "recipes", "--root", ROOT / "recipes", "--model", "gpt-5")
    assert bad.exit_code == 2 and bad.stderr.count("\n") == 1


# ---------------------------------------------------------------- DS-GRPO

def test_ds_rewards_equal_a_hand_computation():
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0])
    log_prob = torch.tensor([-2.0, -3.0, -10.0, -1.0])  # log pi(y|x) of each trajectory
    correct = rewards > 0.5
    # correct only (the F-GRPO paper's control): 1 + 0.1*2, 0, 1 + 0.1*10, 0
    out = differential_smoothing_rewards(rewards, log_prob, correct, 0.1)
    assert out.tolist() == pytest.approx([1.2, 0.0, 2.0, 0.0])
    # with gamma_n: incorrect trajectories get + 0.5 * log pi
    out = differential_smoothing_rewards(rewards, log_prob, correct, 0.1, 0.5)
    assert out.tolist() == pytest.approx([1.2, -1.5, 2.0, -0.5])
    adv = torch.tensor([1.0, -1.0, 1.0, -1.0])
    assert ds_grpo_advantages(adv, log_prob, correct, 0.1).tolist() == pytest.approx([1.2, -1.0, 2.0, -1.0])
    with pytest.raises(ValueError, match="ds_gamma_correct must be in"):
        differential_smoothing_rewards(rewards, log_prob, correct, -0.1)


def test_ds_hook_uses_sampling_log_probs_and_the_process_slice():
    # Two processes' worth of gathered rewards (2 groups of 2); this is process 1 -> rows 2, 3.
    gathered = torch.tensor([[1.0], [0.0], [0.0], [1.0]])
    output = {
        "advantages": torch.tensor([-0.7, 0.7]),
        "completion_mask": torch.tensor([[1, 1, 0], [1, 1, 1]]),
        "old_per_token_logps": torch.tensor([[-1.0, -2.0, -50.0], [-0.5, -0.5, -1.0]]),
    }
    metrics: dict = {}
    trainer = SimpleNamespace(
        args=SimpleNamespace(ds_gamma_correct=0.2, ds_gamma_incorrect=0.0, ds_logprob="sum", focal_reward_func=None,
                             reward_correct=1.0, reward_wrong=0.0,
                             focal_success_threshold=0.5),  # FocalGRPOConfig's default: the midpoint
        model=SimpleNamespace(training=True), reward_weights=torch.ones(1), reward_func_names=["math"],
        _focal_success_index=0,  # what FocalGRPOTrainer resolves at construction for its only reward function
        accelerator=SimpleNamespace(process_index=1), _metrics={"train": _DefaultList(metrics)},
    )
    out = apply_differential_smoothing(trainer, dict(output), gathered)
    # row 2 is wrong: unchanged; row 3 is correct: 0.7 - 0.2 * (-0.5 - 0.5 - 1.0) = 1.1 (masked token excluded)
    assert out["advantages"].tolist() == pytest.approx([-0.7, 1.1])
    trainer.args.ds_logprob = "mean"
    out = apply_differential_smoothing(trainer, dict(output), gathered)
    assert out["advantages"].tolist() == pytest.approx([-0.7, 0.7 + 0.2 * 2.0 / 3])
    trainer.args.ds_gamma_correct = 0.0
    assert apply_differential_smoothing(trainer, dict(output), gathered)["advantages"] is output["advantages"]


class _DefaultList(dict):
    def __init__(self, store):
        super().__init__()
        self.store = store

    def __missing__(self, key):
        self[key] = []
        return self[key]


# ---------------------------------------------------------------- each control trains, focal weight once

CONTROLS = {
    "low-lr": {"learning_rate": 6.8e-3},
    "entropy": {"entropy_coef": 1e-3},
    "kl": {"beta": 1e-3},
    "ds": {"ds_gamma_correct": 1e-2},
}


def _run(tmp_path, steps, **overrides):
    model, tokenizer = build_tiny(seed=0)
    config = FocalGRPOConfig(method="grpo", **common_args(tmp_path, max_steps=steps, **overrides))
    if config.beta != 0.0:
        save_reference_for_kl(model, tokenizer, tmp_path / "reference")
    trainer = FocalGRPOTrainer(model=model, reward_funcs=parity_reward, args=config, train_dataset=tiny_prompts(),
                               processing_class=tokenizer)
    seen = {"advantages": [], "rewards": []}
    gen, calc = trainer._generate_and_score_completions, trainer._calculate_rewards

    def generate_and_score(inputs):
        out = gen(inputs)
        seen["advantages"].append(out["advantages"].detach().clone())
        return out

    def calculate_rewards(*args):
        out = calc(*args)
        seen["rewards"].append(out.detach().clone())
        return out

    trainer._generate_and_score_completions, trainer._calculate_rewards = generate_and_score, calculate_rewards
    trainer.train()
    return trainer, seen


@pytest.mark.parametrize("control", sorted(CONTROLS))
def test_each_control_trains_and_applies_the_focal_weight_once(tmp_path, control):
    overrides = CONTROLS[control]
    plain, seen0 = _run(tmp_path / "g0", 2, focal_gamma=0.0, **overrides)
    logs = [h for h in plain.state.log_history if "loss" in h]
    assert len(logs) == 2 and all(math.isfinite(h["loss"]) for h in logs)
    if control == "entropy":
        assert logs[0]["entropy_coef"] == pytest.approx(1e-3)
    if control == "kl":
        assert "kl" in logs[0] and plain.ref_model is not None
    if control == "ds":
        assert "ds/advantage_shift_mean" in logs[0]
    focal, seen5 = _run(tmp_path / "g5", 1, focal_gamma=0.5, **overrides)
    # same seed, same first generation: the focal run's advantages are g * (the control's advantages), g once
    assert torch.equal(seen0["rewards"][0], seen5["rewards"][0])
    g = focal_weight(group_success_rate(seen5["rewards"][0][:, 0].view(-1, 4)), 0.5).repeat_interleave(4)
    assert torch.allclose(seen5["advantages"][0], g * seen0["advantages"][0], atol=1e-6)
    assert bool((g < 1).any())


def test_kl_at_beta_zero_is_grpo(tmp_path, resolve):
    kl0, _ = _run(tmp_path / "kl0", 1, beta=0.0, focal_gamma=0.5)
    grpo, _ = _run(tmp_path / "grpo", 1, focal_gamma=0.5)
    assert kl0.ref_model is None
    for (name, a), (_, b) in zip(kl0.model.named_parameters(), grpo.model.named_parameters()):
        assert torch.equal(a, b), name
    # the KL recipe with --beta 0 resolves to the plain GRPO config
    _, kl_cfg = resolve("qwen2.5-7b/grpo-kl-1e-3.yaml")
    _, grpo_cfg = resolve("qwen2.5-7b/grpo.yaml")
    kl_cfg.beta = 0.0
    for field in ("beta", "loss_type", "epsilon", "epsilon_high", "learning_rate", "entropy_coef", "focal_gamma"):
        assert getattr(kl_cfg, field) == getattr(grpo_cfg, field)


# ---------------------------------------------------------------- entropy bonus gradient

def _fixed_batch(tokenizer, advantages):
    torch.manual_seed(1)
    prompt = tokenizer(["3+4=", "5+1=", "2+2=", "9+0="], return_tensors="pt", add_special_tokens=False)
    completion_ids = torch.randint(3, 60, (4, 5))
    completion_mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 0, 0, 0, 0]])
    return {"prompt_ids": prompt["input_ids"], "prompt_mask": prompt["attention_mask"],
            "completion_ids": completion_ids, "completion_mask": completion_mask,
            "advantages": advantages, "num_items_in_batch": completion_mask.sum()}


def _loss_grad(trainer, inputs, coef):
    trainer.entropy_coef = coef
    trainer._entropy_bonus_enabled = coef != 0.0
    trainer.model.zero_grad()
    trainer._compute_loss(trainer.model, inputs).backward()
    return _flat_grad(trainer.model)


def _flat_grad(model):
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten().clone()
                      for p in model.parameters()])


def test_entropy_gradient_matches_float64_reference(tmp_path):
    coef = 1e-3
    model, tokenizer = build_tiny(seed=0)
    config = FocalGRPOConfig(method="grpo", focal_gamma=0.5, entropy_coef=coef, **common_args(tmp_path))
    trainer = FocalGRPOTrainer(model=model, reward_funcs=parity_reward, args=config, train_dataset=tiny_prompts(),
                               processing_class=tokenizer)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1

    # float64 reference: d/dtheta of -coef * mean per-token entropy of the completion positions
    ref = build_tiny(seed=0)[0].double()  # the same initial weights, outside TRL
    for (name, a), (_, b) in zip(ref.named_parameters(), trainer.model.named_parameters()):
        assert torch.equal(a, b.double()), name
    batch = _fixed_batch(tokenizer, torch.zeros(4))
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    attn = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    logits = ref(input_ids=ids, attention_mask=attn).logits[:, batch["prompt_ids"].shape[1] - 1 : -1]
    logp = torch.log_softmax(logits / config.temperature, dim=-1)
    entropy = -(logp.exp() * logp).sum(-1)
    mask = batch["completion_mask"].double()
    (-coef * (entropy * mask).sum() / mask.sum()).backward()
    expected = _flat_grad(ref)

    # zero advantages: the policy term has no gradient, the whole gradient is the entropy bonus
    got = _loss_grad(trainer, batch, coef)
    assert torch.allclose(got.double(), expected, rtol=1e-4, atol=1e-9)
    assert expected.abs().max() > 1e-6
    # with focal-weighted advantages (g = 1 and g = 0.5^0.5) the bonus adds the same gradient: it composes
    # with g * A. A larger coefficient keeps float32 cancellation in the difference of two gradients small.
    big = 0.5
    advantages = torch.tensor([1.0, -1.0, 0.5, -0.5])
    for scale in (1.0, 0.5 ** 0.5):
        inputs = _fixed_batch(tokenizer, scale * advantages)
        bonus = _loss_grad(trainer, inputs, big) - _loss_grad(trainer, inputs, 0.0)
        assert torch.allclose(bonus.double(), expected * (big / coef), rtol=1e-3, atol=1e-7)


def test_recipes_root_option_prints_the_packaged_table(run_cli):
    """docs/recipes.md's table is a generated region (tests/test_doc_numbers.py compares it with the command's
    output); `--root` on the repository's recipes/ folder lists the same arms as the packaged default."""
    packaged = run_cli("llm", "recipes", "--markdown")
    rooted = run_cli("llm", "recipes", "--root", ROOT / "recipes", "--markdown")
    assert packaged.exit_code == rooted.exit_code == 0
    assert rooted.stdout == packaged.stdout and "| `qwen2.5-7b/grpo.yaml` |" in packaged.stdout


def test_listing_recipes_needs_no_trl(tmp_path):
    """`fgrpo llm recipes` reads YAML files: it runs with TRL (and transformers) unimportable (issue 46), and its
    own types for the keys it casts agree with FocalGRPOConfig's."""
    import subprocess
    import sys
    import typing

    from fgrpo_sim.llm.training.config import FocalGRPOConfig
    from fgrpo_sim.llm.training.recipe import _scalar_kinds
    from fgrpo_sim.llm.training.recipe_index import INDEX_TYPES

    hints = typing.get_type_hints(FocalGRPOConfig)
    for name, hint in INDEX_TYPES.items():
        assert _scalar_kinds(hint) == _scalar_kinds(hints[name]), name
    script = ("import sys\nfor m in ('trl', 'transformers', 'accelerate', 'datasets'): sys.modules[m] = None\n"
              "from fgrpo_sim.cli import main\nmain(['llm', 'recipes', '--json'])\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert len(rows) == len(recipe_index_rows()) and all(r["est_gpu_h"] > 0 for r in rows)


def recipe_index_rows():
    from fgrpo_sim.llm.training.recipe_index import recipe_index

    return recipe_index(ROOT / "recipes")
