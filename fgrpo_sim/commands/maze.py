"""`fgrpo maze ...`: the single-solution Maze experiment (paper Sec. 5.2): show, run, table."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import typer

from fgrpo_sim.commands.options import focal_smoothing_option, list_option
from fgrpo_sim.commands.json_output import emit_json
from fgrpo_sim.recorded_times import quoted

app = typer.Typer(
    help="Single-solution Maze (paper Sec. 5.2): perfect mazes, a tiny transformer, SFT then GRPO vs F-GRPO.",
    no_args_is_help=True,
)


@app.command("show", short_help="Print mazes with their unique route (and tokens).")
def show(
    size: int = typer.Option(9, "--size", help="Grid squares per side incl. border; odd, in [5, 101] (paper: 17)."),
    seed: int = typer.Option(0, "--seed", help="Random seed of the maze (>= 0)."),
    count: int = typer.Option(1, "--count", help="How many mazes to print, in [1, 100]."),
    tokens: bool = typer.Option(False, "--tokens", help="Also print the prompt and target as model tokens."),
) -> None:
    """Print mazes with their unique route and target moves (legend: '#' wall, '.' open, 'S'/'G' start/goal, '*' route)."""
    from fgrpo_sim.maze.generator import generate_mazes
    from fgrpo_sim.maze.tokenizer import prompt_text, target_text
    from fgrpo_sim.validation import check_integer

    check_integer("count", count, 1, 100)
    for i, maze in enumerate(generate_mazes(count, size, seed)):
        if i:
            typer.echo("")
        typer.echo(maze.render())
        typer.echo(f"start {maze.start} goal {maze.goal} route: {' '.join(maze.route)} ({len(maze.route)} moves)")
        if tokens:
            typer.echo(f"prompt: {prompt_text(maze)}")
            typer.echo(f"target: {target_text(maze)}")


@app.command("run", short_help="SFT, then GRPO / F-GRPO for every N x gamma -> Table 4.")
def run(
    preset: str = typer.Option("cpu", "--preset", help=f"Settings: cpu ({quoted('maze-cpu')}, "
                                                       "benchmarks/RESULTS.md), paper (App. K, "
                                                       "needs a GPU and days), tiny (seconds, for tests)."),
    n: Optional[Sequence[int]] = list_option(None, "--n", int, help="Group sizes N, comma-separated, each in [2, 4096] "
                                                      "(default: the preset's; cpu: 4,8,16)."),
    gamma: Optional[Sequence[float]] = list_option(None, "--gamma", float, help="Focal exponents, comma-separated, each >= 0; 0 is "
                                                              "GRPO (default: 0,0.5,1)."),
    runs: Optional[int] = typer.Option(None, "--runs", help="Independent runs per N x gamma (seeds 0..R-1), in [1, 100] (default 3)."),
    focal_smoothing: float = focal_smoothing_option(" A folder keeps one alpha (config.json)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Results folder (default: runs/figure-data/maze/PRESET, "
                                                          "where `fgrpo figures fig6-maze` looks). Finished runs in "
                                                          "it are reused, so an interrupted run resumes."),
    rl_lr: Optional[float] = typer.Option(None, "--rl-lr", help="Override the preset's RL learning rate, in (0, 1] "
                                                                "(e.g. a learning-rate control, paper App. N)."),
    rl_steps: Optional[int] = typer.Option(None, "--rl-steps", help="Override the preset's RL steps, in [1, 10^7]."),
    sft_from: Optional[Path] = typer.Option(None, "--sft-from", help="Reuse the SFT checkpoints of another results "
                                                                     "folder (same SFT settings) instead of retraining."),
    device: str = typer.Option("auto", "--device", help="auto (cuda if available), cpu or cuda."),
    summary_copy: Optional[Path] = typer.Option(None, "--summary-copy", help="Also write summary.json here "
                                                                              "(e.g. fgrpo_sim/results/maze-results.json)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show progress bars on stderr."),
    yes: bool = typer.Option(False, "--yes", help="Start a cpu or paper preset run without asking (it takes "
                                                  "minutes to days; the tiny preset never asks)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing --summary-copy that is not a maze summary, "
                               "or a summary.json / timings.json in --out that this tool did not write."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object (what summary.json holds) instead of the table."),
) -> None:
    """SFT once per seed, then GRPO / F-GRPO for every N x gamma; prints the Table 4 analogue."""
    from dataclasses import replace

    from fgrpo_sim.atomic_io import check_replaceable, check_writable, check_writable_dir, write_text_atomic
    from fgrpo_sim.figures.maze import format_table
    from fgrpo_sim.jsonl import dumps
    from fgrpo_sim.maze.experiment import (REWRITTEN, check_sft_source, check_summary_copy, is_summary,
                                           results_folder, run_experiment)
    from fgrpo_sim.maze.presets import get_preset
    from fgrpo_sim.sim.categorical import resolve_device
    from fgrpo_sim.extras import require
    from fgrpo_sim.validation import check_choice, check_integer, check_range

    require("transformers")  # the Maze policy is a transformers model; checked before --out is made
    spec = get_preset(preset)
    group_sizes = list(n) if n is not None else None
    gammas = list(gamma) if gamma is not None else None
    if group_sizes is not None:
        check_integer("--n", group_sizes, 2, 4096)
    if gammas is not None:
        check_range("--gamma", gammas, 0.0, 100.0)
    if runs is not None:
        check_integer("--runs", runs, 1, 100)
    check_choice("--device", device, ("auto", "cpu", "cuda"))  # TRL places the model itself: no cuda:K
    device = resolve_device(device).type  # a cuda request on a CPU-only machine fails here, not in torch
    spec = spec.with_grid(group_sizes, gammas, runs)
    check_range("--focal-smoothing", focal_smoothing, 0.0, float("inf"), high_open=True)
    spec = replace(spec, focal_smoothing=float(focal_smoothing) + 0.0)
    if rl_lr is not None:
        check_range("rl_lr", rl_lr, 0.0, 1.0, low_open=True)
        spec = replace(spec, rl_lr=float(rl_lr))
    if rl_steps is not None:
        check_integer("rl_steps", rl_steps, 1, 10**7)
        spec = replace(spec, rl_steps=int(rl_steps))
    out = out if out is not None else Path("runs/figure-data/maze") / spec.name
    # Everything that could fail after hours of training is checked before the first step.
    check_writable_dir(out, "--out")
    results_folder(out, force).check(REWRITTEN)
    if summary_copy is not None:
        check_writable(summary_copy, "--summary-copy")
        check_summary_copy(summary_copy, out)
        check_replaceable(summary_copy, "--summary-copy", is_summary, force=force)
    if sft_from is not None:
        check_sft_source(sft_from, spec.to_dict(), "--sft-from")
    _confirm_long_run(spec, yes)
    summary = run_experiment(spec, out, progress=progress, device=device, log=lambda m: typer.echo(m, err=True),
                             sft_from=sft_from, force=force)
    if summary_copy is not None:
        write_text_atomic(summary_copy, dumps(summary, sort_keys=True, separators=(",", ":")) + "\n",
                          is_ours=is_summary, force=force, name="--summary-copy")
    if as_json:
        emit_json(summary)
        return
    typer.echo(f"Held-out pass@K in % (unbiased estimator, {spec.eval_samples} samples per maze, "
               f"{spec.n_heldout} mazes), mean ± 95% t-interval half-width over {spec.seeds} seed(s):")
    typer.echo(format_table(summary))
    typer.echo(f"results: {out}")


def _confirm_long_run(spec, yes: bool) -> None:
    """Say how long the run takes before it starts; ask on a terminal, else require --yes (like figures --full)."""
    import sys

    if spec.name == "tiny" or yes:
        return
    expected = quoted("maze-cpu") + " for the default grid" if spec.name == "cpu" else "days on a GPU (App. K)"
    runs = len(spec.group_sizes) * len(spec.gammas) * spec.seeds
    typer.echo(f"fgrpo maze run --preset {spec.name}: {spec.seeds} SFT run(s) and {runs} RL runs, expected "
               f"{expected} (benchmarks/RESULTS.md); finished runs in --out are reused.", err=True)
    if not sys.stdin.isatty():
        raise ValueError(f"maze run --preset {spec.name} takes {expected}: add --yes to start it "
                         "(--preset tiny runs in seconds)")
    if not typer.confirm("Start it?", err=True):
        raise ValueError("not started (add --yes to start without asking)")


@app.command("table", short_help="Table 4 analogue of a results folder or summary JSON.")
def table(
    out: Path = typer.Argument(Path("runs/figure-data/maze/cpu"), help="Results folder of a `fgrpo maze run`, or a "
                                                                       "summary JSON it wrote (summary.json, "
                                                                       "fgrpo_sim/results/maze-results.json)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object instead of the table."),
) -> None:
    """Re-summarise a results folder (also a partial one) and print the Table 4 analogue; a summary JSON
    (e.g. the committed fgrpo_sim/results/maze-results.json) is printed as it is. It only reads: the folder (a
    read-only one too) is left as it is; `fgrpo maze run` writes summary.json."""
    from fgrpo_sim.maze.experiment import summarize

    if out.is_file():
        _print_summary(_read_summary(out), as_json)
        return
    if not (out / "config.json").exists():
        raise ValueError(f"out must be a results folder of `fgrpo maze run` or its summary JSON "
                         f"(no config.json in {out})")
    _print_summary(summarize(out), as_json)


def _print_summary(summary: dict, as_json: bool) -> None:
    from fgrpo_sim.figures.maze import format_table

    if as_json:
        emit_json(summary)
    else:
        typer.echo(format_table(summary))


def _read_summary(path: Path) -> dict:
    import json

    try:
        summary = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"out must be a summary JSON of `fgrpo maze run`; {path} is not readable JSON ({err})") from None
    if not isinstance(summary, dict) or not {"cells", "preset"} <= set(summary):
        raise ValueError(f"out must be a summary JSON of `fgrpo maze run` (keys cells, preset); {path} is not one")
    return summary


@app.command("compare", short_help="Paired difference A - B of pass@K over seeds, 95% CI.")
def compare(
    a: Path = typer.Argument(..., help="Results folder of run A."),
    b: Path = typer.Argument(..., help="Results folder of run B (may be the same folder as A)."),
    n: Sequence[int] = list_option("8", "--n", int, one="a paired comparison of two runs at one group size",
                                   help="Group size N of both runs, in [2, 4096]; one value here."),
    gamma_a: float = typer.Option(..., "--gamma-a", help="gamma of run A (>= 0)."),
    gamma_b: float = typer.Option(0.0, "--gamma-b", help="gamma of run B (>= 0; default 0 = GRPO)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (n, gamma_a, gamma_b, seeds, a, b, a_minus_b per K) instead of the table."),
) -> None:
    """Paired (same seed, same SFT checkpoint) difference A - B of held-out pass@1/128/256, 95% t-CI over seeds."""
    from fgrpo_sim.maze.experiment import paired_difference
    from fgrpo_sim.validation import check_integer, check_range

    (n,) = n  # one value here (list_option)
    check_integer("--n", n, 2, 4096)
    check_range("--gamma-a", gamma_a, 0.0, 100.0)
    check_range("--gamma-b", gamma_b, 0.0, 100.0)
    gamma_a, gamma_b = gamma_a + 0.0, gamma_b + 0.0  # -0 is 0 (and prints as 0)
    result = paired_difference(a, gamma_a, b, gamma_b, n)
    if as_json:
        emit_json({"n": n, "gamma_a": gamma_a, "gamma_b": gamma_b, **result})
        return
    typer.echo(f"N={n}: A = gamma {gamma_a:g} in {a}; B = gamma {gamma_b:g} in {b}; seeds {result['seeds']}")
    typer.echo("| K | A (%) | B (%) | A - B (points), 95% CI | per seed |")
    typer.echo("| --- | --- | --- | --- | --- |")
    for k, d in result["a_minus_b"].items():
        ci = "n/a" if d["lo"] is None else f"[{100 * d['lo']:+.1f}, {100 * d['hi']:+.1f}]"
        seeds = ", ".join(f"{100 * v:+.1f}" for v in d["values"])
        typer.echo(f"| pass@{k} | {100 * result['a'][k]['mean']:.1f} | {100 * result['b'][k]['mean']:.1f} | "
                   f"{100 * d['mean']:+.1f} {ci} | {seeds} |")
