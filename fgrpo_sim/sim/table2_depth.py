"""Table 2's depth (issue 48): the group-size study's engine at one population setting, set beside the paper.

A `DepthSetting` names the population and training properties a user can estimate about their own task (rare
mass, the share of prompts whose only correct strategies are rare, the number of rare strategies, the spread of
per-prompt success, the learning rate, steps and batch). `run_setting` trains GRPO, F-GRPO (gamma 0.5) and the
low-LR control (lr x m_0.5) at every N on `populations` population draws through `group_size_study.train_chunk`
(Adam, orthogonal map: the study's setting that dips), so the policy step is the study's and every row is seeded
from its own key (`group_size_study.SEEDING`). `summarise` turns the rows into the paper's units: held-out pass@k
in percent, dNLL_rare (train split, App. M.2's base-model weighting) in nats, each a 95% Student t interval over
populations.

The fit's loss and the hit rule are the ones docs/population.md pre-registered ("Table 2's depth: a prediction"):
squared error in points of pass@k plus that of dNLL_rare in tenths of a nat, over GRPO-row cells only; a
prediction hits when the paper's value lies within its interval widened by the fit's RMS error on that metric.
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
OPTIMIZER, PARAMETRISATION = "adam", "orthogonal"
CONFIDENCE = 0.95
SCHEMA = "table2-depth-v1"


@dataclass(frozen=True)
class DepthSetting:
    """The population and training properties the fit and the search move (the rest: the study's defaults)."""

    rare_mass: float = 0.02  # shared prior mass on all rare strategies together
    rare_only_share: float = 0.25  # prompts solvable only by a rare strategy
    rare_strategies: int = 4
    offset_scale: float = 1.0  # spread of per-prompt success at the start (std of the fixed per-prompt offsets)
    lr: float = 0.01  # Adam
    steps: int = 200
    prompt_batch: int = 32

    def validate(self) -> "DepthSetting":
        check_range("rare_mass", self.rare_mass, 0.0, 0.4, low_open=True, high_open=True)
        check_range("rare_only_share", self.rare_only_share, 0.0, 1.0)
        check_integer("rare_strategies", self.rare_strategies, 1, 1000)
        check_range("offset_scale", self.offset_scale, 0.0, 20.0)
        check_range("lr", self.lr, 0.0, 10.0, low_open=True)
        check_integer("steps", self.steps, 1, 1_000_000)
        check_integer("prompt_batch", self.prompt_batch, 1, 256)
        return self


#: the fit (benchmarks/table2_depth_search.py, fgrpo_sim/results/table2-depth-search.json: the lowest
#: pre-registered loss); `fgrpo simulate table2-depth`'s defaults
FITTED = DepthSetting(rare_mass=0.01, rare_only_share=0.4, offset_scale=2.0, lr=0.01, steps=400)
FITTED_POPULATIONS = 20


def study_spec(setting: DepthSetting, populations: int, group_sizes=GROUP_SIZES, seed: int = 0,
               controls: bool = True):
    """The group-size study's spec for one setting: one chunk (Adam, orthogonal), one batch seed per population,
    evaluated at the last step only; `controls` False drops the low-LR rows (the search needs GRPO only; F-GRPO
    stays, the study always trains one gamma). A row's numbers do not depend on which other rows run (SEEDING)."""
    from fgrpo_sim.sim.group_size_study import DEFAULT_POPULATION, GroupSizeStudySpec

    setting.validate()
    population = replace(DEFAULT_POPULATION, rare_only_share=setting.rare_only_share,
                         rare_strategies=setting.rare_strategies, offset_scale=setting.offset_scale)
    return GroupSizeStudySpec(group_sizes=tuple(group_sizes), rare_masses=(setting.rare_mass,), gammas=(GAMMA,),
                              low_lr=controls, optimizers=(OPTIMIZER,), parametrisations=(PARAMETRISATION,),
                              populations=populations, seeds=1, steps=setting.steps, prompt_batch=setting.prompt_batch,
                              adam_lrs=(setting.lr,), eval_every=setting.steps, seed=seed,
                              population=population).validate()


def run_setting(setting: DepthSetting, populations: int, group_sizes=GROUP_SIZES, device: str = "cpu",
                progress: bool = False, seed: int = 0, controls: bool = True):
    """Each trained row's last evaluation (group_size_study.final_rows) with `method` added: GRPO, F-GRPO, low-LR."""
    from fgrpo_sim.sim.group_size_study import final_rows, train_chunk
    from fgrpo_sim.sim.population import resolve_device

    spec = study_spec(setting, populations, group_sizes, seed, controls)
    rows = final_rows(train_chunk(spec, OPTIMIZER, PARAMETRISATION, resolve_device(device), progress))
    rows.insert(0, "method", rows["variant"].map(_method))
    return rows


def _method(variant: str) -> str:
    return "GRPO" if variant == "GRPO" else "F-GRPO" if variant.startswith("F-GRPO") else "low-LR"


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
    order = {"GRPO": 0, "F-GRPO": 1, "low-LR": 2}
    return sorted(out, key=lambda r: (order[r["method"]], r["N"]))


def paper_cells() -> dict[tuple[str, int, str], float]:
    """(method, N, metric) -> the paper's value: Table 2's math-average cells (GRPO at every N, F-GRPO at N = 8)
    and Table 3's low-LR control (metric names as here: pass@1, pass@256, dnll_rare)."""
    import pandas as pd

    from fgrpo_sim.paper_tables import HERE, table2

    cells = {}
    for r in table2().itertuples():
        metric = "dnll_rare" if r.metric == "delta_nll_rare" else r.metric
        if r.model == MODEL and metric in METRICS and (r.scope == "math_avg" or metric == "dnll_rare"):
            cells[(r.method, int(r.group_size), metric)] = float(r.value)
    table3 = pd.read_csv(HERE / "main_results.csv")
    low = table3[(table3["table"] == 3) & (table3["method"] == "GRPO low-LR") & (table3["scope"] == "math_avg")]
    for r in low.itertuples():
        cells[("low-LR", int(r.group_size), r.metric)] = float(r.value)
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


def predictions(rows: list[dict], targets: list[dict]) -> list[dict]:
    """Each unfitted paper cell with a simulator analogue (F-GRPO gamma 0.5 and low-LR at N = 8), its prediction,
    interval and the pre-registered verdict."""
    fitted = {(t["method"], t["N"], t["metric"]) for t in targets}
    tolerance = fit_rms(rows, targets)
    out = []
    for (method, n, metric), paper in sorted(paper_cells().items()):
        if (method == "GRPO" or (method, n, metric) in fitted or n != CONTROL_N
                or not any(r["method"] == method and r["N"] == n for r in rows)):  # --n without 8: none
            continue
        sim = _simulated(rows, method, n, metric)
        d = tolerance.get(metric, 0.0)
        name = {"F-GRPO": "F-GRPO", "low-LR": "GRPO low-LR"}[method]
        out.append({"cell": {"model": MODEL, "method": name, "N": n, "metric": metric}, "paper": paper,
                    "predicted": sim["mean"], "ci_low": sim["ci_low"], "ci_high": sim["ci_high"],
                    "tolerance": d, "hit": bool(sim["ci_low"] - d <= paper <= sim["ci_high"] + d)})
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
    """The record `fgrpo simulate table2-depth` writes (schema table2-depth-v1; sim.table2_depth_record reads it)."""
    from fgrpo_sim.sim.group_size_study import SEEDING

    rows = summarise(frame)
    targets = fit_targets(sorted(int(n) for n in frame["N"].unique()))
    return {"schema": SCHEMA, "fit_targets": targets,
            "fitted": {**asdict(setting), "optimizer": OPTIMIZER, "parametrisation": PARAMETRISATION,
                       "gamma": GAMMA, "seed": seed, "loss": fit_loss(rows, targets), "rms": fit_rms(rows, targets)},
            "simulated_rows": rows, "predictions": predictions(rows, targets), "grpo_dip_points": dip_points(frame),
            "populations": int(populations),
            "seeding": f"{SEEDING}: group_size_study's per-row keys (population, N and variant each its own stream)",
            "command": command}


__all__ = ["DepthSetting", "study_spec", "run_setting", "summarise", "paper_cells", "fit_targets", "fit_errors",
           "fit_loss", "fit_rms", "predictions", "dip_points", "build_record", "GROUP_SIZES", "GAMMA", "METRICS",
           "SCHEMA", "MODEL", "FITTED", "FITTED_POPULATIONS"]
