"""The index of the paper's training arms: which recipe feeds which paper table, and what it costs.

`recipe_index()` walks `recipes/<model>/` and classifies each recipe by its file name (the naming rules
are below and tested: a recipe no rule matches is an error, so a new arm cannot go unlisted).

GPU-hour estimates (`estimate_gpu_hours`) are ours, not the paper's: the paper reports its hardware
(16 H100, verl + sglang, FSDP2) but no run times. We estimate from the recipe's own numbers and four
stated assumptions (all overridable):

* rollouts = 39,202 prompts x 10 epochs x N (the paper's filtered DeepScaleR, its epochs and group size);
* mean response length = 18.3% of max_completion_length (1,500 of 8,192 tokens), mean prompt 150
  tokens (assumed; the same 1,500 as docs/llm.md "Hardware and cost");
* generation: 5,000 decoded tokens/s per colocated H100 for a 7.6B model, scaled by 7.6 / params
  (assumed, memory-bound batched decoding);
* training: (6 forward+backward + 2 old-log-prob forward [+ 2 reference forward when beta > 0]) x params
  x tokens FLOPs at 40% of the H100's 989 dense bf16 TFLOP/s (assumed MFU).

Treat the result as an order of magnitude (a factor of 2 either way would not surprise us).

Disk (`estimate_disk_gb`, exact arithmetic, not an assumption): with P parameters stored in b bytes each
(TRL 1.16 loads float32 unless `model_init_kwargs: {dtype: ...}` says otherwise: b = 4), a checkpoint's
weights take P x b and AdamW's two moments another 2 x P x b, so a resumable checkpoint is 3 x P x b
(91 GB for Qwen2.5-7B in float32) and a weights-only one P x b (30 GB). A run saving S checkpoints
(S = epochs with save_strategy epoch, at most save_total_limit kept) plus the final model needs
    (S + 1) x P x b + 2 x P x b x (1 if save_optimizer_state == "last" else S).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fgrpo_sim.llm.training.launch import PAPER_TRAIN_ROWS

#: Parameters (billions) of the paper's models, for the cost estimate.
MODEL_PARAMS_B = {"Qwen/Qwen2.5-7B": 7.6, "Qwen/Qwen3-4B-Base": 4.0, "meta-llama/Llama-3.2-3B-Instruct": 3.2}
PAPER_PROMPTS = PAPER_TRAIN_ROWS
H100_BF16_FLOPS = 989e12


@dataclass(frozen=True)
class Arm:
    model: str        # folder name under recipes/
    arm: str          # recipe path relative to the model folder, without .yaml
    paper: str        # the paper table(s) it feeds
    what: str         # one-line description
    recipe: Path
    shown: str = ""   # the path as a user types it from the repository root, e.g. recipes/qwen2.5-7b/grpo.yaml


def estimate_gpu_hours(
    params_b: float, num_generations: int, max_completion_length: int, *, epochs: float = 10,
    prompts: int = PAPER_PROMPTS, response_fraction: float = 1500 / 8192, prompt_tokens: int = 150,
    decode_tokens_per_s_at_7b6: float = 5000.0, mfu: float = 0.40, with_reference: bool = False,
) -> dict[str, float]:
    """H100 GPU-hours of one run (generation + training) under the module's stated assumptions."""
    from fgrpo_sim.validation import check_range

    check_range("params_b", params_b, 0.0, low_open=True)
    check_range("response_fraction", response_fraction, 0.0, 1.0, low_open=True)
    check_range("mfu", mfu, 0.0, 1.0, low_open=True)
    rollouts = prompts * epochs * num_generations
    response = response_fraction * max_completion_length
    gen_s = rollouts * response / (decode_tokens_per_s_at_7b6 * 7.6 / params_b)
    passes = 6 + 2 + (2 if with_reference else 0)
    train_s = passes * params_b * 1e9 * rollouts * (response + prompt_tokens) / (mfu * H100_BF16_FLOPS)
    total = (gen_s + train_s) / 3600
    return {"generation_gpu_h": gen_s / 3600, "training_gpu_h": train_s / 3600, "gpu_h": total,
            "wall_h_on_16": total / 16}


#: Bytes per parameter of the dtypes a recipe can load the model in (TRL 1.16's default is float32).
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "auto": 2}


