"""Records a figure reads back from --data-dir (n-verify, issue 43's class "records read back without checks"):
a Maze summary.json and the group-size study's parquet cache go through a checked reader, so a damaged or
hand-edited record is one line naming the file and field (exit 2), never a traceback or a figure drawn from NaN.
Each case failed on main before the fix (a TypeError/KeyError traceback, or exit 0 with the bad value drawn)."""

from __future__ import annotations

import copy
import json

import pytest

from fgrpo_sim.packaged import committed_result


def _summary() -> dict:
    return json.loads(committed_result("maze-results.json").read_text())


def _nan_mean(d):
    d["cells"][0]["pass_at_k"]["1"]["mean"] = float("nan")


def _mean_above_one(d):
    d["cells"][0]["pass_at_k"]["1"]["mean"] = 7.5


def _cells_text(d):
    d["cells"] = "x"


def _n_text(d):
    d["cells"][0]["N"] = "4"


def _curve_inf(d):
    d["cells"][1]["curve"][0]["pass@1"] = float("inf")


def _preset_seeds_missing(d):
    del d["preset"]["seeds"]


@pytest.mark.parametrize("damage, needle", [
    (_nan_mean, "cells[0].pass_at_k.1.mean must be a number in [0, 1], got nan"),
    (_mean_above_one, "cells[0].pass_at_k.1.mean must be a number in [0, 1], got 7.5"),
    (_cells_text, "cells must be a non-empty list, got 'x'"),
    (_n_text, "cells[0].N must be an integer"),
    (_curve_inf, "cells[1].curve[0].pass@1 must be a number in [0, 1], got inf"),
    (_preset_seeds_missing, "preset.seeds must be an integer"),
])
def test_maze_figure_refuses_a_damaged_summary_naming_the_field(run_cli, tmp_path, damage, needle):
    summary = _summary()
    damage(summary)
    path = tmp_path / "data" / "maze" / "cpu" / "summary.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(summary))  # json.dumps writes NaN / Infinity: what a hand edit or another tool leaves
    result = run_cli("figures", "fig6-maze", "--data-dir", tmp_path / "data", "--out", tmp_path / "o", "--no-progress")
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.stderr
    assert f"{path}: {needle}" in lines[0]
    assert not (tmp_path / "o" / "fig6-maze.png").exists()


def test_the_committed_maze_summary_passes_the_check():
    from fgrpo_sim.maze.summary_record import check_summary

    summary = _summary()
    assert check_summary(copy.deepcopy(summary), "maze-results.json") == summary


def _group_size_cache(path, **over):
    """One row of a group-size study table (every column of its schema), `over` replacing values."""
    import pandas as pd

    from fgrpo_sim.sim.group_size_resume import TABLE_SCHEMA

    row = {c: 0.5 for c in TABLE_SCHEMA.columns}
    row.update(chunk="c", optimizer="adam", parametrisation="axis", view="equal-steps", variant="GRPO", population=0,
               N=2, seed=0, steps=1, step=0, rollouts=4, rare_correct_prob=1.0, rare_mass=0.02, base_lr=0.01,
               gamma=0.0, lr=0.01, train_dnll_rare=0.0)
    row.update(over)
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([row]).to_parquet(path, index=False)


@pytest.mark.parametrize("over, needle", [
    ({"heldout_pass@1": float("nan")}, "row 1: heldout_pass@1 = nan is not a finite number"),
    ({"N": -3}, "row 1: N"),
])
def test_population_figure_refuses_a_damaged_cache_naming_the_row(run_cli, tmp_path, over, needle):
    cache = tmp_path / "data" / "population-group-size.parquet"
    _group_size_cache(cache, **over)
    result = run_cli("figures", "population-group-size", "--data-dir", tmp_path / "data", "--out", tmp_path / "o",
                     "--no-progress")
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.stderr
    assert str(cache) in lines[0] and needle in lines[0]


def test_population_figure_refuses_a_foreign_cache(run_cli, tmp_path):
    import pandas as pd

    cache = tmp_path / "data" / "population-group-size.parquet"
    cache.parent.mkdir()
    pd.DataFrame({"a": [1.0]}).to_parquet(cache)
    result = run_cli("figures", "population-group-size", "--data-dir", tmp_path / "data", "--out", tmp_path / "o",
                     "--no-progress")
    assert result.exit_code == 2 and "is not a group-size study table (no column" in result.stderr, result.stderr


@pytest.mark.parametrize("figure, cache", [("fig2", "fig2-quick.parquet"),
                                           ("fig2-sensitivity", "categorical-study.parquet")])
def test_a_damaged_categorical_cache_is_named_as_the_data_dir_table(run_cli, tmp_path, figure, cache):
    """The result-table reader says "out FILE" (a simulate command's --out); a figure's user typed --data-dir."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / cache).write_text("a,b\n")
    result = run_cli("figures", figure, "--data-dir", tmp_path / "data", "--out", tmp_path / "o", "--no-progress")
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith(f"fgrpo: error: --data-dir table {tmp_path / 'data' / cache} exists but"), lines[0]
