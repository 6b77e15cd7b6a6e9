"""What the group-size study says, per setting: one JSON-ready dict each (`fgrpo simulate group-size --json`).

A setting is (rare_correct_prob, optimizer, parametrisation, view, rare share, learning rate). The unit of
inference is the population draw: each population's value is the mean over its batch seeds, so the spread
over populations carries both the population's (and its map's) variance and the batch seeds' (with a single
population the batch seeds are the unit). Every key is a plain identifier (jq and pandas take them as they
are). Per setting:

* `predicted_N` (`planner.predict_dip` on the populations' initial (mu, rho)), `observed_lowest_N` of GRPO's
  held-out pass@256 (mean over populations), `argmin_share` (per N: the share of bootstrap resamples of the
  populations in which that N is lowest; null below MIN_UNITS populations) and `lowest_share` (that N's);
  `first_minus_lowest` and `last_minus_lowest` (paired intervals, N[0] and N[-1] minus the lowest N), `dip`
  (interior lowest N and both flank intervals above 0) and `verdict` (a sentence; "no dip" when either flank's
  interval includes 0);
* per N: GRPO's held-out `pass256`, `pass1` and train `dnll_rare` (means); the spread of pass@256 at the
  lowest N between populations and between batch seeds within a population;
* `fgrpo_at_lowest`: per F-GRPO gamma, minus GRPO and minus its lr x m_gamma control at the lowest N, at equal
  steps (final) and at equal pass@1 (each arm's pass@1 curve interpolated to the lowest final pass@1 of the
  three, per population);
* `best_checkpoint` (paper App. L.4) beside equal steps: the same reading when each (population, N) is read at
  the evaluation where its pass@1 is highest;
* `curves`: every arm against N (pass@256 with its interval, pass@1, dNLL_rare), what the figure draws.

Intervals (issue 36): 95% Student t intervals over the units (a paired difference: over the per-unit
differences), scipy.stats.ttest_1samp's confidence_interval, stored and printed with the bounds rounded
outward. The percentile bootstrap used before is narrower than the t interval over 10 units (it ignores the
t quantile and the n - 1); the t interval's coverage is measured by `interval_coverage` (a seeded simulation;
`python -m fgrpo_sim.sim.group_size_report` prints it, tests/test_group_size_report.py checks it). The argmin shares resample the units with
scipy.stats.bootstrap; with fewer than MIN_UNITS units there are too few distinct resamples (3 for 2 units) to
mean anything, so the shares are null and the report says so (`few_units`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np

from fgrpo_sim.metrics.t_interval import t_interval  # also the maze's seed intervals

SETTING_KEYS = ("rare_correct_prob", "optimizer", "parametrisation", "view", "rare_mass", "base_lr")
METRIC = "heldout_pass@256"
RESAMPLES = 2000
CONFIDENCE = 0.95
#: fewest units whose bootstrap has >= 100 distinct resamples (C(2n - 1, n): 70 at 4, 126 at 5)
MIN_UNITS = 5
DIGITS = 5  # stored precision; bounds rounded outward


def _outward(estimate: float, low: float, high: float, digits: int = DIGITS) -> list[float]:
    """[estimate, low, high] at `digits` decimals, the bounds rounded away from the estimate (a lower bound of
    -0.00004 stays negative), so a rounded interval never claims more than the exact one."""
    scale = 10.0 ** digits
    return [round(float(estimate), digits), math.floor(float(low) * scale) / scale if math.isfinite(low) else math.nan,
            math.ceil(float(high) * scale) / scale if math.isfinite(high) else math.nan]


def mean_interval(values) -> list[float]:
    """[mean, low, high] of a [units] sample: the 95% t interval, rounded outward."""
    return _outward(*(float(v) for v in t_interval(values)))


def paired_interval(a, b) -> list[float]:
    """[mean, low, high] of a - b, a[i] and b[i] from the same unit: the t interval of the per-unit differences."""
    return mean_interval(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))


#: laws for the coverage simulation: (sampler(rng, shape), true mean); normal, and two right-skewed ones
#: (skewness 1 and 1.41): per-population differences of pass@256 are bounded and can be lopsided
COVERAGE_LAWS = {
    "normal": (lambda rng, shape: rng.normal(size=shape), 0.0),
    "gamma(4)": (lambda rng, shape: rng.gamma(4.0, size=shape), 4.0),
    "gamma(2)": (lambda rng, shape: rng.gamma(2.0, size=shape), 2.0),
}


def interval_coverage(units: int, law: str = "normal", reps: int = 4000, seed: int = 0) -> float:
    """Share of `reps` seeded samples of `units` draws from COVERAGE_LAWS[law] whose 95% t interval (the one the
    report prints, `t_interval`) holds the law's mean."""
    sampler, truth = COVERAGE_LAWS[law]
    x = sampler(np.random.default_rng(seed), (reps, units))
    _, low, high = t_interval(x)
    return float(np.mean((low <= truth) & (truth <= high)))


