"""`FocalGRPOConfig`: TRL's `GRPOConfig` plus the focal weight and the paper's method presets.

`method` picks one of the paper's three objectives (App. B) and sets TRL's `loss_type` and clip
values, unless the user sets them explicitly:

| method | TRL loss_type | epsilon (low) | epsilon_high | ratio range the loss sees |
| ------ | ------------- | ------------- | ------------ | ------------------------- |
| grpo   | "dapo"        | 0.2           | = epsilon    | clip(r, 0.8, 1.2), PPO-style min |
| dapo   | "dapo"        | 0.2           | 0.28         | clip(r, 0.8, 1.28), PPO-style min |
| cispo  | "cispo"       | (unused)      | 6.0          | sg(min(r, 6)) * A * log pi |

The grpo row is TRL's own defaults, read from GRPOConfig (an unset epsilon_high stays None, which TRL reads as
epsilon), so `FocalGRPOConfig(focal_gamma=0, **kw)` is `GRPOConfig(**kw)` for any kw: `epsilon=0.3` clips at
0.3 / 0.3 in both, and every loss type TRL declares (`trl_loss_types()`) is accepted with method grpo
(tests/test_llm_trl_parity.py walks GRPOConfig's fields and loss types).

Why "dapo" for GRPO: the paper aggregates every objective token-mean (DAPO style, no KL); TRL's
`loss_type="grpo"` averages per sequence first (length-biased), while its "dapo" divides the summed
token losses by the number of completion tokens in the accumulated batch, which is the token mean.

CISPO convention: the paper writes clip(r, 1 - eps_low_IS, 1 + eps_high_IS) with eps_low_IS = 1.0 and
eps_high_IS = 5.0, i.e. the ratio is clipped to [0, 6]. TRL 1.16 implements CISPO as
`clamp(r, max=epsilon_high)` on the ratio itself (an upper cap only; r >= 0 always, so the lower
bound 1 - 1.0 = 0 is implied). We therefore pass epsilon_high = 1 + 5.0 = 6.0 to TRL. verl's CISPO is
two-sided with `1 + eps` bounds; both agree on [0, 6] for the paper's values.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from trl import GRPOConfig

from fgrpo_sim.llm.evaluation.prompts import MATH_INSTRUCTION as PAPER_SYSTEM_PROMPT  # the paper's prompt, defined once
from fgrpo_sim.validation import check_choice, check_integer, check_range


def _trl_default(name: str) -> object:
    return next(f.default for f in dataclasses.fields(GRPOConfig) if f.name == name)


def trl_loss_types() -> tuple[str, ...]:
    """The loss types TRL's GRPOConfig declares ("Supported values are 'grpo', 'dr_grpo', ..." in its help)."""
    help_text = next(f.metadata.get("help", "") for f in dataclasses.fields(GRPOConfig) if f.name == "loss_type")
    declared = re.search(r"Supported values are (.*?)\.", help_text)
    return tuple(re.findall(r"'(\w+)'", declared.group(1))) if declared else ()


#: The paper's clip values per method (App. B, Table 5), already in TRL's convention; grpo is TRL's defaults.
METHOD_PRESETS: dict[str, dict[str, object]] = {
    "grpo": {"loss_type": _trl_default("loss_type"), "epsilon": _trl_default("epsilon"),
             "epsilon_high": _trl_default("epsilon_high")},
    "dapo": {"loss_type": "dapo", "epsilon": 0.2, "epsilon_high": 0.28},
    "cispo": {"loss_type": "cispo", "epsilon": 0.2, "epsilon_high": 1.0 + 5.0},
}
METHODS = tuple(METHOD_PRESETS)
SAVE_OPTIMIZER_STATE = ("all", "last")
#: TRL loss types whose clipped-surrogate formula is the PPO/GRPO one (they differ only in aggregation): the
#: ones method dapo's clip preset fits. Method grpo takes every loss type TRL declares, as GRPOConfig does.
_CLIPPED_LOSS_TYPES = ("dapo", "grpo", "bnpo", "dr_grpo", "luspo")


