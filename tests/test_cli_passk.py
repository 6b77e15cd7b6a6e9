"""`fgrpo passk`: reading results files, the table, --json/--out and --compare."""

import json

import numpy as np
import pytest

from fgrpo_sim.metrics import pass_at_k


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _sample_rows(counts, n):
    rows = []
    for pid, c in counts.items():
        rows += [{"problem_id": pid, "sample_index": i, "correct": i < c, "text": "..."} for i in range(n)]
    return rows


def test_per_sample_table_matches_estimator(run_cli, tmp_path):
    f = _write(tmp_path / "r.jsonl", _sample_rows({"a": 1, "b": 4, "c": 0}, 8))
    res = run_cli("passk", f, "--k", "1,2,8", "--bootstrap", "0")
    assert res.exit_code == 0, res.stderr
    assert "3 problems, n = 8" in res.stdout
    lines = [line.split() for line in res.stdout.splitlines()[2:]]
    expected = {k: np.mean([pass_at_k(8, c, k) for c in (1, 4, 0)]) for k in (1, 2, 8)}
    assert [int(row[0]) for row in lines] == [1, 2, 8]
    for row in lines:
        assert float(row[1]) == pytest.approx(expected[int(row[0])], abs=5e-5)


def test_counts_format_mixed_n_json_and_out(run_cli, tmp_path):
    rows = [{"problem_id": 1, "n": 16, "c": 3}, "", {"problem_id": "two", "n": 4, "c": 4, "extra": [1]}]
    f = _write(tmp_path / "counts.jsonl", rows)
    out = tmp_path / "report" / "passk.json"
    res = run_cli("passk", f, "--json", "--out", out)
    assert res.exit_code == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["k"] == [1, 2, 4]  # auto: powers of two up to the smallest n
    assert report["results"]["n_min"] == 4 and report["results"]["n_max"] == 16
    assert report["pass_at_k"][0] == pytest.approx((3 / 16 + 1) / 2)
    assert json.loads(out.read_text()) == report


def test_k_larger_than_some_n_is_reported(run_cli, tmp_path):
    f = _write(tmp_path / "r.jsonl", [{"problem_id": "a", "n": 64, "c": 3}, {"problem_id": "b", "n": 8, "c": 1}])
    res = run_cli("passk", f, "--k", "1,16")
    assert res.exit_code == 2
    assert "--k 16 exceeds" in res.stderr and "'b'" in res.stderr and "line 2" in res.stderr and "n = 8" in res.stderr
    assert res.stderr.strip().count("\n") == 0


@pytest.mark.parametrize(
    "rows, message",
    [
        ([{"problem_id": "a", "correct": True}, "{not json"], "line 2: not valid JSON"),
        ([{"problem_id": "a", "correct": True}, {"correct": False}], "line 2: missing key 'problem_id'"),
        ([{"problem_id": "a", "correct": 1}], "line 1: 'correct' must be true or false"),
        ([{"problem_id": "a", "n": 4, "c": 5}], "line 1: 'c' must be an integer in [0, n = 4]"),
        ([{"problem_id": "a", "n": 4}], "line 1: a per-problem line needs both 'n' and 'c'"),
        ([{"problem_id": "a", "n": 4, "c": 1}, {"problem_id": "a", "correct": True}], "line 2: problem 'a' mixes"),
        ([{"problem_id": "a", "n": 4, "c": 1}, {"problem_id": "a", "n": 4, "c": 1}], "line 2: problem 'a' already has"),
        ([{"problem_id": "a", "correct": True, "n": 3, "c": 1}], "line 1: give either 'correct'"),
        ([{"problem_id": "a"}], "line 1: needs 'correct'"),
        ([{"problem_id": [1], "correct": True}], "line 1: problem_id must be a string or an integer"),
        (["[1, 2]"], "line 1: expected a JSON object"),
        ([], "no results"),
        ([{"problem_id": "a", "sample_index": 0, "correct": True}, {"problem_id": "a", "sample_index": 1, "correct": False},
          {"problem_id": "a", "sample_index": 0, "correct": True}], "line 3: problem 'a' sample_index 0 already appeared on line 1"),
        ([{"problem_id": "a", "sample_index": "x", "correct": True}], "line 1: 'sample_index' must be an integer"),
    ],
)
def test_malformed_lines_are_one_line_errors(run_cli, tmp_path, rows, message):
    f = _write(tmp_path / "bad.jsonl", rows)
    res = run_cli("passk", f)
    assert res.exit_code == 2
    assert message in res.stderr and str(f) in res.stderr
    assert res.stderr.strip().count("\n") == 0 and "Traceback" not in res.stderr


