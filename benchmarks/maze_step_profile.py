"""Where a Maze SFT step spends its time, and what it would cost a GPU in launches and syncs; one JSON object.

One SFT step of the `cpu` preset (Qwen2, 3 layers, hidden 64, batch 32, about 0.2M parameters), as
`fgrpo_sim.maze.sft.train_sft` runs it: forward, backward, clip_grad_norm_, AdamW, scheduler, loss read back.
Printed: seconds per phase (median of --steps steps), top-level torch ops and host syncs per phase
(`fgrpo_sim.sim.step_audit`), and the share of the step that is Python/dispatch overhead rather than
arithmetic (the self time of the 10 busiest aten ops against the step). The RL step adds generation, which is
the same model called once per generated token.

Usage: python benchmarks/maze_step_profile.py [--steps 20] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)

    import numpy as np
    import torch

    from fgrpo_sim.maze.generator import generate_mazes
    from fgrpo_sim.maze.model import build_model, count_parameters
    from fgrpo_sim.maze.presets import get_preset
    from fgrpo_sim.maze.sft import encode_examples
    from fgrpo_sim.maze.tokenizer import build_tokenizer
    from fgrpo_sim.sim.step_audit import count_syncs, count_top_level_ops

    preset = get_preset("cpu")
    tok = build_tokenizer()
    mazes = generate_mazes(256, preset.size, seed=0)
    model = build_model(preset.model, tok, seed=0).to(args.device)
    ids, labels = encode_examples(mazes, tok)
    ids, labels = ids.to(args.device), labels.to(args.device)
    attention = (ids != tok.pad_token_id).long()
    opt = torch.optim.AdamW(model.parameters(), lr=preset.sft_lr)
    rng = np.random.default_rng(0)
    model.train()
    state = {}

    def forward():
        idx = torch.from_numpy(rng.integers(0, len(mazes), size=preset.sft_batch)).to(args.device)
        state["out"] = model(input_ids=ids[idx], attention_mask=attention[idx], labels=labels[idx])

    def backward():
        opt.zero_grad(set_to_none=True)
        state["out"].loss.backward()

    def optimizer():
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    def read_loss():
        float(state["out"].loss.detach())

    phases = {"forward": forward, "backward": backward, "optimizer": optimizer, "read_loss": read_loss}
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    times = {name: [] for name in phases}
    for step in range(args.steps + 2):
        for name, fn in phases.items():
            sync()
            start = time.perf_counter()
            fn()
            sync()
            if step >= 2:  # two warm-up steps
                times[name].append(time.perf_counter() - start)
    counts = {}
    for name, fn in phases.items():  # each phase counted twice (ops, then syncs), after a fresh forward
        forward()
        ops, _ = count_top_level_ops(fn)
        forward()
        with count_syncs() as sites:
            fn()
        counts[name] = {"ops": ops, "syncs": sum(sites.values()), "sync_sites": dict(sites.most_common(4))}

    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for fn in phases.values():
            fn()
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    busiest = {e.key: round(e.self_cpu_time_total / 1e3, 2) for e in events[:10]}
    step_ms = sum(statistics.median(v) for v in times.values()) * 1e3
    print(json.dumps({
        "device": args.device, "parameters": count_parameters(model), "batch": preset.sft_batch,
        "sequence_length": ids.shape[1],
        "ms_per_phase": {k: round(statistics.median(v) * 1e3, 2) for k, v in times.items()},
        "ms_per_step": round(step_ms, 2),
        "ops_and_syncs_per_phase": counts,
        "ops_per_step": sum(c["ops"] for c in counts.values()),
        "syncs_per_step": sum(c["syncs"] for c in counts.values()),
        "busiest_ops_self_ms": busiest,
        "torch_threads": torch.get_num_threads(), "load": round(os.getloadavg()[0], 2),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
