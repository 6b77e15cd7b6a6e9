"""Planner: Beta averages against a direct numerical average of Lemma 3.1, file input, CLI contract."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import integrate, stats

from fgrpo_sim import theory
from fgrpo_sim.planner import beta_difficulty, empirical_difficulty, plan_group_size, read_success_rates


def _direct_beta_average(f, a, b, points=200_000):
    """Average f(mu) over Beta(a, b) on a fine grid of quantile midpoints (no quadrature rule)."""
    mu = stats.beta.ppf((np.arange(points) + 0.5) / points, a, b)
    return float(np.mean(f(mu)))


@pytest.mark.parametrize("a,b", [(2.0, 5.0), (0.5, 0.5), (1.0, 3.0)])
def test_beta_plan_matches_direct_average_of_lemma31(a, b):
    sizes, rhos = [1, 2, 8, 32, 128], [0.01, 0.2]
    plan = plan_group_size(beta_difficulty(a, b), rhos=rhos, group_sizes=sizes, gammas=[0.0, 0.5])
    for row in plan.rows:
        n, rho = row["N"], row["rho"]
        tail = _direct_beta_average(lambda mu: theory.tail_miss_probability(n, mu, rho * mu), a, b)
        active = _direct_beta_average(lambda mu: theory.activity_probability(n, mu), a, b)
        assert row["tail_miss"] == pytest.approx(tail, abs=2e-4)
        assert row["active_fraction"] == pytest.approx(active, abs=2e-4)
        # adaptive quadrature with the Beta density as an algebraic weight agrees to ~1e-8
        quad, _ = integrate.quad(lambda mu: float(theory.tail_miss_probability(n, mu, rho * mu)), 0, 1,
                                 weight="alg", wvar=(a - 1, b - 1), limit=200)
        assert row["tail_miss"] == pytest.approx(quad / _beta_fn(a, b), abs=1e-8)


def _beta_fn(a, b):
    from scipy.special import beta

    return beta(a, b)


def test_activity_has_the_beta_binomial_closed_form():
    # E[mu^N] = B(a + N, b) / B(a, b) for mu ~ Beta(a, b)
    from scipy.special import beta

    a, b = 0.7, 2.5
    plan = plan_group_size(beta_difficulty(a, b), rhos=[0.1], group_sizes=[3, 17, 200], gammas=[0.0])
    for row in plan.rows:
        n = row["N"]
        exact = 1 - beta(a + n, b) / beta(a, b) - beta(a, b + n) / beta(a, b)
        assert row["active_fraction"] == pytest.approx(exact, rel=1e-10)


def test_focal_weight_matches_monte_carlo_and_symmetry():
    rng = np.random.default_rng(0)
    rates = rng.uniform(0.05, 0.95, 40)
    plan = plan_group_size(empirical_difficulty(rates), rhos=[0.1], group_sizes=[8], gammas=[0.0, 0.5, 1.0])
    row = plan.rows[0]
    x = rng.binomial(8, np.repeat(rates, 20_000))
    active = (x > 0) & (x < 8)
    assert row["focal_weight_gamma_0"] == pytest.approx(1.0)
    assert row["focal_weight_gamma_0.5"] == pytest.approx(np.mean(np.sqrt(1 - x[active] / 8)), abs=3e-3)
    assert row["active_fraction"] == pytest.approx(active.mean(), abs=3e-3)
    # Beta(1, 1) is symmetric, so E[1 - X/N | active] = 1/2 exactly
    sym = plan_group_size(beta_difficulty(1, 1), rhos=[0.1], group_sizes=[8, 64], gammas=[1.0])
    assert all(r["focal_weight_gamma_1"] == pytest.approx(0.5, abs=1e-12) for r in sym.rows)


def test_empirical_average_is_the_plain_mean():
    rates = np.array([0.0, 0.1, 0.5, 0.9, 1.0])
    row = plan_group_size(empirical_difficulty(rates), rhos=[0.3], group_sizes=[8], gammas=[0.0]).rows[0]
    expected = np.mean(theory.tail_miss_probability(8, rates, 0.3 * rates))
    assert row["tail_miss"] == pytest.approx(float(expected), rel=1e-12)


def test_reads_csv_and_jsonl(tmp_path):
    csv_file = tmp_path / "pilot.csv"
    csv_file.write_text("prompt,success_rate\na,0.25\n\nb,1\n")
    np.testing.assert_allclose(read_success_rates(csv_file), [0.25, 1.0])
    jsonl = tmp_path / "pilot.jsonl"
    jsonl.write_text('{"prompt": "a", "success_rate": 0.5}\n{"success_rate": 0}\n')
    np.testing.assert_allclose(read_success_rates(jsonl), [0.5, 0.0])


@pytest.mark.parametrize("name,text,fragment", [
    ("bad.csv", "success_rate\n0.5\nabc\n", "line 3"),
    ("bad.csv", "success_rate\n1.5\n", "line 2"),
    ("bad.csv", "rate\n0.5\n", "line 1"),
    ("bad.jsonl", '{"success_rate": 0.5}\n{"success_rate": 0.5\n', "line 2"),
    ("bad.jsonl", '{"success_rate": 0.5}\n{"other": 1}\n', "line 2"),
])
def test_malformed_rows_are_one_line_errors_naming_the_line(run_cli, tmp_path, name, text, fragment):
    path = tmp_path / name
    path.write_text(text)
    result = run_cli("plan", path)
    assert result.exit_code == 2
    assert fragment in result.stderr and str(path) in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_cli_json_and_text(run_cli, tmp_path):
    result = run_cli("plan", "--beta", "2,5", "--rho", "0.05,0.2", "--n", "4,8,64", "--gamma", "0,0.5", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert len(data["rows"]) == 6 and data["difficulty"] == "Beta(2, 5)"
    assert {"active_fraction", "tail_miss", "rollouts_per_prompt", "focal_weight_gamma_0.5"} <= set(data["rows"][0])
    assert "peaks at N =" in data["recommendation"]
    pilot = tmp_path / "pilot.csv"
    pilot.write_text("success_rate\n" + "\n".join(str(x) for x in np.linspace(0.05, 0.95, 30)) + "\n")
    text = run_cli("plan", pilot, "--n", "8,16")
    assert text.exit_code == 0 and "pilot run" not in text.stderr and "tail_miss" in text.stdout
    assert run_cli("plan").exit_code == 2
    both = run_cli("plan", pilot, "--beta", "1,1")
    assert both.exit_code == 2 and "exactly one" in both.stderr
    bad = run_cli("plan", "--beta", "1,1", "--rho", "1.5")
    assert bad.exit_code == 2 and "rho must be in" in bad.stderr


def test_folder_binary_file_and_empty_lists_are_named_errors(run_cli, tmp_path):
    from fgrpo_sim.planner import beta_difficulty, plan_group_size

    folder = run_cli("plan", tmp_path)
    assert folder.exit_code == 2 and "is a folder" in folder.stderr
    binary = tmp_path / "pilot.csv"
    binary.write_bytes(b"\xff\xfe\x00rate")
    result = run_cli("plan", binary)
    assert result.exit_code == 2 and "not UTF-8" in result.stderr and str(binary) in result.stderr
    too_big = run_cli("plan", "--beta", "1,1", "--n", "100000")
    assert too_big.exit_code == 2 and "--n must be in [1, 16384]" in too_big.stderr
    for kwargs, name in (({"group_sizes": []}, "group_sizes"), ({"rhos": []}, "rhos"), ({"gammas": []}, "gammas")):
        with pytest.raises(ValueError, match=f"^{name} must list at least one value"):
            plan_group_size(beta_difficulty(1, 1), **kwargs)
    with pytest.raises(ValueError, match=r"^gamma must be in \[0, inf\)"):
        plan_group_size(beta_difficulty(1, 1), gammas=[float("inf")])


def test_custom_column_is_named_in_row_errors(run_cli, tmp_path):
    pilot = tmp_path / "pilot.csv"
    pilot.write_text("pass1\n0.5\n2\n")
    result = run_cli("plan", pilot, "--column", "pass1")
    assert result.exit_code == 2 and "line 3: pass1 must be a number in [0, 1], got '2'" in result.stderr


def test_plan_space_separated_n_names_the_list_syntax_not_a_file(run_cli):
    for extra in ((), ("--beta", "1,3")):
        result = run_cli("plan", "--n", "4", "8", *extra)
        assert result.exit_code == 2
        assert "lists take commas" in result.stderr and "--n 4,8,16" in result.stderr
        assert "No such file" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_plan_reads_llm_eval_output_as_a_pilot(run_cli, tmp_path):
    """Issue 29: `fgrpo llm eval` output (one line per sample) is the natural pilot; each problem's rate is
    correct / samples, so the plan equals the one from a success_rate file with those rates."""
    import json

    correct = {"p0": 1, "p1": 4, "p2": 0, "p3": 8}
    eval_file = tmp_path / "pilot-eval.jsonl"
    eval_file.write_text("".join(
        json.dumps({"problem_id": pid, "sample_index": i, "correct": i < c, "status": "graded", "num_tokens": 9}) + "\n"
        for pid, c in correct.items() for i in range(8)))
    rates_file = tmp_path / "rates.jsonl"
    rates_file.write_text("".join(json.dumps({"success_rate": c / 8}) + "\n" for c in correct.values()))
    from_eval = run_cli("plan", eval_file, "--n", "4,8", "--json")
    assert from_eval.exit_code == 0, from_eval.stderr
    from_rates = run_cli("plan", rates_file, "--n", "4,8", "--json")
    assert json.loads(from_eval.stdout)["rows"] == json.loads(from_rates.stdout)["rows"]
    per_problem = tmp_path / "counts.jsonl"  # per-problem n / c lines (what `fgrpo passk` also reads)
    per_problem.write_text("".join(json.dumps({"problem_id": p, "n": 8, "c": c}) + "\n" for p, c in correct.items()))
    assert json.loads(run_cli("plan", per_problem, "--n", "4,8", "--json").stdout)["rows"] == \
        json.loads(from_rates.stdout)["rows"]


def test_plan_text_fits_100_columns_and_says_how_to_choose_rho(run_cli):
    """The default `fgrpo plan` output reads in a 100-column terminal or a doc page (it printed a ~200-column
    table and unwrapped paragraphs), and --help tells how to pick --rho from a pilot."""
    for args in (["--beta", "1,1"], ["--beta", "1,1", "--rho", "0.05,0.2"]):
        result = run_cli("plan", *args)
        assert result.exit_code == 0
        wide = [line for line in result.stdout.splitlines() if len(line) > 100]
        assert not wide, wide
    help_text = " ".join(run_cli("plan", "--help").stdout.split())
    assert "To choose it: in a pilot" in help_text and "--rho 0.02,0.05,0.1" in help_text


@pytest.mark.parametrize("name, text, hint", [
    ("pilot.csv", "problem_id,rate\na,0.5\n", "; if 'rate' holds them, pass --column rate"),
    ("pilot.jsonl", '{"problem_id": "a", "accuracy": 0.5}\n', "; if 'accuracy' holds them, pass --column accuracy"),
    ("pilot.csv", "problem_id,sucess_rate\na,0.5\n", "pass --column sucess_rate"),  # a misspelt header
    ("pilot.csv", "problem_id,foo\na,0.5\n", None),  # nothing that reads as a rate: no guess
])
def test_a_pilot_file_with_another_column_name_suggests_column(tmp_path, name, text, hint):
    """A pilot file whose rates sit in another column names the --column that reads it (issue 46)."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        read_success_rates(path)
    assert "'success_rate'" in str(err.value)
    assert (str(err.value).endswith(hint)) if hint else "--column" not in str(err.value)
    if hint:
        assert read_success_rates(path, hint.rsplit(" ", 1)[1]).tolist() == [0.5]
