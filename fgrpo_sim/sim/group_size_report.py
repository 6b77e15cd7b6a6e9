"""What the group-size study says, per setting: one JSON-ready dict each (`fgrpo simulate group-size --json`).

A setting is (rare_correct_prob, optimizer, parametrisation, view, rare share, learning rate). The unit of
resampling is the population draw: each population's value is the mean over its batch seeds, so a
bootstrap over populations carries both the population's (and its map's) variance and the batch seeds'
(with a single population the batch seeds are the unit). Per setting:

* `predicted_N` (`planner.predict_dip` on the populations' initial (mu, rho)), `lowest_N` of GRPO's held-out
  pass@256 (mean over populations), `lowest_share` (share of bootstrap resamples in which that N is lowest),
  the paired intervals first N minus lowest and last N minus lowest, and `dip` (interior and both exclude 0);
* per N: GRPO's held-out pass@256, pass@1 and train dNLL_rare (means); the spread of pass@256 at the lowest
  N between populations and between batch seeds within a population;
* at the lowest N, each F-GRPO gamma minus GRPO and minus its lr x m_gamma control, at equal steps (final)
  and at equal pass@1 (each arm's pass@1 curve interpolated to the lowest final pass@1 of the three, per
  population);
* best checkpoint by held-out pass@1 (paper App. L.4) beside equal steps: the lowest N and its share when
  each (population, N) is read at the evaluation where its pass@1 is highest;
* `curves`: every arm against N (pass@256 with its interval, pass@1, dNLL_rare), what the figure draws.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

SETTING_KEYS = ("rare_correct_prob", "optimizer", "parametrisation", "view", "rare_mass", "base_lr")
METRIC = "heldout_pass@256"
RESAMPLES = 2000


def argmin_share(values: np.ndarray, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """Share of unit resamples (rows, with replacement) in which each column has the lowest mean."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(values.shape[0], size=(resamples, values.shape[0]))
    winners = values[idx].mean(1).argmin(1)
    return np.bincount(winners, minlength=values.shape[1]) / resamples


def _interval(values) -> list[float]:
    from fgrpo_sim.metrics.bootstrap import bootstrap_mean_ci

    ci = bootstrap_mean_ci(values, n_resamples=RESAMPLES)
    return [round(ci.estimate, 5), round(ci.low, 5), round(ci.high, 5)]


def _units(part):
    """The resampling unit: population draws when there are several, else batch seeds."""
    return "population" if part["population"].nunique() > 1 else "seed"


def unit_matrix(final, variant: str, metric: str, unit: str):
    """[units, N] of `metric` (mean over the other index) for one variant of one setting, and the N values."""
    part = final[final["variant"] == variant]
    table = part.groupby([unit, "N"])[metric].mean().unstack("N").sort_index(axis=1)
    return table.to_numpy(), table.columns.to_numpy()


def _curve_at_level(curve_x: np.ndarray, curve_y: np.ndarray, level: float) -> float:
    """y where the x curve (in step order) first reaches `level`, linearly interpolated."""
    above = np.nonzero(curve_x >= level - 1e-12)[0]
    if above.size == 0:
        return math.nan
    i = int(above[0])
    if i == 0 or curve_x[i] == curve_x[i - 1]:
        return float(curve_y[i])
    f = (level - curve_x[i - 1]) / (curve_x[i] - curve_x[i - 1])
    return float(curve_y[i - 1] + f * (curve_y[i] - curve_y[i - 1]))


def equal_pass1(curves, arms: list[str], n: int, unit: str) -> dict[str, np.ndarray]:
    """{arm: [units]} of held-out pass@256 where each arm's (unit-mean) pass@1 curve first reaches the lowest
    final pass@1 of the arms (per unit), at group size n."""
    part = curves[curves["N"] == n]
    out = {arm: [] for arm in arms}
    for _, u in part.groupby(unit):
        c = {arm: u[u["variant"] == arm].groupby("step")[["heldout_pass@1", METRIC]].mean() for arm in arms}
        level = min(float(c[arm]["heldout_pass@1"].iloc[-1]) for arm in arms)
        for arm in arms:
            out[arm].append(_curve_at_level(c[arm]["heldout_pass@1"].to_numpy(), c[arm][METRIC].to_numpy(), level))
    return {arm: np.asarray(v) for arm, v in out.items()}


