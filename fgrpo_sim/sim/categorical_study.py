"""Sensitivity study of the categorical simulation: which open settings reproduce the paper's Fig 2 claims.

The paper fixes the lr (1e-2) but not the surrogate, the optimizer, its eps or its weight decay.
`study_settings()` lists the settings we try (surrogate x optimizer x eps x weight decay) and
`run_study` simulates each on a reduced grid (fewer N values and seeds than Fig 2, the paper's 1000
steps) into one table (resumable). `claims_table` scores each setting against the three claims:

  (1) Q_pos rises for every N: the final seed-mean Q_pos exceeds its start value for every N and gamma.
  (2) M_ret is non-monotonic in N with the largest N keeping M_ret near 1 (gamma = 0): some
      intermediate N ends at least 0.2 below both the smallest N and the largest N, and the largest
      N ends with M_ret >= 0.9.
  (3) gamma = 1 raises M_ret inside the concentration zone: over the N whose gamma = 0 final M_ret is
      below 0.5, the mean gain M_ret(gamma=1) - M_ret(gamma=0) is at least 0.05 (no zone: not shown).

Reproduce with `fgrpo simulate categorical --study --out runs/categorical-study.parquet`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fgrpo_sim.sim.categorical_config import CategoricalConfig
from fgrpo_sim.sim.categorical_run import run_grid

STUDY_GROUP_SIZES = (2, 8, 32, 128, 512, 2048, 8192, 32768, 131072)
STUDY_SEEDS = (0,)  # one seed per setting: the effects judged are large; Fig 2 itself uses 4
STUDY_STRIDE = 100

# (optimizer, eps, weight decay); adam with weight decay 0 is adamw with weight decay 0
OPTIMIZER_SETTINGS = (
    ("adamw", 1e-8, 0.0),
    ("adamw", 1e-12, 0.0),
    ("adamw", 1e-8, 0.01),
    ("adamw", 1e-12, 0.01),
    ("adamw", 1e-6, 0.0),
    ("adamw", 1e-8, 0.1),
    ("adam", 1e-8, 0.01),
    ("sgd", 1e-8, 0.0),
)
SURROGATE_ORDER = ("distinct", "draws", "logprob")


def setting_label(surrogate: str, optimizer: str, eps: float, weight_decay: float) -> str:
    if optimizer == "sgd":
        return f"{surrogate}/sgd" + (f"/wd={weight_decay:g}" if weight_decay else "")
    return f"{surrogate}/{optimizer}/eps={eps:g}/wd={weight_decay:g}"


def study_settings(base: CategoricalConfig | None = None, *, steps: int = 1000) -> list[CategoricalConfig]:
    """One config per studied setting, on the reduced grid."""
    base = base or CategoricalConfig()
    out = []
    for optimizer, eps, wd in OPTIMIZER_SETTINGS:
        for surrogate in SURROGATE_ORDER:
            out.append(base.with_(surrogate=surrogate, optimizer=optimizer, eps=eps, weight_decay=wd, steps=steps,
                                  group_sizes=STUDY_GROUP_SIZES, gammas=(0.0, 1.0), seeds=STUDY_SEEDS,
                                  stride=STUDY_STRIDE,
                                  metadata={"setting": setting_label(surrogate, optimizer, eps, wd)}))
    return out


def run_study(out: str | Path, *, steps: int = 1000, progress: bool = True, device: str = "auto",
              only: list[str] | None = None,
              fresh_start_hint: str = "delete it or choose another file (the study always resumes)") -> pd.DataFrame:
    """Simulate every setting (resuming from `out`), return the full table of all settings."""
    from tqdm.auto import tqdm

    from fgrpo_sim.atomic_io import check_writable
    from fgrpo_sim.sim.categorical import resolve_device

    check_writable(out, "out")  # bad paths and devices fail before the progress bar
    resolve_device(device)
    configs = [c.with_(device=device) for c in study_settings(steps=steps)]
    if only:
        configs = [c for c in configs if c.metadata["setting"] in only]
    tables = []
    for cfg in tqdm(configs, desc="settings", disable=not progress):
        tables.append(run_grid(cfg, out, resume=True, progress=progress, fresh_start_hint=fresh_start_hint))
    return pd.concat(tables, ignore_index=True)


def final_means(table: pd.DataFrame) -> pd.DataFrame:
    """Seed-mean of the first and last recorded step per (setting, N, gamma)."""
    keys = ["setting", "group_size", "gamma"]
    last = table[table["step"] == table.groupby("config_id")["step"].transform("max")]
    first = table[table["step"] == 0]
    fin = last.groupby(keys)[["q_pos", "m_ret"]].mean()
    start = first.groupby(keys)[["q_pos", "m_ret"]].mean().add_suffix("_start")
    return fin.join(start).reset_index()


def score_claims(final: pd.DataFrame) -> dict:
    """The three claims for one setting's final means (columns group_size, gamma, q_pos, m_ret, q_pos_start)."""
    g0 = final[final["gamma"] == 0.0].sort_values("group_size")
    g1 = final[final["gamma"] == 1.0].sort_values("group_size")
    rises = bool((final["q_pos"] > final["q_pos_start"]).all())
    m0 = g0["m_ret"].to_numpy()
    dip = float(min(m0[0], m0[-1]) - m0[1:-1].min()) if len(m0) >= 3 else float("nan")
    non_monotonic = bool(len(m0) >= 3 and dip >= 0.2 and m0[-1] >= 0.9)
    zone = g0["m_ret"].to_numpy() < 0.5
    gain = g1["m_ret"].to_numpy() - g0["m_ret"].to_numpy()
    zone_gain = float(gain[zone].mean()) if zone.any() else float("nan")
    focal_helps = bool(zone.any() and zone_gain >= 0.05)
    return {
        "claim1_qpos_rises": rises,
        "claim2_mret_nonmonotonic": non_monotonic,
        "claim3_gamma_helps_in_zone": focal_helps,
        "claims_shown": int(rises) + int(non_monotonic) + int(focal_helps),
        "min_qpos_gain": float((final["q_pos"] - final["q_pos_start"]).min()),
        "mret_dip": dip,
        "mret_largest_n": float(m0[-1]) if len(m0) else float("nan"),
        "zone_size": int(zone.sum()),
        "zone_mret_gain": zone_gain,
    }


