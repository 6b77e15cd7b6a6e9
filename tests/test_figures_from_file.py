"""`fgrpo figures NAME --from FILE`: every figure that draws a simulation draws the user's own output (issue 46)."""

from __future__ import annotations

import json

import pytest

from fgrpo_sim.packaged import committed_result

POPULATION_ARGS = ("--prompts", "16", "--steps", "6", "--prompt-batch", "8", "--runs", "2", "--eval-every", "3",
                   "--gamma", "0,1", "--device", "cpu", "--no-progress")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Tiny outputs of the three simulate commands, written by the commands themselves."""
    from fgrpo_sim.cli import main

    folder = tmp_path_factory.mktemp("outputs")
    runs = {"my.csv": ("simulate", "categorical", "--n", "2,64", "--seeds", "0", "--steps", "20", "--stride", "10",
                       "--num-actions", "500", "--num-correct", "50", "--device", "cpu", "--no-progress"),
            "pop.csv": ("simulate", "population", *POPULATION_ARGS, "--n", "4,8"),
            "shared.parquet": ("simulate", "population", "--sharing", "shared", "--heldout-prompts", "16",
                               *POPULATION_ARGS, "--n", "8")}
    for name, args in runs.items():
        with pytest.raises(SystemExit) as done:
            main([*args, "--out", str(folder / name)])
        assert done.value.code in (0, None)
    return folder


def _manifest_lists(out, name) -> bool:
    return {f"{name}.png", f"{name}.pdf"} <= set(json.loads((out / ".fgrpo-sim-outputs.json").read_text())["files"])


@pytest.mark.parametrize("name, source", [("fig2", "my.csv"), ("population-frontier", "pop.csv"),
                                          ("population-rare-mass", "pop.csv"),
                                          ("population-shared", "shared.parquet")])
def test_each_simulation_figure_draws_the_users_own_file(run_cli, outputs, tmp_path, name, source):
    result = run_cli("figures", name, "--from", outputs / source, "--out", tmp_path)
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / f"{name}.png").stat().st_size > 10_000 and (tmp_path / f"{name}.pdf").exists()
    assert _manifest_lists(tmp_path, name)  # written through the output folder: atomic, owned
    assert not (tmp_path / "runs").exists() and "cached" not in result.stderr  # nothing computed, nothing cached


def test_figure_titles_name_the_file_and_what_it_holds(outputs):
    from fgrpo_sim.figures.categorical import draw_fig2, load_fig2
    from fgrpo_sim.figures.population import load_rare_mass

    data = load_fig2(outputs / "my.csv")
    assert data["preset"] == "from my.csv" and data["seeds"] == 1
    assert sorted(data["mean"]["group_size"].unique()) == [2, 64] and data["mean"]["step"].max() == 20
    fig = draw_fig2(data)
    assert "trajectories over 20 steps" in " ".join(sf._suptitle.get_text() for sf in fig.subfigs if sf._suptitle)
    rare = load_rare_mass(outputs / "pop.csv")  # the figure's own N = 8 out of 4 and 8
    assert set(rare["frame"]["N"]) == {8} and "N = 8, from pop.csv: 2 runs, 6 steps" in rare["title"]


def test_group_size_figure_reads_a_json_record(run_cli, tmp_path):
    record = tmp_path / "study.jsonl"
    record.write_bytes(committed_result("population-group-size.jsonl").read_bytes())
    result = run_cli("figures", "population-group-size", "--from", record, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "out" / "population-group-size.png").exists()


def _one_line_error(result, *needles):
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


def test_wrong_files_are_one_line_errors_naming_file_and_column(run_cli, outputs, tmp_path):
    out = tmp_path / "out"
    cases = [(("fig2", "--from", outputs / "pop.csv"), ("--from", "pop.csv", "no column 'config_id'",
                                                        "fgrpo simulate categorical")),
             (("population-frontier", "--from", outputs / "shared.parquet"), ("shared.parquet", "'split'")),
             (("population-shared", "--from", outputs / "pop.csv"), ("pop.csv", "no column 'split'")),
             (("population-group-size", "--from", outputs / "my.csv"), ("my.csv", "no column 'chunk'")),
             (("fig2", "--from", tmp_path / "missing.csv"), ("missing.csv: no such file",))]
    for args, needles in cases:
        _one_line_error(run_cli("figures", *args, "--out", out), *needles)
    assert not out.exists()


def test_a_damaged_row_is_named_by_line(run_cli, outputs, tmp_path):
    lines = (outputs / "pop.csv").read_text().splitlines(keepends=True)
    header = lines[0].split(",")
    fields = lines[3].split(",")
    fields[header.index("pass@1")] = "high"
    damaged = tmp_path / "pop.csv"
    damaged.write_text("".join(lines[:3]) + ",".join(fields) + "".join(lines[4:]))
    _one_line_error(run_cli("figures", "population-frontier", "--from", damaged, "--out", tmp_path / "out"),
                    f"cannot read --from {damaged} line 4: pass@1 = 'high' is not a finite number")


def test_a_table_of_two_settings_is_refused(run_cli, outputs, tmp_path):
    two = tmp_path / "two.csv"
    lines = (outputs / "my.csv").read_text().splitlines(keepends=True)
    column = lines[0].split(",").index("config_id")

    def other(line):
        fields = line.split(",")
        fields[column] = "other"
        return ",".join(fields)

    two.write_text("".join(lines) + "".join(other(line) for line in lines[1:]))
    _one_line_error(run_cli("figures", "fig2", "--from", two, "--out", tmp_path / "out"), "holds 2 settings")


@pytest.mark.parametrize("args, needle", [((), "name one of fig2"), (("fig2", "peak-map"), "got fig2, peak-map"),
                                          (("peak-map",), "got peak-map"), (("fig2", "--full"), "--full is not used"),
                                          (("fig2", "--data-dir", "x"), "--data-dir is not used")])
def test_from_needs_one_figure_that_reads_a_file(run_cli, outputs, tmp_path, args, needle):
    _one_line_error(run_cli("figures", *args, "--from", outputs / "my.csv", "--out", tmp_path / "out"), needle)


def test_figures_says_once_where_it_cached_simulation_results(run_cli, tmp_path, monkeypatch):
    """`fgrpo figures` leaves runs/figure-data/ in the working folder: the run that creates it says so on stderr
    (issue 46), a later run that reuses it does not, and --help names it."""
    from fgrpo_sim.figures import registry

    registry.load_all()
    spec = registry.FIGURES["fig1a"]

    def caching(options):  # a figure that simulates: it writes its cache under data_dir
        options.data_dir.mkdir(parents=True, exist_ok=True)
        (options.data_dir / "cache.parquet").write_text("x")
        return spec.compute(options)

    monkeypatch.setitem(registry.FIGURES, "fig1a", registry.FigureSpec(spec.name, spec.description, caching,
                                                                      spec.draw))
    monkeypatch.chdir(tmp_path)
    first = run_cli("figures", "fig1a", "--out", "out")
    assert first.exit_code == 0, first.stderr
    notice = [line for line in first.stderr.splitlines() if "runs/figure-data" in line]
    assert len(notice) == 1 and "--data-dir" in notice[0] and (tmp_path / "runs" / "figure-data").is_dir()
    again = run_cli("figures", "fig1a", "--out", "out")
    assert again.exit_code == 0 and "runs/figure-data" not in again.stderr
    assert "runs/figure-data, created in the working folder" in " ".join(run_cli("figures", "--help").stdout.split())


def test_sensitivity_figure_reads_a_study_table_and_refuses_a_plain_run(run_cli, outputs, tmp_path):
    """fig2-sensitivity --from takes `simulate categorical --study --out`'s table (a plain run's table plus the
    column 'setting'), here built from a tiny run; a plain run's table is refused naming the column."""
    import pandas as pd

    from fgrpo_sim.figures.categorical import load_sensitivity

    table = pd.read_csv(outputs / "my.csv")
    study = tmp_path / "study.csv"
    table.assign(setting="logprob adamw").to_csv(study, index=False)
    final = load_sensitivity(study)["final"]
    assert set(final["setting"]) == {"logprob adamw"} and sorted(final["group_size"].unique()) == [2, 64]
    last = table[table["step"] == table["step"].max()]
    expected = last.groupby(["group_size", "gamma"])["m_ret"].mean().to_numpy()
    assert final.sort_values(["group_size", "gamma"])["m_ret"].to_numpy() == pytest.approx(expected, rel=1e-12)
    _one_line_error(run_cli("figures", "fig2-sensitivity", "--from", outputs / "my.csv", "--out", tmp_path / "out"),
                    "no column 'setting'", "fgrpo simulate categorical --study")