def estimate_disk_gb(params_b: float, *, checkpoints: int, weight_bytes: int = 4, optimizer_state: str = "all",
                     save_total_limit: int | None = None) -> dict[str, float]:
    """Disk (GB) of one run's checkpoints and final model under the module's formula."""
    from fgrpo_sim.validation import check_integer, check_range

    check_range("params_b", params_b, 0.0, low_open=True)
    check_integer("checkpoints", checkpoints, 0)
    weights = params_b * weight_bytes  # GB: params_b x 1e9 x bytes / 1e9
    kept = checkpoints if save_total_limit is None else min(checkpoints, int(save_total_limit))
    resumable = min(kept, 1) if optimizer_state == "last" else kept
    return {"weights_gb": weights, "checkpoint_gb": 3 * weights,
            "run_gb": (kept + 1) * weights + 2 * weights * resumable}


def classify(model: str, arm: str) -> tuple[str, str]:
    """(paper table, description) of a recipe from its name; ValueError when no rule matches."""
    qwen7b = model == "qwen2.5-7b"
    base_methods = {"grpo": "GRPO", "dapo": "DAPO", "cispo": "CISPO"}
    if arm in base_methods:
        return ("Table 1" + (", Table 6 (gamma 0)" if qwen7b else ""), f"{base_methods[arm]} baseline, N = 8")
    if arm.startswith("f-") and arm[2:] in base_methods:
        return ("Table 1" + (", Table 6" if qwen7b else ", Table 7"), f"F-{base_methods[arm[2:]]}, picked gamma")
    if arm.startswith("f-") and "-g" in arm:
        method, gamma = arm[2:].split("-g", 1)
        if method in base_methods:
            return ("Table 6" if qwen7b else "Table 7", f"F-{base_methods[method]}, gamma = {gamma}")
    if qwen7b:
        if arm.startswith("group-size/grpo-n"):
            return ("Table 2", f"GRPO, N = {arm.rsplit('-n', 1)[1]}")
        controls = {
            "grpo-low-lr": ("Table 3 / 11", "GRPO low-LR, lr 6.8e-7 = 1e-6 x m_0.5"),
            "grpo-entropy-1e-3": ("Table 3 / 11", "GRPO-H, entropy bonus 1e-3 (picked)"),
            "grpo-entropy-1e-4": ("App. L.2 sweep", "GRPO-H, entropy bonus 1e-4"),
            "grpo-kl-1e-3": ("Table 3 / 11", "GRPO-KL, beta 1e-3 (picked)"),
            "grpo-kl-1e-2": ("App. L.2 sweep", "GRPO-KL, beta 1e-2"),
            "ds-grpo": ("Table 3 / 11", "DS-GRPO, differential smoothing on correct trajectories"),
        }
        if arm in controls:
            return controls[arm]
    raise ValueError(f"recipe {model}/{arm}.yaml matches no paper arm; name it after its arm (see recipe_index.py)")


def recipe_index(root: str | Path | None = None) -> list[Arm]:
    """Every runnable paper arm under ROOT/<model>/ (base.yaml, tiny/ and accelerate/ are not arms); ROOT defaults
    to the recipes shipped with the package."""
    from fgrpo_sim.packaged import recipes_root

    root = recipes_root() if root is None else Path(root)
    arms = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and p.name not in ("tiny", "accelerate")):
        for path in sorted(folder.rglob("*.yaml")):
            if path.name == "base.yaml":
                continue
            arm = path.relative_to(folder).with_suffix("").as_posix()
            paper, what = classify(folder.name, arm)
            shown = (Path(root.name) / path.relative_to(root)).as_posix()
            arms.append(Arm(folder.name, arm, paper, what, path, shown))
    # Within a model: the paper's order of tables (main comparison first, sweeps and controls after).
    order = ("Table 1", "Table 2", "Table 3", "App. L.2", "Table 6", "Table 7")
    return sorted(arms, key=lambda a: (a.model != "qwen2.5-7b", a.model,
                                       next(i for i, t in enumerate(order) if a.paper.startswith(t)), a.arm))


#: The recipe keys the index reads that need a cast, with FocalGRPOConfig's types for them
#: (tests/test_llm_protocol.py checks that they agree).
INDEX_TYPES = {"num_generations": int | None, "max_completion_length": int | None, "num_train_epochs": float,
               "focal_gamma": float, "beta": float, "save_total_limit": int | None}