def claims_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per setting with the three verdicts and the numbers behind them, best first."""
    fin = final_means(table)
    rows = []
    for setting, part in fin.groupby("setting", sort=False):
        meta = table[table["setting"] == setting].iloc[0]
        rows.append({"setting": setting, "surrogate": meta["surrogate"], "optimizer": meta["optimizer"],
                     "eps": meta["eps"], "weight_decay": meta["weight_decay"], **score_claims(part)})
    out = pd.DataFrame(rows)
    out["_dip"] = out["mret_dip"].fillna(-1.0)
    out = out.sort_values(["claims_shown", "_dip"], ascending=[False, False]).drop(columns="_dip")
    return out.reset_index(drop=True)


def format_claims_markdown(claims: pd.DataFrame) -> str:
    def yes(b):
        return "yes" if b else "no"

    lines = ["| setting | (1) Q_pos rises | (2) M_ret dip, largest N kept | (3) gamma=1 helps in zone | "
             "min Q_pos gain | M_ret dip | M_ret at N=131072 | zone size | zone M_ret gain |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for _, r in claims.iterrows():
        def num(x, fmt="{:.2f}"):
            return "n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else fmt.format(x)

        lines.append(f"| {r['setting']} | {yes(r['claim1_qpos_rises'])} | {yes(r['claim2_mret_nonmonotonic'])} | "
                     f"{yes(r['claim3_gamma_helps_in_zone'])} | {num(r['min_qpos_gain'], '{:+.4f}')} | {num(r['mret_dip'])} | "
                     f"{num(r['mret_largest_n'])} | {r['zone_size']} | {num(r['zone_mret_gain'])} |")
    return "\n".join(lines)