def test_missing_file(run_cli, tmp_path):
    res = run_cli("passk", tmp_path / "nope.jsonl")
    assert res.exit_code == 2 and "not found" in res.stderr


def test_compare_identical_and_planted(run_cli, tmp_path):
    rng = np.random.default_rng(0)
    mu = rng.beta(0.6, 0.6, 150)
    base = {f"p{i}": int(rng.binomial(128, m)) for i, m in enumerate(mu)}
    better = {f"p{i}": int(rng.binomial(128, min(1.0, m + 0.08))) for i, m in enumerate(mu)}
    a = _write(tmp_path / "a.jsonl", [{"problem_id": p, "n": 128, "c": c} for p, c in base.items()])
    a2 = _write(tmp_path / "a2.jsonl", _sample_rows(dict(reversed(list(base.items()))), 128))  # other order, per-sample
    b = _write(tmp_path / "b.jsonl", [{"problem_id": p, "n": 128, "c": c} for p, c in better.items()])
    args = ["--test", "app-q", "--iterations", "1000", "--no-progress", "--bootstrap", "0", "--json"]

    same = json.loads(run_cli("passk", a, "--compare", a2, *args).stdout)["compare"]
    assert same["m"] == 32  # min(256, 128 / 4)
    for row in same["per_k"]:
        if "skipped" in row:
            assert row["k"] > 32
            continue
        assert row["difference"] == 0 and row["ci_low"] <= 0 <= row["ci_high"] and not row["significant"]

    res = run_cli("passk", b, "--compare", a, "--k", "1,4,64", *args[:-1])
    assert res.exit_code == 0, res.stderr
    assert "k > m = 32: no test" in res.stdout  # k = 64 > m = 32
    table = [line.split() for line in res.stdout.splitlines() if line.strip().startswith(("1 ", "4 "))]
    assert [row[-1] for row in table] == ["yes", "yes"]


def test_compare_requires_same_problems(run_cli, tmp_path):
    a = _write(tmp_path / "a.jsonl", [{"problem_id": "x", "n": 8, "c": 1}, {"problem_id": "y", "n": 8, "c": 1}])
    b = _write(tmp_path / "b.jsonl", [{"problem_id": "x", "n": 8, "c": 1}])
    res = run_cli("passk", a, "--compare", b)
    assert res.exit_code == 2 and "lacks 1 problem(s)" in res.stderr and "'y'" in res.stderr
    a2 = _write(tmp_path / "a2.jsonl", [{"problem_id": "x", "n": 8, "c": 1}, {"problem_id": "y", "n": 8, "c": 1}])
    res = run_cli("passk", a, "--compare", a2, "--test", "app-q", "--m", "9")  # a file with itself is refused
    assert res.exit_code == 2 and "--m must be in [1, 7]" in res.stderr


