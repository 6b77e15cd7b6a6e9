"""`fgrpo llm export-verl CHECKPOINT OUT`: a verl checkpoint -> a Hugging Face folder for `fgrpo llm eval`.

The work is verl's own model merger (`fgrpo_sim.verl.export`). verl lives in its own venv (.venv-verl, see
docs/verl.md), so from an interpreter without verl the command runs `python -m fgrpo_sim.verl.export` with
the verl interpreter: $FGRPO_VERL_PYTHON if set, else <repository>/.venv-verl/bin/python next to this
package's checkout. Without either it says in one line to run `make install-verl`.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import typer

VERL_PYTHON_ENV = "FGRPO_VERL_PYTHON"


def verl_python() -> str | None:
    """The interpreter that runs the merger: this one if it has verl, else .venv-verl's; None if neither."""
    if importlib.util.find_spec("verl") is not None:
        return sys.executable
    configured = os.environ.get(VERL_PYTHON_ENV)
    if configured:
        if not (Path(configured).is_file() and os.access(configured, os.X_OK)):
            raise ValueError(f"{VERL_PYTHON_ENV}={configured} is not an executable file")
        return configured
    repo = Path(__file__).resolve().parents[2]
    candidate = repo / ".venv-verl" / "bin" / "python"
    return str(candidate) if candidate.is_file() else None


def export_verl_command(
    checkpoint: Path = typer.Argument(..., help="verl run folder (trainer.default_local_dir), global_step_N or "
                                      "global_step_N/actor."),
    out: Path = typer.Argument(..., help="New folder for the Hugging Face model; pass it to `fgrpo llm eval --model`."),
) -> None:
    """Merge a verl checkpoint into a Hugging Face model folder with verl's own model merger (FSDP shards,
    or the full weights verl saved in huggingface/), tokenizer as verl saved it. Runs in .venv-verl."""
    from fgrpo_sim.verl.export import check_export_paths

    check_export_paths(checkpoint, out)  # before looking for verl: a wrong path is named whether or not it is installed
    python = verl_python()
    if python is None:
        raise ValueError("verl is not installed in this environment and no .venv-verl was found: run "
                         f"`make install-verl` in the repository (or set {VERL_PYTHON_ENV}=/path/to/python with verl)")
    if python == sys.executable:
        from fgrpo_sim.verl.export import export_checkpoint

        result = export_checkpoint(checkpoint, out)
        print(f"wrote {result['out']} from {result['checkpoint']}: {result['method']}")
        return
    # the same fgrpo_sim as this process (a checkout or PYTHONPATH), in the verl interpreter
    package_root = str(Path(__file__).resolve().parents[2])
    pythonpath = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.run([python, "-m", "fgrpo_sim.verl.export", str(checkpoint), str(out)],
                          env={**os.environ, "PYTHONPATH": pythonpath}, capture_output=True, text=True)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    if proc.returncode != 0:
        detail = errors[-1][len("error: "):] if errors else (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ValueError(f"export-verl ({python}): {detail}")
    print(proc.stdout.strip().splitlines()[-1])


def register(app: typer.Typer) -> None:
    app.command("export-verl", short_help="verl checkpoint -> Hugging Face folder for `fgrpo llm eval` (verl's merger).")(
        export_verl_command)
