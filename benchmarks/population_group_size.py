"""Wall time of the group-size study (issues 21, 28) at its defaults; prints one JSON object.

Runs `run_study(GroupSizeStudySpec())` (the same rows as `fgrpo simulate group-size` with its defaults:
2 optimizers x 3 parametrisations x 3 rare shares x 2 learning rates x 10 populations x 10 N x 5 variants x
2 batch seeds = 36,000 trained models, one batched loop per optimizer x parametrisation, CPU) and records the
load average before and after, because the shared 2-core machine is rarely quiet.

Usage: python benchmarks/population_group_size.py [--seeds 2] [--steps 200] [--device cpu|cuda|auto]
(`seconds_per_step` compares devices run with different --steps: benchmarks/gpu_check.sh times the CPU on a few steps)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import replace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--device", default="cpu", help="auto, cpu, cuda or cuda:K (the study's --device)")
    args = parser.parse_args()

    import torch

    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec, run_study, study_rows

    spec = replace(GroupSizeStudySpec(), seeds=args.seeds, steps=args.steps)
    load_before = os.getloadavg()
    start = time.perf_counter()
    frame = run_study(spec, device=args.device)
    if args.device != "cpu" and torch.cuda.is_available():
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    print(json.dumps({
        "seconds": round(seconds, 1), "seconds_per_step": seconds / spec.steps, "steps": spec.steps,
        "device": args.device, "device_name": (torch.cuda.get_device_name() if args.device != "cpu"
                                               and torch.cuda.is_available() else platform.processor() or "cpu"),
        "models": len(study_rows(spec)), "rows": len(frame),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(), "torch": torch.__version__, "python": platform.python_version(),
    }))


if __name__ == "__main__":
    main()