def test_passk_unreadable_inputs_are_named(run_cli, tmp_path):
    binary = tmp_path / "r.jsonl"
    binary.write_bytes(b"\xff\xfe\x00")
    huge = tmp_path / "huge.jsonl"
    huge.write_text('{"problem_id": 1, "n": 100000000000000000000000, "c": 1}\n')
    good = tmp_path / "good.jsonl"
    good.write_text('{"problem_id": 1, "n": 4, "c": 1}\n')
    for args, needle in (([binary], "not UTF-8"), ([tmp_path], "is a folder"),
                         ([huge], "line 1: 'n' must be an integer in [1, "),
                         ([good, "--seed", "-1"], "seed must be in [0, ")):
        result = run_cli("passk", *args)
        assert result.exit_code == 2 and needle in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and result.stderr.strip().count("\n") == 0


def test_passk_caps_memory_hungry_settings_and_reports_memory_errors(run_cli, tmp_path, monkeypatch):
    good = tmp_path / "good.jsonl"
    good.write_text('{"problem_id": 1, "n": 4, "c": 1}\n')
    for options, needle in ((["--bootstrap"], "--bootstrap must be in [0, 1000000]"),
                            (["--compare", good, "--test", "app-q", "--iterations"],
                             "--iterations must be in [1, 10000000]")):
        result = run_cli("passk", good, *options, "100000000000")
        assert result.exit_code == 2 and needle in result.stderr, result.stderr
    import fgrpo_sim.metrics as metrics

    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 15.3 TiB")

    monkeypatch.setattr(metrics, "pass_at_k_curve", no_memory)
    result = run_cli("passk", good)
    assert result.exit_code == 2 and "out of memory" in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_degenerate_statistics_are_refused_or_said(run_cli, tmp_path):
    """Issue 29: m = n (zero-width interval), fewer rounds than 2 / alpha, and a bootstrap over one problem."""
    a = _write(tmp_path / "a.jsonl", _sample_rows({"x": 3, "y": 5}, 8))
    b = _write(tmp_path / "b.jsonl", _sample_rows({"x": 4, "y": 5}, 8))
    res = run_cli("passk", a, "--compare", b, "--test", "app-q", "--m", "8", "--no-progress")
    assert res.exit_code == 2 and "--m must be in [1, 7], got 8" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("passk", a, "--compare", b, "--test", "app-q", "--iterations", "39", "--no-progress")
    assert res.exit_code == 2 and "--iterations must be >= 2 / --alpha = 40" in res.stderr
    one = _write(tmp_path / "one.jsonl", _sample_rows({"x": 3}, 8))
    res = run_cli("passk", one, "--k", "1")
    assert res.exit_code == 0, res.stderr
    assert "(one problem: no bootstrap interval over problems)" in res.stdout
    res = run_cli("passk", one, "--k", "1", "--json")
    assert json.loads(res.stdout)["n_bootstrap"] == 0 and "one problem" in json.loads(res.stdout)["note"]


def test_label_names_the_compare_header_and_equal_names_are_told_apart(run_cli, tmp_path):
    """Issue 29: two runs' math500.jsonl printed 'difference = math500.jsonl - math500.jsonl'."""
    (tmp_path / "grpo").mkdir()
    (tmp_path / "f-grpo").mkdir()
    a = _write(tmp_path / "f-grpo" / "math500.jsonl", _sample_rows({"x": 3, "y": 5}, 8))
    b = _write(tmp_path / "grpo" / "math500.jsonl", _sample_rows({"x": 2, "y": 5}, 8))
    res = run_cli("passk", a, "--compare", b, "--k", "1")
    assert res.exit_code == 0, res.stderr
    assert "difference = f-grpo/math500.jsonl - grpo/math500.jsonl" in res.stdout
    assert res.stdout.splitlines()[4].split()[:8] == ["k", "pass@k", "A", "pass@k", "B", "A", "-", "B"]
    res = run_cli("passk", a, "--compare", b, "--k", "1", "--label", "F-GRPO,GRPO")
    assert "difference = F-GRPO - GRPO" in res.stdout
    # issue 45: the table's headers and the two description lines use the labels too
    header = res.stdout.splitlines()[4].split()
    assert header[:6] == ["k", "pass@k", "F-GRPO", "pass@k", "GRPO", "F-GRPO"], header
    assert res.stdout.startswith(f"F-GRPO: {a}: ") and f"compared with GRPO: {b}: " in res.stdout
    single = run_cli("passk", a, "--k", "1", "--label", "F-GRPO", "--bootstrap", "0").stdout
    assert single.startswith(f"F-GRPO: {a}: ")
    res = run_cli("passk", a, "--compare", b, "--label", "F-GRPO")
    assert res.exit_code == 2 and "--label must name each of the 2 files" in res.stderr


