"""The CLI shell itself: help, figure listing, and the one-line error contract."""


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