def _recipe_values(path: Path) -> dict[str, Any]:
    """The recipe's values the index reads, cast and checked; errors name the file that set the field."""
    from fgrpo_sim.llm.training.recipe import cast_value, load_recipe_sources
    from fgrpo_sim.validation import check_integer, check_range

    recipe, sources = load_recipe_sources(path)
    # only the keys read here, cast by their types written below: recipe.cast_recipe takes the types from
    # FocalGRPOConfig, whose import needs TRL, which listing recipes must not (issue 46). `llm train` casts the rest.
    for name, hint in INDEX_TYPES.items():
        if name in recipe:
            try:
                recipe[name] = cast_value(name, recipe[name], hint)
            except ValueError as exc:
                raise ValueError(f"recipe {sources.get(name, path)}: {exc}") from None
    checks = {
        "num_generations": (8, lambda v: check_integer("num_generations", v, 2)),
        "max_completion_length": (8192, lambda v: check_integer("max_completion_length", v, 1)),
        "num_train_epochs": (10, lambda v: check_range("num_train_epochs", v, 0.0, float("inf"), low_open=True,
                                                       high_open=True)),
        "focal_gamma": (0.0, lambda v: check_range("focal_gamma", v, 0.0, float("inf"), high_open=True)),
        "beta": (0.0, lambda v: check_range("beta", v, 0.0, float("inf"), high_open=True)),
        "save_total_limit": (None, lambda v: v is None or check_integer("save_total_limit", v, 1)),
    }
    out = {}
    for name, (default, check) in checks.items():
        value = recipe.get(name, default)
        try:
            check(value)
        except ValueError as exc:
            raise ValueError(f"recipe {sources.get(name, path)}: {exc}") from None
        out[name] = value
    init = recipe.get("model_init_kwargs") or {}
    dtype = str(init.get("dtype", init.get("torch_dtype", "float32")) if isinstance(init, dict) else "float32")
    out["weight_bytes"] = DTYPE_BYTES.get(dtype.replace("torch.", ""), 4)
    out["save_strategy"] = str(recipe.get("save_strategy", "steps"))
    out["save_optimizer_state"] = str(recipe.get("save_optimizer_state", "all"))
    out["model"] = recipe.get("model")
    return out


def arm_row(arm: Arm, **estimate_options: Any) -> dict[str, Any]:
    """One index row: the arm, its recipe and command, resolved N / gamma / lengths, and the cost estimate."""
    values = _recipe_values(arm.recipe)
    n, length, epochs = int(values["num_generations"]), int(values["max_completion_length"]), values["num_train_epochs"]
    params = MODEL_PARAMS_B.get(str(values["model"]))
    cost = (estimate_gpu_hours(params, n, length, epochs=float(epochs), with_reference=float(values["beta"]) != 0.0,
                               **estimate_options)
            if params is not None else None)
    disk = None
    if params is not None and values["save_strategy"] in ("epoch", "no"):
        saved = int(-(-float(epochs) // 1)) if values["save_strategy"] == "epoch" else 0
        disk = estimate_disk_gb(params, checkpoints=saved, weight_bytes=values["weight_bytes"],
                                optimizer_state=values["save_optimizer_state"],
                                save_total_limit=values["save_total_limit"])
    gamma = float(values["focal_gamma"])
    what = arm.what.replace("picked gamma", f"gamma = {gamma:g} (picked)")
    return {
        "model": arm.model, "arm": arm.arm, "paper": arm.paper, "what": what,
        "recipe": arm.shown, "command": f"fgrpo llm train --config {arm.shown}",
        "num_generations": n, "focal_gamma": gamma, "max_completion_length": length,
        "hardware": "16 x H100 80GB (paper); recipes written for 8 per node",
        "est_gpu_h": None if cost is None else round(cost["gpu_h"]),
        "est_wall_h_on_16": None if cost is None else round(cost["wall_h_on_16"], 1),
        "disk_gb": None if disk is None else round(disk["run_gb"]),
        "checkpoint_gb": None if disk is None else round(disk["checkpoint_gb"], 1),
        "has_run": "not on a GPU; CPU dry-run only (tests)",
    }