def test_several_files_and_plot_with_bands(run_cli, tmp_path):
    """`fgrpo passk A B --plot OUT.png`: a table per file and one PNG of pass@k with bootstrap bands (before:
    one file only, and a plot needed `llm report` and an 8-column manifest)."""
    import matplotlib.image

    a = _write(tmp_path / "a.jsonl", _sample_rows({"x": 1, "y": 4, "z": 0}, 8))
    b = _write(tmp_path / "b.jsonl", [{"problem_id": p, "n": 16, "c": c} for p, c in (("x", 8), ("y", 2))])
    png = tmp_path / "curves.png"
    res = run_cli("passk", a, b, "--k", "1,2,8", "--plot", png, "--label", "A,B", "--json")
    assert res.exit_code == 0, res.stderr
    files = [json.loads(line) for line in res.stdout.splitlines()]  # JSON Lines: one object per file
    assert [f["label"] for f in files] == ["A", "B"] and [f["k"] for f in files] == [[1, 2, 8]] * 2
    assert files[0]["pass_at_k"][0] == pytest.approx(np.mean([1 / 8, 4 / 8, 0]))
    assert files[1]["pass_at_k"][2] == pytest.approx(np.mean([pass_at_k(16, 8, 8), pass_at_k(16, 2, 8)]))
    assert matplotlib.image.imread(png).shape[0] > 100
    text = run_cli("passk", a, b, "--k", "1", "--bootstrap", "0")
    assert text.stdout.startswith(f"{a}: ") and f"\n{b}: " in text.stdout  # each file named once (was twice)
    labelled = run_cli("passk", a, b, "--k", "1", "--bootstrap", "0", "--label", "A,B").stdout
    assert labelled.startswith(f"A: {a}: ") and f"\nB: {b}: " in labelled
    res = run_cli("passk", a, b, "--compare", a)
    assert res.exit_code == 2 and "--compare takes one RESULTS file" in res.stderr
    from fgrpo_sim.figures.evaluation import draw_passk_bands

    fig = draw_passk_bands([{"label": "A", **{k: files[0][k] for k in ("k", "pass_at_k", "ci_low", "ci_high")}}])
    assert len(fig.axes[0].collections) == 1 and fig.axes[0].get_legend().get_texts()[0].get_text() == "A"


def _planted(tmp_path, n=64, problems=100, shift=0.06, seed=0):
    rng = np.random.default_rng(seed)
    mu = rng.beta(0.6, 0.6, problems)
    rows = {"a": rng.binomial(n, np.clip(mu + shift, 0, 1)), "b": rng.binomial(n, mu)}
    return [_write(tmp_path / f"{name}.jsonl", [{"problem_id": f"p{i}", "n": n, "c": int(c)} for i, c in enumerate(cs)])
            for name, cs in rows.items()]


