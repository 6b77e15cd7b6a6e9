"""Training prints no FutureWarning, and the one filter FocalGRPOTrainer keeps hides only TRL's own calls (issue 39).

TRL 1.16 reads `model.is_gradient_checkpointing` around every generation whatever the config
(trl/models/utils.py:136 and :407) and, with checkpointing on (TRL's default), toggles it through
`gradient_checkpointing_disable/enable` (:138, :154, :409, :414); transformers 5 deprecated those names.
`FocalGRPOTrainer.train` ignores exactly those messages raised in transformers.modeling_utils. These tests keep
the filter honest: it is still needed, every warning it hides comes from TRL's helpers (none from fgrpo_sim, none
from our config defaults), and it hides nothing else.
"""

from __future__ import annotations

import traceback
import warnings

from extras import require

require("trl")

from test_llm_helpers import common_args, parity_reward, tiny_prompts  # noqa: E402
from transformers import TrainerCallback  # noqa: E402

import fgrpo_sim.llm.training.trainer as trainer_module  # noqa: E402
from fgrpo_sim.llm.tiny import build_tiny  # noqa: E402
from fgrpo_sim.llm.training.config import FocalGRPOConfig  # noqa: E402

#: What transformers raises for `model.is_gradient_checkpointing` (transformers/modeling_utils.py)
IS_GC_MESSAGE = ("`is_gradient_checkpointing` is deprecated and will be removed in v6. Use "
                 "`is_activation_checkpointing` instead.")
#: Frames that only pass a warning along: the warning machinery and the library that raises it
_RELAY = ("/transformers/", "/warnings.py", "/contextlib.py")


def _call_site(stack: list[traceback.FrameSummary]) -> str:
    """The innermost frame outside transformers: who called the deprecated name ('trl/models/utils.py:136')."""
    frame = next(f for f in reversed(stack) if not any(part in f.filename for part in _RELAY))
    path = frame.filename.replace("\\", "/")
    return f"{path.split('/site-packages/')[-1]}:{frame.lineno}"  # an installed package's path from its root


class _SameWordsCallback(TrainerCallback):
    """A user's own FutureWarning in the very words transformers uses, raised during training."""

    def on_step_end(self, args, state, control, **kwargs):
        warnings.warn(IS_GC_MESSAGE, FutureWarning, stacklevel=1)


def _train_showing_every_warning(tmp_path, callbacks=()) -> list[tuple[str, str]]:
    """(message, call site) of every FutureWarning shown while a FocalGRPOConfig with TRL's checkpointing default
    (on, not spelled by us) is built and trained for two steps."""
    shown: list[tuple[str, str]] = []

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, FutureWarning):
            shown.append((str(message), _call_site(traceback.extract_stack()[:-1])))

    kwargs = common_args(tmp_path, max_steps=2)
    del kwargs["gradient_checkpointing"]  # TRL's default: on, so TRL toggles it around generation
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        args = FocalGRPOConfig(focal_gamma=0.5, **kwargs)
        assert args.gradient_checkpointing is True
        model, tokenizer = build_tiny(seed=0)
        trainer = trainer_module.FocalGRPOTrainer(model=model, reward_funcs=parity_reward, args=args,
                                                  train_dataset=tiny_prompts(), processing_class=tokenizer,
                                                  callbacks=list(callbacks))
        trainer.train()
    return shown


def test_without_the_filter_every_future_warning_is_trls_generation_helper(tmp_path, monkeypatch):
    """The filter is still needed (TRL still calls the names), and all it would hide comes from TRL's helpers:
    nothing from fgrpo_sim, nothing from our config defaults (which would show as trl/trainer/*config.py)."""
    filtered = set(trainer_module._TRL_DEPRECATED_CALLS)
    monkeypatch.setattr(trainer_module, "_TRL_DEPRECATED_CALLS", ())
    shown = _train_showing_every_warning(tmp_path)
    sites = sorted({site for _, site in shown})
    assert sites, "TRL no longer calls transformers' deprecated checkpointing names: drop the filter in trainer.py"
    assert [site for site in sites if not site.startswith("trl/models/utils.py:")] == [], sites
    hidden = {message.split("`")[1] for message, _ in shown}
    assert hidden == filtered  # each name the filter names is one TRL calls, and only those


def test_the_filter_hides_transformers_warning_only(tmp_path):
    """With the filter on, training shows no FutureWarning of transformers', while a user's own FutureWarning in
    the same words still shows (before: any module's message starting with those words was hidden)."""
    shown = _train_showing_every_warning(tmp_path, callbacks=[_SameWordsCallback()])
    assert [site for _, site in shown if "test_llm_warnings.py" not in site] == []
    assert [message for message, _ in shown] == [IS_GC_MESSAGE] * 2  # the callback's, once per step
