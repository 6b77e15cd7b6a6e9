"""Checkpoint selection (paper App. L.4) and result tables shaped like the paper's Tables 1, 2, 3 and 6.

Input: a manifest (CSV, or JSON lines with the same keys), one row per eval file:

    comparison  group of runs compared with one baseline (e.g. "GRPO" for GRPO vs F-GRPO)
    role        baseline | focal  (exactly one baseline run per comparison)
    method      the row label in the tables (e.g. "F-GRPO"); rows of one run share it
    run         run name (default: method); a run has one or more checkpoints
    epoch, step checkpoint position (integers; the paper checkpoints each epoch)
    compute     training compute up to the checkpoint, any unit shared by the comparison (default: step)
    benchmark   math500, aime24, aime25, amc23, minerva, olympiadbench, gpqa_diamond, ifeval, synlogic, ...
    file        the `fgrpo llm eval` output (or any file `fgrpo passk` reads), relative to the manifest
    dnll_rare   optional: the run's dNLL_rare (`fgrpo llm dnll-rare`), shown in its own column
    paper_row   optional: a row_id of the paper's numbers (PAPER_CSV) for the "paper" columns: its averages,
                and per benchmark the shipped tables' pass@1 / pass@256 (`fgrpo_sim.paper_tables`: Table 1 for
                table1 rows, Table 10 for table2, Table 11 for table3; Table 6 has averages only)

Selection (App. L.4): the baseline run's checkpoint with the highest average math pass@1 (ties: less
compute); each focal run's checkpoint with the highest average math pass@1 among its checkpoints whose
compute is at most the selected baseline's. Averages are plain means over the benchmarks present
(math: every benchmark not in OOD_BENCHMARKS; OOD: gpqa_diamond, ifeval, synlogic), in percent.

Significance: for every comparison, focal run and benchmark, a paired test of pass@1 and pass@k between the
selected focal and baseline checkpoints (`fgrpo_sim.metrics.paired_tests`, as `fgrpo passk --compare`): by
default the exact conditional test (size alpha at any problem count, n and k <= n; seeded), by name the
u-statistic z-test (k <= n / 2) or App. Q's m-out-of-n subsampling test (the paper's marks; m = min(256, n // 4) unless given; k <= m). A significant per-benchmark
difference is marked "*" in its comparison's row (each row names its comparison and run; the figure rings
such focal points); the table's note names the test, alpha and the untested
cells, and selection.json keeps each test's difference, interval and p-value. The marks belong to their
comparison: a focal run in two comparisons (Table 3: F-GRPO vs GRPO and vs GRPO low-LR) has a mark per
comparison. Averages are not tested (the paper's test is per benchmark). The benchmarks' problems are held
fixed: a mark is about the sampled generations on these problems, not about problem sampling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fgrpo_sim import jsonl as json  # its dumps writes standard JSON (NaN averages as null, never bare NaN)
from fgrpo_sim.llm.evaluation.ood_data import OOD_NAMES

OOD_BENCHMARKS = OOD_NAMES
MATH_ORDER = ("math500", "aime24", "aime25", "amc23", "minerva", "olympiadbench")
PAPER_CSV = Path(__file__).with_name("paper_results.csv")
ROLES = ("baseline", "focal")


@dataclass
class Checkpoint:
    comparison: str
    role: str
    method: str
    run: str
    epoch: int
    step: int
    compute: float
    files: dict[str, Path] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)  # benchmark -> ResultCounts
    scores: dict[str, tuple[float, float]] = field(default_factory=dict)  # benchmark -> (pass@1, pass@k) in %
    dnll_rare: float | None = None
    paper_row: str | None = None

    def average(self, kind: str, index: int) -> float:
        names = [b for b in self.scores if (b in OOD_BENCHMARKS) == (kind == "ood")]
        return float(np.mean([self.scores[b][index] for b in names])) if names else math.nan

    def summary(self) -> dict[str, Any]:
        return {"comparison": self.comparison, "role": self.role, "method": self.method, "run": self.run,
                "epoch": self.epoch, "step": self.step, "compute": self.compute,
                "math_pass1": self.average("math", 0), "math_passk": self.average("math", 1),
                "ood_pass1": self.average("ood", 0), "ood_passk": self.average("ood", 1),
                "per_benchmark": {b: {"pass1": s[0], "passk": s[1]} for b, s in self.scores.items()},
                "dnll_rare": self.dnll_rare}


def _read_manifest(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        raise FileNotFoundError(f"manifest not found: {path}")
    if path.suffix.lower() in (".jsonl", ".json"):
        from fgrpo_sim.jsonl import read_json_objects

        return [{k: "" if v is None else str(v) for k, v in row.items()} for _, row in read_json_objects(path, "manifest")]
    return [row for _, row in _csv_rows(path, "manifest")]


def _csv_rows(path: Path, what: str) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) of a CSV file with a header: the one CSV reader (`csv_rows`) and its checks."""
    from fgrpo_sim.csv_rows import read_csv_dicts

    return read_csv_dicts(path, what)


