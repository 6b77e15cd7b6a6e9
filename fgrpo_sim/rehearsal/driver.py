"""`fgrpo llm rehearse --out DIR`: the paper's LLM protocol end to end in miniature, on CPU, in minutes.

Every stage runs the command a real run uses, on files the rehearsal writes itself (`inputs`) and a
tiny Qwen2 model saved to DIR/model (`fgrpo_sim.llm.tiny`), which every stage loads from disk:

1. prepare-data  `fgrpo llm prepare-data` on a DeepScaleR-shaped file: length filter, conflicting duplicates
                 dropped, the paper's system prompt; the report must equal `inputs.PREPARE_EXPECTED`.
2. train         `fgrpo llm train --dry-run` of the three Qwen2.5-7B recipes on 16 GPUs without data, then
                 `fgrpo llm train` from recipes/tiny/rehearsal/{grpo,f-grpo,grpo-low-lr}.yaml (the Qwen2.5-7B
                 recipes in miniature: same keys), 2 epochs, a checkpoint per epoch. The F-GRPO run is killed
                 (SIGKILL) once its first checkpoint is written, then resumed with --resume_from_checkpoint;
                 a second, uninterrupted F-GRPO run must have generated the same prompts at every step and end
                 with the same parameters (max |diff| <= PARAM_TOLERANCE), else the rehearsal fails.
3. eval          `fgrpo llm eval` on every checkpoint x {math500, gpqa_diamond, ifeval, synlogic} files, n = 32,
                 the paper's Table 9 prompts of the qwen2.5 family; SynLogic graded by a stand-in checkout.
4. dnll-rare     `fgrpo llm dnll-rare` (App. M.2): base-model trajectories on the math file, every checkpoint.
5. report        `fgrpo llm report` twice: a Table-1-shaped table (GRPO vs F-GRPO) and a Table-2/3-shaped one
                 (GRPO and the low-LR control vs F-GRPO), paper columns per benchmark, the pass@k plots.
6. verl          `fgrpo_sim.verl.rehearsal` in the verl venv (.venv-verl), or one line saying it was skipped.

dNLL runs before the report (the paper's Table 2 shows it next to the pass@k columns). Each stage prints one
line with its time; DIR/manifest.json lists every file made, by stage. Training runs go through
`fgrpo_sim.rehearsal.probe`, which only logs each generation batch's problem ids for the comparison.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from fgrpo_sim.packaged import recipes_root

ROOT = Path(__file__).resolve().parent.parent.parent
RECIPES = recipes_root() / "tiny" / "rehearsal"
#: run name -> (recipe, table label, role in the Table 1 comparison, paper rows for Table 1 and Tables 2/3)
RUNS = {
    "grpo": ("grpo.yaml", "GRPO", "baseline", "table1:qwen2.5-7b:GRPO", "table2:qwen2.5-7b:GRPO-N8"),
    "f-grpo": ("f-grpo.yaml", "F-GRPO", "focal", "table1:qwen2.5-7b:F-GRPO", "table2:qwen2.5-7b:F-GRPO-N8"),
    "grpo-low-lr": ("grpo-low-lr.yaml", "GRPO low-LR", "baseline", None, "table3:qwen2.5-7b:GRPO-lowLR"),
}
KILLED_RUN = "f-grpo"
BENCHMARKS = ("math500", "gpqa_diamond", "ifeval", "synlogic")
N_SAMPLES = 32
MAX_NEW_TOKENS = 16
REPORT_K = 8  # <= N_SAMPLES / 2: the default (conditional) test and the u-statistic one both test pass@8
PARAM_TOLERANCE = 1e-5
TITLE = "Rehearsal on a tiny random model (CPU): a pipeline test, not a result"


class RehearsalFailed(RuntimeError):
    """A stage ran but its check failed (e.g. the resumed run differs from the uninterrupted one)."""


@dataclass
class Stage:
    name: str
    seconds: float = 0.0
    status: str = "ok"
    detail: str = ""
    files: list[str] = field(default_factory=list)


def run_in_subprocess(argv: list[str]) -> None:
    """`python -m fgrpo_sim ARGV`, its output passed through and its exit code raised as SystemExit, as the
    CLI's own `main` does. The default way to run a command: the rehearsal imports nothing of the command line
    (which imports the rehearsal's command). `fgrpo llm rehearse` hands the driver the in-process entry point
    instead (faster: no interpreter start per command)."""
    done = subprocess.run([sys.executable, "-m", "fgrpo_sim", *argv], capture_output=True, text=True)
    print(done.stdout, end="")
    print(done.stderr, end="", file=sys.stderr)
    raise SystemExit(done.returncode)


def _json_tail(text: str) -> dict:
    return json.loads(text[text.index("{\n"):] if "{\n" in text else text)


class Rehearsal:
    def __init__(self, out: Path, *, jobs: int = 2, verl_python: Path | None = None, echo: Callable[[str], None] = print,
                 run_cli: Callable[[list[str]], None] = run_in_subprocess):
        self.out, self.jobs, self.verl_python, self.echo = out, jobs, verl_python, echo
        self.run_cli = run_cli  # the `fgrpo` entry point: exits like fgrpo_sim.cli.main (SystemExit with the code)
        self.stages: list[Stage] = []
        self.inputs: dict[str, Path] = {}
        self.model = out / "model"
        self.checkpoints: dict[str, list[Path]] = {}
        self.evals: dict[tuple[str, str], Path] = {}  # (checkpoint folder, benchmark) -> eval JSONL
        self.dnll: dict[str, float] = {}

    def _fgrpo(self, *args: Any) -> str:
        """Run `fgrpo ARGS` through the real entry point; its stdout, or RehearsalFailed."""
        buffer, errors = io.StringIO(), io.StringIO()
        code = 0
        # stderr is kept for a failure: on success it holds only "wrote ..." lines between the stage lines
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(errors):
            try:
                self.run_cli([str(a) for a in args])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if code != 0:
            print(errors.getvalue()[-3000:], end="", file=sys.stderr)
            raise RehearsalFailed(f"`fgrpo {' '.join(str(a) for a in args[:3])} ...` exited {code} (its error is above)")
        return buffer.getvalue()

    # ------------------------------------------------------------------ bookkeeping
    def _files(self) -> set[str]:
        return {p.relative_to(self.out).as_posix() for p in self.out.rglob("*") if p.is_file()}

    def run_stage(self, number: int, name: str, body: Callable[[], str]) -> None:
        before = self._files()
        stage = Stage(name)
        start = time.perf_counter()
        try:
            stage.detail = body()
            if stage.detail.startswith("skipped"):
                stage.status = "skipped"
        except BaseException as exc:
            stage.status, stage.detail = "FAILED", str(exc)
            raise
        finally:
            stage.seconds = time.perf_counter() - start
            stage.files = sorted(self._files() - before)
            self.stages.append(stage)
            self.echo(f"[{number}/6] {name:<12} {stage.status:<7} {stage.seconds:6.1f} s  {stage.detail}")
            self.write_manifest()

    def write_manifest(self) -> Path:
        from fgrpo_sim.atomic_io import write_text_atomic

        path = self.out / "manifest.json"
        data = {"title": TITLE, "total_seconds": round(sum(s.seconds for s in self.stages), 1),
                "stages": [{"name": s.name, "status": s.status, "seconds": round(s.seconds, 1), "detail": s.detail,
                            "files": s.files} for s in self.stages]}
        write_text_atomic(path, json.dumps(data, indent=2) + "\n")
        return path

    # ------------------------------------------------------------------ 1. data
    def prepare(self) -> str:
        from transformers.utils import logging as hf_logging

        from fgrpo_sim.llm.tiny import build_tiny, save_tiny
        from fgrpo_sim.llm.training.config import PAPER_SYSTEM_PROMPT
        from fgrpo_sim.rehearsal.inputs import MAX_PROMPT_TOKENS, PREPARE_EXPECTED, write_inputs

        hf_logging.disable_progress_bar()  # the stage lines are the output; bars would interleave with them
        self.inputs = write_inputs(self.out / "inputs")
        save_tiny(*build_tiny(seed=0), self.model)
        self.prepared = self.out / "data" / "deepscaler-prepared.jsonl"
        report = _json_tail(self._fgrpo("llm", "prepare-data", self.inputs["deepscaler"], "--out", self.prepared,
                                   "--tokenizer", self.model, "--max-prompt-tokens", MAX_PROMPT_TOKENS, "--json"))
        got = {k: report[k] for k in PREPARE_EXPECTED}
        if got != PREPARE_EXPECTED:
            raise RehearsalFailed(f"prepare-data reported {got}, expected {PREPARE_EXPECTED}")
        stored = json.loads(self.prepared.read_text().splitlines()[0])["prompt"][0]
        if stored != {"role": "system", "content": PAPER_SYSTEM_PROMPT}:
            raise RehearsalFailed(f"prepared prompts do not start with the paper's system prompt: {stored}")
        dropped = ", ".join(f"{v} {k}" for k, v in report["dropped"].items())
        return f"{report['rows_read']} rows -> {report['kept']} kept (dropped: {dropped})"

    # ------------------------------------------------------------------ 2. training
    def _train_command(self, name: str, output_dir: Path, log: Path, *extra: str) -> list[str]:
        recipe = RECIPES / RUNS[name][0]
        return [sys.executable, "-m", "fgrpo_sim.rehearsal.probe", str(log), "llm", "train", "--config", str(recipe),
                "--no-progress", "--model", str(self.model), "--train_data", str(self.prepared),
                "--output_dir", str(output_dir), *extra]

    def _spawn(self, command: list[str], logfile: Path) -> subprocess.Popen:
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
        logfile.parent.mkdir(parents=True, exist_ok=True)
        with open(logfile, "w") as fh:
            return subprocess.Popen(command, stdout=fh, stderr=subprocess.STDOUT, env=env)

    def _train(self, name: str, output_dir: Path) -> None:
        log = self.out / "logs" / f"{output_dir.name}.prompts.jsonl"
        proc = self._spawn(self._train_command(name, output_dir, log), self.out / "logs" / f"{output_dir.name}.log")
        if proc.wait() != 0:
            raise RehearsalFailed(f"training {output_dir.name} exited {proc.returncode}; see logs/{output_dir.name}.log")

    def _train_killed_and_resumed(self, output_dir: Path) -> int:
        """Start the run, SIGKILL it once its first checkpoint is complete, resume it; the checkpoint's step."""
        log = self.out / "logs" / f"{output_dir.name}.prompts.jsonl"
        proc = self._spawn(self._train_command(KILLED_RUN, output_dir, log), self.out / "logs" / f"{output_dir.name}.log")
        first = None
        while proc.poll() is None:
            done = sorted(output_dir.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name[11:]))
            if done and first is None:
                first = int(done[0].parent.name.split("-")[1])
            # the checkpoint is complete once training has gone on past it (a generation batch at its step)
            if first is not None and any(r["step"] >= first for r in _read_lines(log)):
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                break
            time.sleep(0.05)
        if proc.returncode != -signal.SIGKILL:
            raise RehearsalFailed(f"{output_dir.name} ended (exit {proc.returncode}) before it could be killed after "
                                  "its first checkpoint; see logs")
        last = max(int(p.name.split("-")[1]) for p in output_dir.glob("checkpoint-*"))
        if last != first:
            raise RehearsalFailed(f"{output_dir.name} was killed too late: checkpoint-{last} exists after checkpoint-{first}")
        metrics = output_dir / "metrics.jsonl"  # the recipes' metrics_file: a killed run must leave its curves
        if metrics.is_file() and not any(r.get("step", -1) >= first for r in _read_lines(metrics)):
            raise RehearsalFailed(f"{metrics} has no line for step {first} after the kill")
        resumed_log = self.out / "logs" / f"{output_dir.name}.resumed.prompts.jsonl"
        proc = self._spawn(self._train_command(KILLED_RUN, output_dir, resumed_log, "--resume_from_checkpoint",
                                               str(output_dir / f"checkpoint-{first}")),
                           self.out / "logs" / f"{output_dir.name}.resumed.log")
        if proc.wait() != 0:
            raise RehearsalFailed(f"resuming {output_dir.name} exited {proc.returncode}; see logs/{output_dir.name}.resumed.log")
        return first

    def launch_checks(self) -> str:
        """The GPU recipes the tiny ones mirror, checked as a user would before a launch: --dry-run on 16 GPUs,
        without the data file (a laptop has none)."""
        plans = []
        for recipe, *_ in RUNS.values():
            plan = _json_tail(self._fgrpo("llm", "train", "--config", recipes_root() / "qwen2.5-7b" / recipe, "--dry-run",
                                     "--num-processes", 16, "--json"))
            if not plan.get("launch") or plan["config"].get("gradient_accumulation_steps") is None:
                raise RehearsalFailed(f"the dry-run of recipes/qwen2.5-7b/{recipe} printed no launch arithmetic")
            plans.append(plan["config"]["gradient_accumulation_steps"])
        return f"dry-run of the 3 Qwen2.5-7B recipes on 16 GPUs ok (gradient_accumulation_steps {plans[0]})"

    def train(self) -> str:
        dry_run = self.launch_checks()
        runs = self.out / "runs"
        reference = runs / f"{KILLED_RUN}-uninterrupted"
        jobs: list[Callable[[], Any]] = [lambda: self._train_killed_and_resumed(runs / KILLED_RUN)]
        jobs += [lambda name=name: self._train(name, runs / name) for name in RUNS if name != KILLED_RUN]
        jobs.append(lambda: self._train(KILLED_RUN, reference))
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            results = [f.result() for f in [pool.submit(job) for job in jobs]]
        first = results[0]
        order, max_diff = compare_resumed(runs / KILLED_RUN, reference, self.out / "logs", first)
        for name in RUNS:
            ckpts = sorted(runs.joinpath(name).glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
            if len(ckpts) < 2:
                raise RehearsalFailed(f"{name}: expected a checkpoint per epoch (>= 2), found {len(ckpts)}")
            self.checkpoints[name] = ckpts
        steps = ", ".join(f"{n} {[int(p.name.split('-')[1]) for p in c]}" for n, c in self.checkpoints.items())
        return (f"{dry_run}; checkpoints {steps}; {KILLED_RUN} killed after checkpoint-{first} and resumed: same "
                f"prompts in {order} generation batches, max |param diff| {max_diff:.1e} vs uninterrupted")

    # ------------------------------------------------------------------ 3. eval
    def _eval(self, model: Path, benchmark: str, out: Path, *extra: Any) -> Path:
        args = ["llm", "eval", "--model", model, "--data", self.inputs[benchmark], "--benchmark", benchmark,
                "--out", out, "--samples", N_SAMPLES, "--max-new-tokens", MAX_NEW_TOKENS, "--model-family", "qwen2.5",
                "--seed", 0, "--no-progress", "--json", *extra]
        if benchmark == "math500":
            args.append("--fallback-last-number")  # the random model never writes \boxed{} (see recipes/tiny)
        if benchmark == "synlogic":
            args += ["--synlogic-repo", self.inputs["synlogic_repo"]]
        summary = json.loads(self._fgrpo(*args))
        if summary["samples"] != N_SAMPLES * summary["problems"]:
            raise RehearsalFailed(f"{out}: {summary['samples']} samples for {summary['problems']} problems")
        return out

    def evaluate(self) -> str:
        count = 0
        for name, ckpts in self.checkpoints.items():
            for ckpt in ckpts:
                for bench in BENCHMARKS:
                    path = self.out / "eval" / name / ckpt.name / f"{bench}.jsonl"
                    self.evals[(str(ckpt), bench)] = self._eval(ckpt, bench, path)
                    count += 1
        self.base_math = self._eval(self.model, "math500", self.out / "eval" / "base" / "math500.jsonl",
                                    "--save-completions")
        return (f"{count} eval files ({len(self.evals) // len(BENCHMARKS)} checkpoints x {len(BENCHMARKS)} benchmarks) "
                f"+ base model math with completions; n = {N_SAMPLES}, Table 9 prompts (qwen2.5)")

    # ------------------------------------------------------------------ 4. dNLL_rare
    def dnll_rare(self) -> str:
        models = [ckpt for ckpts in self.checkpoints.values() for ckpt in ckpts]
        args = ["llm", "dnll-rare", "--trajectories", self.base_math, "--data", self.inputs["math500"],
                "--base", self.model, "--top-fraction", 0.25, "--device", "cpu", "--no-progress", "--json"]
        for model in models:
            args += ["--model", model]
        result = json.loads(self._fgrpo(*args))
        from fgrpo_sim.atomic_io import write_text_atomic

        write_text_atomic(self.out / "dnll_rare.json", json.dumps(result, indent=2) + "\n")
        self.dnll = {str(m): float(result["models"][str(m)]["dnll_rare"]) for m in models}
        finals = {name: self.dnll[str(ckpts[-1])] for name, ckpts in self.checkpoints.items()}
        return (f"{result.get('selected', result.get('num_selected', '?'))} rare correct base trajectories; final "
                + ", ".join(f"{n} {v:+.3f}" for n, v in finals.items()))

    # ------------------------------------------------------------------ 5. report
    def _manifest(self, path: Path, comparisons: list[tuple[str, list[tuple[str, str, str | None]]]]) -> Path:
        """comparisons: (name, [(run, role, paper_row)]) -> a report manifest CSV with every checkpoint x benchmark.
        A run in a second comparison is labelled with that comparison's baseline, so its table rows tell apart."""
        rows, seen = [], set()
        for comparison, members in comparisons:
            baseline = RUNS[members[0][0]][1]
            for run, role, paper_row in members:
                label = RUNS[run][1] if run not in seen else f"{RUNS[run][1]} (vs {baseline})"
                seen.add(run)
                for epoch, ckpt in enumerate(self.checkpoints[run], start=1):
                    step = int(ckpt.name.split("-")[1])
                    for bench in BENCHMARKS:
                        rows.append({"comparison": comparison, "role": role, "method": label, "run": run,
                                     "epoch": epoch, "step": step, "compute": step, "benchmark": bench,
                                     "file": os.path.relpath(self.evals[(str(ckpt), bench)], path.parent),
                                     "dnll_rare": f"{self.dnll[str(ckpt)]:.6f}", "paper_row": paper_row or ""})
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        return path

    def report(self) -> str:
        table1 = self._manifest(self.out / "report" / "table1-manifest.csv", [
            ("GRPO vs F-GRPO", [("grpo", "baseline", RUNS["grpo"][3]), ("f-grpo", "focal", RUNS["f-grpo"][3])])])
        table23 = self._manifest(self.out / "report" / "table2-3-manifest.csv", [
            ("GRPO (N = 4)", [("grpo", "baseline", RUNS["grpo"][4]), ("f-grpo", "focal", RUNS["f-grpo"][4])]),
            ("GRPO low-LR", [("grpo-low-lr", "baseline", RUNS["grpo-low-lr"][4]),
                             ("f-grpo", "focal", "table3:qwen2.5-7b:F-GRPO")])])
        from fgrpo_sim.rehearsal.checks import ReportMismatch, check_report

        shapes, checked = [], 0
        for manifest, folder, shape in ((table1, "table1", "Table 1 shape"), (table23, "table2-3", "Table 2/3 shape")):
            self._fgrpo("llm", "report", manifest, "--out-dir", self.out / "report" / folder, "--k", REPORT_K,
                   "--title", f"{TITLE} ({shape})", "--no-progress")  # the default, calibrated test
            try:
                checked += check_report(self.out / "report" / folder, manifest)
            except ReportMismatch as exc:
                raise RehearsalFailed(f"report {folder}: {exc}") from None
            selection = json.loads((self.out / "report" / folder / "selection.json").read_text())
            shapes.append(f"{folder}: " + ", ".join(f"{s['method']} step {s['step']}" for s in selection["selected"]))
        return (f"selected (App. L.4) {'; '.join(shapes)}; {checked} report numbers recomputed from the eval files "
                "and equal")

    # ------------------------------------------------------------------ 6. verl
    def verl(self) -> str:
        python = self.verl_python
        if python is None:
            candidate = Path(".venv-verl") / "bin" / "python"
            python = candidate if candidate.exists() else None
        if python is None:
            return "skipped: no .venv-verl here (`make install-verl`, or --verl-python PATH)"
        probe = subprocess.run([str(python), "-c", "import importlib.util as u; "
                                "print(u.find_spec('fgrpo_sim.verl.rehearsal') is not None)"],
                               capture_output=True, text=True)
        if probe.returncode != 0 or probe.stdout.strip() != "True":
            raise RehearsalFailed(f"{python} cannot import fgrpo_sim.verl.rehearsal: {probe.stderr.strip()[-300:]}")
        out = self.out / "verl"
        (self.out / "logs").mkdir(exist_ok=True)
        with open(self.out / "logs" / "verl.log", "w") as log:  # its stage lines shown as they come
            proc = subprocess.Popen([str(python), "-m", "fgrpo_sim.verl.rehearsal", "--out", str(out), "--model",
                                     str(self.model), "--data", str(self.prepared)],
                                    stdout=subprocess.PIPE, stderr=log, text=True)
            for line in proc.stdout:
                log.write(line)
                if line.strip():
                    self.echo(f"      {line.rstrip()}")
            proc.wait()
        if proc.returncode != 0:
            raise RehearsalFailed(f"fgrpo_sim.verl.rehearsal exited {proc.returncode}; see logs/verl.log")
        manifest = json.loads((out / "manifest.json").read_text())
        exported = manifest.get("exported_model")
        if not exported:
            return f"verl stages ok in {python}; no exported checkpoint to evaluate"
        # the exported verl checkpoint goes through the same `fgrpo llm eval` as the TRL checkpoints
        exported = Path(exported) if Path(exported).is_absolute() else out / exported
        path = self._eval(exported, "math500", self.out / "eval" / "verl-exported" / "math500.jsonl")
        from fgrpo_sim.rehearsal.checks import counts_from_eval

        n, c = counts_from_eval(path)
        return (f"verl stages ok ({python}); the exported verl checkpoint evaluated by `fgrpo llm eval`: "
                f"{int(n.sum())} samples, {int(c.sum())} correct (eval/verl-exported/math500.jsonl)")

    def run(self, skip_verl: bool = False) -> list[Stage]:
        # Everything is local: offline mode turns any hub lookup into an error instead of a wait (before
        # transformers is imported, which reads these once); the training subprocesses inherit it.
        for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
            os.environ.setdefault(var, "1")
        import torch

        # The tiny model's matrices are far too small for intra-op threads: on 2 cores, two threads per
        # forward pass only contend (measured: eval 10-20x slower under load). Training subprocesses get
        # OMP_NUM_THREADS=1 for the same reason and run --jobs at a time instead.
        torch.set_num_threads(1)
        self.out.mkdir(parents=True, exist_ok=True)
        self.run_stage(1, "prepare-data", self.prepare)
        self.run_stage(2, "train", self.train)
        self.run_stage(3, "eval", self.evaluate)
        self.run_stage(4, "dnll-rare", self.dnll_rare)
        self.run_stage(5, "report", self.report)
        self.run_stage(6, "verl", (lambda: "skipped (--no-verl)") if skip_verl else self.verl)
        return self.stages


def _read_lines(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip().endswith("}")]


def compare_resumed(resumed: Path, reference: Path, logs: Path, first: int) -> tuple[int, float]:
    """RehearsalFailed unless the killed-and-resumed run equals the uninterrupted one: the same problem ids in
    every generation batch, and final parameters within PARAM_TOLERANCE. (batches compared, max |diff|)."""
    from safetensors.torch import load_file

    before = [r for r in _read_lines(logs / f"{resumed.name}.prompts.jsonl") if r["step"] < first]
    after = _read_lines(logs / f"{resumed.name}.resumed.prompts.jsonl")
    combined = before + after
    expected = _read_lines(logs / f"{reference.name}.prompts.jsonl")
    if not after:  # a batch buffered in the checkpoint may be replayed, but the rest must be generated anew
        raise RehearsalFailed(f"the run resumed from checkpoint-{first} generated nothing")
    if combined != expected:
        bad = next(i for i, (a, b) in enumerate(zip(combined + [None] * len(expected), expected + [None] * len(combined)))
                   if a != b)
        def show(lines: list[dict]) -> str:  # each prompt once (TRL repeats it N times in a row)
            return (f"step {lines[bad]['step']} prompts {list(dict.fromkeys(lines[bad]['problem_ids']))}"
                    if bad < len(lines) else "missing")

        raise RehearsalFailed(f"RESUME IS NOT THE SAME RUN: generation batch {bad} differs: resumed {show(combined)}, "
                              f"uninterrupted {show(expected)}")
    got, want = ([(r["step"], r["loss"]) for r in _read_lines(run / "metrics.jsonl") if "loss" in r]
                 for run in (resumed, reference))
    if want:  # the recipes' metrics_file: the resumed run's log must read as one run, step by step
        if [s for s, _ in got] != [s for s, _ in want] or any(abs(x - y) > PARAM_TOLERANCE for (_, x), (_, y) in zip(got, want)):
            raise RehearsalFailed(f"RESUME IS NOT THE SAME RUN: metrics.jsonl steps/losses {got} differ from the "
                                  f"uninterrupted run's {want}")
    a, b = load_file(str(resumed / "model.safetensors")), load_file(str(reference / "model.safetensors"))
    if set(a) != set(b):
        raise RehearsalFailed("the resumed and uninterrupted models have different parameter names")
    diff = max(float((a[k].float() - b[k].float()).abs().max()) for k in a)
    if not diff <= PARAM_TOLERANCE:
        raise RehearsalFailed(f"RESUME IS NOT THE SAME RUN: final parameters differ by up to {diff:.3g} "
                              f"(> {PARAM_TOLERANCE:g}) from the uninterrupted run")
    return len(combined), diff
