"""The CLI shell itself: help, figure listing, and the one-line error contract."""

import pytest


def test_help_lists_command_groups(run_cli):
    result = run_cli("--help")
    assert result.exit_code == 0
    for group in ("theory", "simulate", "figures", "check", "passk", "plan", "llm", "maze"):
        assert group in result.stdout


def test_unknown_option_is_one_line_exit_2(run_cli):
    result = run_cli("figures", "--no-such-option")
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0
    assert "no-such-option" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_figure_name_is_one_line_exit_2(run_cli, tmp_path):
    result = run_cli("figures", "no_such_figure", "--out", tmp_path)
    assert result.exit_code == 2
    assert "no_such_figure" in result.stderr and "NAME must be one of" in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert list(tmp_path.iterdir()) == []


def test_os_errors_are_one_line_exit_2(run_cli, tmp_path, monkeypatch):
    import fgrpo_sim.metrics.results_io as results_io

    def unreadable(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(results_io, "read_results_jsonl", unreadable)
    result = run_cli("passk", tmp_path / "results.jsonl")
    assert result.exit_code == 2
    assert "Permission denied" in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_output_under_a_file_is_one_line_exit_2(run_cli, tmp_path):
    results = tmp_path / "r.jsonl"
    results.write_text('{"problem_id": 1, "n": 4, "c": 1}\n')
    result = run_cli("passk", results, "--out", results / "report.json")
    assert result.exit_code == 2
    assert "r.jsonl is a file, not a folder" in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl"]


def test_figures_bad_out_and_seed_fail_before_computing(run_cli, tmp_path, monkeypatch):
    from fgrpo_sim.figures import registry

    registry.load_all()
    spec = registry.FIGURES["fig1a"]
    monkeypatch.setitem(registry.FIGURES, "fig1a", registry.FigureSpec(
        spec.name, spec.description, lambda options: pytest.fail("computed despite bad input"), spec.draw))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for args, needle in ((["--out", blocker], "--out"), (["--out", tmp_path, "--data-dir", blocker], "--data-dir"),
                         (["--out", tmp_path, "--seed", "-1"], "--seed must be in [0, ")):
        result = run_cli("figures", "fig1a", *args)
        assert result.exit_code == 2 and needle in result.stderr, result.stderr
        assert result.stderr.strip().count("\n") == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.parametrize("group", [[], ["theory"], ["simulate"], ["llm"]])
def test_command_lists_show_whole_one_line_summaries(run_cli, group):
    result = run_cli(*group, "--help")
    assert result.exit_code == 0
    listing = result.stdout.split("Commands:")[1]
    assert "..." not in listing and "et al.\n" not in listing and "Sec.\n" not in listing, listing


def test_paper_size_maze_figures_need_yes(run_cli, tmp_path, monkeypatch):
    """`figures fig6-maze --full` would start days of training: refused in one line naming the command, unless --yes."""
    from fgrpo_sim.figures import maze as maze_figures
    from fgrpo_sim.figures.registry import FigureOptions
    from fgrpo_sim.maze import experiment

    monkeypatch.setattr(experiment, "run_experiment", lambda *a, **k: pytest.fail("started the paper-size run"))
    for names in (["fig6-maze"], ["fig1a", "fig7-maze"]):  # refused before any figure is computed
        result = run_cli("figures", *names, "--full", "--out", tmp_path, "--data-dir", tmp_path / "data")
        assert result.exit_code == 2 and result.stderr.strip().count("\n") == 0, result.stderr
        assert "fgrpo maze run --preset paper" in result.stderr and "--yes" in result.stderr
    assert list(tmp_path.iterdir()) == []
    maze_figures.refuse_paper_run_unconfirmed(FigureOptions(full=True, yes=True, data_dir=tmp_path))  # confirmed
    maze_figures.refuse_paper_run_unconfirmed(FigureOptions(full=False, data_dir=tmp_path))  # cpu preset: committed
    help_text = " ".join(run_cli("figures", "--help").stdout.split())
    assert "--yes" in help_text and "fig6-maze / fig7-maze --full" in help_text


def test_figure_names_have_one_spelling_and_old_names_still_work(run_cli, tmp_path):
    """Figure names are kebab-case like the commands; an old snake_case name prints one deprecation line, then works."""
    import re

    from fgrpo_sim.commands.deprecated import RENAMED_FIGURES as RENAMED
    from fgrpo_sim.figures.registry import load_all

    names = list(load_all())
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", n) for n in names), names
    assert set(RENAMED.values()) <= set(names) and not set(RENAMED) & set(names)
    result = run_cli("figures", "peak_map", "--out", tmp_path, "--no-progress")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.strip() == "fgrpo: deprecated: figure peak_map is now peak-map; the old name goes in 0.2"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".fgrpo-sim-outputs.json", "peak-map.pdf", "peak-map.png"]
