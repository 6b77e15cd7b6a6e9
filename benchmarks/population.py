"""Speed of the population simulator; prints one JSON object.

Times `simulate_population` for the default population (512 prompts, 8 actions each) at group sizes
8 and 64: `runs` independent runs batched, B = 64 prompts per step, Adam, evaluation every 50 steps.
steps_per_second counts batched steps (each advances every run); run_steps_per_second multiplies by
runs. A 5-step warm-up call (imports, allocator) is not timed.

Usage: python benchmarks/population.py [--steps 200] [--runs 8] [--device auto]
"""

from __future__ import annotations

import argparse
import json
import platform
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()

    import torch

    from fgrpo_sim.sim.population import PopulationSpec, TrainSpec, make_population, resolve_device, simulate_population

    population = make_population(PopulationSpec())
    device = resolve_device(args.device)
    simulate_population(population, TrainSpec(steps=5, runs=args.runs), device=str(device.type))
    results = {}
    for n in (8, 64):
        spec = TrainSpec(group_size=n, steps=args.steps, runs=args.runs, prompt_batch=64, eval_every=50)
        start = time.perf_counter()
        simulate_population(population, spec, device=str(device.type))
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        results[f"N{n}"] = {"seconds": round(seconds, 3), "steps_per_second": round(args.steps / seconds, 1),
                            "run_steps_per_second": round(args.steps * args.runs / seconds, 1)}
    print(json.dumps({"benchmark": "population", "device": str(device), "prompts": 512, "runs": args.runs,
                      "steps": args.steps, "prompt_batch": 64, "torch": torch.__version__,
                      "machine": platform.machine(), "results": results}))


if __name__ == "__main__":
    main()