def test_compare_names_its_test_and_what_it_holds_fixed(run_cli, tmp_path):
    """Issues 37 and 45: the default test is the exact conditional test (every k <= n, seeded by --seed); the
    u-statistic and App. Q's tests stay available by name; the output names the test, its alpha and what it holds
    fixed; App. Q's options are refused without it."""
    from fgrpo_sim.commands.passk import DEFAULT_TEST
    from fgrpo_sim.metrics import DEFAULT_TEST as METRICS_DEFAULT

    assert DEFAULT_TEST == METRICS_DEFAULT == "conditional"
    a, b = _planted(tmp_path)
    res = run_cli("passk", a, "--compare", b, "--k", "1,8,32,64", "--bootstrap", "0")
    assert res.exit_code == 0, res.stderr
    assert "conditional test (exact conditional test, pooled counts split by their hypergeometric law; 4,999 Monte " \
           "Carlo rounds), two-sided alpha = 0.05" in res.stdout
    assert "problems are held fixed" in res.stdout and "no test" not in res.stdout  # k = n = 64 is tested too
    compared = json.loads(run_cli("passk", a, "--compare", b, "--k", "1,64", "--json", "--bootstrap", "0").stdout)["compare"]
    assert compared["test"] == "conditional" and "held fixed" in compared["test_description"]
    assert compared["per_k"][0]["significant"] and 0 < compared["per_k"][0]["p_value"] < 0.05
    (tmp_path / "null").mkdir()
    a0, b0 = _planted(tmp_path / "null", shift=0.0)  # a p-value away from its floor 1 / 5,000: the seed shows
    seeded = [json.loads(run_cli("passk", a0, "--compare", b0, "--k", "8", "--json", "--bootstrap", "0", "--seed", seed
                                 ).stdout)["compare"]["per_k"][0]["p_value"] for seed in ("0", "0", "5")]
    assert seeded[0] == seeded[1] != seeded[2]
    ustat = json.loads(run_cli("passk", a, "--compare", b, "--k", "1,64", "--json", "--bootstrap", "0", "--test",
                               "u-statistic").stdout)["compare"]
    assert ustat["test"] == "u-statistic" and ustat["per_k"][1] == {"k": 64, "skipped": "k > n / 2"}
    app_q = json.loads(run_cli("passk", a, "--compare", b, "--k", "1", "--json", "--bootstrap", "0", "--test", "app-q",
                               "--iterations", "200", "--no-progress").stdout)["compare"]
    assert app_q["test"] == "app-q" and app_q["m"] == 16 and app_q["iterations"] == 200
    for args, needle in ((["--compare", b, "--m", "4"], "--m is used with --test app-q only"),
                         (["--compare", b, "--iterations", "100"], "--iterations is used with --test app-q only"),
                         (["--test", "app-q"], "--test is used with --compare only"),
                         (["--compare", b, "--test", "z"], "--test must be one of conditional, u-statistic, app-q, got 'z'"),
                         (["--compare", b, "--k", "64", "--test", "u-statistic"], "--k: no k is <= 32")):
        res = run_cli("passk", a, *args)
        assert res.exit_code == 2 and needle in res.stderr, res.stderr


def test_compare_says_no_test_instead_of_a_verdict(run_cli, tmp_path):
    """Issue 45: one problem at 8/8 against 0/8 was "significant" with p = 0 and the interval [+1, +1]; now p > 0
    and a nonzero width; where every problem is all correct or all wrong in both files, one line says no test."""
    a = _write(tmp_path / "a.jsonl", [{"problem_id": "p", "n": 8, "c": 8}])
    b = _write(tmp_path / "b.jsonl", [{"problem_id": "p", "n": 8, "c": 0}])
    row = json.loads(run_cli("passk", a, "--compare", b, "--k", "1", "--json").stdout)["compare"]["per_k"][0]
    assert row["significant"] and row["p_value"] > 0 and row["ci_high"] - row["ci_low"] > 0.1
    same = _write(tmp_path / "a-again.jsonl", [{"problem_id": "p", "n": 8, "c": 8}])  # a file with itself is refused
    res = run_cli("passk", a, "--compare", same, "--k", "1,8")
    assert res.exit_code == 0, res.stderr
    assert res.stdout.count("(no test: no problem can split differently") == 2, res.stdout