def _number(row: dict[str, str], key: str, where: str, default: float | None = None, integer: bool = False):
    text = row.get(key, "")
    if text == "":
        if default is None:
            raise ValueError(f"{where}: missing {key}")
        return default
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{where}: {key} must be a number, got {text!r}") from None
    if not math.isfinite(value):  # inf / nan / 1e400 would reach int() or the tables
        raise ValueError(f"{where}: {key} must be a finite number, got {text!r}")
    if integer:
        if value != int(value) or value < 0:
            raise ValueError(f"{where}: {key} must be an integer >= 0, got {text!r}")
        return int(value)
    return value


def _report_name(benchmark: str) -> str:
    """The grader's canonical name (GPQA-Diamond -> gpqa_diamond, so it lands in the OOD columns); a name the
    grader does not know (a user's own math set) keeps its spelling and counts as math."""
    from fgrpo_sim.llm.evaluation.prompts import canonical_benchmark

    try:
        name = canonical_benchmark(benchmark)
    except ValueError:
        return benchmark
    return benchmark if name == "generic" else name  # "math" or the user's own set keeps its column name


def load_checkpoints(manifest: str | Path, k: int = 256) -> list[Checkpoint]:
    """Checkpoints of the manifest with their per-benchmark pass@1 and pass@k (percent)."""
    from fgrpo_sim.metrics import pass_at_k
    from fgrpo_sim.metrics.results_io import read_results_jsonl

    manifest = Path(manifest)
    rows = _read_manifest(manifest)
    if not rows:
        raise ValueError(f"{manifest}: no rows")
    checkpoints: dict[tuple, Checkpoint] = {}
    for number, row in enumerate(rows, start=2 if manifest.suffix.lower() == ".csv" else 1):
        where = f"{manifest} row {number}"
        for key in ("comparison", "role", "method", "benchmark", "file"):
            if not row.get(key):
                raise ValueError(f"{where}: missing {key}")
        if row["role"] not in ROLES:
            raise ValueError(f"{where}: role must be one of {', '.join(ROLES)}, got {row['role']!r}")
        row["benchmark"] = _report_name(row["benchmark"])
        step = _number(row, "step", where, integer=True)
        key = (row["comparison"], row.get("run") or row["method"], step)
        ckpt = checkpoints.get(key)
        if ckpt is None:
            ckpt = checkpoints[key] = Checkpoint(
                comparison=row["comparison"], role=row["role"], method=row["method"], run=row.get("run") or row["method"],
                epoch=_number(row, "epoch", where, default=0, integer=True), step=step,
                compute=_number(row, "compute", where, default=float(step)))
        elif (ckpt.role, ckpt.method) != (row["role"], row["method"]):
            raise ValueError(f"{where}: run {ckpt.run!r} has role/method {ckpt.role}/{ckpt.method} on an earlier row")
        if row["benchmark"] in ckpt.files:
            raise ValueError(f"{where}: {row['benchmark']} listed twice for run {ckpt.run!r} step {step}")
        file = Path(row["file"]) if Path(row["file"]).is_absolute() else manifest.parent / row["file"]
        counts = read_results_jsonl(file)
        if counts.n.min() < k:
            raise ValueError(f"{file}: pass@{k} needs >= {k} samples per problem, a problem has {int(counts.n.min())} "
                             "(lower --k)")
        ckpt.files[row["benchmark"]] = file
        ckpt.counts[row["benchmark"]] = counts
        ckpt.scores[row["benchmark"]] = (100 * float(np.mean(pass_at_k(counts.n, counts.c, 1))),
                                         100 * float(np.mean(pass_at_k(counts.n, counts.c, k))))
        if row.get("dnll_rare"):
            ckpt.dnll_rare = _number(row, "dnll_rare", where)
        if row.get("paper_row"):
            ckpt.paper_row = row["paper_row"]
    return list(checkpoints.values())


