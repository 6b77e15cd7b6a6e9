"""`fgrpo llm rehearse`: the whole LLM protocol in miniature on CPU (fgrpo_sim/rehearsal/driver.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer


def rehearse_command(
    ctx: typer.Context,
    out: Path = typer.Option(..., "--out", help="New (or empty) folder for everything the rehearsal makes."),
    jobs: int = typer.Option(2, "--jobs", help="Training runs at a time (one CPU thread each), >= 1. Default: 2."),
    verl_python: Optional[Path] = typer.Option(None, "--verl-python", help="Python of the verl venv for stage 6. "
                                               "Default: .venv-verl/bin/python in the current folder when it "
                                               "exists, else stage 6 is skipped with a line saying so."),
    no_verl: bool = typer.Option(False, "--no-verl", help="Skip stage 6 (verl). Default: run it when a verl venv "
                                 "is found."),
) -> None:
    from fgrpo_sim.atomic_io import check_writable_dir
    from fgrpo_sim.extras import require
    from fgrpo_sim.rehearsal.driver import RECIPES, TITLE, Rehearsal, RehearsalFailed
    from fgrpo_sim.validation import check_integer

    require("trl", "transformers", "accelerate", "datasets", "math_verify", "yaml")  # every stage needs them; before --out is made
    check_integer("--jobs", jobs, 1)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--out {out} exists and is not an empty folder; give a new one")
    check_writable_dir(out, "--out")
    if not RECIPES.is_dir():
        raise ValueError(f"{RECIPES} not found: run the rehearsal from a clone of the repository")
    if verl_python is not None and not verl_python.is_file():
        raise ValueError(f"--verl-python {verl_python} is not a file")
    print(f"{TITLE}\nfolder: {out}", flush=True)
    # the CLI hands down its entry point (fgrpo_sim.cli.main) so the stages run in this process; the driver
    # never imports the CLI, which imports this command (no import circle), and runs `python -m fgrpo_sim` otherwise
    run_cli = (ctx.find_root().obj or {}).get("run_cli") if ctx is not None else None
    rehearsal = Rehearsal(out, jobs=jobs, verl_python=verl_python, echo=lambda line: print(line, flush=True),
                          **({"run_cli": run_cli} if run_cli is not None else {}))
    try:
        stages = rehearsal.run(skip_verl=no_verl)
    except RehearsalFailed as exc:
        print(f"REHEARSAL FAILED: {exc}\n(manifest of what was made: {out / 'manifest.json'})", file=sys.stderr)
        raise typer.Exit(1) from None
    total = sum(s.seconds for s in stages)
    print(f"rehearsal passed in {total:.1f} s; tables: {out / 'report'}/*/table.md; manifest: {out / 'manifest.json'}")


def register(app: typer.Typer) -> None:
    app.command("rehearse", short_help="The paper's protocol in miniature on CPU: data, train, resume, eval, report.",
                help=("Rehearse the paper's LLM protocol end to end on CPU in minutes, with a tiny model and files "
                      "the command writes itself (no hub): prepare-data, GRPO / F-GRPO / low-LR training from "
                      "recipes/tiny/rehearsal (one run killed after its first checkpoint and resumed, checked "
                      "equal to an uninterrupted run), eval of every checkpoint on math, GPQA, IFEval and "
                      "SynLogic files (n = 32), dNLL_rare, the Table 1 and Table 2/3-shaped reports, and the "
                      "verl stages in .venv-verl. One line per stage; OUT/manifest.json lists every file. "
                      "Exit 1 when a check fails. A pipeline test, not a result."))(rehearse_command)
