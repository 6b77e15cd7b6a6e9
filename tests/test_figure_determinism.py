"""`make figures` twice leaves a clone clean: a figure regenerated in a fresh process (other hash seed,
other thread count) is byte-identical, PNG and PDF, and carries no date or library version."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# population-shared is the figure whose bytes changed on regeneration; a shorter run of the same compute
# (torch simulation, pandas means, matplotlib drawing, save_figure) keeps the test at seconds
_SCRIPT = """
import sys
import torch
torch.set_num_threads(int(sys.argv[2]))
import fgrpo_sim.figures.population as population
from fgrpo_sim.figures.registry import FigureOptions, save_figure
population.SHARED_QUICK.update(prompts=48, heldout=48, steps=40, runs=2, batch=16, eval_every=10)
data = population.compute_shared(FigureOptions(progress=False))
save_figure(population.draw_shared(data), sys.argv[1], "population-shared")
"""


def _render(out: Path, hash_seed: str, threads: int) -> dict[str, bytes]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    subprocess.run([sys.executable, "-c", _SCRIPT, str(out), str(threads)], check=True, env=env,
                   cwd=Path(__file__).resolve().parents[1])
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_population_figure_is_byte_identical_across_runs(tmp_path):
    first = _render(tmp_path / "a", "1", 1)
    second = _render(tmp_path / "b", "2", 2)
    # the folder's manifest (fgrpo_sim.ownership) lists both with their hashes: identical too
    assert sorted(first) == [".fgrpo-sim-outputs.json", "population-shared.pdf", "population-shared.png"]
    assert first == second
    png, pdf = first["population-shared.png"], first["population-shared.pdf"]
    assert b"Matplotlib version" not in png and b"Software" not in png
    assert b"CreationDate" not in pdf and b"Matplotlib" not in pdf