def select_checkpoints(checkpoints: list[Checkpoint]) -> list[Checkpoint]:
    """App. L.4: per comparison, the best baseline checkpoint by average math pass@1, then for each focal run
    its best checkpoint at equal or lower compute. Returned in manifest order of the runs, baseline first."""
    comparisons: dict[str, list[Checkpoint]] = {}
    for ckpt in checkpoints:
        comparisons.setdefault(ckpt.comparison, []).append(ckpt)
    chosen: list[Checkpoint] = []
    for name, members in comparisons.items():
        benchmark_sets = {tuple(sorted(c.scores)) for c in members}
        if len(benchmark_sets) > 1:
            raise ValueError(f"comparison {name!r}: checkpoints cover different benchmarks {sorted(benchmark_sets)}")
        baseline_runs = {c.run for c in members if c.role == "baseline"}
        if len(baseline_runs) != 1:
            raise ValueError(f"comparison {name!r} needs exactly one baseline run, found {len(baseline_runs)}")

        def best(candidates: list[Checkpoint]) -> Checkpoint:
            return max(candidates, key=lambda c: (c.average("math", 0), -c.compute, -c.step))

        base = best([c for c in members if c.role == "baseline"])
        chosen.append(base)
        focal_runs: dict[str, list[Checkpoint]] = {}
        for c in members:
            if c.role == "focal":
                focal_runs.setdefault(c.run, []).append(c)
        for run, run_ckpts in focal_runs.items():
            affordable = [c for c in run_ckpts if c.compute <= base.compute]
            if not affordable:
                raise ValueError(f"comparison {name!r}: focal run {run!r} has no checkpoint at compute <= "
                                 f"{base.compute:g} (the selected baseline's)")
            chosen.append(best(affordable))
    return chosen


