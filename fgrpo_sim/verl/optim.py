"""AdamW that skips weight decay on biases and norm weights, as the TRL trainer's (Hugging Face Trainer) does.

verl builds its optimizer as `getattr(import_module(optim.optimizer_impl), optim.optimizer)(params, lr=...,
weight_decay=..., betas=...)` over the bare parameter tensors, so every tensor decays; Hugging Face's
Trainer (TRL's GRPOTrainer) exempts biases and LayerNorm/RMSNorm weights. The recipes select this class with

    actor_rollout_ref.actor.optim.optimizer_impl=fgrpo_sim.verl.optim actor_rollout_ref.actor.optim.optimizer=AdamW

No names reach the optimizer, so the exempt set is the parameters with fewer than 2 dimensions. For the
paper's models (Qwen2.5, Qwen3, Llama 3.2) those are exactly the biases and norm weights, the set the
Trainer exempts by name (tests/test_verl_recipes.py compares the two on a Qwen2-shaped model). This holds
for FSDP2 (verl's `strategy=fsdp2`, the recipes' choice: DTensors keep their full shape); FSDP1 flattens
parameters into 1-D buffers, so the class refuses a run where every parameter is 1-D.
"""

from __future__ import annotations

import torch


def split_decay(params, weight_decay: float) -> list[dict]:
    """Parameter groups: >= 2-D tensors with weight_decay, the rest (biases, norm weights) with 0."""
    params = list(params)
    if params and isinstance(params[0], dict):
        return params  # already grouped by the caller: leave its choice alone
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    if params and not decay and weight_decay:
        raise ValueError("fgrpo_sim.verl.optim.AdamW: every parameter is 1-D (FSDP1 flat parameters?); biases and "
                         "norms cannot be told apart: use actor.strategy=fsdp2 or optim.optimizer_impl=torch.optim")
    groups = [{"params": decay, "weight_decay": weight_decay}]
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    return groups


class AdamW(torch.optim.AdamW):
    """torch's AdamW with biases and norm weights exempt from weight decay."""

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 1e-2, **kwargs):
        super().__init__(split_decay(params, weight_decay), lr=lr, weight_decay=weight_decay, **kwargs)


__all__ = ["AdamW", "split_decay"]
