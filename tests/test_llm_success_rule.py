"""Which reward defines success for mu_hat (issue #10): extra reward functions, +-1 rewards, partial credit,
None rewards; gamma = 0 equals stock TRL on every one of them; bad rules fail before or on the first batch."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from extras import require

require("trl")

from test_llm_helpers import common_args, loss_advantages_in_generation_order, record_calls, tiny_prompts  # noqa: E402

from fgrpo_sim.core.focal_metrics import focal_metrics as core_focal_metrics  # noqa: E402
from fgrpo_sim.llm.training.config import FocalGRPOConfig  # noqa: E402
from fgrpo_sim.llm.tiny import build_tiny  # noqa: E402
from fgrpo_sim.llm.training.trainer import FocalGRPOTrainer, mean_tail_miss  # noqa: E402


def _named(name, fn):
    fn.__name__ = name
    return fn


def _code(c: str) -> int:
    return ord(c[0]) if c else 0


# The tiny random model's first character decides every reward: deterministic, and groups come out mixed.
PARITY = _named("math", lambda completions, **kw: [float(_code(c) % 2 == 0) for c in completions])
FORMAT_BONUS = _named("format", lambda completions, **kw: [0.5 if _code(c) % 3 == 0 else 0.0 for c in completions])
PLUS_MINUS = _named("math", lambda completions, **kw: [1.0 if _code(c) % 2 == 0 else -1.0 for c in completions])
PARTIAL = _named("graded", lambda completions, **kw: [(_code(c) % 4) / 3 for c in completions])
SOMETIMES_NONE = _named("math", lambda completions, **kw: [None if _code(c) % 3 == 0 else float(_code(c) % 2 == 0)
                                                             for c in completions])

# name: (reward functions, FocalGRPOConfig fields, success rule computed here from one completion's text)
CASES = {
    "math+format": ([PARITY, FORMAT_BONUS], {}, lambda c: _code(c) % 2 == 0),
    "plus-minus-one": ([PLUS_MINUS], {"reward_wrong": -1.0}, lambda c: _code(c) % 2 == 0),
    "partial-credit": ([PARTIAL], {"focal_success_threshold": 0.6}, lambda c: (_code(c) % 4) / 3 >= 0.6),
    "none-rewards": ([SOMETIMES_NONE], {}, lambda c: _code(c) % 3 != 0 and _code(c) % 2 == 0),
}


def _train(trainer_cls, funcs, config):
    model, tokenizer = build_tiny(seed=0)
    trainer = trainer_cls(model=model, reward_funcs=funcs, args=config, train_dataset=tiny_prompts(),
                          processing_class=tokenizer)
    seen = record_calls(trainer)
    trainer.train()
    return trainer, seen


def _stock(tmp_path, focal: FocalGRPOConfig):
    from trl import GRPOConfig, GRPOTrainer

    stock = GRPOConfig(loss_type=focal.loss_type, epsilon=focal.epsilon, epsilon_high=focal.epsilon_high,
                       weight_decay=focal.weight_decay, lr_scheduler_type=focal.lr_scheduler_type,
                       **common_args(tmp_path / "stock"))
    return stock, GRPOTrainer


@pytest.mark.parametrize("case", list(CASES))
def test_gamma_zero_is_stock_trl_and_gamma_half_weights_by_the_success_rule(tmp_path, case):
    funcs, fields, succeeds = CASES[case]
    focal0 = FocalGRPOConfig(focal_gamma=0.0, **fields, **common_args(tmp_path / "g0"))
    stock_config, stock_cls = _stock(tmp_path, focal0)
    _, stock = _train(stock_cls, funcs, stock_config)
    trainer0, seen0 = _train(FocalGRPOTrainer, funcs, focal0)
    # gamma = 0: bit for bit stock TRL, whatever the rewards (sums above 1, -1, 1/3, None)
    assert seen0["completions"] == stock["completions"]
    assert torch.equal(loss_advantages_in_generation_order(seen0), loss_advantages_in_generation_order(stock))
    assert torch.equal(torch.stack(seen0["loss"]), torch.stack(stock["loss"]))

    gamma = 0.5
    trainer, seen = _train(FocalGRPOTrainer, funcs, FocalGRPOConfig(focal_gamma=gamma, **fields,
                                                                   **common_args(tmp_path / "g5")))
    assert seen["completions"] == stock["completions"]
    success = torch.tensor([float(succeeds(c)) for c in seen["completions"][0]]).view(-1, 4)
    mu_hat = success.mean(dim=1)
    assert 0 < mu_hat.mean() < 1, "the case should mix successes and failures"
    g = (1 - mu_hat) ** gamma
    torch.testing.assert_close(loss_advantages_in_generation_order(seen),
                               g.repeat_interleave(4) * loss_advantages_in_generation_order(stock),
                               rtol=1e-6, atol=1e-7)
    for t in (trainer0, trainer):  # gamma = 0 logs the same metrics (the advantages stay TRL's)
        log = next(h for h in t.state.log_history if "focal/mu_hat_mean" in h)
        assert log["focal/mu_hat_mean"] == pytest.approx(mu_hat.mean().item(), abs=1e-6)
    log = next(h for h in trainer.state.log_history if "focal/weight_mean" in h)
    assert log["focal/weight_mean"] == pytest.approx(g.mean().item(), abs=1e-6)
    assert log["focal/tail_miss_mean"] == pytest.approx(_tail_miss_by_hand(mu_hat.tolist(), 4, 0.05), rel=1e-9)
    # one definition for both stacks: the logged metrics are core's on the same groups (verl's test does the same)
    expected = core_focal_metrics(g, mu_hat, (mu_hat > 0) & (mu_hat < 1), 4, gamma=gamma, rho=0.05)
    for key, value in expected.items():
        assert key in log and (math.isnan(value) or log[key] == pytest.approx(value, abs=1e-6)), key
    if case == "none-rewards":
        nones = sum(_code(c) % 3 == 0 for c in seen["completions"][0])
        assert nones > 0 and log["focal/success_none_frac"] == pytest.approx(nones / len(seen["completions"][0]))


def _tail_miss_by_hand(mu_values, n, rho):
    """(1 - tau)^n - (mu - tau)^n - (1 - mu)^n with tau = rho * mu, averaged (Lemma 3.1 as printed)."""
    out = [(1 - rho * m) ** n - (m - rho * m) ** n - (1 - m) ** n for m in mu_values]
    return sum(out) / len(out)


def test_mean_tail_miss_is_lemma_3_1():
    mu = [0.0, 0.25, 0.5, 1.0]
    assert mean_tail_miss(mu, 8, 0.05) == pytest.approx(_tail_miss_by_hand(mu, 8, 0.05), rel=1e-12)
    assert mean_tail_miss([0.0, 1.0], 8, 0.5) == 0.0  # inactive groups never miss


def _build(tmp_path, funcs, **fields):
    model, tokenizer = build_tiny(seed=0)
    return FocalGRPOTrainer(model=model, reward_funcs=funcs, args=FocalGRPOConfig(**fields, **common_args(tmp_path)),
                            train_dataset=tiny_prompts(), processing_class=tokenizer)


def test_success_rule_is_checked_before_training(tmp_path):
    from fgrpo_sim.llm.rewards import make_math_reward

    unnamed = [_named("correct", lambda completions, **kw: PARITY(completions)), FORMAT_BONUS]
    with pytest.raises(ValueError, match="focal_reward_func must name the reward function.*'correct', 'format'"):
        _build(tmp_path, unnamed, focal_gamma=0.5)
    with pytest.raises(ValueError, match="focal_reward_func must be one of 'correct', 'format', got 'length'"):
        _build(tmp_path, unnamed, focal_gamma=0.5, focal_reward_func="length")
    assert _build(tmp_path, unnamed, focal_gamma=0.5, focal_reward_func="correct")._focal_success_index == 0
    # math_reward returns 0/1: reward_wrong = -1 would make every wrong answer (0 >= threshold 0) a success
    with pytest.raises(ValueError, match="'math' returns 0 for a wrong and 1 for a correct answer, but "
                                         "reward_wrong=-1"):
        _build(tmp_path, make_math_reward(), focal_gamma=0.5, reward_wrong=-1.0)
    assert _build(tmp_path, make_math_reward(1.0, -1.0), focal_gamma=0.5, reward_wrong=-1.0)._focal_success_index == 0
    # gamma = 0 trains as stock TRL would: the rule's problems become one warning and no focal metrics
    with pytest.warns(UserWarning, match="focal metrics off"):
        trainer = _build(tmp_path, unnamed, focal_gamma=0.0)
    assert trainer._focal_success_index is None
    # ...but DS-GRPO (the Table 3 control, run at gamma = 0) needs the rule: refused before training, not at step 1
    with pytest.raises(ValueError, match="focal_reward_func must name the reward function.*'correct', 'format'"):
        _build(tmp_path, unnamed, focal_gamma=0.0, ds_gamma_correct=0.01)


def test_config_checks_the_rule_fields(tmp_path):
    assert FocalGRPOConfig(reward_wrong=-1.0, **common_args(tmp_path)).focal_success_threshold == 0.0
    cases = [({"reward_wrong": 1.0}, "reward_correct must be greater than reward_wrong"),
             ({"reward_correct": 0.0, "reward_wrong": 1.0}, "reward_correct must be greater than reward_wrong"),
             ({"focal_success_threshold": 0.0}, r"focal_success_threshold must be in \(0, 1\], got 0"),
             ({"focal_success_threshold": 1.5}, r"focal_success_threshold must be in \(0, 1\], got 1.5"),
             ({"focal_monitor_rho": 0.0}, r"focal_monitor_rho must be in \(0, 1\], got 0"),
             ({"reward_correct": float("nan")}, "reward_correct must be in"),
             ({"focal_reward_func": ""}, "focal_reward_func must be a reward function's name")]
    for fields, message in cases:
        with pytest.raises(ValueError, match=message):
            FocalGRPOConfig(**fields, **common_args(tmp_path))


def test_out_of_range_success_reward_stops_the_first_batch_only_when_gamma_is_positive(tmp_path):
    too_big = _named("math", lambda completions, **kw: [2.0 if _code(c) % 2 == 0 else 0.0 for c in completions])
    trainer = _build(tmp_path / "g5", [too_big], focal_gamma=0.5)
    with pytest.raises(ValueError, match=r"^reward function 'math' \(the focal success function\) returned 2, outside "
                                         r"\[reward_wrong, reward_correct\] = \[0, 1\]"):
        trainer.train()
    assert trainer.state.global_step == 0
    trainer = _build(tmp_path / "g0", [too_big], focal_gamma=0.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.train()
    assert trainer.state.global_step == 1
    assert any("focal metrics skipped" in str(w.message) for w in caught)
    assert not any("focal/mu_hat_mean" in h for h in trainer.state.log_history)