def significance(chosen: list[Checkpoint], k: int, test: str = "conditional", m: int | None = None,
                 iterations: int = 50_000, seed: int = 0, alpha: float = 0.05, progress: bool = False
                 ) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(comparison, focal run, benchmark) -> that comparison's test of the focal run vs its baseline:
    {"comparison", "run", "baseline_run", "benchmark", "test", "alpha", "m" (app-q), "pass1": result, "passk":
    result or None (untested: k > n / 2 under u-statistic, k > m under app-q, or no split can differ under
    conditional)}, a result being {"k", "difference", "ci_low",
    "ci_high", "p_value", "significant"} (difference and interval in percentage points, as the table).
    `test`, m, iterations, seed: as `fgrpo passk --compare` (`fgrpo_sim.metrics.paired_tests`)."""
    from fgrpo_sim.metrics import run_paired_test, subsample_size
    from fgrpo_sim.metrics.paired_tests import largest_k
    from fgrpo_sim.progress import bar as progress_bar

    from fgrpo_sim.metrics.results_io import align_problems

    bases = {c.comparison: c for c in chosen if c.role == "baseline"}
    marks: dict[tuple[str, str, str], dict[str, Any]] = {}
    pairs = [(focal, bench) for focal in chosen if focal.role == "focal" for bench in focal.counts]
    # At paper settings App. Q's test (n = 1024, m = 256, 50,000 rounds) takes seconds per pair: show progress.
    for focal, bench in progress_bar(pairs, progress=progress, desc="significance tests", unit="test"):
        base = bases[focal.comparison]
        a, b = focal.counts[bench], base.counts[bench]
        order = align_problems(a, b)
        n_min = min(int(a.n.min()), int(b.n.min()))
        try:
            size = subsample_size(n_min, m) if test == "app-q" else None
        except ValueError as exc:
            raise ValueError(f"{bench}, {focal.run} vs {base.run}: {exc}") from None
        ks = [kk for kk in dict.fromkeys((1, k)) if kk <= largest_k(test, n_min, size)]  # others: untested
        rows = {} if not ks else {row["k"]: row for row in run_paired_test(
            test, a.n, a.c, b.n[order], b.c[order], ks, alpha=alpha, m=size, iterations=iterations, seed=seed).rows()}
        result = {kk: {"k": kk, "significant": row["significant"], "p_value": row["p_value"],
                       **{key: 100 * row[key] for key in ("difference", "ci_low", "ci_high")}}
                  for kk, row in rows.items() if "skipped" not in row}  # the conditional test's "no test": none
        marks[(focal.comparison, focal.run, bench)] = {
            "comparison": focal.comparison, "run": focal.run, "baseline_run": base.run, "benchmark": bench,
            "test": test, "alpha": alpha, **({"m": size} if size is not None else {}),
            "pass1": result.get(1), "passk": result.get(k)}
    return marks


def _significant_benchmarks(c: Checkpoint, marks: dict) -> dict[str, list[str]]:
    """Per kind (math, ood), the benchmarks where this focal checkpoint's own comparison test marks pass@1 or
    pass@k significant (the figure rings such points); empty for a baseline."""
    out: dict[str, list[str]] = {"math": [], "ood": []}
    for bench in c.scores:
        mark = marks.get((c.comparison, c.run, bench), {})
        if any(mark.get(key) and mark[key]["significant"] for key in ("pass1", "passk")):
            out["ood" if bench in OOD_BENCHMARKS else "math"].append(bench)
    return out


def _star(result: dict | None) -> str:
    return "*" if result and result["significant"] else ""


def load_paper_results(path: str | Path = PAPER_CSV) -> dict[str, dict[str, Any]]:
    """row_id -> the paper's numbers (floats; None where the paper gives none or we did not transcribe)."""
    out = {}
    numeric = ("group_size", "gamma", "math_pass1", "math_pass256", "ood_pass1", "ood_pass256", "dnll_rare")
    rows = _csv_rows(Path(path), "paper CSV")
    missing = [key for key in ("row_id", *numeric) if rows and key not in rows[0][1]]
    if not rows or missing:
        raise ValueError(f"{path}: the paper CSV needs the columns row_id, {', '.join(numeric)}"
                         + (f"; missing {', '.join(missing)}" if missing else "; it has no rows"))
    for line, row in rows:
        entry: dict[str, Any] = dict(row)
        for key in numeric:
            entry[key] = _number(row, key, f"{path} line {line}", default=math.nan) if (row[key] or "").strip() else None
        if row["row_id"] in out:
            raise ValueError(f"{path} line {line}: row_id {row['row_id']!r} appears twice")
        out[row["row_id"]] = entry
    return out


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def build_table(chosen: list[Checkpoint], k: int, marks: dict | None = None,
                paper: dict[str, dict[str, Any]] | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and rows (strings) of the Table 1/2/3/6-shaped table: comparison, method, run, epoch, step, per
    benchmark pass@1 / pass@k, averages."""
    marks, paper = marks or {}, paper or {}
    benches = sorted({b for c in chosen for b in c.scores},
                     key=lambda b: (b in OOD_BENCHMARKS, MATH_ORDER.index(b) if b in MATH_ORDER
                                    else (OOD_BENCHMARKS.index(b) if b in OOD_BENCHMARKS else 99), b))
    # a run can sit in two comparisons (Table 3: F-GRPO vs GRPO and vs GRPO low-LR): each row names both
    header = ["comparison", "method", "run", "epoch", "step"] + benches + ["math avg", "OOD avg"]
    with_dnll = any(c.dnll_rare is not None for c in chosen)
    with_paper = any(c.paper_row for c in chosen)
    header += ["dNLL_rare"] if with_dnll else []
    if with_paper:
        header += [f"paper {b}" for b in benches] + ["paper math avg", "paper OOD avg"]
        header += ["paper dNLL_rare"] if with_dnll else []
    rows = []
    for c in chosen:
        cells = [c.comparison, c.method, c.run, str(c.epoch), str(c.step)]
        for b in benches:
            p1, pk = c.scores[b]
            mark = marks.get((c.comparison, c.run, b), {})  # this comparison's test: a run may sit in two
            cells.append(f"{p1:.1f}{_star(mark.get('pass1'))} / {pk:.1f}{_star(mark.get('passk'))}")
        cells += [f"{_fmt(c.average('math', 0))} / {_fmt(c.average('math', 1))}",
                  f"{_fmt(c.average('ood', 0))} / {_fmt(c.average('ood', 1))}"]
        if with_dnll:
            cells.append(_fmt(c.dnll_rare, 2))
        if with_paper:
            ref = paper.get(c.paper_row or "", {})
            if c.paper_row and not ref:
                raise ValueError(f"paper_row {c.paper_row!r} is not in the paper CSV")
            per_bench = _paper_benchmarks(c.paper_row)
            cells += [" / ".join(_fmt(v) for v in per_bench[b]) if b in per_bench else "-" for b in benches]
            cells += [f"{_fmt(ref.get('math_pass1'))} / {_fmt(ref.get('math_pass256'))}",
                      f"{_fmt(ref.get('ood_pass1'))} / {_fmt(ref.get('ood_pass256'))}"]
            if with_dnll:
                cells.append(_fmt(ref.get("dnll_rare"), 2))
        rows.append(cells)
    return header, rows


def _paper_benchmarks(row_id: str | None) -> dict[str, tuple[float, float]]:
    """The shipped tables' per-benchmark numbers of a paper row; {} for ids outside their scheme (own CSVs)."""
    from fgrpo_sim.paper_tables import is_table_row_id, per_benchmark

    return per_benchmark(row_id) if row_id and is_table_row_id(row_id) else {}


def checkpoint_key(c: Checkpoint) -> str:
    """A checkpoint's identity for the figures: its eval files (the same files under two labels or in two
    comparisons are one checkpoint, drawn once)."""
    return "|".join(sorted(str(Path(f).resolve()) for f in c.files.values()))


def passk_curves(chosen: list[Checkpoint], paper: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Per selected checkpoint: k -> average pass@k (%) over its math and OOD benchmarks, k = 1, 2, 4, ... <= the
    smallest n; with `paper`, the paper's curve of the same run (Tables 12-14) over the same benchmarks."""
    from fgrpo_sim.metrics import pass_at_k
    from fgrpo_sim.paper_tables import curve_source, is_table_row_id, passk_curve

    out = []
    for c in chosen:
        entry: dict[str, Any] = {"label": c.method, "comparison": c.comparison, "role": c.role, "step": c.step,
                                 "paper": None, "key": checkpoint_key(c)}
        n_min = min(int(counts.n.min()) for counts in c.counts.values())
        ks = [2 ** i for i in range(n_min.bit_length()) if 2 ** i <= n_min]
        for kind in ("math", "ood"):
            names = [b for b in c.counts if (b in OOD_BENCHMARKS) == (kind == "ood")]
            entry[kind] = {k: float(np.mean([100 * np.mean(pass_at_k(c.counts[b].n, c.counts[b].c, k)) for b in names]))
                           for k in ks} if names else {}
        source = None
        if paper and c.paper_row and c.paper_row in paper and is_table_row_id(c.paper_row):
            source = curve_source(c.paper_row)
        if source is not None:
            entry["paper"] = {"source": f"{source[0]} {source[1]} (paper Tables 12-14)",
                              **{kind: passk_curve(*source, [b for b in c.counts
                                                             if (b in OOD_BENCHMARKS) == (kind == "ood")])
                                 for kind in ("math", "ood")}}
        out.append(entry)
    return out


def test_note(marks: dict, k: int) -> str:
    """Which test made the marks (name, alpha, m under app-q), what it holds fixed, and which pass@k cells went
    untested: said, not left blank."""
    from fgrpo_sim.metrics.paired_tests import describe, untested_reason

    if not marks:
        return ""
    first = next(iter(marks.values()))
    test, alpha = first["test"], first["alpha"]
    sizes = sorted({mark["m"] for mark in marks.values() if "m" in mark})
    note = (f" * = significant difference from the row's own comparison baseline, {describe(test, alpha)}; the "
            "benchmarks' problems held fixed (a mark is about the sampled generations, not problem sampling).")
    if sizes:
        note += f" Subsample size m = {', '.join(map(str, sizes))} per problem (min(256, n // 4) unless --m)."
    untested = sorted(f"{mark['run']}/{mark['benchmark']} ({mark['comparison']})" for mark in marks.values()
                      if mark["passk"] is None)
    if untested and k != 1:
        reason = untested_reason(test, sizes[0] if sizes else None).split(" = ")[0]
        note += f" pass@{k} untested ({reason}) for: {', '.join(untested)}."
    no_pass1 = sorted(f"{mark['run']}/{mark['benchmark']} ({mark['comparison']})" for mark in marks.values()
                      if mark["pass1"] is None)
    if no_pass1:  # the conditional test where every problem is all correct or all wrong in both runs
        note += f" pass@1 untested ({untested_reason(test, None)}) for: {', '.join(no_pass1)}."
    return note


PAPER_NOTE = "Paper columns: pass@1 / pass@256 as printed in the paper (per benchmark: Tables 1, 10, 11)."


def to_markdown(header: list[str], rows: list[list[str]], k: int, title: str | None = None, marks: dict | None = None
                ) -> str:
    lines = ([f"## {title}", ""] if title else []) + ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    note = (f"\nCells: pass@1 / pass@{k} in %." + test_note(marks or {}, k)
            + (" " + PAPER_NOTE if _with_paper(header) else ""))
    return "\n".join(lines) + "\n" + note + "\n"


def _with_paper(header: list[str]) -> bool:
    return any(h.startswith("paper ") for h in header)


def to_latex(header: list[str], rows: list[list[str]], k: int, title: str | None = None, marks: dict | None = None
             ) -> str:
    def esc(text: str) -> str:
        return text.replace("_", r"\_").replace("%", r"\%").replace("*", r"$^{*}$")

    lines = ([f"% {title}"] if title else []) + [r"\begin{tabular}{l" + "c" * (len(header) - 1) + "}", r"\toprule",
             " & ".join(esc(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(esc(c) for c in r) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}",
              f"% cells: pass@1 / pass@{k} (%)." + test_note(marks or {}, k).replace("* =", "$^*$ =")
              + (" " + PAPER_NOTE if _with_paper(header) else "")]
    return "\n".join(lines) + "\n"


def build_report(manifest: str | Path, *, k: int = 256, test: str = "conditional", m: int | None = None,
                 iterations: int | None = None, seed: int = 0, paper_csv: str | Path | None = PAPER_CSV,
                 progress: bool = False, title: str | None = None) -> dict[str, Any]:
    """Everything `fgrpo llm report` writes: selection, markdown and LaTeX tables (under `title`), figure data.
    test: the paired test of the marks ("conditional", "u-statistic" or "app-q"); m and iterations (default
    50,000) are app-q's, refused with the other tests; seed: the conditional test's and app-q's."""
    from fgrpo_sim.validation import check_integer

    from fgrpo_sim.metrics.paired_tests import check_test
    from fgrpo_sim.metrics.subsampling import min_iterations

    check_integer("k", k, 1)
    if check_test(test) != "app-q" and (m is not None or iterations is not None):
        raise ValueError(f"m and iterations are used with test 'app-q' only, got test {test!r}")
    if m is not None:
        check_integer("m", m, 1)
    iterations = 50_000 if iterations is None else iterations
    check_integer("iterations", iterations, min_iterations(0.05))  # fewer rounds cannot reach p < 0.05
    if title is not None and ("\n" in title or "\r" in title):
        raise ValueError("title must be one line (it heads table.md and a LaTeX comment)")
    checkpoints = load_checkpoints(manifest, k)
    chosen = select_checkpoints(checkpoints)
    marks = significance(chosen, k, test, m, iterations, seed, progress=progress)
    paper = load_paper_results(paper_csv) if paper_csv else {}
    header, rows = build_table(chosen, k, marks, paper)
    points = [{"label": c.method, "comparison": c.comparison, "role": c.role, "step": c.step, "key": checkpoint_key(c),
               "math": (c.average("math", 0), c.average("math", 1)), "ood": (c.average("ood", 0), c.average("ood", 1)),
               "paper": paper.get(c.paper_row or ""), "significant": _significant_benchmarks(c, marks)} for c in chosen]
    return {"k": k, "selected": [c.summary() for c in chosen], "all_checkpoints": [c.summary() for c in checkpoints],
            "significance": list(marks.values()),
            "markdown": to_markdown(header, rows, k, title, marks), "latex": to_latex(header, rows, k, title, marks),
            "points": points, "curves": passk_curves(chosen, paper), "title": title}


def selection_data(report: dict[str, Any]) -> dict[str, Any]:
    """What selection.json holds (and `fgrpo llm report --json` prints): the selected checkpoints, every
    checkpoint's scores, each comparison's significance tests (`significance`: test, alpha, difference, interval,
    p-value per focal run and benchmark) and the pass@k curves."""
    data = {key: report[key] for key in ("k", "selected", "all_checkpoints", "significance")
            if key in report}
    if report.get("curves"):
        data["passk_curves"] = [{k: v for k, v in c.items() if k != "key"} for c in report["curves"]]
    return data


#: What `write_report` always writes; the figures (file name -> Figure) come on top.
REPORT_FILES = ("table.md", "table.tex", "selection.json")


def report_folder(out_dir: str | Path, force: bool = False):
    """`--out-dir` as an output folder under the overwrite rule (fgrpo_sim.ownership: its manifest lists ours)."""
    from fgrpo_sim.ownership import OutputFolder

    return OutputFolder(out_dir, "--out-dir", force=force)


def write_report(report: dict[str, Any], out_dir: str | Path, *, figures: dict[str, Any] | None = None,
                 force: bool = False) -> list[Path]:
    """table.md, table.tex and selection.json under out_dir, plus each of `figures` (file name -> drawn
    matplotlib Figure, e.g. from `fgrpo_sim.figures.evaluation.draw_report_figures(report)`) as PNG,
    titled with the report's title; all atomically. The report is data: drawing is the caller's.
    Every file is checked before the first is written: one there that this tool did not write is refused
    (ValueError naming --force) unless `force`, and nothing is written."""
    folder = report_folder(out_dir, force)
    figures = figures or {}
    folder.check([*REPORT_FILES, *figures])
    written = []
    for name, text in (("table.md", report["markdown"]), ("table.tex", report["latex"]),
                       ("selection.json", json.dumps(selection_data(report), indent=2) + "\n")):
        written.append(folder.write_text(name, text))
    for name, fig in figures.items():
        if report.get("title"):
            fig.suptitle(report["title"], fontsize=9)
        with folder.path(name) as tmp:
            fig.savefig(tmp, format="png", dpi=150)
        written.append(Path(out_dir) / name)
    return written