def test_compare_plot_draws_the_paired_difference(run_cli, tmp_path, monkeypatch):
    """Issue 37: --plot drew per-file bootstrap bands over problems, which overlap where the paired test finds a
    difference; now a second panel draws the paired difference with the test's interval, significant k marked."""
    from fgrpo_sim.figures import evaluation

    drawn = {}

    def keep(*args, **kwargs):
        drawn["fig"] = fig = original(*args, **kwargs)
        return fig

    original = evaluation.draw_paired_difference
    monkeypatch.setattr(evaluation, "draw_paired_difference", keep)
    a, b = _planted(tmp_path)
    png = tmp_path / "diff.png"
    res = run_cli("passk", a, "--compare", b, "--k", "1,8,64", "--plot", png, "--json", "--bootstrap", "0")
    assert res.exit_code == 0, res.stderr
    assert png.stat().st_size > 0
    rows = json.loads(res.stdout)["compare"]["per_k"]
    left, right = drawn["fig"].axes
    assert not left.collections  # no bands over problems
    stars = [t for t in right.texts if t.get_text() == "*"]
    significant = [r for r in rows if r.get("significant")]
    assert len(significant) == 3 and sorted(t.xy[0] for t in stars) == [r["k"] for r in significant]
    for star, row in zip(sorted(stars, key=lambda t: t.xy[0]), significant):
        assert star.xy[1] == pytest.approx(row["ci_high"])  # drawn at the top of the test's own interval
    assert "conditional test, alpha = 0.05" in right.get_legend().get_title().get_text()


def test_same_file_name_in_two_folders_is_named_once(run_cli, tmp_path):
    """`fgrpo passk grpo/step20/math500.jsonl f-grpo/step20/math500.jsonl` printed each path twice
    ("grpo/step20/math500.jsonl: grpo/step20/math500.jsonl: ..."): the label told them apart by folders, and only
    a bare file name was recognised as the file's own."""
    paths = []
    for run in ("grpo", "f-grpo"):
        (tmp_path / run / "step20").mkdir(parents=True)
        paths.append(_write(tmp_path / run / "step20" / "math500.jsonl", _sample_rows({"x": 1, "y": 4}, 8)))
    lines = [line for line in run_cli("passk", *paths, "--k", "1", "--bootstrap", "0").stdout.splitlines()
             if "problems" in line]
    assert [line.split(": ")[0] for line in lines] == [str(p) for p in paths]
    assert all(line.count("math500.jsonl") == 1 for line in lines)


@pytest.mark.parametrize("n", [10_001, 2_000_000])
def test_k_all_beyond_ten_thousand_k_is_refused_naming_the_limit_and_auto(run_cli, tmp_path, n):
    """Issue 50: `--k all` at n = 2,000,000 ran past 5 minutes without a word (a 2e6-row table, and a bootstrap
    holding 16 GB of means). Beyond 10^4 values of k it is refused at once, naming the limit and --k auto."""
    f = _write(tmp_path / "r.jsonl", [{"problem_id": i, "n": n, "c": c} for i, c in enumerate((1, 7, n // 3))])
    res = run_cli("passk", f, "--k", "all")
    assert res.exit_code == 2, res.stdout[-200:]
    assert res.stderr.strip() == (f"fgrpo: error: --k all lists every k up to the smallest n = {n}, more than the "
                                  f"10000 values it allows; use --k auto (powers of two up to {n}) or list the k "
                                  "you need (--k 1,16,256)")


def test_k_all_at_the_limit_gives_every_k_as_listed_k_give_them(run_cli, tmp_path):
    f = _write(tmp_path / "r.jsonl", [{"problem_id": i, "n": 10_000, "c": c} for i, c in enumerate((0, 1, 9_999))])
    every = json.loads(run_cli("passk", f, "--k", "all", "--bootstrap", "0", "--json").stdout)
    assert every["k"] == list(range(1, 10_001))
    for k in (1, 2, 100, 9_999, 10_000):
        expected = np.mean([pass_at_k(10_000, c, k) for c in (0, 1, 9_999)])
        assert every["pass_at_k"][k - 1] == pytest.approx(expected, rel=1e-9), k
