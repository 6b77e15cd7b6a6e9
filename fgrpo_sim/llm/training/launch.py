"""Launch arithmetic for the paper's batch layout on TRL 1.16: batches, accumulation, warmup, memory.

The paper (verl; Sec. 5 and App. L) samples a global batch of 256 prompts x N rollouts per training step
and updates the policy on mini-batches of 64 prompts, one pass each: 4 optimizer updates per generation
step. TRL counts completions, not prompts, and relates its knobs as (trl/trainer/grpo_config.py):

    generation_batch_size = per_device_train_batch_size x world_size x steps_per_generation
    one optimizer update  = per_device_train_batch_size x world_size x gradient_accumulation_steps

`steps_per_generation` counts micro-batches, so the paper's layout is

    generation_batch_size       = 256 x N completions
    gradient_accumulation_steps = 64 x N / (per_device_train_batch_size x world_size)
    steps_per_generation        = 4 x gradient_accumulation_steps  (= 4 optimizer updates per generation)

verl's learning-rate warmup counts training (generation) steps, so the paper's 15 warmup steps are
15 x 4 = 60 optimizer steps in TRL. TRL's sampler drops an incomplete last generation batch, so an epoch
of 39,202 prompts is floor(39202 / 256) = 153 generation steps = 612 optimizer steps.

Memory: the per-device logits tensor (completions x completion length x vocabulary) is what a trainer
that materialises logits holds; TRL 1.16 never does: its fused LM head (`add_fused_lm_head`,
trl/kernels/chunked_logprob.py) scores tiles of 4,096 tokens x 32,768 vocabulary entries. Both numbers
are printed; the warning is about the full tensor, the largest single buffer a naive implementation needs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from fgrpo_sim.validation import check_integer

PAPER_BATCH_PROMPTS = 256  #: prompts per generation (verl training) step
PAPER_MINI_BATCH_PROMPTS = 64  #: prompts per optimizer update
PAPER_WARMUP_GENERATION_STEPS = 15  #: verl lr warmup, counted in training (generation) steps
PAPER_TRAIN_ROWS = 39202  #: DeepScaleR after the paper's filters
GROUP_SIZE_SWEEP = (2, 4, 8, 16, 32)  #: paper Table 2
GPU_MEMORY_BYTES = 80 * 10**9  #: an 80 GB H100/A100
#: TRL 1.16's fused LM head tile: TOKEN_CHUNK_SIZE x _CHUNKED_LOGPROB_CHUNK_SIZE
TRL_LOGPROB_TILE = (4096, 32768)
#: (vocabulary, hidden size, layers) of the paper's models, so a dry run needs no download
KNOWN_MODELS = {
    "Qwen/Qwen2.5-7B": (152064, 3584, 28),
    "Qwen/Qwen3-4B-Base": (151936, 2560, 36),
    "meta-llama/Llama-3.2-3B-Instruct": (128256, 3072, 28),
}


@dataclass(frozen=True)
class BatchPlan:
    """The paper's batch layout resolved for one world size and group size."""

    world_size: int
    num_generations: int
    batch_prompts: int
    mini_batch_prompts: int
    per_device_train_batch_size: int  # completions per device per micro-batch
    gradient_accumulation_steps: int
    generation_batch_size: int  # completions per generation step
    steps_per_generation: int  # micro-batches per generation step (TRL's meaning)
    updates_per_generation: int  # optimizer updates per generation step (x num_iterations PPO epochs)

    def warmup_steps(self, generation_steps: int = PAPER_WARMUP_GENERATION_STEPS) -> int:
        """verl-style warmup (counted in generation steps) as TRL optimizer steps."""
        return generation_steps * self.updates_per_generation

    def steps_per_epoch(self, train_rows: int = PAPER_TRAIN_ROWS) -> tuple[int, int]:
        """(generation steps, optimizer steps) per epoch; TRL drops an incomplete last generation batch."""
        generation_steps = train_rows // self.batch_prompts
        return generation_steps, generation_steps * self.updates_per_generation


