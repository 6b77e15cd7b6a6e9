"""The rule of FocalGRPOConfig (issue 39): for every field and loss type TRL's GRPOConfig accepts,
`FocalGRPOConfig(focal_gamma=0, **kw)` trains exactly like `GRPOConfig(**kw)`.

The fields are walked (dataclasses.fields(GRPOConfig)), not listed: a TRL release that adds one is covered by
the same test. Before: `epsilon=0.3` clipped at 0.3 / 0.2 (the grpo preset filled epsilon_high = 0.2 where
TRL reads a missing one as epsilon) and TRL 1.16's loss types sapo, vespo and luspo were refused.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import warnings

import pytest
import torch
from extras import require

require("trl")

from test_llm_helpers import common_args, parity_reward, tiny_prompts  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from fgrpo_sim.llm.tiny import build_tiny  # noqa: E402
from fgrpo_sim.llm.training.config import FocalGRPOConfig, trl_loss_types  # noqa: E402
from fgrpo_sim.llm.training.trainer import FocalGRPOTrainer, resolve_success_func  # noqa: E402

#: Fields the walk does not vary: set up the process (distributed launch, hub upload, devices) when the
#: config is built, or already fixed by the base arguments so that a config builds on a CPU.
NOT_VARIED = re.compile(r"^(local_rank|ddp_|fsdp|deepspeed|accelerator_config|parallelism_config|hub_|push_to_hub|"
                        r"tpu|xla|debug|output_dir|use_cpu|report_to|logging_dir)")


def _base(tmp_path) -> dict:
    return {"output_dir": str(tmp_path), "use_cpu": True, "report_to": "none"}


def _other_values(f: dataclasses.Field) -> list:
    """Values other than the default, by the field's type, and the choices its help names in quotes."""
    if f.name == "loss_type":
        return list(trl_loss_types())
    default = f.default if f.default is not dataclasses.MISSING else None
    kind = str(f.type)
    named = re.findall(r"['`\"](\w+)['`\"]", f.metadata.get("help", ""))
    if isinstance(default, bool) or (default is None and "bool" in kind):
        return [not default]
    if isinstance(default, enum.Enum) or isinstance(default, str) or (default is None and "str" in kind):
        return [v for v in dict.fromkeys(named) if v != getattr(default, "value", default)][:4]
    if isinstance(default, int) or (default is None and "int" in kind):
        return [(default or 0) + 3]
    if isinstance(default, float) or (default is None and "float" in kind):  # a fraction stays one (0.9 -> 0.95)
        return [0.3 if not default else (default + 1) / 2 if 0 < default < 1 else default * 1.5]
    return []


def _config_or_none(cls, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return cls(**kwargs)
        except Exception:  # noqa: BLE001 - any refusal: the rule covers what GRPOConfig accepts
            return None


def test_every_field_resolves_as_in_grpo_config(tmp_path):
    fields = [f for f in dataclasses.fields(GRPOConfig) if f.init and not NOT_VARIED.match(f.name)]
    tried, differ = 0, {}
    for f in fields:
        for value in _other_values(f):
            kwargs = {**_base(tmp_path), f.name: value}
            stock = _config_or_none(GRPOConfig, **kwargs)
            if stock is None:
                continue
            focal = _config_or_none(FocalGRPOConfig, focal_gamma=0.0, **kwargs)
            if focal is None:
                differ[f"{f.name}={value!r}"] = "refused by FocalGRPOConfig"
                continue
            tried += 1
            for g in dataclasses.fields(GRPOConfig):
                if getattr(stock, g.name) != getattr(focal, g.name):
                    differ[f"{f.name}={value!r}: {g.name}"] = (getattr(stock, g.name), getattr(focal, g.name))
    assert differ == {}
    assert tried > 150  # the walk reached most of TRL's and transformers' fields


def test_the_declared_loss_types_include_trl_1_16s_newest():
    assert {"grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"} <= set(trl_loss_types())


#: TRL refuses luspo unless the ratio is per sequence (GRPOTrainer.__init__); each other loss type takes the default.
_LOSS_SETTINGS = {"luspo": {"importance_sampling_level": "sequence"}}
_CASES = [(loss, {"loss_type": loss, **_LOSS_SETTINGS.get(loss, {})}) for loss in trl_loss_types()]
_CASES.append(("dapo-epsilon-0.3", {"epsilon": 0.3}))  # the example: TRL clips at 0.3 / 0.3


def _train(tmp_path, trainer_cls, config_cls, **kwargs):
    model, tokenizer = build_tiny(seed=0)
    extra = {"focal_gamma": 0.0} if config_cls is FocalGRPOConfig else {}
    # two passes over each generation batch at a large step: the ratio leaves [1 - eps, 1 + eps], so clipping acts
    args = config_cls(**common_args(tmp_path, max_steps=3, num_iterations=2, learning_rate=0.2, **kwargs), **extra)
    trainer = trainer_cls(model=model, reward_funcs=parity_reward, args=args, train_dataset=tiny_prompts(),
                          processing_class=tokenizer)
    trainer.train()
    clipped = sum(h.get("clip_ratio/region_mean", 0.0) + h.get("clip_ratio/high_mean", 0.0)
                  for h in trainer.state.log_history)
    return {name: p.detach().clone() for name, p in model.named_parameters()}, clipped


@pytest.mark.parametrize("name,kwargs", _CASES, ids=[c[0] for c in _CASES])
def test_each_loss_type_trains_bit_for_bit_like_trl(tmp_path, name, kwargs):
    stock, clipped = _train(tmp_path / "stock", GRPOTrainer, GRPOConfig, **kwargs)
    focal, _ = _train(tmp_path / "focal", FocalGRPOTrainer, FocalGRPOConfig, **kwargs)
    initial = dict(build_tiny(seed=0)[0].named_parameters())
    assert any(not torch.equal(stock[k], initial[k]) for k in stock)  # training moved the weights
    different = [k for k in stock if not torch.equal(stock[k], focal[k])]
    assert different == [], f"{len(different)} tensors differ, max {max((stock[k] - focal[k]).abs().max() for k in different)}"
    if name == "dapo-epsilon-0.3":
        assert clipped > 0, "clipping never acted: the epsilon_high comparison would be empty"


def test_several_reward_functions_name_the_python_keyword():
    with pytest.raises(ValueError, match=r"FocalGRPOConfig\(focal_reward_func='accuracy_reward'\)") as error:
        resolve_success_func(["accuracy_reward", "format_reward"], None)
    assert "--focal_reward_func" not in str(error.value)


def test_training_prints_no_future_warning_of_trls_checkpointing_calls(tmp_path):
    """The quickstart printed transformers' FutureWarnings for names TRL 1.16 calls (checkpointing is TRL's default)."""
    model, tokenizer = build_tiny(seed=0)
    args = FocalGRPOConfig(focal_gamma=0.5, **common_args(tmp_path, gradient_checkpointing=True))
    trainer = FocalGRPOTrainer(model=model, reward_funcs=parity_reward, args=args, train_dataset=tiny_prompts(),
                               processing_class=tokenizer)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.train()
    assert [str(w.message) for w in caught if issubclass(w.category, FutureWarning)] == []