def best_checkpoint_matrix(curves, variant: str, unit: str):
    """[units, N] of held-out pass@256 at each (unit, N)'s evaluation with the highest mean pass@1."""
    part = curves[curves["variant"] == variant]
    mean = part.groupby([unit, "N", "step"])[["heldout_pass@1", METRIC]].mean().reset_index()
    best = mean.loc[mean.groupby([unit, "N"])["heldout_pass@1"].idxmax()]
    table = best.pivot(index=unit, columns="N", values=METRIC).sort_index(axis=1)
    return table.to_numpy(), table.columns.to_numpy()


def _predictions(frame, population) -> dict:
    """predict_dip per (rare_correct_prob, rare_mass), on the populations of the table (cached per call)."""
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec, initial_mu_rho, population_spec, predicted_dips
    from fgrpo_sim.sim.population_shared import make_shared_population

    out = {}
    sizes = tuple(int(n) for n in sorted(frame["N"].unique()))
    pops = int(frame["population"].max()) + 1
    for rcp, part in frame.groupby("rare_correct_prob"):
        spec = GroupSizeStudySpec(group_sizes=sizes, rare_masses=tuple(float(r) for r in sorted(part["rare_mass"].unique())),
                                  populations=pops, population=replace(population, rare_correct_prob=float(rcp)))
        for rare, n_star in predicted_dips(spec).items():
            rho = np.concatenate([initial_mu_rho(make_shared_population(population_spec(spec, rare, p)))[1]
                                  for p in range(pops)])
            common = (rho > 0) & (rho < 1)  # common-solvable prompts with a correct rare strategy
            out[(float(rcp), float(rare))] = (n_star, round(float(np.median(rho[common])), 4) if common.any() else None)
    return out


def setting_reports(frame, population=None) -> list[dict]:
    """One dict per setting of a study table (`run_study`'s rows, all evaluations)."""
    from fgrpo_sim.metrics.bootstrap import bootstrap_paired_difference_ci
    from fgrpo_sim.sim.group_size_study import DEFAULT_POPULATION, final_rows

    population = population or DEFAULT_POPULATION
    predictions = _predictions(frame, population)
    final_all = final_rows(frame)
    reports = []
    for key, final in final_all.groupby(list(SETTING_KEYS), sort=True):
        setting = dict(zip(SETTING_KEYS, key))
        curves = frame
        for k, v in setting.items():
            curves = curves[curves[k] == v]
        unit = _units(final)
        values, ns = unit_matrix(final, "GRPO", METRIC, unit)
        means = values.mean(0)
        low = int(means.argmin())
        share = argmin_share(values)

        def diff(a, b):
            ci = bootstrap_paired_difference_ci(a, b, n_resamples=RESAMPLES)
            return [round(ci.estimate, 5), round(ci.low, 5), round(ci.high, 5)]

        left, right = diff(values[:, 0], values[:, low]), diff(values[:, -1], values[:, low])
        at_low = final[(final["variant"] == "GRPO") & (final["N"] == ns[low])]
        by_pop = at_low.groupby("population")[METRIC]
        within = float(np.sqrt(by_pop.var(ddof=1).mean())) if at_low["seed"].nunique() > 1 else math.nan
        report = {
            **{k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in setting.items()},
            "lr": float(setting["base_lr"]),
            "rare_share_median": predictions[(float(setting["rare_correct_prob"]), float(setting["rare_mass"]))][1],
            "populations": int(final["population"].nunique()), "batch_seeds": int(final["seed"].nunique()),
            "unit": unit, "steps": int(final["steps"].max()),
            "predicted_N": predictions[(float(setting["rare_correct_prob"]), float(setting["rare_mass"]))][0],
            "observed_lowest_N": int(ns[low]), "lowest_share": round(float(share[low]), 4),
            f"N={int(ns[0])} minus lowest": left, f"N={int(ns[-1])} minus lowest": right,
            "dip": bool(0 < low < len(ns) - 1 and left[1] > 0 and right[1] > 0),
            "N": [int(n) for n in ns],
            "pass@256": [round(float(x), 4) for x in means],
            "pass@1": [round(float(x), 4) for x in unit_matrix(final, "GRPO", "heldout_pass@1", unit)[0].mean(0)],
            "dnll_rare": [round(float(x), 4) for x in unit_matrix(final, "GRPO", "train_dnll_rare", unit)[0].mean(0)],
            "argmin_share": [round(float(x), 4) for x in share],
            "pass@256 at lowest": _interval(values[:, low]),
            "sd between populations": round(float(by_pop.mean().std(ddof=1)), 5) if by_pop.ngroups > 1 else None,
            "sd between batch seeds": None if math.isnan(within) else round(within, 5),
        }
        for variant in sorted(set(final["variant"]) - {"GRPO"}):
            if not variant.startswith("F-GRPO"):
                continue
            gamma = variant.split("=")[1]
            control = f"GRPO low-LR (x m_{gamma})"
            f_vals = unit_matrix(final, variant, METRIC, unit)[0][:, low]
            entry = {"minus GRPO": diff(f_vals, values[:, low])}
            f_p1 = unit_matrix(final, variant, "heldout_pass@1", unit)[0][:, low]
            entry["pass@1 minus GRPO"] = diff(f_p1, unit_matrix(final, "GRPO", "heldout_pass@1", unit)[0][:, low])
            arms = [variant, "GRPO"]
            if control in set(final["variant"]):
                entry["minus control"] = diff(f_vals, unit_matrix(final, control, METRIC, unit)[0][:, low])
                arms.append(control)
            eq = equal_pass1(curves, arms, int(ns[low]), unit)
            if np.all(np.isfinite(np.stack(list(eq.values())))):
                entry["equal pass@1: minus GRPO"] = diff(eq[variant], eq["GRPO"])
                if control in eq:
                    entry["equal pass@1: minus control"] = diff(eq[variant], eq[control])
            report[f"{variant} at lowest"] = entry
        report["curves"] = {}  # every arm against N: pass@256 [mean, low, high], pass@1 and dNLL_rare means
        for variant in sorted(set(final["variant"])):
            p256 = unit_matrix(final, variant, METRIC, unit)[0]
            report["curves"][variant] = {
                "pass@256": [_interval(p256[:, j]) if p256.shape[0] > 1 else [round(float(p256[0, j]), 5)] * 3
                             for j in range(p256.shape[1])],
                "pass@1": [round(float(x), 4) for x in unit_matrix(final, variant, "heldout_pass@1", unit)[0].mean(0)],
                "dnll_rare": [round(float(x), 4) for x in unit_matrix(final, variant, "train_dnll_rare", unit)[0].mean(0)],
            }
        best, best_ns = best_checkpoint_matrix(curves, "GRPO", unit)
        best_low = int(best.mean(0).argmin())
        report["best checkpoint"] = {
            "lowest_N": int(best_ns[best_low]), "lowest_share": round(float(argmin_share(best)[best_low]), 4),
            f"N={int(best_ns[0])} minus lowest": diff(best[:, 0], best[:, best_low]),
            f"N={int(best_ns[-1])} minus lowest": diff(best[:, -1], best[:, best_low]),
            "pass@256": [round(float(x), 4) for x in best.mean(0)],
        }
        reports.append(report)
    return reports


