"""Table 2's depth (issue 48): the group-size study's engine at one population setting, set beside the paper.

A `DepthSetting` names the population and training properties a user can estimate about their own task (rare
mass, the share of prompts whose only correct strategies are rare, the number of rare strategies, the spread of
per-prompt success, the start's success level, the learning rate, steps and batch). `run_setting` trains GRPO,
F-GRPO (gamma 0.5), the low-LR control (lr x m_0.5) and the entropy and KL controls at every N on `populations` population draws through `group_size_study.train_chunk`
(Adam, orthogonal map by default: the study's setting that dips; the setting's `optimizer`, `parametrisation` and
`seed_offset` vary our own choices), so the policy step is the study's and every row is seeded from its own key
(`group_size_study.SEEDING`). `summarise` turns the rows into the paper's units: held-out pass@k
in percent, dNLL_rare (train split, App. M.2's base-model weighting) in nats, each a 95% Student t interval over
populations.

The fit's loss and the hit rules are the ones docs/population.md pre-registered ("Table 2's depth: a prediction"):
squared error in points of pass@k plus that of dNLL_rare in tenths of a nat, over GRPO-row cells only. v1: a
prediction hits when the paper's value lies within its interval widened by the fit's RMS error on that metric (the
record's `hit`). v2 (written after v1's outcome): each prediction's contrast to the fitted GRPO at N = 8, paired over
populations, hits when the paper's contrast lies inside its 95% interval, no widening (`contrast.hit`); the entropy
and KL controls (sim.regularisers) run on the paper's coefficient grids and the one with the highest mean held-out
pass@1 at N = 8 is predicted (Table 3's protocol).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np

from fgrpo_sim.validation import check_integer, check_range

MODEL = "Qwen2.5-7B"
SOURCE = "Table 2, math average"
GROUP_SIZES = (2, 4, 8, 16, 32)  # Table 2's N
GAMMA = 0.5  # Table 2's F-GRPO row (Table 7's selected gamma for Qwen2.5-7B GRPO)
CONTROL_N = 8  # Table 3's controls and Table 2's F-GRPO row
METRICS = ("pass@1", "pass@256", "dnll_rare")
#: the pre-registered loss: pass@k in points, dNLL_rare in tenths of a nat (so 0.1 nat weighs as 1 point)
LOSS_SCALE = {"pass@1": 1.0, "pass@256": 1.0, "dnll_rare": 10.0}
OPTIMIZER, PARAMETRISATION = "adam", "orthogonal"  # the committed fit's (the study's setting that dips)
OPTIMIZERS = ("adam", "sgd")  # what the group-size engine trains (sim.group_size_study)
#: each optimizer's lr range (the engine's: SGD's token-mean gradient is small, so its lr is larger)
LR_RANGES = {"adam": 10.0, "sgd": 1000.0}
CONFIDENCE = 0.95
SCHEMA = "table2-depth-v2"
#: Table 3's entropy and KL coefficient grids (the paper's, unscaled: one token per rollout, the same token-mean
#: loss; docs/population.md "v2"); each picked by mean held-out pass@1 at N = 8, the paper's protocol
CONTROL_GRIDS = {"entropy": (1e-4, 1e-3), "KL": (1e-3, 1e-2)}
#: what a prediction's two verdicts mean (written into the record, so the JSON explains itself)
RULES = {"hit": "v1 (pre-registered first): the paper's value lies in [ci_low - tolerance, ci_high + tolerance], "
                "tolerance the fit's RMS error on that metric",
         "contrast.hit": "v2 (pre-registered after v1's outcome): the paper's contrast to GRPO at N = 8 lies in the "
                         "paired 95% t interval of the simulated contrast over populations, no widening"}
#: the simulator's method -> the paper's row name
PAPER_NAMES = {"F-GRPO": "F-GRPO", "low-LR": "GRPO low-LR", "entropy": "GRPO-H", "KL": "GRPO-KL"}


@dataclass(frozen=True)
class DepthSetting:
    """The population and training properties the fit and the search move (the rest: the study's defaults)."""

    rare_mass: float = 0.02  # shared prior mass on all rare strategies together
    rare_only_share: float = 0.25  # prompts solvable only by a rare strategy
    rare_strategies: int = 4
    offset_scale: float = 1.0  # spread of per-prompt success at the start (std of the fixed per-prompt offsets)
    lr: float = 0.01  # the optimizer's
    steps: int = 200
    prompt_batch: int = 32
    # the start's success level (v2): a common strategy's chance to solve a common-solvable prompt
    common_correct_prob: float = 0.5
    # our own choices (issue 48's robustness check): the optimizer, the map logits = M theta, the first population
    # seed (draws seed_offset .. seed_offset + P - 1)
    optimizer: str = OPTIMIZER
    parametrisation: str = PARAMETRISATION
    seed_offset: int = 0

    def validate(self) -> "DepthSetting":
        from fgrpo_sim.sim.parametrisation import PARAMETRISATIONS
        from fgrpo_sim.validation import check_choice

        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_choice("parametrisation", self.parametrisation, PARAMETRISATIONS)
        check_integer("seed_offset", self.seed_offset, 0, 10**9)
        check_range("rare_mass", self.rare_mass, 0.0, 0.4, low_open=True, high_open=True)
        check_range("rare_only_share", self.rare_only_share, 0.0, 1.0)
        check_integer("rare_strategies", self.rare_strategies, 1, 1000)
        check_range("offset_scale", self.offset_scale, 0.0, 20.0)
        check_range("lr", self.lr, 0.0, LR_RANGES[self.optimizer], low_open=True)
        check_integer("steps", self.steps, 1, 1_000_000)
        check_integer("prompt_batch", self.prompt_batch, 1, 256)
        check_range("common_correct_prob", self.common_correct_prob, 0.0, 1.0, low_open=True)
        return self


#: the fit (benchmarks/table2_depth_search.py: fgrpo_sim/results/table2-depth-search.json, then v2's grid with the
#: start's success level free, table2-depth-search-v2.json: the lowest pre-registered loss is still this setting);
#: `fgrpo simulate table2-depth`'s defaults
FITTED = DepthSetting(rare_mass=0.01, rare_only_share=0.4, offset_scale=2.0, lr=0.01, steps=400)
FITTED_POPULATIONS = 40


def study_spec(setting: DepthSetting, populations: int, group_sizes=GROUP_SIZES, seed: int = 0,
               controls: bool = True):
    """The group-size study's spec for one setting: one chunk (its optimizer and map), one batch seed per population,
    evaluated at the last step only; `controls` False drops the low-LR, entropy and KL rows (the search needs GRPO
    only; F-GRPO stays, the study always trains one gamma). A row's numbers do not depend on which other rows run
    (SEEDING)."""
    from fgrpo_sim.sim.group_size_study import DEFAULT_POPULATION, GroupSizeStudySpec

    setting.validate()
    population = replace(DEFAULT_POPULATION, rare_only_share=setting.rare_only_share,
                         rare_strategies=setting.rare_strategies, offset_scale=setting.offset_scale,
                         common_correct_prob=setting.common_correct_prob)
    return GroupSizeStudySpec(group_sizes=tuple(group_sizes), rare_masses=(setting.rare_mass,), gammas=(GAMMA,),
                              low_lr=controls, entropy_coefs=CONTROL_GRIDS["entropy"] if controls else (),
                              kl_coefs=CONTROL_GRIDS["KL"] if controls else (), optimizers=(setting.optimizer,),
                              parametrisations=(setting.parametrisation,), populations=populations,
                              population_offset=setting.seed_offset, seeds=1, steps=setting.steps,
                              prompt_batch=setting.prompt_batch, eval_every=setting.steps, seed=seed,
                              **{f"{setting.optimizer}_lrs": (setting.lr,)}, population=population).validate()


def run_setting(setting: DepthSetting, populations: int, group_sizes=GROUP_SIZES, device: str = "cpu",
                progress: bool = False, seed: int = 0, controls: bool = True, lrs=None):
    """Each trained row's last evaluation (group_size_study.final_rows) with `method` added: GRPO, F-GRPO, low-LR.
    `lrs`: train every one of these learning rates instead of the setting's, in one batched run (an lr grid; the
    `base_lr` column tells them apart, and each row is its own key, so a row equals the one-lr run's)."""
    from fgrpo_sim.sim.group_size_study import final_rows, train_chunk
    from fgrpo_sim.sim.population import resolve_device

    spec = study_spec(setting, populations, group_sizes, seed, controls)
    if lrs is not None:
        for lr in lrs:  # each lr in the optimizer's range, named as the setting's field
            replace(setting, lr=float(lr)).validate()
        spec = replace(spec, **{f"{setting.optimizer}_lrs": tuple(float(lr) for lr in lrs)}).validate()
    rows = final_rows(train_chunk(spec, setting.optimizer, setting.parametrisation, resolve_device(device), progress))
    rows.insert(0, "method", rows["variant"].map(_method))
    return rows


def _method(variant: str) -> str:
    """GRPO, F-GRPO, low-LR, or a control with its coefficient ("entropy 0.001", "KL 0.01")."""
    if variant.startswith(("GRPO entropy=", "GRPO KL=")):
        return variant[len("GRPO "):].replace("=", " ")
    return "GRPO" if variant == "GRPO" else "F-GRPO" if variant.startswith("F-GRPO") else "low-LR"


def _family(method: str) -> str:
    return method.split(" ")[0]


def _values(rows, metric: str) -> np.ndarray:
    """Per population, in the paper's unit: held-out pass@k in percent, dNLL_rare in nats."""
    column = "train_dnll_rare" if metric == "dnll_rare" else f"heldout_{metric}"
    scale = 1.0 if metric == "dnll_rare" else 100.0
    return scale * rows.sort_values("population")[column].to_numpy(dtype=float)


def _interval(values: np.ndarray) -> dict:
    from fgrpo_sim.metrics import t_interval

    mean, low, high = (float(x) for x in t_interval(values, confidence=CONFIDENCE))
    return {"mean": mean, "ci_low": low, "ci_high": high}


def summarise(rows) -> list[dict]:
    """One simulated row per (method, N): each metric's mean and 95% t interval over populations."""
    out = []
    for (method, n), part in rows.groupby(["method", "N"], sort=True):
        row = {"method": method, "gamma": float(part["gamma"].iloc[0]), "N": int(n)}
        row.update({m: _interval(_values(part, m)) for m in METRICS})
        out.append(row)
    order = {"GRPO": 0, "F-GRPO": 1, "low-LR": 2, "entropy": 3, "KL": 4}
    return sorted(out, key=lambda r: (order[_family(r["method"])], r["method"], r["N"]))


def paper_cells() -> dict[tuple[str, int, str], float]:
    """(method, N, metric) -> the paper's value: Table 2's math-average cells (GRPO at every N, F-GRPO at N = 8)
    and Table 3's low-LR, entropy (GRPO-H) and KL (GRPO-KL) controls, keyed by the simulator's method names
    (metric names as here: pass@1, pass@256, dnll_rare)."""
    import pandas as pd

    from fgrpo_sim.paper_tables import HERE, table2

    cells = {}
    for r in table2().itertuples():
        metric = "dnll_rare" if r.metric == "delta_nll_rare" else r.metric
        if r.model == MODEL and metric in METRICS and (r.scope == "math_avg" or metric == "dnll_rare"):
            cells[(r.method, int(r.group_size), metric)] = float(r.value)
    table3 = pd.read_csv(HERE / "main_results.csv")
    for method in ("low-LR", "entropy", "KL"):
        rows = table3[(table3["table"] == 3) & (table3["method"] == PAPER_NAMES[method])
                      & (table3["model"] == MODEL) & (table3["scope"] == "math_avg")]
        for r in rows.itertuples():
            cells[(method, int(r.group_size), r.metric)] = float(r.value)
    return cells


def fit_targets(group_sizes=GROUP_SIZES) -> list[dict]:
    """The fitted cells: the GRPO row of Table 2 only, every metric at every N."""
    cells = paper_cells()
    return [{"model": MODEL, "method": "GRPO", "N": int(n), "metric": m, "value": cells[("GRPO", int(n), m)],
             "source": SOURCE} for n in group_sizes for m in METRICS if ("GRPO", int(n), m) in cells]


def _simulated(rows: list[dict], method: str, n: int, metric: str) -> dict:
    return next(r[metric] for r in rows if r["method"] == method and r["N"] == n)


def fit_errors(rows: list[dict], targets: list[dict]) -> dict[str, list[float]]:
    """Per metric, simulated mean minus paper value at each fitted cell (the metric's unit)."""
    out: dict[str, list[float]] = {m: [] for m in METRICS}
    for t in targets:
        out[t["metric"]].append(_simulated(rows, t["method"], t["N"], t["metric"])["mean"] - t["value"])
    return out


def fit_loss(rows: list[dict], targets: list[dict]) -> float:
    """The pre-registered loss: sum of squared errors, pass@k in points, dNLL_rare in tenths of a nat."""
    return float(sum((LOSS_SCALE[m] * e) ** 2 for m, errs in fit_errors(rows, targets).items() for e in errs))


def fit_rms(rows: list[dict], targets: list[dict]) -> dict[str, float]:
    """The fit's RMS error per metric on its own cells: the tolerance the hit rule adds to an interval."""
    return {m: math.sqrt(float(np.mean(np.square(e)))) for m, e in fit_errors(rows, targets).items() if e}


def chosen_controls(rows: list[dict]) -> dict:
    """Per control family (entropy, KL): its grid's mean held-out pass@1 at N = 8 and the coefficient with the
    highest (Table 3's protocol, applied to the simulator's rows; the predicted cells are not looked at)."""
    out = {}
    for family, grid in CONTROL_GRIDS.items():
        means = [next((r["pass@1"]["mean"] for r in rows if r["method"] == f"{family} {c:g}" and r["N"] == CONTROL_N),
                      None) for c in grid]
        if all(m is not None for m in means):
            out[family] = {"grid": list(grid), "pass@1_at_N8": means,
                           "chosen": grid[max(range(len(grid)), key=lambda i: means[i])]}
    return out


def _contrast(frame, method: str, metric: str, paper: float, paper_grpo: float) -> dict:
    """`method` minus GRPO at N = 8, paired over populations (each population's own difference), 95% t interval;
    the strict v2 rule: the paper's contrast lies inside it."""
    at_8 = frame[frame["N"] == CONTROL_N]
    diff = _interval(_values(at_8[at_8["method"] == method], metric) - _values(at_8[at_8["method"] == "GRPO"], metric))
    want = paper - paper_grpo
    return {"paper": want, "predicted": diff["mean"], "ci_low": diff["ci_low"], "ci_high": diff["ci_high"],
            "hit": bool(diff["ci_low"] <= want <= diff["ci_high"])}


def predictions(rows: list[dict], targets: list[dict], frame=None) -> list[dict]:
    """Each unfitted paper cell with a simulator analogue at N = 8 (F-GRPO gamma 0.5, low-LR, and the entropy and
    KL controls at their chosen coefficient): its prediction and interval, `hit` by v1's rule (the interval widened
    by the fit's RMS error), and with `frame` (the per-population rows) its `contrast` to GRPO by v2's rule."""
    fitted = {(t["method"], t["N"], t["metric"]) for t in targets}
    tolerance = fit_rms(rows, targets)
    chosen = chosen_controls(rows)
    cells = paper_cells()
    out = []
    # round one's five predictions first, in round one's order (readers that index them keep working)
    order = {name: i for i, name in enumerate(("GRPO", *PAPER_NAMES))}
    for (family, n, metric), paper in sorted(cells.items(), key=lambda kv: (order[kv[0][0]], kv[0][1:])):
        method = f"{family} {chosen[family]['chosen']:g}" if family in chosen else family
        if (family == "GRPO" or (family, n, metric) in fitted or n != CONTROL_N
                or not any(r["method"] == method and r["N"] == n for r in rows)):  # --n without 8: none
            continue
        sim = _simulated(rows, method, n, metric)
        d = tolerance.get(metric, 0.0)
        p = {"cell": {"model": MODEL, "method": PAPER_NAMES[family], "N": n, "metric": metric}, "paper": paper,
             "predicted": sim["mean"], "ci_low": sim["ci_low"], "ci_high": sim["ci_high"],
             "tolerance": d, "hit": bool(sim["ci_low"] - d <= paper <= sim["ci_high"] + d)}
        if family in chosen:
            p["coefficient"] = chosen[family]["chosen"]
        if frame is not None:
            p["contrast"] = _contrast(frame, method, metric, paper, cells[("GRPO", n, metric)])
        out.append(p)
    return out


def dip_points(frame, method: str = "GRPO", metric: str = "pass@256") -> dict:
    """Where `method`'s mean pass@256 is lowest, and each flank (smallest and largest N) minus it in points,
    paired over populations with a 95% t interval (zero-width where the flank is the lowest N itself)."""
    part = frame[frame["method"] == method]
    ns = sorted(int(n) for n in part["N"].unique())
    per_n = {n: _values(part[part["N"] == n], metric) for n in ns}
    dip = min(ns, key=lambda n: per_n[n].mean())

    def flank(n):
        diff = _interval(per_n[n] - per_n[dip])
        return {"N": n, "points": diff["mean"], "ci_low": diff["ci_low"], "ci_high": diff["ci_high"]}

    return {"dip_N": dip, "left": flank(ns[0]), "right": flank(ns[-1])}


def build_record(setting: DepthSetting, frame, populations: int, command: str, seed: int = 0) -> dict:
    """The record `fgrpo simulate table2-depth` writes (schema table2-depth-v2; sim.table2_depth_record reads it):
    each prediction's `hit` is v1's rule, its `contrast.hit` v2's; `controls` records the coefficient choice."""
    from fgrpo_sim.sim.group_size_study import SEEDING

    rows = summarise(frame)
    targets = fit_targets(sorted(int(n) for n in frame["N"].unique()))
    fitted = asdict(setting)
    if not fitted["seed_offset"]:  # seeds from 0: the record as written before the offset existed, byte for byte
        del fitted["seed_offset"]
    return {"schema": SCHEMA, "fit_targets": targets,
            "fitted": {**fitted, "gamma": GAMMA, "seed": seed, "loss": fit_loss(rows, targets),
                       "rms": fit_rms(rows, targets)},
            "simulated_rows": rows, "predictions": predictions(rows, targets, frame), "controls": chosen_controls(rows),
            "rules": RULES,
            "grpo_dip_points": dip_points(frame),
            "populations": int(populations),
            "seeding": f"{SEEDING}: group_size_study's per-row keys (population, N and variant each its own stream)",
            "command": command}


__all__ = ["DepthSetting", "study_spec", "run_setting", "summarise", "paper_cells", "fit_targets", "fit_errors",
           "fit_loss", "fit_rms", "predictions", "chosen_controls", "dip_points", "build_record", "GROUP_SIZES",
           "GAMMA", "METRICS", "SCHEMA", "MODEL", "OPTIMIZERS", "FITTED", "FITTED_POPULATIONS", "CONTROL_GRIDS", "PAPER_NAMES"]
