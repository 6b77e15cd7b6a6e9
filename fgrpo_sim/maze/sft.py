"""Supervised fine-tuning from scratch on target routes (next-token loss on the completion only)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from fgrpo_sim.maze.generator import Maze
from fgrpo_sim.maze.tokenizer import prompt_text, target_text
from fgrpo_sim.validation import check_integer, check_range


def encode_examples(mazes: Sequence[Maze], tokenizer):
    """(input_ids, labels) tensors: prompt + target + right padding; labels are -100 outside the target."""
    import torch

    prompts = tokenizer([prompt_text(m) for m in mazes])["input_ids"]
    targets = tokenizer([target_text(m) for m in mazes])["input_ids"]
    width = max(len(p) + len(t) for p, t in zip(prompts, targets))
    ids = torch.full((len(mazes), width), tokenizer.pad_token_id, dtype=torch.long)
    labels = torch.full((len(mazes), width), -100, dtype=torch.long)
    for i, (p, t) in enumerate(zip(prompts, targets)):
        ids[i, : len(p) + len(t)] = torch.tensor(p + t)
        labels[i, len(p): len(p) + len(t)] = torch.tensor(t)
    return ids, labels


def train_sft(model, tokenizer, mazes: Sequence[Maze], *, steps: int, batch_size: int, lr: float, seed: int,
              weight_decay: float = 0.0, warmup_steps: int = 0, progress: bool = True, callback=None) -> list[dict]:
    """AdamW on the completion tokens, batches drawn with replacement from `mazes`; returns the loss log.

    `callback(step, model)` (optional) is called every step after the update, e.g. for evaluation.
    """
    import torch
    from fgrpo_sim.progress import bar as progress_bar

    steps = int(check_integer("steps", steps, 0, 10**7))
    batch_size = int(check_integer("batch_size", batch_size, 1, 10**6))
    check_range("lr", lr, 0.0, 1.0, low_open=True)
    ids, labels = encode_examples(mazes, tokenizer)
    device = next(model.parameters()).device
    ids, labels = ids.to(device), labels.to(device)
    attention = (ids != tokenizer.pad_token_id).long()
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(1, warmup_steps)))
    model.train()
    log = []
    bar = progress_bar(range(steps), progress=progress, desc="SFT", leave=False)
    for step in bar:
        idx = torch.from_numpy(rng.integers(0, len(mazes), size=batch_size)).to(device)
        out = model(input_ids=ids[idx], attention_mask=attention[idx], labels=labels[idx])
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        loss = float(out.loss.detach())
        log.append({"step": step + 1, "loss": loss})
        bar.set_postfix(loss=f"{loss:.3f}")
        if callback is not None:
            callback(step + 1, model)
    model.eval()
    return log
