"""`fgrpo passk`: pass@k table of an evaluation results file, optionally compared with another."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from fgrpo_sim.commands.tables import echo_table

_FORMAT_HELP = (
    "Input format (JSON lines): one object per line with 'problem_id' (string or integer) and either "
    "'correct' (true/false; one line per generated sample, as `fgrpo llm eval` writes) or 'n' and 'c' "
    "(samples and correct samples; one line per problem). An optional integer 'sample_index' on "
    "per-sample lines makes a repeated sample an error. Other keys are ignored, blank lines skipped; "
    "any malformed line is an error naming the file and line. Problems may have different n."
)


MAX_ITERATIONS = 10**7  # the test keeps every round's differences in memory (8 bytes x rounds x k values)
MAX_BOOTSTRAP = 10**6  # the bootstrap draws all resamples at once (8 bytes x resamples x problems)


def _parse_ks(text: str, n_min: int) -> list[int]:
    """'auto' -> powers of two up to n_min; 'all' -> 1..n_min; else a comma-separated list."""
    text = text.strip().lower()
    if text == "auto":
        ks, k = [], 1
        while k <= n_min:
            ks.append(k)
            k *= 2
        return ks
    if text == "all":
        return list(range(1, n_min + 1))
    from fgrpo_sim.validation import check_integer, parse_list

    try:
        ks = parse_list("--k", text, int)  # the same rule as every list option: no repeats, no empty element
    except ValueError as exc:
        if "twice" in str(exc) or "digits" in str(exc) or "empty element" in str(exc):
            raise
        raise ValueError(f"--k must be 'auto', 'all' or a comma-separated list of integers >= 1, got {text!r}") from None
    check_integer("--k", ks, 1, 2**62)
    return sorted(ks)


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

    return has_keys(path, ("results", "k", "pass_at_k")) or has_keys(path, ("files",))


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


def _labels(text: str | None, paths: list[Path]) -> list[str]:
    if text is None:
        return distinct_names(paths)
    from fgrpo_sim.validation import parse_list

    labels = parse_list("--label", text, str)
    if len(labels) != len(paths):
        raise ValueError(f"--label must name each of the {len(paths)} files (RESULTS in order, then --compare), "
                         f"got {len(labels)}: {', '.join(labels)}")
    return labels


def _draw_plot(path: Path, curves: list[tuple[str, object]]) -> None:
    from fgrpo_sim.atomic_io import atomic_path
    from fgrpo_sim.figures.evaluation import draw_passk_bands

    fig = draw_passk_bands([{"label": label, **c.as_dict()} for label, c in curves])
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=150)


def _describe(data) -> str:
    s = data.summary()
    n_txt = f"n = {s['n_min']}" if s["n_min"] == s["n_max"] else f"n = {s['n_min']}..{s['n_max']}"
    return f"{s['file']}: {s['problems']} problems, {n_txt} samples per problem, {s['samples']} samples in all"


def passk_command(
    results: list[Path] = typer.Argument(..., help="Results file(s) (JSON lines, format below); several: one table "
                                         "each (and one plot with --plot).", show_default=False),
    k: str = typer.Option(
        "auto", "--k",
        help="Which k to report: 'auto' = powers of two up to the smallest n of any problem (1,2,4,...); "
        "'all' = 1..smallest n; or a comma-separated list like 1,8,64,256. Every k must be <= every problem's n.",
    ),
    compare: Optional[Path] = typer.Option(
        None, "--compare",
        help="Second results file over the same problems: adds the paper's paired m-out-of-n subsampling "
        "test (App. Q) of pass@k(RESULTS) - pass@k(COMPARE) per k.",
    ),
    m: Optional[int] = typer.Option(
        None, "--m",
        help="Subsample size per problem for --compare; default min(256, smallest n / 4), at least 1, i.e. the "
        "paper's 256 of 1024. Must be < every n (m = n has a zero-width interval); k > m gets no test.",
    ),
    iterations: int = typer.Option(50_000, "--iterations", help="Subsampling rounds for --compare (paper: 50,000), in "
                                   "[2 / alpha, 10^7] (40 at alpha = 0.05)."),
    alpha: float = typer.Option(0.05, "--alpha", help="Two-sided significance level for --compare, in (0, 1)."),
    bootstrap: int = typer.Option(
        1000, "--bootstrap", help="Bootstrap resamples of the problems for the pass@k intervals (0 = none), in [0, 10^6]."
    ),
    seed: int = typer.Option(0, "--seed", help="Random seed of the bootstrap and the subsampling test, >= 0."),
    label: Optional[str] = typer.Option(
        None, "--label", help="Names of the files, comma-separated, RESULTS in order then --compare: the compare "
        "header ('difference = A - B') and the plot legend. Default: file names, with parent folders where two "
        "names are equal."),
    plot: Optional[Path] = typer.Option(
        None, "--plot", help="Also draw pass@k against k with each file's bootstrap band (--bootstrap) to this PNG "
        "(atomically)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of the table."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write the JSON object to this file (atomically)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show the progress bar of the subsampling test."),
    force: bool = typer.Option(False, "--force", help="Replace an existing --out that is not an earlier `fgrpo passk` result."),
) -> None:
    """Unbiased pass@k (Chen et al. 2021) per k, averaged over problems, with bootstrap intervals; with --compare, the paired subsampling test of the difference per k."""
    import numpy as np

    from fgrpo_sim.atomic_io import (check_not_input, check_replaceable, check_writable, recorded_path,
                                     write_text_atomic)
    from fgrpo_sim.jsonl import dumps
    from fgrpo_sim.metrics import paired_subsampling_test, pass_at_k_curve, subsample_size
    from fgrpo_sim.metrics.subsampling import min_iterations
    from fgrpo_sim.metrics.results_io import align_problems, read_results_jsonl
    from fgrpo_sim.validation import check_integer, check_range

    check_integer("--iterations", iterations, 1, MAX_ITERATIONS)
    check_range("--alpha", alpha, 0.0, 1.0, low_open=True, high_open=True)
    if compare is not None and iterations < min_iterations(alpha):
        raise ValueError(f"--iterations must be >= 2 / --alpha = {min_iterations(alpha)} for --compare (fewer rounds "
                         f"cannot give p < alpha), got {iterations}")
    check_integer("--bootstrap", bootstrap, 0, MAX_BOOTSTRAP)
    if compare is not None and len(results) > 1:
        raise ValueError(f"--compare takes one RESULTS file (the difference is RESULTS - COMPARE), got {len(results)}")
    labels = _labels(label, [*results, *([compare] if compare is not None else [])])
    for option, path in (("--out", out), ("--plot", plot)):
        if path is not None:
            check_writable(path, option)  # before any reading or resampling
            check_not_input(path, option, *results, compare)
    check_replaceable(out, "--out", _is_passk_result, force=force)
    if out is not None and plot is not None and Path(out).resolve() == Path(plot).resolve():
        raise ValueError(f"--plot must differ from --out, got {plot} for both")
    if len(results) > 1:
        _several_files(results, labels, k, bootstrap, seed, as_json, out, plot)
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
    report = {"results": {**data.summary(), "file": recorded_path(results, out)}, **curve.as_dict()}
    if no_interval:
        report["note"] = no_interval

    test = None
    if other is not None:
        _check_ks_fit(ks, other, str(compare))
        order = align_problems(data, other)
        n_b, c_b = other.n[order], other.c[order]
        m_used = subsample_size(n_min, m, "--m")
        tested = [kk for kk in ks if kk <= m_used]
        if not tested:
            raise ValueError(f"no k is <= m = {m_used}; the subsampling test needs k <= m (use a larger --m or smaller --k)")
        curve_b = pass_at_k_curve(n_b, c_b, ks=ks, n_bootstrap=bootstrap, seed=seed)
        test = paired_subsampling_test(
            data.n, data.c, n_b, c_b, ks=tested, m=m_used, iterations=iterations, alpha=alpha, seed=seed,
            progress=progress,
        )
        rows = {row["k"]: row for row in test.rows()}
        report["compare"] = {
            "other": {**other.summary(), "file": recorded_path(compare, out)},
            "other_pass_at_k": curve_b.mean.tolist(),
            "other_ci_low": curve_b.lower.tolist(),
            "other_ci_high": curve_b.upper.tolist(),
            "test": "paired m-out-of-n subsampling (App. Q), independent subsamples per model, difference = results - other",
            "labels": labels,
            "m": m_used,
            "iterations": iterations,
            "alpha": alpha,
            "seed": seed,
            "per_k": [rows.get(kk, {"k": kk, "skipped": f"k > m = {m_used}"}) for kk in ks],
        }

    text = dumps(report)
    if out is not None:
        write_text_atomic(out, text + "\n")
    if plot is not None:
        _draw_plot(plot, [(labels[0], curve)] + ([(labels[1], curve_b)] if other is not None else []))
    if as_json:
        typer.echo(text)
        return

    level = round(100 * curve.confidence)
    typer.echo(_describe(data))
    if other is None:
        ci_head = (f"{level}% CI (bootstrap, {bootstrap} resamples of problems)" if bootstrap
                   else f"({no_interval or 'no bootstrap'})")
        echo_table(["k", "pass@k", ci_head], _curve_rows(ks, curve, bool(bootstrap)), left=[2])
        return
    typer.echo("compared with " + _describe(other))
    typer.echo(
        f"paired m-out-of-n subsampling test: m = {test.m} per problem, {iterations} rounds, two-sided alpha = {alpha:g}; "
        f"difference = {labels[0]} - {labels[1]}"
    )
    interval = f"{round(100 * (1 - alpha)):d}% interval"
    table = []
    for j, kk in enumerate(ks):
        head = [kk, f"{curve.mean[j]:.4f}", f"{curve_b.mean[j]:.4f}", f"{curve.mean[j] - curve_b.mean[j]:+.4f}"]
        r = rows.get(kk)
        table.append(head + ([f"[{r['ci_low']:+.4f}, {r['ci_high']:+.4f}]", _format_p(r["p_value"]),
                              "yes" if r["significant"] else "no"] if r else ["(k > m: no test)", "", ""]))
    echo_table(["k", "pass@k A", "pass@k B", "A - B", interval, "p-value", "significant"], table, left=[6])


def _usable_bootstrap(bootstrap: int, data) -> tuple[int, str | None]:
    """A bootstrap over one problem has zero width: none, and the output says so."""
    if bootstrap and len(data.problem_ids) < 2:
        return 0, "one problem: no bootstrap interval over problems"
    return bootstrap, None


def _several_files(paths: list[Path], labels: list[str], k: str, bootstrap: int, seed: int, as_json: bool,
                   out: Path | None, plot: Path | None) -> None:
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
    text = dumps({"files": entries})
    if out is not None:
        write_text_atomic(out, text + "\n")
    if plot is not None:
        _draw_plot(plot, curves)
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
