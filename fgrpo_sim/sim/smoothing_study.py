"""The smoothed focal estimate in the group-size study's headline setting (issue 49): alpha = 0.5 against 0.

The headline setting (`group_size_report.headline_reports`: default population, equal steps, Adam at its smaller
lr 0.01, orthogonal map, rare mass 0.02) is trained twice, with the F-GRPO arms' weight estimate X / N
(alpha = 0, the committed study) and (X + 1/2) / (N + 1) (alpha = 0.5). GRPO and the low-LR controls have
gamma = 0, so alpha does not enter their updates, and every row draws its counts from its own key (issue 44), so
their rows are the same in both runs (the record keeps both runs' GRPO verdicts, which shows it).

The record (one JSON object; `python -m fgrpo_sim.sim.smoothing_study RECORD`; 62 s of CPU and 66 s wall measured at
load ~15 on 2 cores):
  * `runs`: per alpha, GRPO's verdict (lowest N, flank intervals), each F-GRPO arm's own lowest N and flank
    verdict, and `fgrpo_at_lowest` (F-GRPO minus GRPO and minus its control at that run's lowest N);
  * `smoothed_minus_raw`: per gamma and N, F-GRPO(alpha 0.5) minus F-GRPO(alpha 0) held-out pass@256, a paired
    95% t interval over the population draws (the same 10 populations in both runs);
  * `edge_at_raw_lowest`: F-GRPO minus GRPO and minus the control at the alpha-0 run's lowest N, in each run
    (one N for both, so the two edges compare).
"""

from __future__ import annotations

from dataclasses import replace

from fgrpo_sim.sim.group_size_report import (
    METRIC,
    _flanks,
    paired_interval,
    setting_reports,
    unit_matrix,
)
from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec, final_rows, run_study

HEADLINE = dict(optimizers=("adam",), parametrisations=("orthogonal",), rare_masses=(0.02,), adam_lrs=(0.01,))
ALPHAS = (0.0, 0.5)


def headline_spec(alpha: float) -> GroupSizeStudySpec:
    return replace(GroupSizeStudySpec(), **HEADLINE, focal_smoothing=float(alpha)).validate()


def _fgrpo_name(gamma: float, alpha: float) -> str:
    return f"F-GRPO gamma={gamma:g}" + (f" alpha={alpha:g}" if alpha else "")


def compare(frames: dict) -> dict:
    """The record from the two runs' tables ({alpha: run_study frame}), alpha 0 among them."""
    raw_alpha = 0.0
    gammas = GroupSizeStudySpec().gammas
    finals = {a: final_rows(f) for a, f in frames.items()}
    reports = {a: setting_reports(f)[0] for a, f in frames.items()}
    unit = reports[raw_alpha]["unit"]
    ns = reports[raw_alpha]["N"]
    raw_low = ns.index(reports[raw_alpha]["observed_lowest_N"])
    runs, edge = [], []
    for alpha, report in reports.items():
        arms = []
        for gamma in gammas:
            values, arm_ns = unit_matrix(finals[alpha], _fgrpo_name(gamma, alpha), METRIC, unit)
            flanks = _flanks(values, arm_ns)
            arms.append({"gamma": gamma, "observed_lowest_N": flanks["observed_lowest_N"], "verdict": flanks["verdict"],
                         "first_minus_lowest": flanks["first_minus_lowest"],
                         "last_minus_lowest": flanks["last_minus_lowest"]})
            grpo = unit_matrix(finals[alpha], "GRPO", METRIC, unit)[0][:, raw_low]
            control = unit_matrix(finals[alpha], f"GRPO low-LR (x m_{gamma:g})", METRIC, unit)[0][:, raw_low]
            edge.append({"focal_smoothing": alpha, "gamma": gamma, "N": ns[raw_low],
                         "minus_grpo": paired_interval(values[:, raw_low], grpo),
                         "minus_control": paired_interval(values[:, raw_low], control)})
        runs.append({"focal_smoothing": alpha, "grpo_observed_lowest_N": report["observed_lowest_N"],
                     "grpo_verdict": report["verdict"], "grpo_first_minus_lowest": report["first_minus_lowest"],
                     "grpo_last_minus_lowest": report["last_minus_lowest"], "fgrpo_arms": arms,
                     "fgrpo_at_lowest": report["fgrpo_at_lowest"]})
    smoothed = [a for a in reports if a != raw_alpha]
    differences = []
    for alpha in smoothed:
        for gamma in gammas:
            new = unit_matrix(finals[alpha], _fgrpo_name(gamma, alpha), METRIC, unit)[0]
            old = unit_matrix(finals[raw_alpha], _fgrpo_name(gamma, raw_alpha), METRIC, unit)[0]
            differences.append({"focal_smoothing": alpha, "gamma": gamma, "N": ns,
                                "pass256": [paired_interval(new[:, j], old[:, j]) for j in range(len(ns))]})
    first = reports[raw_alpha]
    setting = {k: first[k] for k in ("rare_correct_prob", "optimizer", "parametrisation", "view", "rare_mass", "lr",
                                      "populations", "batch_seeds", "steps", "unit", "interval")}
    return {"setting": setting, "alphas": sorted(reports), "runs": runs, "smoothed_minus_raw": differences,
            "edge_at_raw_lowest": edge}


def run(record, device: str = "cpu", progress: bool = False) -> dict:
    """Train the headline setting at every alpha of ALPHAS and write the record (JSON lines, one object)."""
    from pathlib import Path

    from fgrpo_sim import jsonl
    from fgrpo_sim.atomic_io import write_text_atomic

    frames = {alpha: run_study(headline_spec(alpha), progress=progress, device=device) for alpha in ALPHAS}
    result = compare(frames)
    write_text_atomic(Path(record), jsonl.dumps(result) + "\n")
    return result


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: python -m fgrpo_sim.sim.smoothing_study RECORD.jsonl")
    run(sys.argv[1], progress=True)
