"""Evaluation throughput of `fgrpo llm eval` on the transformers backend: the chunked request shape against
the old one (tiny model, CPU), printed as one JSON object.

* old: one prompt row per sample (n = 1 requests), `batch_size` consecutive samples per generate call,
  each row's prompt tokenised separately (the request shape before chunks).
* new: the run loop's plan (`plan_calls`): the samples of one problem in a call form a chunk whose
  prompt is tokenised once and repeated (`TransformersSampler.sample`), `batch_size` samples per call.

Both shapes generate exactly `max_new_tokens` tokens per sample (min_new_tokens = max_new_tokens), so the
workloads are identical in size and only the request shape differs. They run alternately (old, new, old,
...) and the medians of `--repeats` rounds are compared, so both see the same machine load. The new
shape's real gain is on vLLM (one request with n samples shares the prompt's prefill and KV cache and
lets the engine schedule every problem at once); that needs a GPU and is not measured here.

Usage: python benchmarks/eval_throughput.py [--problems 8 --n 16 --max-new-tokens 32 --batch-size 32 --repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=8)
    parser.add_argument("--n", type=int, default=16, help="samples per problem")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 = steadier on a shared machine)")
    args = parser.parse_args()

    import torch
    import transformers

    from fgrpo_sim.llm.training.config import PAPER_SYSTEM_PROMPT
    from fgrpo_sim.llm.evaluation.evaluate import EvalSettings, TransformersSampler, pending_jobs, plan_calls
    from fgrpo_sim.llm.tiny import build_tiny

    torch.set_num_threads(args.threads)
    model, tokenizer = build_tiny(seed=0)
    settings = EvalSettings(model="tiny", data="-", benchmark="generic", n=args.n, max_new_tokens=args.max_new_tokens,
                            batch_size=args.batch_size, system_prompt=PAPER_SYSTEM_PROMPT)
    sampler = TransformersSampler(model, tokenizer, settings)
    original_generate = model.generate

    def fixed_length_generate(*a, **kw):  # every sample exactly max_new_tokens long, in both shapes
        return original_generate(*a, min_new_tokens=args.max_new_tokens, **kw)

    model.generate = fixed_length_generate
    problems = [{"problem_id": f"q{i}", "problem": f"{i % 10}+{(3 * i) % 10}=", "answer": "0"}
                for i in range(args.problems)]
    jobs = pending_jobs(problems, args.n, set())

    def old_shape() -> int:
        done = 0
        for start in range(0, len(jobs), args.batch_size):
            batch = jobs[start : start + args.batch_size]
            done += len(sampler.generate([p["problem"] for p, _ in batch], start))
        return done

    def new_shape() -> int:
        done = 0
        for call in plan_calls(jobs, sampler, settings):
            results = sampler.sample([(c.problem["problem"], len(c.indices), c.seed(0)) for c in call])
            done += sum(len(r) for r in results)
        return done

    old_shape(), new_shape()  # warm-up
    rates: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(args.repeats):
        for name, fn in (("old", old_shape), ("new", new_shape)):
            start = time.perf_counter()
            samples = fn()
            rates[name].append(samples / (time.perf_counter() - start))
    ratios = [new / old for new, old in zip(rates["new"], rates["old"])]
    print(json.dumps({
        "backend": "transformers (CPU)",
        "problems": args.problems, "n": args.n, "samples_per_round": len(jobs), "max_new_tokens": args.max_new_tokens,
        "batch_size": args.batch_size, "repeats": args.repeats, "torch_threads": args.threads,
        "old_samples_per_second_median": round(statistics.median(rates["old"]), 2),
        "new_samples_per_second_median": round(statistics.median(rates["new"]), 2),
        "old_samples_per_second_range": [round(min(rates["old"]), 2), round(max(rates["old"]), 2)],
        "new_samples_per_second_range": [round(min(rates["new"]), 2), round(max(rates["new"]), 2)],
        "paired_ratio_new_over_old_median": round(statistics.median(ratios), 3),
        "paired_ratio_range": [round(min(ratios), 3), round(max(ratios), 3)],
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
                   f"torch {torch.__version__}, transformers {transformers.__version__}",
    }, indent=2))


if __name__ == "__main__":
    main()
