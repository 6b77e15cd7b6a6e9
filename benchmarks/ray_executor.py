"""`--executor ray` against the local executor on the group-size study (issue 47); prints one JSON object.

One run times, on a reduced study of the default's 6 chunks (optimizer x parametrisation; --populations and
--steps scale it down): the local executor (each chunk timed), Ray with 1 worker and Ray with 2 workers (local Ray
sessions started for the purpose; their start time is reported apart), as ratios to the local wall time; Ray's
overhead per task (a no-op task's round trip through `run_on_ray`, and the 1-worker run's extra wall time per
chunk); and, from the measured per-chunk times scaled linearly to the default study (10 populations, 200 steps),
an estimate of the default study's wall time on 8 and 64 workers (chunks placed longest first on the least
loaded worker; a chunk is one task, so more workers than chunks do not help). Checks that both Ray runs give the
local table exactly. The shared machine is loaded by other sessions: the load average is recorded before and after.

Usage: python benchmarks/ray_executor.py [--populations 2] [--steps 20] [--noop-tasks 100]
"""

from __future__ import annotations

import argparse
import heapq
import json
import logging
import os
import platform
import time
from dataclasses import replace


def _noop():
    return None


def _estimate(chunk_seconds: list[float], workers: int, overhead: float) -> float:
    """Wall time of the chunks on `workers` workers: longest first onto the least loaded worker."""
    loads = [0.0] * min(workers, len(chunk_seconds))
    for seconds in sorted(chunk_seconds, reverse=True):
        heapq.heapreplace(loads, loads[0] + seconds + overhead)
    return max(loads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--populations", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--noop-tasks", type=int, default=100)
    args = parser.parse_args()

    import pandas as pd
    import ray
    import torch

    from fgrpo_sim.sim import executor as ex
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec, chunks, run_study, train_chunk

    default = GroupSizeStudySpec()
    spec = replace(default, populations=args.populations, steps=args.steps)
    load_before = os.getloadavg()

    per_chunk, frames = {}, []
    start = time.perf_counter()
    for optimizer, kind in chunks(spec):
        t = time.perf_counter()
        frames.append(train_chunk(spec, optimizer, kind, "cpu"))
        per_chunk[f"{optimizer}/{kind}"] = time.perf_counter() - t
    local_wall = time.perf_counter() - start
    local = pd.concat(frames, ignore_index=True)

    runs = {}
    for workers in (1, 2):
        t = time.perf_counter()
        ray.init(num_cpus=workers, num_gpus=0, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.ERROR)
        started = time.perf_counter() - t
        t = time.perf_counter()
        table = run_study(spec, device="cpu", executor=ex.Executor("ray"))
        wall = time.perf_counter() - t
        entry = {"ray_start_s": round(started, 2), "wall_s": round(wall, 2), "ratio_to_local": round(wall / local_wall, 3),
                 "equal_to_local": bool(table.equals(local))}
        if workers == 2:
            t = time.perf_counter()
            ex.run_on_ray(_noop, [()] * args.noop_tasks, lambda i, r: None, executor=ex.Executor("ray"))
            entry["noop_task_s"] = round((time.perf_counter() - t) / args.noop_tasks, 4)
        ray.shutdown()
        runs[f"ray_{workers}_worker{'s' if workers > 1 else ''}"] = entry

    overhead = max(0.0, (runs["ray_1_worker"]["wall_s"] - local_wall) / len(per_chunk))
    scale = (default.populations / spec.populations) * (default.steps / spec.steps)
    paper_chunks = [s * scale for s in per_chunk.values()]
    print(json.dumps({
        "machine": f"{platform.machine()} {os.cpu_count()} CPUs, {platform.processor() or platform.platform()}",
        "torch_threads": torch.get_num_threads(), "ray": ray.__version__,
        "study": {"chunks": len(per_chunk), "populations": spec.populations, "steps": spec.steps,
                  "rows": int(local[local["step"] == 0].shape[0])},
        "local": {"wall_s": round(local_wall, 2), "per_chunk_s": {k: round(v, 2) for k, v in per_chunk.items()}},
        **runs,
        "ray_overhead_per_chunk_s": round(overhead, 2),
        "estimate_default_study": {
            "scale_from_measured": scale,
            "local_s": round(sum(paper_chunks), 0),
            "workers_8_s": round(_estimate(paper_chunks, 8, overhead), 0),
            "workers_64_s": round(_estimate(paper_chunks, 64, overhead), 0),
            "note": "linear in populations x steps from the measured per-chunk times on this loaded machine; "
                    "one task per chunk, so 8 and 64 workers both give the longest chunk",
        },
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }, indent=1))


if __name__ == "__main__":
    main()
