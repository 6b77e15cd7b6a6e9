"""`fgrpo llm report`: App. L.4 selection and table values on synthetic eval files known by construction;
the committed paper CSV against the paper's averages."""

from __future__ import annotations

import csv
import json
from math import comb

import pytest

from fgrpo_sim.llm.evaluation.report import PAPER_CSV, build_report, load_checkpoints, load_paper_results, select_checkpoints

N = 16  # samples per problem in every synthetic file
K = 4


def _pass(c: int, k: int) -> float:
    return 1 - comb(N - c, k) / comb(N, k)


def _write_counts(path, counts):
    path.write_text("".join(json.dumps({"problem_id": f"p{i}", "n": N, "c": c}) + "\n" for i, c in enumerate(counts)))
    return path.name


#: (run, role, step, compute) -> per-benchmark correct counts of 4 problems.
#: GRPO: step 20 has the best math pass@1 -> selected (compute 20).
#: F-GRPO: step 30 is better still but costs 30 > 20 -> excluded; step 10 beats step 20 -> selected.
RUNS = {
    ("GRPO", "baseline", 10, 10): {"math500": [4, 4, 4, 4], "aime24": [0, 0, 0, 0], "gpqa_diamond": [8, 8, 8, 8]},
    ("GRPO", "baseline", 20, 20): {"math500": [8, 8, 8, 8], "aime24": [0, 0, 0, 4], "gpqa_diamond": [0, 0, 0, 0]},
    ("F-GRPO", "focal", 10, 10): {"math500": [8, 8, 8, 8], "aime24": [0, 0, 4, 4], "gpqa_diamond": [16, 16, 16, 16]},
    ("F-GRPO", "focal", 20, 20): {"math500": [8, 8, 8, 8], "aime24": [0, 0, 0, 0], "gpqa_diamond": [0, 0, 0, 0]},
    ("F-GRPO", "focal", 30, 30): {"math500": [16, 16, 16, 16], "aime24": [16, 16, 16, 16], "gpqa_diamond": [0] * 4},
}


@pytest.fixture
def manifest(tmp_path):
    rows = []
    for (run, role, step, compute), benches in RUNS.items():
        for bench, counts in benches.items():
            name = _write_counts(tmp_path / f"{run}-{step}-{bench}.jsonl", counts)
            rows.append({"comparison": "GRPO", "role": role, "method": run, "run": run, "epoch": step // 10,
                         "step": step, "compute": compute, "benchmark": bench, "file": name,
                         "paper_row": f"table1:qwen2.5-7b:{run}", "dnll_rare": 0.68 if run == "GRPO" else 0.46})
    return _write_manifest(tmp_path / "manifest.csv", rows)


def _write_manifest(path, rows):
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_selection_follows_app_l4(manifest):
    chosen = select_checkpoints(load_checkpoints(manifest, k=K))
    assert [(c.run, c.step) for c in chosen] == [("GRPO", 20), ("F-GRPO", 10)]
    with open(manifest, newline="") as fh:  # the same manifest as JSON lines
        rows = list(csv.DictReader(fh))
    as_jsonl = manifest.with_suffix(".jsonl")
    as_jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [(c.run, c.step) for c in select_checkpoints(load_checkpoints(as_jsonl, k=K))] == [("GRPO", 20), ("F-GRPO", 10)]


