"""`fgrpo passk`: pass@k table of an evaluation results file, optionally compared with another."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import typer

from fgrpo_sim.commands.options import list_option
from fgrpo_sim.commands.tables import echo_table

_FORMAT_HELP = (
    "Input format (JSON lines): one object per line with 'problem_id' (string or integer) and either "
    "'correct' (true/false; one line per generated sample, as `fgrpo llm eval` writes) or 'n' and 'c' "
    "(samples and correct samples; one line per problem). An optional integer 'sample_index' on "
    "per-sample lines makes a repeated sample an error. Other keys are ignored, blank lines skipped; "
    "any malformed line is an error naming the file and line. Problems may have different n."
)


DEFAULT_TEST = "conditional"  # metrics.paired_tests.DEFAULT_TEST; not imported here: the CLI loads numpy when a command runs
MAX_ITERATIONS = 10**7  # the test keeps every round's differences in memory (8 bytes x rounds x k values)
MAX_BOOTSTRAP = 10**6  # the bootstrap draws all resamples at once (8 bytes x resamples x problems)
# --k all: a table row per k. pass@k at every k is one cumulative sum per problem (metrics.pass_at_every_k: 2e6 k
# in about 0.4 s), but the table (rich: about 7 s per 10^4 rows) and the bootstrap's means (8 bytes x resamples x k:
# 16 GB at 2e6 k) are not: beyond this many k, --k auto, or the k asked for
MAX_ALL_K = 10**4


def _parse_ks(given: list, n_min: int) -> list[int]:
    """--k as parsed (options.list_option): ['auto'] -> powers of two up to n_min; ['all'] -> 1..n_min; else the
    integers given, sorted."""
    if given == ["auto"]:
        ks, k = [], 1
        while k <= n_min:
            ks.append(k)
            k *= 2
        return ks
    if given == ["all"]:
        if n_min > MAX_ALL_K:
            raise ValueError(f"--k all lists every k up to the smallest n = {n_min}, more than the {MAX_ALL_K} values it "
                             f"allows; use --k auto (powers of two up to {n_min}) or list the k you need (--k 1,16,256)")
        return list(range(1, n_min + 1))
    from fgrpo_sim.validation import check_integer

    check_integer("--k", given, 1, 2**62)
    return sorted(given)


def _check_ks_fit(ks: list[int], data, label: str) -> None:
    too_big = [k for k in ks if k > data.n.min()]
    if too_big:
        k = too_big[0]
        short = [i for i in range(len(data.problem_ids)) if data.n[i] < k]
        i = short[0]
        raise ValueError(
            f"--k {k} exceeds the number of samples of {len(short)} problem(s) in {label} "
            f"(e.g. problem {data.problem_ids[i]!r}, first seen on line {data.first_line[i]}, has n = {data.n[i]}); "
            f"the largest usable k is {int(data.n.min())}"
        )


def _is_passk_result(path: Path) -> bool:
    """An earlier `--out` of this command, one file or several (the overwrite rule's recogniser)."""
    from fgrpo_sim.jsonl import has_keys

    # its first JSON line: one object per file (JSON Lines), or last release's {"files": [...]}
    return has_keys(path, ("results", "k", "pass_at_k"), lines=True) or has_keys(path, ("files",), lines=True)


def _format_p(p: float) -> str:
    return f"{p:.4f}" if p >= 1e-3 else f"{p:.1e}"


def distinct_names(paths: list[Path]) -> list[str]:
    """Each file's name, with as many parent folders as it takes to tell equal names apart
    (grpo/math500.jsonl and f-grpo/math500.jsonl, not math500.jsonl twice)."""
    parts = [Path(p).resolve().parts for p in paths]
    for depth in range(1, max(len(x) for x in parts) + 1):
        names = ["/".join(x[-depth:]) for x in parts]
        if len(set(names)) == len(names):
            return names
    return [str(p) for p in paths]  # the same file twice: its path


def _refuse_self_compare(results: Path, compare: Path) -> None:
    """`passk R --compare R` (in any spelling) differs by 0 at every k with p = 1: a mistake, like R given twice."""
    import os

    if os.path.realpath(results) == os.path.realpath(compare):
        raise ValueError(f"--compare {compare} is the RESULTS file {results}: a file compared with itself differs by "
                         "0 at every k; give the other method's results file")


def _refuse_repeated_files(paths: list[Path]) -> None:
    """A results file given twice (in any spelling: ./r.jsonl and r.jsonl, or a link to it) is a mistake: its
    table would print twice and its label clash. Refused naming the file, as a figure named twice is."""
    import os

    seen: dict[str, list[str]] = {}
    for path in paths:
        seen.setdefault(os.path.realpath(path), []).append(os.fspath(path))
    for spellings in seen.values():
        if len(spellings) > 1:
            given = list(dict.fromkeys(spellings))
            spelled = f" (as {' and '.join(given)})" if len(given) > 1 else ""
            raise ValueError(f"RESULTS lists {given[0]} twice{spelled}; give each results file once")


def _labels(labels: list[str] | None, paths: list[Path]) -> list[str]:
    if labels is None:
        return distinct_names(paths)
    if len(labels) != len(paths):
        raise ValueError(f"--label must name each of the {len(paths)} files (RESULTS in order, then --compare), "
                         f"got {len(labels)}: {', '.join(labels)}")
    return labels


def _draw_plot(path: Path, curves: list[tuple[str, object]], force: bool, compared: dict | None = None) -> None:
    """Several files: pass@k with each file's bootstrap band. --compare: the two curves and, beside them, the
    paired difference per k with the test's interval (the bands over problems answer another question and
    overlap where the paired test finds a difference)."""
    from fgrpo_sim.atomic_io import atomic_path
    from fgrpo_sim.figures.evaluation import draw_passk_bands, draw_paired_difference
    from fgrpo_sim.ownership import PNG_METADATA, is_our_png

    data = [{"label": label, **c.as_dict()} for label, c in curves]
    fig = draw_paired_difference(data, compared) if compared is not None else draw_passk_bands(data)
    with atomic_path(path, is_ours=is_our_png, force=force, name="--plot") as tmp:
        fig.savefig(tmp, format="png", dpi=150, metadata=PNG_METADATA)  # our tag: a later --plot may replace it


def _describe(data) -> str:
    s = data.summary()
    n_txt = f"n = {s['n_min']}" if s["n_min"] == s["n_max"] else f"n = {s['n_min']}..{s['n_max']}"
    return f"{s['file']}: {s['problems']} problems, {n_txt} samples per problem, {s['samples']} samples in all"


def passk_command(
    ctx: typer.Context,
    results: list[Path] = typer.Argument(..., help="Results file(s) (JSON lines, format below); several: one table "
                                         "each (and one plot with --plot).", show_default=False),
    k: Sequence = list_option(
        "auto", "--k", int, words=("auto", "all"),
        help="Which k to report: 'auto' = powers of two up to the smallest n of any problem (1,2,4,...); "
        "'all' = 1..smallest n (up to n = 10^4); or a comma-separated list like 1,8,64,256. Every k must be <= every problem's n.",
    ),
    compare: Optional[Path] = typer.Option(
        None, "--compare",
        help="Second results file over the same problems: adds a paired test (--test) of pass@k(RESULTS) - "
        "pass@k(COMPARE) per k. The benchmark's problems are held fixed: the test is about the sampled "
        "generations on these problems, not about drawing other problems.",
    ),
    test_name: str = typer.Option(
        DEFAULT_TEST, "--test",
        help="The paired test of --compare: 'conditional' (default; exact conditional test, each problem's pooled "
        "count split by its hypergeometric law, Monte Carlo p-value seeded by --seed; size alpha at any problem "
        "count, n and k <= n), 'u-statistic' (z-test with the unbiased variance of the pass@k estimator; size "
        "about alpha with many mixed problems, too large with few problems at large k; k <= n / 2) or 'app-q' "
        "(the paper's m-out-of-n subsampling interval, App. Q, to reproduce its marks; measured size 0.06% at "
        "alpha = 0.05; k <= m). Sizes: docs/core-and-metrics.md.",
    ),
    m: Optional[int] = typer.Option(
        None, "--m",
        help="--test app-q: subsample size per problem; default min(256, smallest n / 4), at least 1, i.e. the "
        "paper's 256 of 1024. Must be < every n (m = n has a zero-width interval); k > m gets no test.",
    ),
    iterations: int = typer.Option(50_000, "--iterations", help="--test app-q: subsampling rounds (paper: 50,000), in "
                                   "[2 / alpha, 10^7] (40 at alpha = 0.05)."),
    alpha: float = typer.Option(0.05, "--alpha", help="Two-sided significance level for --compare, in (0, 1)."),
    bootstrap: int = typer.Option(
        1000, "--bootstrap", help="Bootstrap resamples of the problems for the pass@k intervals (0 = none), in [0, 10^6]."
    ),
    seed: int = typer.Option(0, "--seed", help="Random seed of the bootstrap and of the conditional and subsampling "
                             "tests, >= 0."),
    label: Optional[Sequence[str]] = list_option(
        None, "--label", str, help="Names of the files, comma-separated, RESULTS in order then --compare: the compare "
        "header ('difference = A - B') and the plot legend. Default: file names, with parent folders where two "
        "names are equal."),
    plot: Optional[Path] = typer.Option(
        None, "--plot", help="Also draw a PNG (atomically): pass@k against k with each file's bootstrap band "
        "(--bootstrap); with --compare, the two curves and the paired difference per k with the test's interval, "
        "significant k marked."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON Lines instead of the tables: one object per "
                                 "RESULTS file (label, results, k, pass_at_k, intervals; with --compare, compare)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write the JSON Lines to this file (atomically)."),
    progress: bool = typer.Option(True, "--progress/--no-progress",
                                  help="Show the progress bar of --test app-q (the u-statistic test has none)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing --out that is not an earlier `fgrpo passk` "
                               "result, or a --plot PNG that `fgrpo passk` did not draw."),
) -> None:
    """Unbiased pass@k (Chen et al. 2021) per k, averaged over problems, with bootstrap intervals; with --compare, a paired test of the difference per k (--test)."""
    from fgrpo_sim.commands.options import refuse_unused

    from fgrpo_sim.atomic_io import (check_not_input, check_replaceable, check_writable, recorded_path,
                                     write_text_atomic)
    from fgrpo_sim.jsonl import dumps
    from fgrpo_sim.metrics import pass_at_k_curve, run_paired_test, subsample_size
    from fgrpo_sim.metrics.paired_tests import HOLDS_FIXED, check_test, describe, largest_k, untested_reason
    from fgrpo_sim.metrics.subsampling import min_iterations
    from fgrpo_sim.metrics.results_io import align_problems, read_results_jsonl
    from fgrpo_sim.validation import check_integer, check_range

    check_test(test_name, "--test")
    if compare is None:
        refuse_unused(ctx, ("test_name", "m", "iterations", "alpha"), "is used with --compare only")
    if test_name != "app-q":
        refuse_unused(ctx, ("m", "iterations"), f"is used with --test app-q only (the {test_name} test "
                      "draws no subsamples)")
    check_integer("--iterations", iterations, 1, MAX_ITERATIONS)
    check_range("--alpha", alpha, 0.0, 1.0, low_open=True, high_open=True)
    if compare is not None and test_name == "app-q" and iterations < min_iterations(alpha):
        raise ValueError(f"--iterations must be >= 2 / --alpha = {min_iterations(alpha)} for --compare (fewer rounds "
                         f"cannot give p < alpha), got {iterations}")
    check_integer("--bootstrap", bootstrap, 0, MAX_BOOTSTRAP)
    if compare is not None and len(results) > 1:
        raise ValueError(f"--compare takes one RESULTS file (the difference is RESULTS - COMPARE), got {len(results)}")
    _refuse_repeated_files(results)
    if compare is not None:
        _refuse_self_compare(results[0], compare)
    labels = _labels(label, [*results, *([compare] if compare is not None else [])])
    for option, path in (("--out", out), ("--plot", plot)):
        if path is not None:
            check_writable(path, option)  # before any reading or resampling
            check_not_input(path, option, *results, compare)
    check_replaceable(out, "--out", _is_passk_result, force=force)
    from fgrpo_sim.ownership import is_our_png

    check_replaceable(plot, "--plot", is_our_png, force=force)
    if out is not None and plot is not None and Path(out).resolve() == Path(plot).resolve():
        raise ValueError(f"--plot must differ from --out, got {plot} for both")
    if len(results) > 1:
        _several_files(results, labels, k, bootstrap, seed, as_json, out, plot, force)
        return
    results = results[0]
    data = read_results_jsonl(results)
    other = read_results_jsonl(compare) if compare is not None else None
    n_min = int(data.n.min()) if other is None else int(min(data.n.min(), other.n.min()))
    ks = _parse_ks(k, n_min)
    _check_ks_fit(ks, data, str(results))
    bootstrap, no_interval = _usable_bootstrap(bootstrap, data)
    curve = pass_at_k_curve(data.n, data.c, ks=ks, n_bootstrap=bootstrap, seed=seed)
    # input paths relative to --out's folder (or the current one): identical runs in two folders, same bytes
    # the keys of each line that several files print (--json: one shape whatever the count)
    report = {"label": labels[0], "results": {**data.summary(), "file": recorded_path(results, out)},
              **curve.as_dict()}
    if no_interval:
        report["note"] = no_interval

    test = None
    if other is not None:
        _check_ks_fit(ks, other, str(compare))
        order = align_problems(data, other)
        n_b, c_b = other.n[order], other.c[order]
        m_used = subsample_size(n_min, m, "--m") if test_name == "app-q" else None
        largest = largest_k(test_name, n_min, m_used)
        tested = [kk for kk in ks if kk <= largest]
        if not tested:
            raise ValueError(f"--k: no k is <= {largest}, the largest the {test_name} test can test "
                             f"({untested_reason(test_name, m_used)}: no test); use a smaller --k"
                             + (" or a larger --m" if test_name == "app-q" else ""))
        curve_b = pass_at_k_curve(n_b, c_b, ks=ks, n_bootstrap=bootstrap, seed=seed)
        test = run_paired_test(test_name, data.n, data.c, n_b, c_b, tested, alpha=alpha, m=m_used,
                               iterations=iterations, seed=seed, progress=progress)
        rows = {row["k"]: row for row in test.rows()}
        skipped = untested_reason(test_name, m_used)
        report["compare"] = {
            "other": {**other.summary(), "file": recorded_path(compare, out)},
            "other_pass_at_k": curve_b.mean.tolist(),
            "other_ci_low": curve_b.lower.tolist(),
            "other_ci_high": curve_b.upper.tolist(),
            "test": test_name,
            "test_description": describe(test_name, alpha, m_used, iterations) + "; difference = results - other; "
                                + HOLDS_FIXED,
            "labels": labels,
            **({"m": m_used, "iterations": iterations, "seed": seed} if test_name == "app-q" else {}),
            "alpha": alpha,
            "per_k": [rows.get(kk, {"k": kk, "skipped": skipped}) for kk in ks],
        }

    text = dumps(report)
    if out is not None:
        write_text_atomic(out, text + "\n", is_ours=_is_passk_result, force=force, name="--out")
    if plot is not None:
        _draw_plot(plot, [(labels[0], curve)] + ([(labels[1], curve_b)] if other is not None else []), force,
                   report.get("compare"))
    if as_json:
        typer.echo(text)
        return

    level = round(100 * curve.confidence)
    typer.echo((f"{labels[0]}: " if label is not None else "") + _describe(data))
    if other is None:
        ci_head = (f"{level}% CI (bootstrap, {bootstrap} resamples of problems)" if bootstrap
                   else f"({no_interval or 'no bootstrap'})")
        echo_table(["k", "pass@k", ci_head], _curve_rows(ks, curve, bool(bootstrap)), left=[2])
        return
    typer.echo("compared with " + (f"{labels[1]}: " if label is not None else "") + _describe(other))
    typer.echo(f"{describe(test_name, alpha, m_used, iterations)}; difference = {labels[0]} - {labels[1]}")
    typer.echo(HOLDS_FIXED[0].upper() + HOLDS_FIXED[1:])
    interval = f"{round(100 * (1 - alpha)):d}% interval"
    table = []
    for j, kk in enumerate(ks):
        head = [kk, f"{curve.mean[j]:.4f}", f"{curve_b.mean[j]:.4f}", f"{curve.mean[j] - curve_b.mean[j]:+.4f}"]
        r = rows.get(kk)
        if r is not None and "skipped" in r:  # the conditional test: no split can differ, no verdict
            table.append(head + [f"(no test: {r['skipped']})", "", ""])
            continue
        table.append(head + ([f"[{r['ci_low']:+.4f}, {r['ci_high']:+.4f}]", _format_p(r["p_value"]),
                              "yes" if r["significant"] else "no"] if r else [f"({skipped}: no test)", "", ""]))
    a, b = labels if label is not None else ("A", "B")  # --label names the columns too
    echo_table(["k", f"pass@k {a}", f"pass@k {b}", f"{a} - {b}", interval, "p-value", "significant"], table, left=[6])


def _usable_bootstrap(bootstrap: int, data) -> tuple[int, str | None]:
    """A bootstrap over one problem has zero width: none, and the output says so."""
    if bootstrap and len(data.problem_ids) < 2:
        return 0, "one problem: no bootstrap interval over problems"
    return bootstrap, None


def _several_files(paths: list[Path], labels: list[str], k: list, bootstrap: int, seed: int, as_json: bool,
                   out: Path | None, plot: Path | None, force: bool) -> None:
    """`fgrpo passk A B ...`: one pass@k table per file at the same k (those <= every file's smallest n)."""
    from fgrpo_sim.atomic_io import recorded_path, write_text_atomic
    from fgrpo_sim.jsonl import dumps
    from fgrpo_sim.metrics import pass_at_k_curve
    from fgrpo_sim.metrics.results_io import read_results_jsonl

    data = [read_results_jsonl(path) for path in paths]
    ks = _parse_ks(k, int(min(d.n.min() for d in data)))
    entries, curves = [], []
    for path, name, d in zip(paths, labels, data):
        _check_ks_fit(ks, d, str(path))
        used, note = _usable_bootstrap(bootstrap, d)
        curve = pass_at_k_curve(d.n, d.c, ks=ks, n_bootstrap=used, seed=seed)
        entries.append({"label": name, "results": {**d.summary(), "file": recorded_path(path, out)},
                        **curve.as_dict(), **({"note": note} if note else {})})
        curves.append((name, curve))
    text = "\n".join(dumps(entry) for entry in entries)  # JSON Lines: one object per file, as one file prints
    if out is not None:
        write_text_atomic(out, text + "\n", is_ours=_is_passk_result, force=force, name="--out")
    if plot is not None:
        _draw_plot(plot, curves, force)
    if as_json:
        typer.echo(text)
        return
    for i, ((name, curve), d, entry) in enumerate(zip(curves, data, entries)):
        head = (f"{round(100 * curve.confidence)}% CI (bootstrap, {entry['n_bootstrap']} resamples of problems)" if entry["n_bootstrap"]
                else f"({entry.get('note', 'no bootstrap')})")
        described = _describe(d)  # starts with the file: a label goes in front only where it is not the file's name
        own_name = Path(d.path).resolve().as_posix().endswith("/" + name)  # distinct_names: the path's tail
        typer.echo(("\n" if i else "") + (described if own_name else f"{name}: {described}"))
        echo_table(["k", "pass@k", head], _curve_rows(ks, curve, bool(entry["n_bootstrap"])), left=[2])


def _curve_rows(ks, curve, with_interval: bool) -> list[list[str]]:
    """k, pass@k and its bootstrap interval (empty without one), as printed."""
    return [[kk, f"{curve.mean[j]:.4f}", f"[{curve.lower[j]:.4f}, {curve.upper[j]:.4f}]" if with_interval else ""]
            for j, kk in enumerate(ks)]


def register(app: typer.Typer) -> None:
    """Add the `passk` command to the top-level app."""
    app.command("passk", help=passk_command.__doc__ + "\n\n" + _FORMAT_HELP,
                short_help="pass@k per k with intervals; --compare adds the paired test.")(passk_command)