#: replications behind the coverage the docs quote: the 95% interval of each estimate is about +/-0.001 wide
COVERAGE_REPS = 200_000


def coverage_estimate(units: int, law: str = "normal", reps: int = COVERAGE_REPS, seed: int = 0) -> tuple[float, float, float]:
    """(coverage, low, high): `interval_coverage` with the 95% Wilson interval of that share (scipy), so a quoted
    coverage carries its own Monte Carlo error (issue 44: 4000 samples moved the third digit)."""
    from scipy.stats import binomtest

    share = interval_coverage(units, law, reps, seed)
    ci = binomtest(round(share * reps), reps).proportion_ci(confidence_level=0.95, method="wilson")
    return share, float(ci.low), float(ci.high)


def argmin_share(values: np.ndarray, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray | None:
    """Per column of `values` [units, columns]: the share of bootstrap resamples of the units (scipy.stats.
    bootstrap, every column seeing the same resamples) in which that column has the lowest mean; None with
    fewer than MIN_UNITS units."""
    from scipy.stats import bootstrap

    arr = np.asarray(values, dtype=float)
    units = arr.shape[0]
    if units < MIN_UNITS:
        return None

    def lowest_column(index, axis=-1):
        index = np.atleast_2d(index)  # scipy also evaluates the statistic on the sample itself
        return arr[index].mean(1).argmin(-1).astype(float)

    with warnings.catch_warnings():  # the interval of an index is meaningless (and degenerate when one N wins)
        warnings.simplefilter("ignore")
        res = bootstrap((np.arange(units),), lowest_column, n_resamples=resamples, method="percentile",
                        vectorized=True, rng=np.random.default_rng(seed))
    winners = np.asarray(res.bootstrap_distribution).astype(int).ravel()
    return np.bincount(winners, minlength=arr.shape[1]) / winners.size


def verdict(ns, low: int, first: list[float], last: list[float]) -> str:
    """'dip at N = n' when the lowest N is interior and both flank intervals lie above 0, else 'no dip: why'."""
    if low in (0, len(ns) - 1):
        return f"no dip: lowest at the edge N = {int(ns[low])}"
    flat = [f"N = {int(ns[i])}" for i, ci in ((0, first), (-1, last)) if not ci[1] > 0]
    if flat:
        return f"no dip: {' and '.join(flat)} minus lowest {'includes' if len(flat) == 1 else 'include'} 0"
    return f"dip at N = {int(ns[low])}"


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


def _means(matrix) -> list[float]:
    return [round(float(x), 4) for x in np.asarray(matrix).mean(0)]


def _flanks(values, ns) -> dict:
    """Lowest N of the column means of `values` [units, N], its share, the two flank intervals and the verdict."""
    low = int(values.mean(0).argmin())
    share = argmin_share(values)
    first, last = paired_interval(values[:, 0], values[:, low]), paired_interval(values[:, -1], values[:, low])
    return {"observed_lowest_N": int(ns[low]),
            "lowest_share": None if share is None else round(float(share[low]), 4),
            "argmin_share": None if share is None else [round(float(x), 4) for x in share],
            "first_minus_lowest": first, "last_minus_lowest": last,
            "dip": bool(0 < low < len(ns) - 1 and first[1] > 0 and last[1] > 0),
            "verdict": verdict(ns, low, first, last)}


def _fgrpo_at_lowest(final, curves, values, ns, low: int, unit: str) -> list[dict]:
    """Per F-GRPO gamma at the lowest N: minus GRPO and minus its lr x m_gamma control, at equal steps and at
    equal pass@1; the pass@1 difference."""
    out = []
    grpo_p1 = unit_matrix(final, "GRPO", "heldout_pass@1", unit)[0][:, low]
    for variant in sorted(set(final["variant"]) - {"GRPO"}):
        if not variant.startswith("F-GRPO"):
            continue
        gamma = variant.split("=")[1].split()[0]  # "F-GRPO gamma=0.5" or "F-GRPO gamma=0.5 alpha=0.5"
        control = f"GRPO low-LR (x m_{gamma})"
        f_vals = unit_matrix(final, variant, METRIC, unit)[0][:, low]
        entry = {"gamma": float(gamma), "variant": variant, "minus_grpo": paired_interval(f_vals, values[:, low]),
                 "pass1_minus_grpo": paired_interval(unit_matrix(final, variant, "heldout_pass@1", unit)[0][:, low],
                                                     grpo_p1)}
        arms = [variant, "GRPO"]
        if control in set(final["variant"]):
            entry["minus_control"] = paired_interval(f_vals, unit_matrix(final, control, METRIC, unit)[0][:, low])
            arms.append(control)
        eq = equal_pass1(curves, arms, int(ns[low]), unit)
        if np.all(np.isfinite(np.stack(list(eq.values())))):
            entry["equal_pass1_minus_grpo"] = paired_interval(eq[variant], eq["GRPO"])
            if control in eq:
                entry["equal_pass1_minus_control"] = paired_interval(eq[variant], eq[control])
        out.append(entry)
    return out


def setting_reports(frame, population=None) -> list[dict]:
    """One dict per setting of a study table (`run_study`'s rows, all evaluations)."""
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
        units = values.shape[0]
        flanks = _flanks(values, ns)
        low = list(ns).index(flanks["observed_lowest_N"])
        at_low = final[(final["variant"] == "GRPO") & (final["N"] == ns[low])]
        by_pop = at_low.groupby("population")[METRIC]
        within = float(np.sqrt(by_pop.var(ddof=1).mean())) if at_low["seed"].nunique() > 1 else math.nan
        prediction = predictions[(float(setting["rare_correct_prob"]), float(setting["rare_mass"]))]
        report = {
            **{k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in setting.items()},
            "lr": float(setting["base_lr"]),
            "rare_share_median": prediction[1],
            "populations": int(final["population"].nunique()), "batch_seeds": int(final["seed"].nunique()),
            "unit": unit, "steps": int(final["steps"].max()),
            "interval": f"{CONFIDENCE:.0%} Student t over {unit}s (paired: over per-{unit} differences), "
                        "bounds rounded outward",
            "few_units": units < MIN_UNITS,
            "predicted_N": prediction[0],
            **flanks,
            "N": [int(n) for n in ns],
            "pass256": _means(values),
            "pass1": _means(unit_matrix(final, "GRPO", "heldout_pass@1", unit)[0]),
            "dnll_rare": _means(unit_matrix(final, "GRPO", "train_dnll_rare", unit)[0]),
            "pass256_at_lowest": mean_interval(values[:, low]),
            "sd_between_populations": round(float(by_pop.mean().std(ddof=1)), 5) if by_pop.ngroups > 1 else None,
            "sd_between_batch_seeds": None if math.isnan(within) else round(within, 5),
            "fgrpo_at_lowest": _fgrpo_at_lowest(final, curves, values, ns, low, unit),
        }
        report["curves"] = []  # every arm against N: pass@256 [mean, low, high], pass@1 and dNLL_rare means
        for variant in sorted(set(final["variant"])):
            arm = final[final["variant"] == variant]
            p256 = unit_matrix(final, variant, METRIC, unit)[0]
            report["curves"].append({
                "variant": variant, "gamma": float(arm["gamma"].iloc[0]), "lr": float(arm["lr"].iloc[0]),
                "pass256": [mean_interval(p256[:, j]) for j in range(p256.shape[1])],
                "pass1": _means(unit_matrix(final, variant, "heldout_pass@1", unit)[0]),
                "dnll_rare": _means(unit_matrix(final, variant, "train_dnll_rare", unit)[0]),
            })
        best, best_ns = best_checkpoint_matrix(curves, "GRPO", unit)
        report["best_checkpoint"] = {**_flanks(best, best_ns), "pass256": _means(best)}
        reports.append(report)
    return reports


def curve(report: dict, variant: str) -> dict | None:
    """The `curves` entry of one arm (None when the setting did not run it)."""
    return next((c for c in report["curves"] if c["variant"] == variant), None)


def fgrpo_entry(report: dict, gamma: float) -> dict:
    """The `fgrpo_at_lowest` entry of one gamma ({} when the setting did not run it)."""
    return next((e for e in report["fgrpo_at_lowest"] if e["gamma"] == float(gamma)), {})


#: The F-GRPO exponent the tables show (the paper's); a run without it shows its smallest gamma instead.
SHOWN_GAMMA = 0.5


def shown_gamma(reports: list[dict]) -> float | None:
    """The gamma of the tables' "F G minus ..." columns: 0.5 where the reports ran it, else their smallest F-GRPO
    gamma (a `--gamma 1` run is headed F 1, not F 0.5 over empty cells); None when none ran F-GRPO."""
    gammas = {e["gamma"] for r in reports for e in r["fgrpo_at_lowest"]}
    if not gammas:
        return None
    return SHOWN_GAMMA if SHOWN_GAMMA in gammas else min(gammas)


def _f_label(gamma: float | None) -> str:
    return "F-GRPO" if gamma is None else f"F {gamma:g}"


def format_interval(x, digits: int = 3) -> str:
    """'+0.015 [+0.006, +0.023]' at `digits` decimals, the bounds rounded outward ('-' for none)."""
    if x is None or x[1] is None or x[2] is None:
        return "-" if x is None else f"{x[0]:+.{digits}f} [-]"
    scale = 10 ** digits
    low, high = math.floor(x[1] * scale + 1e-9) / scale, math.ceil(x[2] * scale - 1e-9) / scale
    return f"{x[0]:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def few_units_warning(reports: list[dict]) -> str | None:
    """One line when a setting has fewer than MIN_UNITS units (its shares are null, its intervals wide)."""
    few = sorted({r["populations"] if r["unit"] == "population" else r["batch_seeds"] for r in reports if r["few_units"]})
    if not few:
        return None
    return (f"warning: {', '.join(map(str, few))} units (populations) per setting, fewer than {MIN_UNITS}: no "
            f"argmin shares (too few distinct bootstrap resamples); t intervals assume near-normal unit means")


def format_report(reports: list[dict]) -> str:
    """One line per setting: prediction, lowest N (share), verdict, the two flank intervals, F-GRPO at the dip."""
    lines = [f"held-out pass@256 of GRPO vs N (intervals: {CONFIDENCE:.0%} t over populations, paired, bounds rounded "
             "outward); F-GRPO at the lowest N, equal steps"]
    warning = few_units_warning(reports)
    if warning:
        lines.append(warning)
    gamma = shown_gamma(reports)
    label = _f_label(gamma)
    head = (f"{'rare p':>6} {'opt':>4} {'param':>10} {'view':>14} {'rare':>6} {'lr':>6} {'pred':>5} "
            f"{'lowest (share)':>15} {'dip':>4}  {'first minus lowest':>26}  {'last minus lowest':>26}  "
            f"{label + ' minus GRPO':>26}  {label + ' minus control':>26}")
    lines.append(head)
    for r in reports:
        f05 = {} if gamma is None else fgrpo_entry(r, gamma)
        share = "n/a" if r["lowest_share"] is None else f"{r['lowest_share']:.2f}"
        lines.append(f"{r['rare_correct_prob']:>6g} {r['optimizer']:>4} {r['parametrisation']:>10} {r['view']:>14} "
                     f"{r['rare_mass']:>6g} {r['lr']:>6g} {str(r['predicted_N']):>5} "
                     f"{r['observed_lowest_N']:>8} ({share:>4}) {'yes' if r['dip'] else 'no':>4}  "
                     f"{format_interval(r['first_minus_lowest']):>26}  {format_interval(r['last_minus_lowest']):>26}  "
                     f"{format_interval(f05.get('minus_grpo')):>26}  {format_interval(f05.get('minus_control')):>26}")
    return "\n".join(lines)


def same_under_sgd(reports: list[dict]) -> list[dict]:
    """The reports with each SGD orthogonal setting dropped where it equals its axis twin (identical by
    construction: an orthogonal map does not change SGD's path), that twin's map named "axis = orthogonal"."""
    def twin_key(r):
        return tuple(r[k] for k in SETTING_KEYS if k != "parametrisation")

    axis = {twin_key(r): r for r in reports if r["optimizer"] == "sgd" and r["parametrisation"] == "axis"}
    out = []
    for r in reports:
        twin = axis.get(twin_key(r)) if r["optimizer"] == "sgd" else None
        if twin is not None and r["parametrisation"] == "orthogonal" and r["pass256"] == twin["pass256"]:
            continue
        if twin is r and any(o["parametrisation"] == "orthogonal" and twin_key(o) == twin_key(r)
                             and o["pass256"] == r["pass256"] for o in reports):
            r = {**r, "parametrisation": "axis = orthogonal"}
        out.append(r)
    return out


def markdown_table(reports: list[dict]) -> str:
    """docs/population.md's table: each optimizer's smaller lr, SGD's identical axis and orthogonal rows as one."""
    smallest = {}
    for r in reports:
        k = (r["rare_correct_prob"], r["optimizer"], r["view"])
        smallest[k] = min(smallest.get(k, r["lr"]), r["lr"])
    rows = [r for r in same_under_sgd(reports) if r["lr"] == smallest[(r["rare_correct_prob"], r["optimizer"], r["view"])]]
    ns = rows[0]["N"] if rows else []
    gamma = shown_gamma(reports)
    label = _f_label(gamma)
    lines = ["|optimizer|map|rare mass (median rho)|lr|predicted|lowest N (share)|verdict|"
             f"N={ns[0] if ns else 'first'} minus lowest|N={ns[-1] if ns else 'last'} minus lowest|"
             "share lowest, N = " + " / ".join(map(str, ns)) + "|dNLL_rare first / lowest / last|"
             f"{label} minus GRPO|{label} minus control|best-ckpt lowest N (share)|",
             "|" + "-|" * 13]
    for r in rows:
        low = r["N"].index(r["observed_lowest_N"])
        opt = r["optimizer"] + ("" if r["rare_correct_prob"] == 1.0 else f" (rare p {r['rare_correct_prob']:g})")
        bold = "**" if r["dip"] else ""
        share = "-" if r["lowest_share"] is None else f"{r['lowest_share']:.2f}"
        shares = "-" if r["argmin_share"] is None else " / ".join(f"{x:.2f}" for x in r["argmin_share"])
        best = r["best_checkpoint"]
        best_share = "-" if best["lowest_share"] is None else f"{best['lowest_share']:.2f}"
        d = r["dnll_rare"]
        f05 = {} if gamma is None else fgrpo_entry(r, gamma)
        lines.append(
            f"|{opt}|{r['parametrisation']}|{r['rare_mass']:g} ({r['rare_share_median']:.3f})|{r['lr']:g}|"
            f"{r['predicted_N']}|{bold}{r['observed_lowest_N']}{bold} ({share})|{r['verdict']}|"
            f"{format_interval(r['first_minus_lowest'])}|{format_interval(r['last_minus_lowest'])}|{shares}|"
            f"{d[0]:+.2f} / {d[low]:+.2f} / {d[-1]:+.2f}|{format_interval(f05.get('minus_grpo'))}|"
            f"{format_interval(f05.get('minus_control'))}|{best['observed_lowest_N']} ({best_share})|")
    return "\n".join(lines)


def headline_reports(reports: list[dict]) -> tuple[list[dict], dict[str, float]]:
    """What the figure and docs/population.md's short table show, with each optimizer's learning rate there: the
    default population (rare strategies correct on every common-solvable prompt), equal steps, each optimizer at
    its smaller lr, SGD's identical axis and orthogonal maps as one (empty when the reports hold none of these)."""
    main = [r for r in reports if r["rare_correct_prob"] == 1.0 and r["view"] == "equal-steps"]
    lrs = {opt: min(r["lr"] for r in main if r["optimizer"] == opt) for opt in {r["optimizer"] for r in main}}
    return same_under_sgd([r for r in main if r["lr"] == lrs[r["optimizer"]]]), lrs


def brief_tables(reports: list[dict]) -> str:
    """docs/population.md's short table, one per rare mass, of the headline reports: the flank intervals, where
    the lowest N lies (its share and every other N's) and F-GRPO against its control."""
    shown, lrs = headline_reports(reports)
    if not shown:
        raise ValueError("--brief needs settings of the default population (--rare-correct-prob 1) at equal steps")
    maps = ("axis", "orthogonal", "dense")  # "axis = orthogonal" sorts as axis
    rows = sorted(shown, key=lambda r: (r["optimizer"], maps.index(r["parametrisation"].split(" ")[0])))
    names = {"adam": "Adam", "sgd": "SGD"}
    gamma = shown_gamma(reports)
    label = _f_label(gamma)
    tables = []
    for rare in sorted({r["rare_mass"] for r in rows}):
        part = [r for r in rows if r["rare_mass"] == rare]
        ns = part[0]["N"]
        units = f"{max(r['populations'] for r in part)} populations x {max(r['batch_seeds'] for r in part)} batch seeds"
        lr_text = ", ".join(f"{names.get(o, o)} lr {lrs[o]:g}" for o in sorted(lrs) if any(r["optimizer"] == o for r in part))
        lines = [f"GRPO held-out pass@256 at rare mass {rare:g} (default population, {lr_text}, {units}; flanks: "
                 f"pass@256 at N = {ns[0]} and N = {ns[-1]} minus at the lowest N; last column at the lowest N, "
                 "equal steps):", "",
                 f"|optimizer, map|lowest N (share)|share of the other N|verdict|N={ns[0]} flank|N={ns[-1]} flank|"
                 f"{label} minus control|", "|-|-|-|-|-|-|-|"]
        for r in part:
            low, bold = r["observed_lowest_N"], "**" if r["dip"] else ""
            shares = r["argmin_share"]
            share = "-" if shares is None else f"{r['lowest_share']:.2f}"
            others = "" if shares is None else ", ".join(
                f"{n}: {x:.2f}" for n, x in zip(r["N"], shares) if n != low and round(x, 2) > 0)
            lines.append(f"|{names.get(r['optimizer'], r['optimizer'])}, {r['parametrisation']}|{bold}{low}{bold} "
                         f"({share})|{others}|{r['verdict']}|{format_interval(r['first_minus_lowest'])}|"
                         f"{format_interval(r['last_minus_lowest'])}|"
                         f"{format_interval({} if gamma is None else fgrpo_entry(r, gamma).get('minus_control'))}|")
        tables.append("\n".join(lines))
    return "\n\n".join(tables)


REPORT_KEYS = (*SETTING_KEYS[:-1], "lr", "N", "populations", "batch_seeds", "observed_lowest_N", "lowest_share",
               "argmin_share", "first_minus_lowest", "last_minus_lowest", "dip", "verdict", "fgrpo_at_lowest",
               "predicted_N", "rare_share_median", "dnll_rare", "best_checkpoint", "unit", "few_units", "pass256")


def read_reports(path) -> list[dict]:
    """The per-setting reports of a saved `fgrpo simulate group-size --json` record (JSON lines), every field
    checked (`group_size_record`: types, finite values in range, lists one per N); a line that is not one is a
    ValueError naming the file, line and field."""
    from fgrpo_sim.jsonl import read_json_objects
    from fgrpo_sim.sim.group_size_record import check_report

    reports, seen = [], {}
    for line, obj in read_json_objects(path, "--from"):
        try:
            report = check_report(obj, f"--from {path} line {line}", REPORT_KEYS)
        except ValueError as exc:
            raise ValueError(f"{exc}; pass the --json output of fgrpo simulate group-size") from None
        # a setting reported twice (two records joined, a line pasted twice) would print twice, or contradict
        key = tuple(report[k] for k in (*SETTING_KEYS[:-1], "lr"))
        if key in seen:
            raise ValueError(f"--from {path} line {line} repeats the setting of line {seen[key]} ("
                             + ", ".join(f"{k} {report[k]}" for k in (*SETTING_KEYS[:-1], "lr")) + "); give each once")
        seen[key] = line
        reports.append(report)
    if not reports:
        raise ValueError(f"--from {path} holds no group-size report")
    return reports


def coverage_table(units=(2, 3, 5, 10, 20), reps: int = COVERAGE_REPS, seed: int = 0) -> str:
    """The t interval's measured coverage per law and unit count, each with its 95% Wilson interval (seeded; what
    the docs quote)."""
    lines = [f"coverage of the {CONFIDENCE:.0%} t interval of a mean ({reps} seeded samples each, seed {seed}; "
             f"[95% interval of the estimate])", "law        " + " ".join(f"{f'n={n}':>22}" for n in units)]
    for law in COVERAGE_LAWS:
        cells = (coverage_estimate(n, law, reps, seed) for n in units)
        lines.append(f"{law:<10} " + " ".join(f"{c:.4f} [{lo:.4f}, {hi:.4f}]" for c, lo, hi in cells))
    return "\n".join(lines)


__all__ = ["setting_reports", "format_report", "argmin_share", "unit_matrix", "equal_pass1", "best_checkpoint_matrix",
           "SETTING_KEYS", "t_interval", "mean_interval", "paired_interval", "interval_coverage", "COVERAGE_LAWS",
           "coverage_estimate", "COVERAGE_REPS",
           "MIN_UNITS", "verdict", "curve", "fgrpo_entry", "format_interval", "few_units_warning", "coverage_table",
           "markdown_table", "same_under_sgd", "brief_tables", "headline_reports", "read_reports", "REPORT_KEYS"]


if __name__ == "__main__":
    print(coverage_table())