@dataclass
class FocalGRPOConfig(GRPOConfig):
    """GRPOConfig with focal weighting (g = (1 - mu_hat)^gamma per prompt group) and method presets.

    Every TRL field keeps TRL's default, so `FocalGRPOConfig(focal_gamma=0, **kwargs)` trains exactly like
    `GRPOConfig(**kwargs)` (tests/test_llm_trl_parity.py: every field, every loss type); the paper's
    optimiser values (weight decay 0.01, constant schedule after 60 warmup steps, Table 5) live in the recipes
    (recipes/*/base.yaml). `loss_type`, `epsilon` and `epsilon_high` default to None and are filled from
    `method`; the default method "grpo" fills TRL's own defaults ("dapo", 0.2, None = epsilon). One guard: `bf16` left
    unset is TRL's default (on unless fp16) wherever TRL accepts it, and off where TRL would refuse to start
    (no bf16 GPU and `use_cpu` unset), so `fgrpo llm train --dry-run` and CPU rehearsals of GPU recipes run.
    """

    method: str = field(
        default="grpo",
        metadata={"help": "Objective: 'grpo', 'dapo' or 'cispo' (sets loss_type and clip values; see module doc)."},
    )
    focal_gamma: float = field(
        default=0.0,
        metadata={"help": "Focal exponent gamma >= 0; advantages of a group are multiplied by (1 - mu_hat)^gamma. "
                          "0 reproduces the unweighted method exactly."},
    )
    focal_smoothing: float = field(
        default=0.0,
        metadata={"help": "alpha >= 0 of the success estimate inside the focal weight: mu = (c + alpha) / (N + 2 alpha) "
                          "for c successes in a group of N. 0 (default) is the paper's raw rate c / N; 0.5 is the "
                          "Jeffreys-style estimate some write-ups use. Only the weight changes, never the advantages."},
    )
    reward_correct: float = field(
        default=1.0, metadata={"help": "Reward of a correct rollout (R_c) from the success function; R_c > R_w."}
    )
    reward_wrong: float = field(
        default=0.0, metadata={"help": "Reward of a wrong rollout (R_w) from the success function."}
    )
    focal_reward_func: str | None = field(
        default=None,
        metadata={"help": "Name of the reward function that defines success for mu_hat. None (default): the only "
                          "reward function, else the one named 'math' or 'math_reward'. Other reward functions (format, "
                          "length) still enter TRL's advantage but never mu_hat."},
    )
    focal_success_threshold: float | None = field(
        default=None,
        metadata={"help": "A rollout succeeds when the success function's reward is >= this value; mu_hat is the "
                          "group's fraction of successes. Must lie in (R_w, R_c]. None (default): (R_w + R_c) / 2, "
                          "so partial credit above the midpoint counts as a success."},
    )
    focal_monitor_rho: float = field(
        default=0.05,
        metadata={"help": "Share rho in (0, 1] of a group's correct mass held by a rare mode, for the logged "
                          "focal/tail_miss_mean (paper Lemma 3.1 with mu = the group's success rate, tau = rho * mu). "
                          "Monitoring only: never changes training."},
    )
    # TRL fields whose defaults differ here: None means "take the value from `method`".
    loss_type: str | None = field(default=None, metadata={"help": "TRL loss type; None = from `method`."})
    epsilon: float | None = field(default=None, metadata={"help": "Lower clip epsilon; None = from `method`."})
    epsilon_high: float | None = field(default=None, metadata={"help": "Upper clip (TRL convention); None = from `method`."})
    bf16: bool | None = field(
        default=None, metadata={"help": "bf16 mixed precision; None = TRL's default (on unless fp16), except off "
                                        "where TRL would refuse to start (no bf16 GPU and use_cpu unset)."}
    )
    # Controls of paper Table 3 / App. L.2 (fgrpo_sim/llm/training/controls.py). GRPO-H and GRPO-KL use TRL's own
    # `entropy_coef` and `beta`; differential smoothing (DS-GRPO) is ours.
    ds_gamma_correct: float = field(
        default=0.0,
        metadata={"help": "DS-GRPO (Gai et al. 2025) gamma_p >= 0: a correct completion's advantage gets "
                          "- gamma_p * log pi_old(y|x). 0 = off (see fgrpo_sim/llm/training/controls.py)."},
    )
    ds_gamma_incorrect: float = field(
        default=0.0,
        metadata={"help": "DS-GRPO gamma_n >= 0 for incorrect completions (+ gamma_n * log pi_old). The F-GRPO "
                          "paper's control modifies correct trajectories only: 0."},
    )
    ds_logprob: str = field(
        default="sum",
        metadata={"help": "log pi_old(y|x) for DS-GRPO: 'sum' over completion tokens (the rule as written) or "
                          "'mean' per token (ours, length-normalised)."},
    )
    # Disk (docs/recipes.md "Disk"): a checkpoint's weights are what evaluation needs; its optimizer state
    # (twice the weights with AdamW) is needed only to resume.
    save_optimizer_state: str = field(
        default="all",
        metadata={"help": "'all' (TRL's default): every checkpoint keeps its optimizer, scheduler and RNG state. "
                          "'last': when a checkpoint is saved, the older ones keep only their weights (loadable by "
                          "`fgrpo llm eval`, not resumable), so a run holds one resumable checkpoint."},
    )
    metrics_file: str | None = field(
        default="metrics.jsonl",
        metadata={"help": "JSON-lines file under output_dir receiving every logged dict (with its step) as it is "
                          "logged, so a run that dies between checkpoints keeps its curves. None or '' = off."},
    )
    # In-training dynamics (paper App. P; fgrpo_sim/llm/training/dynamics.py): pass@1 / pass@k on a held-out set.
    dynamics_eval_data: str | None = field(
        default=None,
        metadata={"help": "Held-out benchmark file sampled every `dynamics_every` steps (paper: AIME25). "
                          "None = no dynamics logging."},
    )
    dynamics_benchmark: str = field(
        default="aime25", metadata={"help": "Column layout of dynamics_eval_data (as `fgrpo llm eval --benchmark`)."}
    )
    dynamics_every: int = field(default=25, metadata={"help": "Optimizer steps between dynamics evaluations (paper: 25)."})
    dynamics_num_generations: int = field(
        default=64, metadata={"help": "Samples per held-out problem per evaluation (paper: 64)."}
    )
    dynamics_k: list[int] | None = field(
        default=None, metadata={"help": "k values logged besides pass@1; None = powers of two up to the sample count."}
    )
    dynamics_max_new_tokens: int | None = field(
        default=None, metadata={"help": "Completion cap of dynamics samples; None = max_completion_length."}
    )

    def __post_init__(self):
        check_choice("method", self.method, METHODS)
        if not isinstance(self.focal_gamma, (int, float)) or not (0.0 <= float(self.focal_gamma) < float("inf")):
            raise ValueError(f"focal_gamma must be in [0, inf), got {self.focal_gamma!r}")
        self.focal_gamma = float(self.focal_gamma)
        check_range("focal_smoothing", self.focal_smoothing, 0.0, float("inf"), high_open=True)
        self.focal_smoothing = float(self.focal_smoothing)
        from fgrpo_sim.llm.training.controls import check_control_fields
        from fgrpo_sim.llm.training.dynamics import check_dynamics_fields

        check_control_fields(self)
        check_dynamics_fields(self)
        if self.num_generations is not None:  # TRL divides by it before checking it
            check_integer("num_generations", self.num_generations, 2)
        self._check_success_rule()
        self._check_optimizer_and_seed()
        check_choice("save_optimizer_state", self.save_optimizer_state, SAVE_OPTIMIZER_STATE)
        if self.metrics_file is not None and not isinstance(self.metrics_file, str):
            raise ValueError(f"metrics_file must be a file name under output_dir (or null), got {self.metrics_file!r}")
        preset = METHOD_PRESETS[self.method]
        if self.loss_type is None:
            self.loss_type = preset["loss_type"]
        allowed = {"cispo": ("cispo",), "dapo": _CLIPPED_LOSS_TYPES}.get(self.method) or trl_loss_types()
        if allowed and self.loss_type not in allowed:
            hint = " (use method='cispo')" if self.loss_type == "cispo" else ""
            raise ValueError(
                f"loss_type must be one of {', '.join(allowed)} for method={self.method!r}, got "
                f"{self.loss_type!r}{hint}"
            )
        if self.epsilon is None:
            self.epsilon = preset["epsilon"]
        if self.epsilon_high is None:
            self.epsilon_high = preset["epsilon_high"]
        if self.bf16 is None and not self.fp16 and not self.use_cpu:
            from transformers.utils import is_torch_bf16_gpu_available, is_torch_xla_available

            # TRL would set bf16 = True and transformers then refuse to start ("doesn't support bf16/gpu")
            self.bf16 = bool(is_torch_bf16_gpu_available() or is_torch_xla_available())
        # TRL still sets the `gradient_checkpointing*` names, which newer transformers renamed and warns about on
        # every run; resolving the alias here (as transformers would) keeps that warning out of the CLI's stderr.
        for old, new in (("gradient_checkpointing", "activation_checkpointing"),
                         ("gradient_checkpointing_kwargs", "activation_checkpointing_kwargs")):
            if hasattr(self, new) and getattr(self, new) is None and getattr(self, old, None) is not None:
                setattr(self, new, getattr(self, old))
        super().__post_init__()

    def _check_optimizer_and_seed(self) -> None:
        """What torch's AdamW and numpy's seeding refuse only once the model is loaded, refused here (and so
        by `fgrpo llm train --dry-run`)."""
        check_range("learning_rate", self.learning_rate, 0.0, float("inf"), high_open=True)
        check_range("weight_decay", self.weight_decay, 0.0, float("inf"), high_open=True)
        check_range("adam_epsilon", self.adam_epsilon, 0.0, float("inf"), high_open=True)
        for name in ("adam_beta1", "adam_beta2"):
            check_range(name, getattr(self, name), 0.0, 1.0, high_open=True)
        for name in ("seed", "data_seed"):
            if getattr(self, name) is not None:  # numpy's legacy seeding takes 32-bit seeds
                check_integer(name, getattr(self, name), 0, 2**32 - 1)
        check_range("warmup_steps", self.warmup_steps, 0.0, float("inf"), high_open=True)

    def _check_success_rule(self) -> None:
        """R_w < R_c, the threshold in (R_w, R_c], rho in (0, 1]: all before any model is built."""
        for name in ("reward_correct", "reward_wrong"):
            setattr(self, name, float(check_range(name, getattr(self, name))))
        if not self.reward_wrong < self.reward_correct:
            raise ValueError(
                f"reward_correct must be greater than reward_wrong, got reward_correct={self.reward_correct:g} "
                f"and reward_wrong={self.reward_wrong:g}"
            )
        if self.focal_success_threshold is None:
            self.focal_success_threshold = (self.reward_wrong + self.reward_correct) / 2
        check_range("focal_success_threshold", self.focal_success_threshold, self.reward_wrong, self.reward_correct,
                    low_open=True)
        self.focal_success_threshold = float(self.focal_success_threshold)
        check_range("focal_monitor_rho", self.focal_monitor_rho, 0.0, 1.0, low_open=True)
        self.focal_monitor_rho = float(self.focal_monitor_rho)
        if self.focal_reward_func is not None and not (isinstance(self.focal_reward_func, str) and self.focal_reward_func):
            raise ValueError(f"focal_reward_func must be a reward function's name, got {self.focal_reward_func!r}")
