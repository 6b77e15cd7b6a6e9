"""Per-step cost of the categorical simulator's `torch` backend (the CUDA path) on the paper's Fig 2 grid.

Times CategoricalBatch.step() of the torch backend for one chunk of the default grid (68 runs: 17 group
sizes x 2 gammas x 2 seeds, 128,000 actions, float32) and extrapolates to the full grid (136 runs x 1000
steps). Per step it also times the sampler alone (`sample_counts_torch`), the part whose random streams
are keyed per run, and the uniforms alone: `stream_uniforms` (per-run counter-based streams) against
one shared `torch.rand` generator (what the backend used before). Prints one JSON object.

Usage: python benchmarks/categorical_torch_backend.py [--steps 3] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="timed steps (after one warm-up step)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    args = parser.parse_args(argv)

    import torch

    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    config = CategoricalConfig(device=args.device, sampler="torch")
    chunk = config.runs()[: config.chunk_runs]
    batch = CategoricalBatch(config, [r[0] for r in chunk], [r[1] for r in chunk], [r[2] for r in chunk])
    batch.step()  # warm-up
    sync = torch.cuda.synchronize if batch.device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    for _ in range(args.steps):
        batch.step()
    sync()
    step_seconds = (time.perf_counter() - start) / args.steps
    weights = batch.unnormalised_probs()
    sync()
    start = time.perf_counter()
    for _ in range(args.steps):
        batch.sample_counts(weights)
    sync()
    sample_seconds = (time.perf_counter() - start) / args.steps
    # the random numbers alone: per-run counter-based streams against one shared torch.Generator (the old way)
    from fgrpo_sim.sim.categorical.sampling import run_keys, stream_uniforms

    sizes = sorted(set(r[0] for r in chunk))
    per_n = len(chunk) // len(sizes)
    keys = run_keys([r[2] for r in chunk[:per_n]])
    gen = torch.Generator(device=batch.device).manual_seed(0)
    timings = {}
    for name, draw in (("stream_uniforms", lambda n: stream_uniforms(keys, 1, n, batch.device)),
                       ("torch_rand", lambda n: torch.rand((per_n, n), generator=gen, device=batch.device,
                                                           dtype=torch.float64))):
        best = float("inf")
        for _ in range(max(args.steps, 3)):
            sync()
            start = time.perf_counter()
            for n in sizes:
                draw(n)
            sync()
            best = min(best, time.perf_counter() - start)
        timings[name] = best
    chunks = len(config.runs()) / len(chunk)
    print(json.dumps({
        "step_seconds_per_chunk": round(step_seconds, 3),
        "sample_seconds_per_chunk": round(sample_seconds, 3),
        "grid_seconds_extrapolated": round(step_seconds * chunks * config.steps, 1),
        "uniforms_seconds_per_chunk": {k: round(v, 4) for k, v in timings.items()},
        "draws_per_chunk_step": per_n * sum(sizes),
        "runs_per_chunk": len(chunk), "steps_timed": args.steps, "device": str(batch.device),
        "torch_threads": torch.get_num_threads(), "machine": platform.machine(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
