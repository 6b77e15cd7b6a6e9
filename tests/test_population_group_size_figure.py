"""Issues 21 and 28: the population-group-size figure (one panel per optimizer x parametrisation), its Table 2
copy, and the study's CLI."""

from pathlib import Path

import matplotlib
import pandas as pd
import pytest

matplotlib.use("Agg")

from fgrpo_sim.figures.registry import FigureOptions  # noqa: E402

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "paper-tables" / "main_results.csv"


def test_table2_copy_matches_the_shared_paper_table():
    from fgrpo_sim.paper_tables import table2

    ours = table2()
    assert len(ours) == 30 and set(ours["group_size"]) == {2, 4, 8, 16, 32}
    row = ours[(ours["method"] == "GRPO") & (ours["group_size"] == 8) & (ours["metric"] == "pass@256")
               & (ours["scope"] == "math_avg")]
    assert float(row["value"].iloc[0]) == 64.1
    if not SHARED.exists():
        pytest.skip("no ../shared/paper-tables in this checkout")
    shared = pd.read_csv(SHARED)
    shared = shared[shared["setting"] == "group_size_sweep"].reset_index(drop=True)
    pd.testing.assert_frame_equal(ours.reset_index(drop=True), shared, check_dtype=False)


def test_figure_draws_from_the_committed_study(tmp_path):
    import matplotlib.pyplot as plt

    from fgrpo_sim.figures.population_group_size import compute, draw_grid

    data = compute(FigureOptions(data_dir=tmp_path, progress=False))  # empty data dir: the committed report
    assert data["source"] == "fgrpo_sim/results/population-group-size.jsonl"
    # SGD's axis and orthogonal reports are equal by construction: one, named for both
    assert {(r["optimizer"], r["parametrisation"]) for r in data["reports"]} == {
        ("adam", "axis"), ("adam", "orthogonal"), ("adam", "dense"), ("sgd", "axis = orthogonal"), ("sgd", "dense")}
    assert data["populations"] >= 10 and all(r["predicted_N"] for r in data["reports"])
    fig = draw_grid(data)
    # Adam: 3 maps; SGD: axis = orthogonal (identical by construction, one panel) and dense; a share strip under
    # each; the legend in SGD's free slot, which is no panel
    panels = [ax for ax in fig.axes if ax.axison]
    assert len(panels) == 10 and len(fig.axes) == 12 and not fig.legends
    assert all(ax.get_xlabel() == "group size N" and ax.get_ylabel() for ax in panels)
    titles = " ".join(ax.get_title() for ax in fig.axes)
    assert all(f"Adam lr 0.01, {kind} map" in titles for kind in ("axis", "orthogonal", "dense"))
    assert "SGD lr 2, axis = orthogonal maps (identical under SGD)" in titles and "SGD lr 2, dense map" in titles
    strips = [ax for ax in fig.axes if ax.get_ylabel() == "share lowest"]
    assert len(strips) == 5 and all(len(ax.patches) == 30 for ax in strips)  # a bar per N and rare mass
    # a dip marker only where the report says dip
    assert sum(line.get_marker() == "v" for ax in fig.axes for line in ax.get_lines()) == sum(
        r["dip"] for r in data["reports"])
    plt.close(fig)


def test_headline_is_one_simulation_panel_beside_the_paper(tmp_path):
    """population-group-size carries its message at a glance (issue 46: 12 panels, 2 empty slots, a legend over a
    line): the Table 2 reading (Adam, orthogonal) with its share strip, beside the paper's two Table 2 panels, no
    empty slot, and no legend or label box over any panel's lines."""
    import matplotlib.pyplot as plt

    from fgrpo_sim.figures.population_group_size import compute, draw

    data = compute(FigureOptions(data_dir=tmp_path, progress=False))
    fig = draw(data)
    assert len(fig.axes) == 4 and all(ax.axison for ax in fig.axes)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0] == "simulation: Adam lr 0.01, orthogonal map" and sum("paper, Table 2" in t for t in titles) == 2
    dips = [r for r in data["reports"] if (r["optimizer"], r["parametrisation"]) == ("adam", "orthogonal") and r["dip"]]
    assert sum(line.get_marker() == "v" for line in fig.axes[0].get_lines()) == len(dips) > 0
    assert not any(ax.get_legend() for ax in fig.axes)  # lines named at their ends instead
    fig.canvas.draw()
    (legend,) = fig.legends
    assert not any(legend.get_window_extent().overlaps(ax.get_window_extent()) for ax in fig.axes)
    plt.close(fig)


def test_cli_runs_a_tiny_study_and_prints_the_verdicts(tmp_path):
    from typer.testing import CliRunner

    from fgrpo_sim.cli import app

    out = tmp_path / "gs.parquet"
    result = CliRunner().invoke(app, ["simulate", "group-size", "--out", str(out), "--n", "2,8,32", "--rare-mass", "0.02",
                                      "--gamma", "1", "--optimizer", "adam", "--parametrisation", "axis",
                                      "--adam-lr", "0.01", "--populations", "2", "--runs", "2", "--steps", "4",
                                      "--device", "cpu", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "lowest (share)" in result.output and "axis" in result.output
    frame = pd.read_parquet(out)
    assert set(frame["N"]) == {2, 8, 32} and frame["seed"].nunique() == 2 and frame["population"].nunique() == 2


def test_cli_bad_input_is_one_line(run_cli, tmp_path):
    result = run_cli("simulate", "group-size", "--out", tmp_path / "x.parquet", "--optimizer", "rmsprop")
    assert result.exit_code == 2 and "--optimizer must be" in result.stderr  # the option, not the spec's field
    assert result.stderr.strip().count("\n") == 0
    result = run_cli("simulate", "group-size", "--out", tmp_path / "x.parquet", "--parametrisation", "polar")
    assert result.exit_code == 2 and "--parametrisation must be one of axis, orthogonal, dense" in result.stderr
    result = run_cli("simulate", "group-size", "--out", tmp_path / "x.parquet", "--json", "--markdown")
    assert result.exit_code == 2 and "--json and --markdown conflict" in result.stderr and not (tmp_path / "x.parquet").exists()
    result = run_cli("simulate", "group-size", "--out", tmp_path / "x.parquet", "--adam-lr", "0.01,0.01")
    assert result.exit_code == 2 and result.stderr.startswith("fgrpo: error: --adam-lr ")