def _ci(x) -> str:
    return "-" if x is None else f"{x[0]:+.3f} [{x[1]:+.3f},{x[2]:+.3f}]"


def format_report(reports: list[dict]) -> str:
    """One line per setting: prediction, lowest N (share), dip, the two flank intervals, F-GRPO at the dip."""
    lines = ["held-out pass@256 of GRPO vs N (intervals: 95% bootstrap over populations, paired); "
             "F-GRPO at the lowest N, equal steps"]
    head = (f"{'rare p':>6} {'opt':>4} {'param':>10} {'view':>14} {'rare':>6} {'lr':>6} {'pred':>5} "
            f"{'lowest (share)':>15} {'dip':>4}  {'first minus lowest':>26}  {'last minus lowest':>26}  "
            f"{'F 0.5 minus GRPO':>26}  {'F 0.5 minus control':>26}")
    lines.append(head)
    for r in reports:
        first = next(v for k, v in r.items() if k.startswith("N=") and k.endswith("minus lowest"))
        last = [v for k, v in r.items() if k.startswith("N=") and k.endswith("minus lowest")][-1]
        f05 = r.get("F-GRPO gamma=0.5 at lowest", {})
        lines.append(f"{r['rare_correct_prob']:>6g} {r['optimizer']:>4} {r['parametrisation']:>10} {r['view']:>14} "
                     f"{r['rare_mass']:>6g} {r['lr']:>6g} {str(r['predicted_N']):>5} "
                     f"{r['observed_lowest_N']:>6} ({r['lowest_share']:.2f}) {'yes' if r['dip'] else 'no':>4}  "
                     f"{_ci(first):>26}  {_ci(last):>26}  {_ci(f05.get('minus GRPO')):>26}  "
                     f"{_ci(f05.get('minus control')):>26}")
    return "\n".join(lines)


__all__ = ["setting_reports", "format_report", "argmin_share", "unit_matrix", "equal_pass1", "best_checkpoint_matrix",
           "SETTING_KEYS"]
