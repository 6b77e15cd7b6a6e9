"""Speed and memory of the categorical simulator on the paper's Fig 2 grid; prints one JSON object.

grid_seconds: the full grid (17 N x 2 gamma x 4 seeds x 1000 steps x 128,000 actions, metrics every 10
  steps) with the default engine. With --steps S < 1000 only S steps are timed and the figure is scaled
  by 1000 / S (the per-step cost is flat over a run: same tensors, same draws per step);
  `grid_steps_timed` and `extrapolated` say so.
reference_seconds: a straightforward implementation for comparison -- one run at a time, N indices
  drawn with torch.multinomial, counts by bincount, the default surrogate's gradient by autograd and
  torch.optim.AdamW (gamma = 0) -- timed for --reference-steps steps of ONE run at each of the 17 group sizes,
  then scaled to the grid (x 8 runs per N x 1000 / reference-steps). Only the timed subset is run. It
  is timed with torch's default thread count and with one thread; the faster is kept per N.
speedup = reference_seconds / grid_seconds. peak_rss_gib: peak resident memory of this process.
ops_per_step, syncs_per_step: top-level torch ops and host syncs of one torch-backend step of a mixed-N chunk,
  counted on the CPU (benchmarks/categorical_torch_backend.py): what a GPU step pays in launches and waits.
device_name; with --cpu-steps S on a GPU: cpu_grid_seconds, the grid on this machine's CPU (default CPU
  backend, S steps timed, scaled to 1000), and speedup_vs_cpu = cpu_grid_seconds / grid_seconds.

Usage: python benchmarks/categorical.py --json [--steps 1000] [--reference-steps 5] [--device auto] [--cpu-steps 20]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time


def reference_step_seconds(n: int, steps: int, config) -> float:
    """Seconds per step of the straightforward per-run loop at group size n."""
    import torch

    from fgrpo_sim.sim.categorical.engine import initial_logits

    k, c = config.num_actions, config.num_correct
    z = initial_logits(config, torch.float32).clone().requires_grad_(True)
    opt = torch.optim.AdamW([z], lr=config.lr, weight_decay=config.weight_decay, eps=config.eps)
    reward = torch.where(torch.arange(k) < c, config.reward_correct, config.reward_wrong)
    gen = torch.Generator().manual_seed(0)

    def one_step():
        p = torch.softmax(z, 0)
        idx = torch.multinomial(p.detach(), n, replacement=True, generator=gen)
        counts = torch.bincount(idx, minlength=k).float()
        adv = reward - reward[idx].mean()  # R_i - mean R of the group
        if config.surrogate == "distinct":
            objective = (reward * (counts > 0) * p).sum() / n
        elif config.surrogate == "draws":
            objective = (counts * adv * p).sum() / n
        else:
            objective = (counts * adv * torch.log(p)).sum() / n
        opt.zero_grad()
        (-objective).backward()
        opt.step()

    one_step()  # warm-up
    start = time.perf_counter()
    for _ in range(steps):
        one_step()
    return (time.perf_counter() - start) / steps


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (the only output format)")
    parser.add_argument("--steps", type=int, default=1000, help="steps of the grid to time (1..1000; default 1000)")
    parser.add_argument("--reference-steps", type=int, default=5, help="steps per N timed for the reference")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda for the engine")
    parser.add_argument("--backend", default="auto", help="engine backend: auto, native, torch")
    parser.add_argument("--cpu-steps", type=int, default=0, help="on a GPU: also time this many grid steps on the "
                        "CPU (0: no CPU comparison)")
    parser.add_argument("--no-audit", action="store_true", help="skip counting ops and syncs (one CPU step)")
    args = parser.parse_args(argv)
    if not 1 <= args.steps <= 1000:
        parser.error("--steps must be in [1, 1000]")

    import torch

    from fgrpo_sim.sim.categorical import CategoricalConfig, run_grid

    config = CategoricalConfig(steps=args.steps, device=args.device, sampler=args.backend)
    run_grid(config.with_(steps=2, group_sizes=(2,), gammas=(0.0,), seeds=(0,)), None, progress=False)  # compile/warm
    start = time.perf_counter()
    table = run_grid(config, None, progress=False)
    timed = time.perf_counter() - start
    grid_seconds = timed * 1000 / args.steps

    from categorical_torch_backend import audit_chunk, device_name  # this folder's sibling script

    from fgrpo_sim.sim.categorical import resolve_device

    device = resolve_device(args.device)
    extra = {"device_name": device_name(device)}
    if not args.no_audit:
        found = audit_chunk(config)
        extra.update(ops_per_step=found["ops_per_step"], syncs_per_step=found["syncs_per_step"])
    if args.cpu_steps > 0 and device.type != "cpu":
        start = time.perf_counter()
        run_grid(config.with_(device="cpu", sampler="auto", steps=args.cpu_steps), None, progress=False)
        extra["cpu_grid_seconds"] = round((time.perf_counter() - start) * 1000 / args.cpu_steps, 2)
        extra["speedup_vs_cpu"] = round(extra["cpu_grid_seconds"] / grid_seconds, 2)

    # the reference's many small ops suffer from thread wake-ups on a busy machine: time it with torch's
    # default threads and with one thread, and keep the faster per N (the honest, harder comparison)
    threads = torch.get_num_threads()
    per_step = {}
    for n in config.group_sizes if args.reference_steps > 0 else ():
        timings = [reference_step_seconds(n, args.reference_steps, config)]
        torch.set_num_threads(1)
        timings.append(reference_step_seconds(n, args.reference_steps, config))
        torch.set_num_threads(threads)
        per_step[n] = min(timings)
    runs_per_n = len(config.gammas) * len(config.seeds)
    reference_seconds = sum(per_step.values()) * runs_per_n * 1000
    result = {
        "grid_seconds": round(grid_seconds, 2),
        "grid_seconds_timed": round(timed, 2),
        "grid_steps_timed": args.steps,
        "extrapolated": args.steps < 1000,
        "runs": len(config.runs()),
        "rows": len(table),
        "reference_seconds": round(reference_seconds, 1),
        "reference_steps_per_n": args.reference_steps,
        "reference_ms_per_step": {str(n): round(t * 1000, 2) for n, t in per_step.items()},
        "speedup": round(reference_seconds / grid_seconds, 2) if reference_seconds else None,
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3),
        "device": str(torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                                   ("cpu" if args.device == "auto" else args.device))),
        "backend": args.backend,
        **extra,
        "torch_threads": torch.get_num_threads(),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
