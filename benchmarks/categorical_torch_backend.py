"""Per-step cost of the categorical simulator's torch backend (the CUDA path) on one mixed-N chunk; one JSON object.

The chunk is the first of the default Fig 2 grid: 68 runs (17 group sizes x 2 gammas x 2 seeds), 128,000 actions,
float32. Printed beside the times:
  ops_per_step, syncs_per_step: top-level torch ops and host syncs of one torch-backend step of that chunk,
    counted on the CPU (`fgrpo_sim.sim.step_audit`): the launch and wait counts a GPU step pays.
  step_seconds: seconds per step of the torch backend on --device (with its CUDA graph there, and without:
    `step_seconds_eager`), then the grid extrapolated (136 runs x 1000 steps = 2 chunks x 1000 steps).
  cpu_step_seconds: the same chunk on this machine's CPU with the default CPU backend (native C kernels when a
    compiler is found), --cpu-steps steps; `speedup_vs_cpu` = cpu_step_seconds / step_seconds.
  device_name, cpu_name, torch_threads, load (1-minute load average when it ran).

Usage: python benchmarks/categorical_torch_backend.py [--steps 20] [--device auto] [--cpu-steps 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time


def cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(device) -> str:
    import torch

    return torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()


def chunk_batch(config, **kw):
    from fgrpo_sim.sim.categorical import CategoricalBatch

    chunk = config.runs()[: config.chunk_runs]
    return CategoricalBatch(config, [r[0] for r in chunk], [r[1] for r in chunk], [r[2] for r in chunk], **kw)


def seconds_per_step(batch, steps: int) -> float:
    import torch

    sync = torch.cuda.synchronize if batch.device.type == "cuda" else (lambda: None)
    for _ in range(2):  # warm-up; on CUDA the second step captures the graph
        batch.step()
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        batch.step()
    sync()
    return (time.perf_counter() - start) / steps


def audit_chunk(config) -> dict:
    """Ops and syncs of one torch-backend step of the chunk, on the CPU."""
    from fgrpo_sim.sim.step_audit import audit

    batch = chunk_batch(config.with_(device="cpu", sampler="torch"))
    batch.step()
    found = audit(batch.step)
    return {"ops_per_step": found["ops"], "syncs_per_step": found["syncs"], "sync_sites": found["sync_sites"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps on --device (after two warm-up steps)")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--cpu-steps", type=int, default=2, help="timed steps of the CPU reference; 0 skips it")
    parser.add_argument("--num-actions", type=int, default=128_000, help="actions (the paper's 128,000)")
    args = parser.parse_args(argv)

    import torch

    from fgrpo_sim.sim.categorical import CategoricalConfig, resolve_device

    device = resolve_device(args.device)
    config = CategoricalConfig(device=str(device), sampler="torch", num_actions=args.num_actions,
                               num_correct=min(10_000, args.num_actions // 2))
    result = {"device": str(device), "device_name": device_name(device), **audit_chunk(config)}
    step = seconds_per_step(chunk_batch(config), args.steps)
    result["step_seconds"] = round(step, 5)
    if device.type == "cuda":
        result["step_seconds_eager"] = round(seconds_per_step(chunk_batch(config, cuda_graph=False), args.steps), 5)
    chunks = len(config.runs()) / config.chunk_runs
    result["grid_seconds_extrapolated"] = round(step * chunks * config.steps, 2)
    if args.cpu_steps > 0:
        cpu = config.with_(device="cpu", sampler="auto")
        cpu_batch = chunk_batch(cpu)
        result["cpu_backend"] = cpu_batch.backend
        result["cpu_step_seconds"] = round(seconds_per_step(cpu_batch, args.cpu_steps), 4)
        result["speedup_vs_cpu"] = round(result["cpu_step_seconds"] / step, 2)
    chunk = config.runs()[: config.chunk_runs]
    result.update({
        "runs_per_chunk": len(chunk), "group_sizes_per_chunk": len({r[0] for r in chunk}),
        "draws_per_chunk_step": sum(r[0] for r in chunk), "steps_timed": args.steps, "cpu_name": cpu_name(),
        "torch": torch.__version__, "torch_threads": torch.get_num_threads(), "load": round(os.getloadavg()[0], 2),
    })
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
