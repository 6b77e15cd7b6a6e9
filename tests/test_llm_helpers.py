"""Shared pieces of the LLM tests: a tiny prompt set, a deterministic mixed reward, trainer builders."""

from __future__ import annotations

from typing import Any

import torch


def parity_reward(completions, **kwargs) -> list[float]:
    """1 when the completion's first character has an even code point: about half the rollouts succeed,
    so groups are mixed and the focal weight is exercised."""
    return [float(len(c) > 0 and ord(c[0]) % 2 == 0) for c in completions]


def tiny_prompts(n: int = 4):
    from datasets import Dataset

    return Dataset.from_list([{"prompt": f"{i}+{i}=", "answer": str(2 * i)} for i in range(n)])


def common_args(tmp_path, **overrides: Any) -> dict[str, Any]:
    args = dict(
        output_dir=str(tmp_path),
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=6,
        max_steps=1,
        logging_steps=1,
        report_to="none",
        gradient_checkpointing=False,
        save_strategy="no",
        warmup_steps=0,
        learning_rate=1e-2,
        bf16=False,
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    args.update(overrides)
    return args


def record_calls(trainer) -> dict[str, list]:
    """Wrap the trainer's reward and loss entry points to record what they see."""
    seen: dict[str, list] = {"advantages": [], "rewards": [], "completions": [], "loss": [], "loss_rows": [], "gen_rows": []}
    calc, loss, gen = trainer._calculate_rewards, trainer._compute_loss, trainer._generate_and_score_completions

    def rows(batch):
        return torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1).detach().clone()

    def generate_and_score(inputs):
        out = gen(inputs)
        seen["gen_rows"].append(rows(out))
        return out

    def calculate_rewards(inputs, prompts, completions, completion_ids_list):
        out = calc(inputs, prompts, completions, completion_ids_list)
        seen["rewards"].append(out.detach().clone())
        seen["completions"].append(list(completions))
        return out

    def compute_loss(model, inputs):
        seen["advantages"].append(inputs["advantages"].detach().clone())
        seen["loss_rows"].append(rows(inputs))
        out = loss(model, inputs)
        seen["loss"].append(out.detach().clone())
        return out

    trainer._calculate_rewards = calculate_rewards
    trainer._compute_loss = compute_loss
    trainer._generate_and_score_completions = generate_and_score
    return seen


def loss_advantages_in_generation_order(seen) -> torch.Tensor:
    """TRL shuffles the generation batch before the loss; undo it by matching token rows (first step only)."""
    gen_rows = seen["gen_rows"][0]
    loss_rows = torch.cat(seen["loss_rows"][: _steps_per_generation(seen)])
    advantages = torch.cat(seen["advantages"][: _steps_per_generation(seen)])
    out = torch.full((gen_rows.shape[0],), float("nan"))
    used = set()
    for row, adv in zip(loss_rows, advantages):
        match = [i for i in range(gen_rows.shape[0]) if i not in used and torch.equal(gen_rows[i], row)]
        assert match, "a loss row matches no generated row"
        used.add(match[0])
        out[match[0]] = adv
    assert not torch.isnan(out).any()
    return out


def _steps_per_generation(seen) -> int:
    total, n = seen["gen_rows"][0].shape[0], 0
    count = 0
    for batch in seen["loss_rows"]:
        count += batch.shape[0]
        n += 1
        if count >= total:
            return n
    return n


def rank_reward(completions, **kwargs) -> list[float]:
    """Global row index < 2 succeeds: with one group of 4 split 2/2 over two processes, rank 0 sees only
    successes and rank 1 only failures, so a per-process mu_hat (1 and 0) differs from the group's (0.5)."""
    import torch.distributed as dist

    rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
    return [float(rank * len(completions) + i < 2) for i in range(len(completions))]


def split_group_worker(rank: int, world_size: int, port: int, out_dir: str, gamma: float) -> None:
    """One process of the split-group run; writes what its loss saw to out_dir/rank{rank}.json."""
    import json
    import os

    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_WORLD_SIZE=str(world_size),
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
    )
    torch.set_num_threads(1)
    result = run_split_group_case(out_dir, gamma, per_device_batch=4 // world_size)
    result["world_size"] = world_size
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as fh:
        json.dump(result, fh)
    # Leave cleanly, then skip interpreter finalization. The trainer's DDP wrapper holds the gloo process group, so
    # destroy_process_group (it drops only the registry's references) can leave gloo's C++ worker threads alive
    # until the interpreter is torn down, and a rank finalizing with them alive can abort ("terminate called
    # without an active exception", SIGABRT; seen under load in CI on torch 2.13, with only the destroy below).
    # gc.collect() frees the trainer's cycles while Python is alive; os._exit then ends the process without the
    # finalization that races gloo's threads. The JSON above is already written and closed. Only for mp.spawn.
    import gc
    import sys

    import torch.distributed as dist

    gc.collect()
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    gc.collect()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_split_group_case(out_dir: str, gamma: float, per_device_batch: int) -> dict:
    from fgrpo_sim.llm.training.config import FocalGRPOConfig
    from fgrpo_sim.llm.tiny import build_tiny
    from fgrpo_sim.llm.training.trainer import FocalGRPOTrainer

    config = FocalGRPOConfig(
        method="grpo", focal_gamma=gamma, **common_args(out_dir, per_device_train_batch_size=per_device_batch)
    )
    model, tokenizer = build_tiny(seed=0)
    trainer = FocalGRPOTrainer(
        model=model, reward_funcs=rank_reward, args=config, train_dataset=tiny_prompts(1), processing_class=tokenizer
    )
    seen = record_calls(trainer)
    prompts: list = []
    calc = trainer._calculate_rewards

    def calculate_rewards(inputs, prompts_, completions, completion_ids_list):
        prompts.extend(prompts_)
        return calc(inputs, prompts_, completions, completion_ids_list)

    trainer._calculate_rewards = calculate_rewards
    trainer.train()
    log = next(h for h in trainer.state.log_history if "focal/weight_mean" in h)
    return {
        "prompts": prompts,
        "gathered_rewards": seen["rewards"][0][:, 0].tolist(),
        "loss_advantages": torch.cat(seen["advantages"]).tolist(),
        "weight_mean": log["focal/weight_mean"],
        "mu_hat_mean": log["focal/mu_hat_mean"],
    }
