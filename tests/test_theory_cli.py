"""`fgrpo theory ...`: JSON output parses and agrees with the library; bad input is one line and exit 2."""

from __future__ import annotations

import json

import pytest

from fgrpo_sim.theory import lr_multiplier, peak_group_size, tail_miss_probability


def _json(result):
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def test_tail_miss_json(run_cli):
    data = _json(run_cli("theory", "tail-miss", "--n", "8", "--mu", "0.5", "--tau", "0.05", "--json"))
    assert data["n"] == 8 and data["mu"] == 0.5 and data["tau"] == 0.05
    assert data["probability"] == tail_miss_probability(8, 0.5, 0.05)
    rho = _json(run_cli("theory", "tail-miss", "--n", "8", "--mu", "0.5", "--rho", "0.1", "--json"))
    assert rho["probability"] == pytest.approx(data["probability"], rel=1e-12)


def test_tail_miss_table(run_cli):
    result = run_cli("theory", "tail-miss", "--n", "1", "--n", "16", "--mu", "0.3", "--rho", "0.05")
    assert result.exit_code == 0
    assert "Pr(B)" in result.stdout and len(result.stdout.strip().splitlines()) == 4


def test_peak_and_lr_json(run_cli):
    peak = _json(run_cli("theory", "peak", "--mu", "0.5", "--tau", "0.05", "--json"))
    expected = peak_group_size(0.5, 0.05)
    assert peak["n_star"] == expected.n_star == 5 and peak["probability"] == expected.probability
    lr = _json(run_cli("theory", "lr-multiplier", "--gamma", "0.5", "--base-lr", "1e-6", "--json"))
    assert lr["multiplier"] == lr_multiplier(0.5) and lr["matched_lr"] == pytest.approx(6.79e-7, rel=1e-3)
    human = run_cli("theory", "peak", "--mu", "0.5", "--tau", "0.05")
    assert human.exit_code == 0 and "N* = 5" in human.stdout


def test_derive(run_cli):
    text = run_cli("theory", "derive", "--name", "tail_miss", "--name", "lr_multiplier")
    assert text.exit_code == 0 and "(1 - tau)**N" in text.stdout and "m_gamma" in text.stdout
    latex = run_cli("theory", "derive", "--latex", "--name", "lr_multiplier")
    assert latex.exit_code == 0 and "\\Gamma" in latex.stdout


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("tail-miss", "--mu", "0.5", "--tau", "0.7"), "tau must be in [0, mu]"),
        (("tail-miss", "--mu", "0.5", "--tau", "0.1", "--rho", "0.2"), "either --tau or --rho"),
        (("tail-miss", "--n", "0"), "n must be in [1"),
        (("tail-miss", "--n", "-8"), "n must be in [1, 2^62], got -8"),  # a readable bound (issue 46)
        (("tail-miss", "--mu", "abc"), "--mu"),
        (("peak", "--mu", "0.5", "--tau", "0"), "tau must be in (0, mu]"),
        (("peak", "--mu", "1.5"), "--mu must be in (0, 1], got 1.5"),
        (("lr-multiplier", "--gamma", "-1"), "gamma must be in [0, inf)"),
        (("lr-multiplier", "--weight", "sqrt"), "weight must be one of"),
        (("derive", "--name", "nope"), "unknown derivation"),
    ],
)
def test_bad_input_is_one_line_exit_2(run_cli, args, fragment):
    result = run_cli("theory", *args)
    assert result.exit_code == 2
    assert fragment in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr


def test_infinite_base_lr_and_tiny_peak_are_one_line_errors(run_cli):
    bad = run_cli("theory", "lr-multiplier", "--base-lr", "inf")
    assert bad.exit_code == 2 and "base_lr must be in (0, inf)" in bad.stderr
    far = run_cli("theory", "peak", "--mu", "1e-30", "--tau", "1e-31")
    assert far.exit_code == 2 and "too small" in far.stderr and far.stderr.strip().count("\n") == 0


def test_lists_take_commas_like_plan_and_simulate(run_cli):
    """One list syntax: --n 4,8,16 (tail-miss) and --rho 0.01,0.05 (peak), as in plan and simulate."""
    table = run_cli("theory", "tail-miss", "--n", "4,8,16", "--mu", "0.5", "--rho", "0.1")
    assert table.exit_code == 0, table.stderr
    assert len(table.stdout.strip().splitlines()) == 5  # header lines + three rows
    # --json: JSON Lines, one object per row, whatever the count (issue 39)
    lines = run_cli("theory", "tail-miss", "--n", "4,8", "--mu", "0.5", "--tau", "0.05", "--json").stdout.splitlines()
    data = [json.loads(line) for line in lines]
    assert [d["n"] for d in data] == [4, 8] and data[1]["probability"] == tail_miss_probability(8, 0.5, 0.05)
    peaks = run_cli("theory", "peak", "--mu", "0.3", "--rho", "0.01,0.05", "--json")
    assert peaks.exit_code == 0, peaks.stderr
    rows = [json.loads(line) for line in peaks.stdout.splitlines()]
    assert [row["n_star"] for row in rows] == [peak_group_size(0.3, 0.003).n_star, peak_group_size(0.3, 0.015).n_star]
    # repeating the option appends to the same list, so a value repeated across options is refused like 4,4
    repeated = run_cli("theory", "tail-miss", "--n", "4", "--n", "4", "--mu", "0.5", "--rho", "0.1")
    assert repeated.exit_code == 2 and "--n lists 4 twice" in repeated.stderr
    assert run_cli("theory", "tail-miss", "--n", "4", "--n", "8", "--mu", "0.5", "--rho", "0.1").exit_code == 0


def test_space_separated_list_names_the_comma_syntax(run_cli):
    result = run_cli("theory", "tail-miss", "--n", "4", "8")
    assert result.exit_code == 2
    assert "lists take commas" in result.stderr and "--n 4,8,16" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_peak_and_tail_miss_read_one_minus_mu_the_same_way(run_cli):
    """Near mu = 1 both commands take 1 - mu from the digits typed (issue 28, item 5): the float nearest
    0.999999999999 is 1 - 1.000089e-12, which would move Pr(B) by ~1e-4 relative."""
    import json

    peak = json.loads(run_cli("theory", "peak", "--mu", "0.999999999999", "--rho", "0.5", "--json").stdout)
    tail = json.loads(run_cli("theory", "tail-miss", "--mu", "0.999999999999", "--rho", "0.5", "--n",
                              str(peak["n_star"]), "--json").stdout)
    assert abs(tail["probability"] / peak["probability"] - 1) < 1e-9
    assert abs(tail["probability"] / 1e-12 - 1) < 1e-9  # Pr(B) = c - c^2 at N = 2, tau = mu / 2, c = 1 - mu = 1e-12


def test_tables_never_wrap_or_colour_on_a_narrow_terminal(monkeypatch, capsys):
    # rich sizes its Console from COLUMNS and colours a terminal: the tables must stay one line per row,
    # with no escape codes, wherever they are printed (docs compare them; pipes read them).
    from fgrpo_sim.commands.tables import echo_table

    monkeypatch.setenv("COLUMNS", "20")
    monkeypatch.setenv("FORCE_COLOR", "1")
    echo_table(["N", "Pr(B) tail miss", "a long interval column"], [["1048576", "0.8284229645", "[0.3737, 0.4615]"]],
               left=[2])
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["      N  Pr(B) tail miss  a long interval column",
                     "1048576     0.8284229645  [0.3737, 0.4615]"]
