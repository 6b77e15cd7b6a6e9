"""The report's numbers against the eval files they came from, recomputed independently of the report code.

`check_report(report_dir, manifest)` counts samples and correct samples per problem straight from each eval
JSON-lines file of the manifest (no shared reader), takes pass@k from `fgrpo_sim.metrics.pass_at_k`, and
compares with every number the report wrote: selection.json (every checkpoint's per-benchmark pass@1 / pass@k
and averages, the pass@k curves) and the selected rows of table.md as printed (one decimal, dNLL two), and
that each row's marks are its own comparison's tests (selection.json's `significance`), made by the default
(conditional) test.
A mismatch raises ReportMismatch naming the number; the count of numbers checked is returned.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from fgrpo_sim.llm.evaluation.ood_data import OOD_NAMES


class ReportMismatch(ValueError):
    pass


def counts_from_eval(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(n, c) per problem from the per-sample lines of an `fgrpo llm eval` output."""
    per_problem: dict[str, list[int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            entry = per_problem.setdefault(str(record["problem_id"]), [0, 0])
            entry[0] += 1
            entry[1] += bool(record["correct"])
    n, c = zip(*per_problem.values())
    return np.array(n), np.array(c)


def _pass(path: Path, k: int) -> float:
    from fgrpo_sim.metrics import pass_at_k

    n, c = counts_from_eval(path)
    return 100 * float(np.mean(pass_at_k(n, c, k)))


def _same(what: str, got: float | None, expected: float) -> None:
    if got is None or not math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-9):
        raise ReportMismatch(f"report says {what} = {got}, the eval files give {expected}")


def check_report(report_dir: Path, manifest: Path) -> int:
    selection = json.loads((report_dir / "selection.json").read_text())
    k = int(selection["k"])
    with open(manifest, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    files: dict[tuple[str, int], dict[str, Path]] = {}
    dnll: dict[tuple[str, int], float] = {}
    for row in rows:
        key = (row["run"], int(row["step"]))
        files.setdefault(key, {})[row["benchmark"]] = manifest.parent / row["file"]
        if row.get("dnll_rare"):
            dnll[key] = float(row["dnll_rare"])
    checked = 0
    expected_scores: dict[tuple[str, int], dict[str, tuple[float, float]]] = {}
    for ckpt in selection["all_checkpoints"]:
        key = (ckpt["run"], int(ckpt["step"]))
        scores = {b: (_pass(p, 1), _pass(p, k)) for b, p in files[key].items()}
        expected_scores[key] = scores
        for bench, (p1, pk) in scores.items():
            _same(f"{key} {bench} pass@1", ckpt["per_benchmark"][bench]["pass1"], p1)
            _same(f"{key} {bench} pass@{k}", ckpt["per_benchmark"][bench]["passk"], pk)
            checked += 2
        for kind in ("math", "ood"):
            names = [b for b in scores if (b in OOD_NAMES) == (kind == "ood")]
            for index, label in ((0, "pass1"), (1, "passk")):
                _same(f"{key} {kind} average {label}", ckpt[f"{kind}_{label}"],
                      float(np.mean([scores[b][index] for b in names])))
                checked += 1
    for curve, chosen in zip(selection.get("passk_curves", []), selection["selected"]):
        key = (chosen["run"], int(chosen["step"]))
        for kind in ("math", "ood"):
            names = [b for b in files[key] if (b in OOD_NAMES) == (kind == "ood")]
            for kk, value in curve[kind].items():
                _same(f"{key} {kind} pass@{kk} curve", value,
                      float(np.mean([_pass(files[key][b], int(kk)) for b in names])))
                checked += 1
    marks = {(m["comparison"], m["run"], m["benchmark"]): m for m in selection["significance"]}
    checked += _check_table(report_dir / "table.md", selection["selected"], expected_scores, dnll, marks)
    return checked


def _check_marks(path: Path, cell: str, mark: dict) -> int:
    """A focal cell's stars are its own comparison's test results, and the default test made them."""
    from fgrpo_sim.metrics.paired_tests import DEFAULT_TEST

    if mark["test"] != DEFAULT_TEST:
        raise ReportMismatch(f"{path}: {mark['run']}/{mark['benchmark']} was tested with {mark['test']!r}, "
                             f"not the default {DEFAULT_TEST} test")
    want = [bool(mark[key] and mark[key]["significant"]) for key in ("pass1", "passk")]
    if [half.strip().endswith("*") for half in cell.split(" / ")] != want:
        raise ReportMismatch(f"{path}: {mark['run']}/{mark['benchmark']} ({mark['comparison']}) printed {cell!r}, "
                             f"its comparison's tests say significant = {want}")
    return 2


def _check_table(path: Path, selected: list[dict], scores: dict, dnll: dict, marks: dict) -> int:
    """The selected checkpoints' rows of table.md, cell by cell, as printed, with their marks."""
    lines = [line for line in path.read_text().splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    body = [[c.strip() for c in line.strip("|").split("|")] for line in lines[1:]]
    if len(body) != len(selected):
        raise ReportMismatch(f"{path} has {len(body)} rows, selection.json {len(selected)} selected checkpoints")
    checked = 0
    for row, chosen in zip(body, selected):
        key = (chosen["run"], int(chosen["step"]))
        cells = dict(zip(header, row))
        if cells["step"] != str(key[1]):
            raise ReportMismatch(f"{path}: row {row[0]!r} shows step {cells['step']}, selection.json {key[1]}")
        for column in ("comparison", "run"):  # each row names its comparison and run (issue 45)
            if cells[column] != str(chosen[column]):
                raise ReportMismatch(f"{path}: row {row[0]!r} shows {column} {cells[column]!r}, selection.json "
                                     f"{chosen[column]!r}")
            checked += 1
        for bench, (p1, pk) in scores[key].items():
            printed = cells[bench].replace("*", "")
            if printed != f"{p1:.1f} / {pk:.1f}":
                raise ReportMismatch(f"{path}: {key} {bench} printed {printed!r}, the eval files give {p1:.1f} / {pk:.1f}")
            checked += 2
            if chosen["role"] == "focal":
                checked += _check_marks(path, cells[bench], marks[(chosen["comparison"], chosen["run"], bench)])
        for kind, column in (("math", "math avg"), ("ood", "OOD avg")):
            names = [b for b in scores[key] if (b in OOD_NAMES) == (kind == "ood")]
            want = " / ".join(f"{np.mean([scores[key][b][i] for b in names]):.1f}" for i in (0, 1))
            if cells[column] != want:
                raise ReportMismatch(f"{path}: {key} {column} printed {cells[column]!r}, the eval files give {want}")
            checked += 2
        if key in dnll and "dNLL_rare" in cells:
            if cells["dNLL_rare"] != f"{dnll[key]:.2f}":
                raise ReportMismatch(f"{path}: {key} dNLL_rare printed {cells['dNLL_rare']!r}, dnll-rare gave "
                                     f"{dnll[key]:.2f}")
            checked += 1
    return checked
