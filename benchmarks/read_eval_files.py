"""Reading eval files at the paper's scale (issue 37): `fgrpo passk`, `fgrpo plan` and pyarrow's own reader.

Writes, in a temporary folder, what `fgrpo llm eval` writes for MATH500 at 1024 samples (500 problems x 1024
samples = 512k lines: problem_id, sample_index, correct, status, num_tokens, finished) and the same at 2048
samples with `--save-completions` text (about 600 bytes a line), then times each command as its own process
(wall seconds and peak resident memory, from the OS's accounting of the finished child):

* `fgrpo passk FILE` and `fgrpo plan FILE`, the commands a user runs;
* `pyarrow.json.read_json(FILE)` in a fresh Python: the reference (the issue's target: within 3x of it);
* the strict line reader alone (`results_io._read_lines`, what every reader did before): the old cost.

and a paper-sized `fgrpo llm report`: 9 benchmarks x 20 checkpoints x 7 methods = 1260 manifest rows, each
file smaller than the paper's (default 100 problems x 64 samples; symlinks to one file per method and
benchmark, each still read on its own), `--k 8 --iterations 40 --no-figure` so that reading dominates; once
with the columnar reader and once with the strict one (FGRPO_STRICT_READER=1 in this script's wrapper).

Each command runs once untimed (bytecode cached, file in the page cache), then twice timed; the faster run
counts. The children run without PYTHONDONTWRITEBYTECODE, so their imports come from cached bytecode as on a
user's install. Each command is also timed on a 4-line file: its start-up (imports; `plan` builds its
theory functions), so that "read" = whole - start-up is the cost of the file itself. Ratios are taken within
one run (the machine may be shared: the load average is printed before and after).

Usage: python benchmarks/read_eval_files.py [--problems 500] [--samples 1024] [--text-samples 2048]
       [--report-problems 100] [--report-samples 64] [--skip-text] [--skip-report] [--skip-strict]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Runs a command, then prints its wall seconds and the peak RSS (MiB) of the child (the largest of its
#: process tree that was waited for: the command's own process).
_TIMER = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
          "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
          "print(rc, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)")

#: The strict reader for the report's second run: the columnar path switched off inside that process only.
_STRICT_REPORT = ("import sys; from fgrpo_sim.metrics import results_io; "
                  "results_io._read_columns = lambda path: None; "
                  "from fgrpo_sim.cli import main; sys.exit(main(sys.argv[1:]))")

_WORDS = ["Let", "$x$", "be", "\\frac{1}{2}", "so", "the", "answer", "is", "\"so\"", "\u2019", "\n", "\\sqrt{3}", "we"]


def write_eval_file(path: Path, problems: int, samples: int, text_words: int = 0, seed: int = 0) -> None:
    """An eval file as `fgrpo llm eval` writes it (`completion` only with `text_words`)."""
    rng = random.Random(seed)
    texts = [json.dumps(" ".join(rng.choice(_WORDS) for _ in range(text_words)) + " \\boxed{3}", ensure_ascii=False)
             for _ in range(64)] if text_words else []
    with open(path, "w", encoding="utf-8") as fh:
        for p in range(problems):
            rate = rng.random()
            lines = []
            for s in range(samples):
                ok = rng.random() < rate
                tail = f', "completion": {texts[s % 64]}' if texts else ""
                lines.append(f'{{"problem_id": "math500/{p}", "sample_index": {s}, "correct": {"true" if ok else "false"}, '
                             f'"status": "{"correct" if ok else "wrong"}", "num_tokens": {rng.randint(100, 4000)}, '
                             f'"finished": true{tail}}}\n')
            fh.write("".join(lines))


_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def timed(args: list[str], runs: int = 5) -> dict:
    """The faster of `runs` timed runs after one untimed one: wall seconds and peak RSS of the command."""
    best = None
    for run in range(runs + 1):
        out = subprocess.run([sys.executable, "-c", _TIMER, *args], capture_output=True, text=True, check=True,
                             env=_ENV).stdout
        rc, wall, rss = out.split()
        if rc != "0":
            raise SystemExit(f"{' '.join(args)} exited {rc}")
        if run and (best is None or float(wall) < best["wall_s"]):
            best = {"wall_s": round(float(wall), 3), "peak_rss_mb": round(float(rss), 1)}
    return best


def fgrpo(*args: str) -> list[str]:
    return [sys.executable, "-m", "fgrpo_sim", *args]


def _commands(path: Path, strict: bool) -> dict[str, list[str]]:
    commands = {"pyarrow_read_json": [sys.executable, "-c", f"import pyarrow.json as j; j.read_json({str(path)!r})"],
                "passk": fgrpo("passk", str(path)), "plan": fgrpo("plan", str(path))}
    if strict:
        commands["strict_reader"] = [sys.executable, "-c", "from pathlib import Path; from fgrpo_sim.metrics import "
                                     f"results_io; results_io._read_lines(Path({str(path)!r}))"]
    return commands


def measure_file(path: Path, tiny: Path, strict: bool) -> dict:
    row = {"file_mb": round(path.stat().st_size / 2**20, 1), "lines": sum(1 for _ in open(path, "rb"))}
    startup = {name: timed(args) for name, args in _commands(tiny, strict).items()}
    for name, args in _commands(path, strict).items():
        row[name] = timed(args)
        row[name]["startup_s"] = startup[name]["wall_s"]
        row[name]["read_s"] = round(row[name]["wall_s"] - startup[name]["wall_s"], 3)
    reference = row["pyarrow_read_json"]
    for name in [name for name in row if isinstance(row[name], dict) and name != "pyarrow_read_json"]:
        row[f"{name}_vs_pyarrow"] = {"wall": round(row[name]["wall_s"] / reference["wall_s"], 2),
                                     "read": round(row[name]["read_s"] / max(reference["read_s"], 1e-3), 2)}
    return row


def measure_report(folder: Path, problems: int, samples: int, strict: bool) -> dict:
    """9 benchmarks x 20 checkpoints x 7 methods; one comparison, GRPO its baseline."""
    benchmarks = ["math500", "aime24", "aime25", "amc23", "minerva", "olympiadbench", "gpqa_diamond", "ifeval",
                  "synlogic"]
    methods = ["GRPO", "F-GRPO", "DAPO", "F-DAPO", "CISPO", "F-CISPO", "GRPO-lowLR"]
    (folder / "files").mkdir()
    rows = ["comparison,role,method,run,epoch,step,compute,benchmark,file"]
    for m, method in enumerate(methods):
        for b, benchmark in enumerate(benchmarks):
            source = folder / "files" / f"{method}-{benchmark}.jsonl"
            write_eval_file(source, problems, samples, seed=100 * m + b)
            for step in range(1, 21):
                link = folder / "files" / f"{method}-{step}-{benchmark}.jsonl"
                link.symlink_to(source.name)
                rows.append(f"main,{'baseline' if m == 0 else 'focal'},{method},{method},{step},{step},{step},"
                            f"{benchmark},files/{link.name}")
    manifest = folder / "manifest.csv"
    manifest.write_text("\n".join(rows) + "\n")
    args = ["llm", "report", str(manifest), "--out-dir", str(folder / "out"), "--k", "8",
            "--no-figure", "--no-progress"]
    result = {"rows": len(rows) - 1, "problems_per_file": problems, "samples_per_problem": samples,
              "columnar": timed(fgrpo(*args), runs=1)}
    if strict:
        result["strict"] = timed([sys.executable, "-c", _STRICT_REPORT, *args], runs=1)
        result["strict_vs_columnar"] = round(result["strict"]["wall_s"] / result["columnar"]["wall_s"], 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=500)
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--text-samples", type=int, default=2048)
    parser.add_argument("--report-problems", type=int, default=100)
    parser.add_argument("--report-samples", type=int, default=64)
    parser.add_argument("--skip-text", action="store_true")
    parser.add_argument("--skip-report", action="store_true")
    parser.add_argument("--skip-strict", action="store_true", help="Leave out the strict reader's (slow) runs.")
    args = parser.parse_args()
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor()) if os.path.exists("/proc/cpuinfo") else platform.processor()
    result = {"machine": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
              "load_before": [round(x, 2) for x in os.getloadavg()]}
    import pyarrow

    result["pyarrow"] = pyarrow.__version__
    with tempfile.TemporaryDirectory(prefix="fgrpo-read-") as tmp:
        folder = Path(tmp)
        tiny = folder / "tiny.jsonl"
        write_eval_file(tiny, 1, 4)
        path = folder / "math500.jsonl"
        write_eval_file(path, args.problems, args.samples)
        result["eval_file"] = measure_file(path, tiny, not args.skip_strict)
        path.unlink()
        if not args.skip_text:
            path = folder / "math500-text.jsonl"
            write_eval_file(path, args.problems, args.text_samples, text_words=75)
            tiny_text = folder / "tiny-text.jsonl"
            write_eval_file(tiny_text, 1, 4, text_words=75)
            result["text_file"] = measure_file(path, tiny_text, not args.skip_strict)
            path.unlink()
        if not args.skip_report:
            result["report"] = measure_report(folder, args.report_problems, args.report_samples, not args.skip_strict)
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
