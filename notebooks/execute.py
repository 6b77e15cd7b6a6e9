"""Execute the jupytext notebooks into .ipynb files with their outputs (what `make notebooks` runs).

    .venv/bin/python notebooks/execute.py [--out build/notebooks] [NAME.py ...]

Uses only the `notebooks` extra (jupytext, nbclient, ipykernel): each `notebooks/NN_*.py` is read by
jupytext, run by nbclient on a kernel that is this interpreter (a kernelspec written into a private
folder, so no other "python3" kernel is picked up), and written as OUT/NN_*.ipynb. Open the results in
any notebook viewer (VS Code, or JupyterLab after `.venv/bin/pip install jupyterlab`, then
`.venv/bin/jupyter lab build/notebooks`); to edit and rerun, open the `.py` files there with jupytext.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL_NAME = "fgrpo-sim"


def execute(path: Path, out_dir: Path, kernel_dir: Path) -> Path:
    import jupytext
    from nbclient import NotebookClient

    notebook = jupytext.read(path)
    os.environ["JUPYTER_PATH"] = str(kernel_dir)  # our kernelspec first
    NotebookClient(notebook, timeout=600, kernel_name=KERNEL_NAME,
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    target = out_dir / f"{path.stem}.ipynb"
    from fgrpo_sim.atomic_io import write_text_atomic

    write_text_atomic(target, jupytext.writes(notebook, fmt="ipynb"))
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks to run (default: every notebooks/NN_*.py)")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "notebooks", help="output folder")
    args = parser.parse_args()
    paths = args.paths or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fgrpo-kernel-") as kernel_dir:
        spec_dir = Path(kernel_dir) / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "fgrpo-sim (.venv)", "language": "python",
                "env": {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                        "PYTHONWARNINGS": "ignore::DeprecationWarning"}}
        (spec_dir / "kernel.json").write_text(json.dumps(spec))
        for path in paths:
            print(f"{path.name} -> {execute(path, args.out, Path(kernel_dir))}", flush=True)


if __name__ == "__main__":
    main()