def _layout_fix(update: int, mini_batch_prompts: int, num_generations: int, world_size: int, per_device: int) -> str:
    """Why a layout does not split an update evenly, and what to change: the per-device batch sizes that work on
    this many processes (none when the process count does not divide the update), and the process counts that
    work with this per-device batch size."""
    fits = [d for d in range(1, update // world_size + 1) if update % (d * world_size) == 0]
    worlds = [w for w in range(1, update // per_device + 1) if update % (per_device * w) == 0]
    head = (f"per_device_train_batch_size {per_device} x {world_size} processes does not divide the "
            f"{mini_batch_prompts}-prompt mini-batch ({mini_batch_prompts} x {num_generations} = {update} completions "
            "per optimizer update)")
    if fits:
        below = [d for d in fits if d <= per_device]  # the largest that fits memory the recipe planned for
        change = (f"set per_device_train_batch_size to one of {', '.join(map(str, fits))} (e.g. "
                  f"--per_device_train_batch_size {below[-1] if below else fits[0]})")
    else:
        change = f"no per_device_train_batch_size works on {world_size} processes ({world_size} does not divide {update})"
    if not worlds:
        return f"{head}: {change}"
    shown = ", ".join(map(str, worlds[:12])) + (", ..." if len(worlds) > 12 else "")
    return f"{head}: {change}; or, keeping per_device_train_batch_size {per_device}, launch on {shown} processes"


def plan_batches(
    world_size: int,
    num_generations: int,
    per_device_train_batch_size: int,
    *,
    batch_prompts: int = PAPER_BATCH_PROMPTS,
    mini_batch_prompts: int = PAPER_MINI_BATCH_PROMPTS,
    gradient_accumulation_steps: int | None = None,
    generation_batch_size: int | None = None,
    num_iterations: int = 1,
) -> BatchPlan:
    """Derive gradient_accumulation_steps and generation_batch_size, or refuse with the values that work.

    Explicit `gradient_accumulation_steps` / `generation_batch_size` are checked against the layout
    (a recipe written for 8 GPUs launched on 16 is refused with the right value, not silently halved).
    """
    check_integer("world_size", world_size, 1)
    check_integer("num_generations", num_generations, 2)
    check_integer("per_device_train_batch_size", per_device_train_batch_size, 1)
    check_integer("batch_prompts", batch_prompts, 1)
    check_integer("mini_batch_prompts", mini_batch_prompts, 1)
    check_integer("num_iterations", num_iterations, 1)
    if batch_prompts % mini_batch_prompts:
        raise ValueError(f"batch_prompts ({batch_prompts}) must be a multiple of mini_batch_prompts ({mini_batch_prompts})")
    update = mini_batch_prompts * num_generations  # completions per optimizer update
    per_micro = per_device_train_batch_size * world_size  # completions per micro-batch, all devices
    if update % per_micro:
        raise ValueError(_layout_fix(update, mini_batch_prompts, num_generations, world_size, per_device_train_batch_size))
    accumulation = update // per_micro
    if gradient_accumulation_steps is not None and int(gradient_accumulation_steps) != accumulation:
        raise ValueError(
            f"gradient_accumulation_steps must be {accumulation} on {world_size} processes ({mini_batch_prompts} prompts x "
            f"{num_generations} completions / (per_device_train_batch_size {per_device_train_batch_size} x "
            f"{world_size})), got {gradient_accumulation_steps}; leave it unset and it is derived"
        )
    generation = batch_prompts * num_generations
    if generation_batch_size is not None and int(generation_batch_size) != generation:
        raise ValueError(
            f"generation_batch_size must be {generation} ({batch_prompts} prompts x {num_generations} completions), "
            f"got {generation_batch_size}; leave it unset and it is derived"
        )
    return BatchPlan(
        world_size=int(world_size), num_generations=int(num_generations), batch_prompts=int(batch_prompts),
        mini_batch_prompts=int(mini_batch_prompts), per_device_train_batch_size=int(per_device_train_batch_size),
        gradient_accumulation_steps=accumulation, generation_batch_size=generation,
        steps_per_generation=generation // per_micro,
        updates_per_generation=batch_prompts // mini_batch_prompts * int(num_iterations),  # TRL reuses a batch num_iterations times
    )


def model_dimensions(model: str) -> tuple[int, int, int] | None:
    """(vocabulary, hidden size, layers) from the known table, a local folder's config.json, or the tiny model."""
    if model in KNOWN_MODELS:
        return KNOWN_MODELS[model]
    if model == "tiny":
        from fgrpo_sim.llm.tiny import build_char_tokenizer

        return len(build_char_tokenizer()), 32, 2  # build_tiny_qwen2 defaults
    config = Path(model) / "config.json"
    if config.is_file():
        from fgrpo_sim.jsonl import read_json_file

        data = read_json_file(config, "model config")  # damaged: an error naming the file, not a traceback
        if not isinstance(data, dict):
            raise ValueError(f"{config}: expected a JSON object (a model config), got {type(data).__name__}")
        data = data.get("text_config", data)
        try:
            return int(data["vocab_size"]), int(data["hidden_size"]), int(data["num_hidden_layers"])
        except (KeyError, TypeError, ValueError):
            return None
    return None


@dataclass(frozen=True)
class LogitsMemory:
    """Bytes of the per-device logits for one micro-batch."""

    completions: int
    completion_length: int
    vocab_size: int
    full_bf16: int  # the whole [completions, length, vocab] tensor in bf16
    full_fp32: int  # ... in float32 (log-softmax upcast, or cast_lm_head_to_fp32)
    trl_tile: int  # what TRL 1.16's fused LM head holds at once (compute dtype, bf16 on GPU)

    def warning(self, budget: int = GPU_MEMORY_BYTES) -> str | None:
        if self.full_fp32 <= budget:
            return None
        return (
            f"warning: the per-device logits tensor ({self.completions} completions x {self.completion_length} tokens x "
            f"{self.vocab_size} vocabulary) is {_gb(self.full_bf16)} in bf16 / {_gb(self.full_fp32)} in float32, over "
            f"an {_gb(budget)} GPU: TRL 1.16 never materialises it (its fused LM head scores {_gb(self.trl_tile)} tiles), "
            f"but activations grow by the same factor and any trainer that materialises logits would not fit; lower "
            f"per_device_train_batch_size"
        )


def logits_memory(completions: int, completion_length: int, vocab_size: int) -> LogitsMemory:
    elements = int(completions) * int(completion_length) * int(vocab_size)
    tokens = min(int(completions) * int(completion_length), TRL_LOGPROB_TILE[0])
    return LogitsMemory(
        completions=int(completions), completion_length=int(completion_length), vocab_size=int(vocab_size),
        full_bf16=2 * elements, full_fp32=4 * elements, trl_tile=2 * tokens * min(int(vocab_size), TRL_LOGPROB_TILE[1]),
    )


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.2f} MB"


def world_size_from_env(env: dict[str, str]) -> int | None:
    """WORLD_SIZE as set by accelerate launch / torchrun, or None outside a launcher."""
    value = env.get("WORLD_SIZE")
    if value in (None, ""):
        return None
    try:
        size = int(value)
    except ValueError:
        raise ValueError(f"WORLD_SIZE must be an integer >= 1, got {value!r}") from None
    check_integer("WORLD_SIZE", size, 1)
    return size


def describe(plan: BatchPlan, warmup_steps: float, train_rows: int | None, memory: LogitsMemory | None) -> dict:
    """The arithmetic `fgrpo llm train --dry-run` prints."""
    out = asdict(plan)
    out["completions_per_update"] = plan.mini_batch_prompts * plan.num_generations
    out["completions_per_device_per_generation"] = plan.per_device_train_batch_size * plan.steps_per_generation
    out["warmup_steps"] = warmup_steps
    out["warmup_generation_steps"] = warmup_steps / plan.updates_per_generation
    out["paper_warmup_steps"] = plan.warmup_steps()
    rows = PAPER_TRAIN_ROWS if train_rows is None else train_rows
    generation_steps, optimizer_steps = plan.steps_per_epoch(rows)
    out["train_rows"] = rows
    out["generation_steps_per_epoch"] = generation_steps
    out["optimizer_steps_per_epoch"] = optimizer_steps
    if memory is not None:
        out["logits_gb_per_device"] = {
            "full_bf16": round(memory.full_bf16 / 1e9, 3), "full_fp32": round(memory.full_fp32 / 1e9, 3),
            "trl_fused_tile": round(memory.trl_tile / 1e9, 3),
        }
    return out


__all__ = [
    "BatchPlan", "LogitsMemory", "plan_batches", "logits_memory", "model_dimensions", "world_size_from_env",
    "describe", "PAPER_BATCH_PROMPTS", "PAPER_MINI_BATCH_PROMPTS", "PAPER_WARMUP_GENERATION_STEPS",
    "PAPER_TRAIN_ROWS", "GROUP_SIZE_SWEEP", "KNOWN_MODELS",
]
