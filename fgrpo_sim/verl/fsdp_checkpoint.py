"""Write a real verl FSDP checkpoint of a small Hugging Face model on CPU (world size 1), with verl's own
`FSDPCheckpointManager`: the layout `fgrpo llm export-verl` reads, for tests and the rehearsal.

    python -m fgrpo_sim.verl.fsdp_checkpoint MODEL_DIR OUT_ACTOR_DIR [--steps K]

The model is loaded with `from_pretrained` (as verl loads `actor_rollout_ref.model.path`, so its config
names its architecture), wrapped with FSDP2 `fully_shard` on a one-process gloo group, optionally given K
AdamW steps (fgrpo_sim.verl.optim) on a fixed token batch, or on a loss the caller gives (the rehearsal:
verl's policy loss), so the weights differ from the start, and saved
with `save_checkpoint(OUT_ACTOR_DIR, global_step=K)`: model / optimizer / extra-state shards,
fsdp_config.json and huggingface/ (config + tokenizer), exactly the files verl's actor worker writes.
Running it needs no GPU; it is not verl's trainer (that needs a GPU, see docs/verl.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def write_fsdp_checkpoint(model_dir: str | Path, out: str | Path, steps: int = 1, lr: float = 1e-2,
                          loss_fn=None) -> dict:
    """Save a world-size-1 FSDP2 checkpoint of `model_dir` into `out` (verl's actor folder); returns its state dict.

    Each of the `steps` AdamW steps minimises `loss_fn(model)` (default: next-token loss on a fixed random batch).
    """
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from transformers import AutoModelForCausalLM
    from verl.utils.checkpoint.fsdp_checkpoint_manager import FSDPCheckpointManager

    from fgrpo_sim.llm.tiny import load_tokenizer
    from fgrpo_sim.validation import check_integer
    from fgrpo_sim.verl.optim import AdamW

    check_integer("steps", steps, 0)
    started_here = not dist.is_initialized()
    if started_here:  # an in-memory store: no port to pick or collide on
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
        tokenizer = load_tokenizer(model_dir)
        mesh = init_device_mesh("cpu", (1,), mesh_dim_names=("fsdp",))
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        optimizer = AdamW(model.parameters(), lr=lr, weight_decay=0.01)
        ids = torch.randint(0, model.config.vocab_size, (2, 16), generator=torch.Generator().manual_seed(0))
        for _ in range(steps):
            loss = model(input_ids=ids, labels=ids).loss if loss_fn is None else loss_fn(model)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        FSDPCheckpointManager(model=model, optimizer=optimizer, lr_scheduler=None,
                              processing_class=tokenizer).save_checkpoint(local_path=str(out), global_step=steps)
        return {k: v.full_tensor().detach().clone() if hasattr(v, "full_tensor") else v.detach().clone()
                for k, v in model.state_dict().items()}
    finally:
        if started_here:
            dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fgrpo_sim.verl.fsdp_checkpoint", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir")
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        write_fsdp_checkpoint(args.model_dir, args.out, args.steps)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