def test_manifest_benchmark_spellings_are_the_graders(manifest):
    """GPQA-Diamond is an OOD benchmark whatever its spelling: counted as math it would change the App. L.4
    pick (GRPO step 10 has the better GPQA score, step 20 the better math)."""
    with open(manifest, newline="") as fh:
        rows = list(csv.DictReader(fh))
    spelled = {"gpqa_diamond": "GPQA-Diamond", "math500": "MATH-500"}
    for row in rows:
        row["benchmark"] = spelled.get(row["benchmark"], row["benchmark"])
    with open(manifest, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    chosen = select_checkpoints(load_checkpoints(manifest, k=K))
    assert [(c.run, c.step) for c in chosen] == [("GRPO", 20), ("F-GRPO", 10)]
    assert set(chosen[0].scores) == {"math500", "aime24", "gpqa_diamond"}


def test_table_values_and_significance_marks(manifest):
    report = build_report(manifest, k=K, test="app-q", m=8, iterations=2000)
    base, focal = report["selected"]
    assert base["per_benchmark"]["math500"]["pass1"] == pytest.approx(50.0)
    assert base["per_benchmark"]["aime24"]["pass1"] == pytest.approx(100 * 4 / 16 / 4)
    assert base["per_benchmark"]["aime24"]["passk"] == pytest.approx(100 * _pass(4, K) / 4)
    assert base["math_pass1"] == pytest.approx((50.0 + 6.25) / 2)
    assert base["math_passk"] == pytest.approx((100 * _pass(8, K) + 100 * _pass(4, K) / 4) / 2)
    assert focal["math_pass1"] == pytest.approx((50.0 + 12.5) / 2)
    assert focal["ood_pass1"] == pytest.approx(100.0) and base["ood_pass1"] == pytest.approx(0.0)
    # GPQA goes from 0 to 100 %: significant; math500 is identical: not significant.
    assert _marks(report, "F-GRPO", "gpqa_diamond") == [True, True]
    assert _marks(report, "F-GRPO", "math500") == [False, False]
    md = report["markdown"]
    assert "| F-GRPO | 1 | 10 | 50.0 / " in md and "100.0* / 100.0*" in md
    assert "| 38.6 / 70.3 | 19.2 / 63.3 | 0.46" not in md  # dNLL of the paper only when the paper row has one
    assert "38.6 / 70.3 | 19.2 / 63.3" in md and "37.3 / 64.1 | 17.1 / 55.9" in md  # paper Table 1 columns
    assert "Paper columns: pass@1 / pass@256" in md  # said when shown (and only then: test_marks_belong_...)
    assert "app-q test (paired m-out-of-n subsampling interval, paper App. Q), two-sided alpha = 0.05" in md
    assert "Subsample size m = 8 per problem" in md
    assert "$^{*}$" in report["latex"] and r"\begin{tabular}" in report["latex"]


def test_report_cli_writes_tables_and_figure(run_cli, manifest, tmp_path):
    out = tmp_path / "report"
    result = run_cli("llm", "report", manifest, "--out-dir", out, "--k", str(K), "--test", "app-q", "--m", "8",
                     "--iterations", "500")
    assert result.exit_code == 0, result.stderr
    assert "| comparison | method | run | epoch | step | math500 | aime24 | gpqa_diamond |" in result.stdout
    assert sorted(p.name for p in out.iterdir()) == [".fgrpo-sim-outputs.json", "pass1_vs_passk.png", "passk_curves.png",
                                                     "selection.json", "table.md", "table.tex"]  # manifest: ours
    selection = json.loads((out / "selection.json").read_text())
    assert selection["selected"][1]["step"] == 10
    # the curves: the selected checkpoints' own pass@k (k = 1, 2, 4, 8, 16 <= n) and the paper's Table 12 run
    base_curve = selection["passk_curves"][0]
    assert list(base_curve["math"]) == ["1", "2", "4", "8", "16"]
    assert base_curve["math"]["4"] == pytest.approx((100 * _pass(8, K) + 100 * _pass(4, K) / 4) / 2)
    # paper: Table 12, Qwen2.5-7B GRPO, mean of MATH500 and AIME24 (k = 1: 75.8 and 15.0; k = 256: 92.8, 37.7)
    assert base_curve["paper"]["math"]["1"] == pytest.approx((75.8 + 15.0) / 2)
    assert base_curve["paper"]["math"]["256"] == pytest.approx((92.8 + 37.7) / 2)
    assert base_curve["paper"]["ood"]["1"] == pytest.approx(11.3)  # GPQA alone


def _row(markdown: str, method: str) -> str:
    """The table row whose method cell (after the comparison) is `method`."""
    return next(line for line in markdown.splitlines() if line.startswith("| ") and line.split(" | ")[1] == method)


def test_paper_columns_per_benchmark_and_title(manifest, tmp_path):
    report = build_report(manifest, k=K, title="Pipeline test, not a result")
    md = report["markdown"]
    assert md.startswith("## Pipeline test, not a result\n")
    header = md.splitlines()[2]
    assert "| paper math500 | paper aime24 | paper gpqa_diamond | paper math avg | paper OOD avg |" in header
    # Table 1 per benchmark, Qwen2.5-7B: GRPO MATH500 75.8 / 92.8, AIME24 15.0 / 37.7, GPQA 11.3 / 45.4
    grpo = _row(md, "GRPO")
    assert "| 75.8 / 92.8 | 15.0 / 37.7 | 11.3 / " in grpo
    # a Table 3 row takes its benchmarks from Table 11; a Table 6 row has averages only
    text = manifest.read_text().replace("table1:qwen2.5-7b:GRPO,", "table3:qwen2.5-7b:GRPO-lowLR,")
    text = text.replace("table1:qwen2.5-7b:F-GRPO,", "table6:qwen2.5-7b:GRPO-g0.5,")
    other = tmp_path / "other.csv"
    other.write_text(text)
    md = build_report(other, k=K)["markdown"]
    low_lr = _row(md, "GRPO")
    focal = _row(md, "F-GRPO")
    assert "| 75.9 / 94.4 | 15.0 / 51.0 |" in low_lr  # Table 11, GRPO low-LR
    assert "| - | - | - | 38.6 / 70.3 | 19.2 / 63.3 |" in focal
    # a CSV of the user's own, in paper_results.csv's format, with ids outside the shipped scheme: averages only
    own = tmp_path / "own.csv"
    own.write_text(PAPER_CSV.read_text().splitlines()[0] + "\nmine,1,m,GRPO,8,0,1.0,2.0,3.0,4.0,,own\n")
    mine = tmp_path / "mine.csv"
    mine.write_text(manifest.read_text().replace("table1:qwen2.5-7b:GRPO,", "mine,").replace(
        "table1:qwen2.5-7b:F-GRPO,", ","))
    report = build_report(mine, k=K, paper_csv=own)
    grpo = _row(report["markdown"], "GRPO")
    assert "| - | - | - | 1.0 / 2.0 | 3.0 / 4.0 |" in grpo and report["curves"][0]["paper"] is None
    with pytest.raises(ValueError, match="title must be one line"):
        build_report(manifest, k=K, title="two\nlines")


def test_report_errors_are_one_line(run_cli, manifest, tmp_path):
    too_big = run_cli("llm", "report", manifest, "--out-dir", tmp_path / "r", "--k", "32")
    assert too_big.exit_code == 2 and "pass@32 needs >= 32 samples" in too_big.stderr and "Traceback" not in too_big.stderr
    text = manifest.read_text().replace("baseline,GRPO,GRPO,1,10,10", "baseline,GRPO,GRPO,1,10,99")
    text = text.replace("baseline,GRPO,GRPO,2,20,20", "baseline,GRPO,GRPO,2,20,5")
    costly = tmp_path / "costly.csv"
    costly.write_text(text.replace("focal,F-GRPO,F-GRPO,1,10,10", "focal,F-GRPO,F-GRPO,1,10,50"))
    # baseline now selected at step 20 with compute 5: only focal checkpoints with compute <= 5 qualify (none)
    result = run_cli("llm", "report", costly, "--out-dir", tmp_path / "r2", "--k", str(K))
    assert result.exit_code == 2 and "has no checkpoint at compute <= 5" in result.stderr


#: The paper's own averages (Tables 1, 2, 3, 6), typed in again here to check the committed CSV.
PAPER = {
    "table1:qwen2.5-7b:GRPO": (37.3, 64.1, 17.1, 55.9), "table1:qwen2.5-7b:F-GRPO": (38.6, 70.3, 19.2, 63.3),
    "table1:qwen2.5-7b:DAPO": (39.4, 69.3, 15.7, 58.4), "table1:qwen2.5-7b:F-DAPO": (40.5, 72.5, 17.9, 63.6),
    "table1:qwen2.5-7b:CISPO": (39.5, 73.2, 14.9, 59.0), "table1:qwen2.5-7b:F-CISPO": (39.5, 76.8, 18.1, 65.9),
    "table2:qwen2.5-7b:GRPO-N2": (36.2, 75.0, 18.0, 67.3), "table2:qwen2.5-7b:GRPO-N32": (39.2, 70.1, 17.7, 61.7),
    "table3:qwen2.5-7b:DS-GRPO": (37.7, 73.8, 17.9, 68.3), "table6:qwen2.5-7b:GRPO-g2": (36.1, 70.7, 18.9, 62.3),
}


def test_paper_csv_round_trips_to_the_papers_averages():
    paper = load_paper_results()
    for row_id, values in PAPER.items():
        got = paper[row_id]
        assert (got["math_pass1"], got["math_pass256"], got["ood_pass1"], got["ood_pass256"]) == values
    assert [paper[f"table2:qwen2.5-7b:GRPO-N{n}"]["dnll_rare"] for n in (2, 4, 8, 16, 32)] == [0.19, 0.44, 0.68, 0.66, 0.52]
    # the same runs appear in several tables with the same numbers
    for method in ("GRPO", "DAPO", "CISPO"):
        t1, t6 = paper[f"table1:qwen2.5-7b:{method}"], paper[f"table6:qwen2.5-7b:{method}-g0"]
        assert [t1[k] for k in ("math_pass1", "ood_pass256")] == [t6[k] for k in ("math_pass1", "ood_pass256")]
    assert paper["table1:qwen2.5-7b:F-CISPO"]["math_pass256"] == paper["table6:qwen2.5-7b:CISPO-g1"]["math_pass256"]
    assert paper["table2:qwen2.5-7b:F-GRPO-N8"]["ood_pass1"] == paper["table1:qwen2.5-7b:F-GRPO"]["ood_pass1"]
    assert {p["table"] for p in paper.values()} == {"1", "2", "3", "6"}


def _eval_writer_file(path, correct_counts, n):
    """Per-sample lines with the keys `fgrpo llm eval` writes (problem_id, sample_index, correct, status, ...)."""
    path.write_text("".join(
        json.dumps({"problem_id": f"math500/{p}", "sample_index": i, "correct": i < c, "status": "graded",
                    "num_tokens": 100, "answer": "4"}) + "\n"
        for p, c in enumerate(correct_counts) for i in range(n)))
    return path.name


def _two_run_manifest(tmp_path, base_counts, focal_counts, n):
    rows = []
    for run, role, counts in (("GRPO", "baseline", base_counts), ("F-GRPO", "focal", focal_counts)):
        name = _eval_writer_file(tmp_path / f"{run}.jsonl", counts, n)
        rows.append({"comparison": "GRPO", "role": role, "method": run, "run": run, "epoch": 1, "step": 10,
                     "compute": 10, "benchmark": "math500", "file": name})
    return _write_manifest(tmp_path / "manifest.csv", rows)


def test_n8_tiny_difference_gets_no_star_and_matches_passk(tmp_path, run_cli):
    """Issue 29: with n = 8 the report used m = n (every round drew all samples: a zero-width interval, p = 4e-5,
    a star on any nonzero difference). Now m = min(256, n // 4) = 2 as in `fgrpo passk --compare`: no star."""
    base = [3, 5, 2, 6, 4, 1, 7, 3, 4, 5] * 3
    focal = list(base)
    focal[0] += 1  # one more correct sample in one problem of 30: a tiny difference
    manifest = _two_run_manifest(tmp_path, base, focal, n=8)
    report = build_report(manifest, k=2, test="app-q", iterations=2000, paper_csv=None)
    assert [mark["m"] for mark in report["significance"]] == [2]
    assert _marks(report, "F-GRPO", "math500") == [False, False]
    assert "*" not in report["markdown"].split("\n\nCells")[0]
    assert "m = 2 per problem" in report["markdown"]
    passk = run_cli("passk", tmp_path / "F-GRPO.jsonl", "--compare", tmp_path / "GRPO.jsonl", "--k", "1,2",
                    "--test", "app-q", "--iterations", "2000", "--no-progress", "--json")
    assert passk.exit_code == 0, passk.stderr
    compared = json.loads(passk.stdout)["compare"]
    assert compared["m"] == 2 and [row["significant"] for row in compared["per_k"]] == [False, False]
    # an explicit --m = n is refused, naming the benchmark and the pair
    with pytest.raises(ValueError, match=r"math500, F-GRPO vs GRPO: m must be in \[1, 7\], got 8"):
        build_report(manifest, k=2, test="app-q", m=8, iterations=2000, paper_csv=None)


def test_report_says_which_passk_went_untested(tmp_path):
    """k > m (app-q) or k > n / 2 (u-statistic) gets no test (as in `fgrpo passk`): no star, the note names it."""
    manifest = _two_run_manifest(tmp_path, [0] * 10, [8] * 10, n=8)  # 0 % -> 100 %: pass@1 significant
    report = build_report(manifest, k=8, test="app-q", iterations=2000, paper_csv=None)
    assert _marks(report, "F-GRPO", "math500") == [True, None]
    assert "100.0* / 100.0 |" in report["markdown"]
    assert "pass@8 untested (k > m) for: F-GRPO/math500 (GRPO)" in report["markdown"]
    assert "pass@8 untested" in report["latex"]
    report = build_report(manifest, k=8, test="u-statistic", paper_csv=None)
    assert "pass@8 untested (k > n / 2) for: F-GRPO/math500 (GRPO)" in report["markdown"]
    report = build_report(manifest, k=8, paper_csv=None)  # the conditional test tests every k <= n
    assert _marks(report, "F-GRPO", "math500") == [True, True] and "untested" not in report["markdown"]
    with pytest.raises(ValueError, match="m and iterations are used with test 'app-q' only"):
        build_report(manifest, k=8, m=2, paper_csv=None)


def _marks(report, run, bench, comparison="GRPO"):
    """[pass@1 significant?, pass@k significant? (None: untested)] of one comparison's test."""
    (mark,) = [m for m in report["significance"] if (m["comparison"], m["run"], m["benchmark"]) == (comparison, run, bench)]
    return [None if mark[key] is None else mark[key]["significant"] for key in ("pass1", "passk")]


def _drawn(fig):
    fig.canvas.draw()
    return fig.axes


def test_report_plot_has_no_offset_axis_and_a_minimum_span():
    """Issue 29: a 7e-6 difference read "1e-6+2.499999e1" and filled the panel as a full-height arrow."""
    from fgrpo_sim.figures.evaluation import draw_pass1_vs_passk

    points = [{"label": "GRPO", "comparison": "c", "role": "baseline", "math": (25.0, 24.999993), "ood": (10.0, 20.0),
               "paper": None},
              {"label": "F-GRPO", "comparison": "c", "role": "focal", "math": (25.0, 25.0), "ood": (11.0, 20.5),
               "paper": None}]
    for ax in _drawn(draw_pass1_vs_passk(points, k=8)):
        for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            assert axis.get_offset_text().get_text() == ""
            assert high - low >= 1.0  # percentage points: the 7e-6 difference is a dot, not a full-height arrow
        assert all("e" not in t.get_text() for t in ax.get_yticklabels())


def test_report_plots_draw_a_shared_checkpoint_once_and_skip_empty_panels(tmp_path):
    """Two comparisons share the baseline's eval file under two labels: one marker, both names; no OOD file:
    no OOD panel."""
    from fgrpo_sim.figures.evaluation import draw_report_figures

    rows = []
    for comparison, label in (("G1", "GRPO"), ("G2", "GRPO (N=8)")):
        rows.append({"comparison": comparison, "role": "baseline", "method": label, "run": "grpo", "epoch": 1,
                     "step": 10, "compute": 10, "benchmark": "math500",
                     "file": _eval_writer_file(tmp_path / "grpo.jsonl", [2] * 10, 8)})
        rows.append({"comparison": comparison, "role": "focal", "method": f"F-{comparison}", "run": f"f-{comparison}",
                     "epoch": 1, "step": 10, "compute": 10, "benchmark": "math500",
                     "file": _eval_writer_file(tmp_path / f"f-{comparison}.jsonl", [4 if comparison == "G1" else 6] * 10, 8)})
    manifest = tmp_path / "manifest.csv"
    with open(manifest, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    report = build_report(manifest, k=2, paper_csv=None)
    figures = draw_report_figures(report)
    (ax,) = _drawn(figures["pass1_vs_passk.png"])  # math only: the empty OOD panel is not drawn
    labels = sorted(t.get_text() for t in ax.texts if t.get_text())
    assert labels == ["F-G1", "F-G2", "GRPO / GRPO (N=8)"]
    assert len(ax.collections) == 5  # three checkpoints, three markers; two focal runs significant: two rings
    (curves_ax,) = _drawn(figures["passk_curves.png"])
    assert sorted(line.get_label() for line in curves_ax.get_lines()) == ["F-G1", "F-G2", "GRPO / GRPO (N=8)"]


def _table3_manifest(tmp_path, focal_steps=(10,)):
    """Table 3's layout (the rehearsal's table2-3 manifest): one F-GRPO run in two comparisons, vs GRPO and vs
    GRPO low-LR. F-GRPO's counts are drawn from GRPO's own per-problem rates; GRPO low-LR's from rates 0.25 lower.
    With `focal_steps` (10, 20), F-GRPO's step 20 (rates + 0.06) is affordable only in the low-LR comparison."""
    import numpy as np

    rng = np.random.default_rng(3)
    rates = rng.beta(0.6, 0.6, 60)
    runs = [("grpo", "baseline", "GRPO", "GRPO", 10, rates)]
    runs += [("f-grpo", "focal", "GRPO", "F-GRPO", step, rates + (0.06 if step == 20 else 0)) for step in focal_steps]
    runs += [("low", "baseline", "GRPO low-LR", "GRPO low-LR", 20, rates - 0.25)]
    runs += [("f-grpo", "focal", "GRPO low-LR", "F-GRPO", step, r) for _, _, _, _, step, r in runs[1:-1]]
    rows, files = [], {}
    for run, role, comparison, method, step, run_rates in runs:
        name = f"{run}-{step}.jsonl"
        if name not in files:
            files[name] = rng.binomial(N, np.clip(run_rates, 0, 1))
            (tmp_path / name).write_text("".join(json.dumps({"problem_id": f"p{i}", "n": N, "c": int(c)}) + "\n"
                                                 for i, c in enumerate(files[name])))
        rows.append({"comparison": comparison, "role": role, "method": method, "run": run, "epoch": step // 10,
                     "step": step, "compute": step, "benchmark": "math500", "file": name})
    return _write_manifest(tmp_path / "table3.csv", rows)


def test_marks_belong_to_their_comparison(tmp_path, run_cli):
    """Issue 37: marks were keyed by (run, benchmark), so the low-LR comparison's test overwrote the GRPO
    comparison's, and F-GRPO drawn from GRPO's own rates showed a star against GRPO."""
    manifest = _table3_manifest(tmp_path)
    out = tmp_path / "report"
    result = run_cli("llm", "report", manifest, "--out-dir", out, "--k", str(K), "--no-progress", "--no-figure")
    assert result.exit_code == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ") and "---" not in line][1:]
    # issue 45: each row names its comparison and run (F-GRPO's two rows differed only in their order before)
    assert [row.split(" | ")[:3] for row in rows] == [["| GRPO", "GRPO", "grpo"], ["| GRPO", "F-GRPO", "f-grpo"],
                                                      ["| GRPO low-LR", "GRPO low-LR", "low"],
                                                      ["| GRPO low-LR", "F-GRPO", "f-grpo"]]
    assert "*" not in rows[1] and rows[3].count("*") == 2  # vs GRPO: no mark; vs GRPO low-LR: both marks kept
    tests = {m["comparison"]: m for m in json.loads((out / "selection.json").read_text())["significance"]}
    same, lower = tests["GRPO"], tests["GRPO low-LR"]
    assert same["baseline_run"] == "grpo" and lower["baseline_run"] == "low"
    for mark in (same, lower):  # p-values and intervals kept, not only yes/no
        for key in ("pass1", "passk"):
            row = mark[key]
            assert (row["p_value"] < 0.05) == row["significant"] == (row["ci_low"] > 0 or row["ci_high"] < 0)
            assert row["ci_low"] <= row["difference"] <= row["ci_high"]
    assert same["pass1"]["p_value"] > 0.05 and same["passk"]["p_value"] > 0.05
    assert lower["pass1"]["difference"] > 20 and lower["pass1"]["p_value"] < 1e-3  # 4,999 rounds: p >= 1 / 5,000 or so
    # the note names the test that made the marks, and its alpha; no paper columns here, so no word of them
    note = result.stdout.split("Cells:")[1]
    assert "conditional test" in note and "alpha = 0.05" in note and "problems held fixed" in note
    assert "Paper columns" not in note
    app_q = build_report(manifest, k=K, test="app-q", iterations=200, paper_csv=None)["markdown"]
    assert "app-q test (paired m-out-of-n subsampling interval, paper App. Q)" in app_q and "m = 4" in app_q


def test_report_labels_are_distinct_and_do_not_overprint(tmp_path):
    """Issue 37: F-GRPO selected at two checkpoints (one per comparison) drew two points both labelled "F-GRPO",
    and labels of nearby points overprinted."""
    from fgrpo_sim.figures.evaluation import draw_report_figures

    report = build_report(_table3_manifest(tmp_path, focal_steps=(10, 20)), k=K, paper_csv=None)
    assert [(s["run"], s["step"]) for s in report["selected"]] == [("grpo", 10), ("f-grpo", 10), ("low", 20),
                                                                   ("f-grpo", 20)]
    figures = draw_report_figures(report)
    (ax,) = _drawn(figures["pass1_vs_passk.png"])
    texts = [t for t in ax.texts if t.get_text()]
    assert sorted(t.get_text() for t in texts) == ["F-GRPO (GRPO low-LR)", "F-GRPO (GRPO)", "GRPO", "GRPO low-LR"]
    renderer = figures["pass1_vs_passk.png"].canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in texts]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    (curves_ax,) = _drawn(figures["passk_curves.png"])
    assert sorted(line.get_label() for line in curves_ax.get_lines()) == [
        "F-GRPO (GRPO low-LR)", "F-GRPO (GRPO)", "GRPO", "GRPO low-LR"]


def test_report_figure_rings_significant_points_and_says_so(tmp_path):
    """Issue 45: the figure carried no significance marks (its star means "focal run"). A focal point whose own
    comparison's test marks a benchmark of the panel gets a black ring, and the legend names the ring."""
    from fgrpo_sim.figures.evaluation import draw_report_figures

    report = build_report(_table3_manifest(tmp_path), k=K, paper_csv=None)
    marked = {(m["comparison"], m["run"]) for m in report["significance"]
              if any(m[key] and m[key]["significant"] for key in ("pass1", "passk"))}
    assert marked == {("GRPO low-LR", "f-grpo")}  # F-GRPO vs GRPO (same rates): no mark
    expected = sorted({tuple(p["math"]) for p in report["points"] if p["role"] == "focal"
                       and (p["comparison"], "f-grpo") in marked})
    (ax,) = _drawn(draw_report_figures(report)["pass1_vs_passk.png"])
    rings = [c for c in ax.collections if list(c.get_sizes()) == [190]]
    assert len(rings) == 1 and [tuple(rings[0].get_offsets()[0])] == [pytest.approx(xy) for xy in expected]
    assert any("significant vs baseline" in t.get_text() for t in ax.get_legend().get_texts())
    # no significant difference anywhere: no ring, no legend entry
    (tmp_path / "same").mkdir()
    same = _two_run_manifest(tmp_path / "same", [4] * 10, [4] * 10, n=8)
    (ax,) = _drawn(draw_report_figures(build_report(same, k=8, paper_csv=None))["pass1_vs_passk.png"])
    assert not [c for c in ax.collections if list(c.get_sizes()) == [190]]
    assert not any("significant" in t.get_text() for t in ax.get_legend().get_texts())
