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

from fgrpo_sim.sim.categorical.config import CategoricalConfig, resolve_device
from fgrpo_sim.sim.categorical.run import run_grid
from fgrpo_sim.sim.result_table import TableSchema, read_result_table

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
              only: list[str] | None = None, wait_for_lock: bool = False,
              fresh_start_hint: str = "delete it or choose another file (the study always resumes)") -> pd.DataFrame:
    """Simulate every setting (resuming from `out`), return the full table of all settings.

    Each setting holds `out`'s lock while it runs (see run_grid's `wait_for_lock`)."""
    from fgrpo_sim.progress import bar as progress_bar

    from fgrpo_sim.atomic_io import check_writable

    check_writable(out, "out")  # bad paths and devices fail before the progress bar
    resolve_device(device)
    configs = [c.with_(device=device) for c in study_settings(steps=steps)]
    if only:
        configs = [c for c in configs if c.metadata["setting"] in only]
    tables = []
    for cfg in progress_bar(configs, progress=progress, desc="settings"):
        tables.append(run_grid(cfg, out, resume=True, progress=progress, wait_for_lock=wait_for_lock,
                               fresh_start_hint=fresh_start_hint))
    return pd.concat(tables, ignore_index=True)


#: The final-means table (`final_means`; the committed fgrpo_sim/results/categorical-study.csv), read back through
#: the checked result-table reader: a damaged record is refused by line, never drawn or scored.
FINAL_MEANS_SCHEMA = TableSchema("categorical final-means table", text=("setting",), integers=("group_size",),
                                 numbers=("gamma",), metrics=("q_pos", "m_ret", "q_pos_start", "m_ret_start"),
                                 key=("setting", "group_size", "gamma"),
                                 bounds=(("group_size", 1, None), ("gamma", 0, None), ("q_pos", 0, 1),
                                         ("q_pos_start", 0, 1)))


def read_final_means(path: str | Path) -> pd.DataFrame:
    """The final means in `path` (.csv or .parquet), every row checked (FINAL_MEANS_SCHEMA)."""
    return read_result_table(path, FINAL_MEANS_SCHEMA, "reinstall fgrpo-sim (a committed record)", label="record",
                             action="read")


def final_means(table: pd.DataFrame) -> pd.DataFrame:
    """Seed-mean of the first and last recorded step per (setting, N, gamma)."""
    keys = ["setting", "group_size", "gamma"]
    last = table[table["step"] == table.groupby("config_id")["step"].transform("max")]
    first = table[table["step"] == 0]
    fin = last.groupby(keys)[["q_pos", "m_ret"]].mean()
    start = first.groupby(keys)[["q_pos", "m_ret"]].mean().add_suffix("_start")
    return fin.join(start).reset_index()


# Thresholds of the three Fig 2 claims. A Q_pos "rise" of less than MIN_QPOS_GAIN is a flat line, not a
# rise; regime III counts only when the largest N trained (Q_pos up by TRAINED_QPOS_GAIN), since an
# untrained policy keeps M_ret = 1 trivially.
MIN_QPOS_GAIN = 1e-3
TRAINED_QPOS_GAIN = 0.05
MIN_MRET_DIP = 0.2
KEPT_MRET = 0.9
ZONE_MRET = 0.5
MIN_ZONE_GAIN = 0.05

CLAIM_CODES = (
    f"(1) Q_pos rises at every N (by >= {MIN_QPOS_GAIN:g})",
    f"(2) M_ret dips by >= {MIN_MRET_DIP:g} at intermediate N, is >= {KEPT_MRET:g} at the largest N, "
    f"and the largest N trained (Q_pos up >= {TRAINED_QPOS_GAIN:g})",
    f"(3) gamma = 1 keeps >= {MIN_ZONE_GAIN:g} more M_ret where gamma = 0 ends below {ZONE_MRET:g}",
)


def score_claims(final: pd.DataFrame) -> dict:
    """The three claims for one setting's final means (columns group_size, gamma, q_pos, m_ret, q_pos_start);
    thresholds and wording in CLAIM_CODES."""
    g0 = final[final["gamma"] == 0.0].sort_values("group_size")
    g1 = final[final["gamma"] == 1.0].sort_values("group_size")
    gains = final["q_pos"] - final["q_pos_start"]
    rises = bool((gains >= MIN_QPOS_GAIN).all())
    m0 = g0["m_ret"].to_numpy()
    dip = float(min(m0[0], m0[-1]) - m0[1:-1].min()) if len(m0) >= 3 else float("nan")
    largest_gain = float(g0["q_pos"].iloc[-1] - g0["q_pos_start"].iloc[-1]) if len(g0) else float("nan")
    non_monotonic = bool(len(m0) >= 3 and dip >= MIN_MRET_DIP and m0[-1] >= KEPT_MRET
                         and largest_gain >= TRAINED_QPOS_GAIN)
    zone = g0["m_ret"].to_numpy() < ZONE_MRET
    gain = g1["m_ret"].to_numpy() - g0["m_ret"].to_numpy()
    zone_gain = float(gain[zone].mean()) if zone.any() else float("nan")
    focal_helps = bool(zone.any() and zone_gain >= MIN_ZONE_GAIN)
    return {
        "claim1_qpos_rises": rises,
        "claim2_mret_nonmonotonic": non_monotonic,
        "claim3_gamma_helps_in_zone": focal_helps,
        "claims_shown": int(rises) + int(non_monotonic) + int(focal_helps),
        "min_qpos_gain": float(gains.min()),
        "mret_dip": dip,
        "mret_largest_n": float(m0[-1]) if len(m0) else float("nan"),
        "qpos_gain_largest_n": largest_gain,
        "zone_size": int(zone.sum()),
        "zone_mret_gain": zone_gain,
    }


def claims_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per setting with the three verdicts and the numbers behind them, best first."""
    claims = claims_from_final(final_means(table))
    meta = table.groupby("setting", sort=False)[["surrogate", "optimizer", "eps", "weight_decay"]].first()
    return claims.join(meta, on="setting")


def claims_from_final(fin: pd.DataFrame) -> pd.DataFrame:
    """claims_table from final means (`final_means(...)` or the committed fgrpo_sim/results/categorical-study.csv)."""
    rows = [{"setting": setting, **score_claims(part)} for setting, part in fin.groupby("setting", sort=False)]
    out = pd.DataFrame(rows)
    out["_dip"] = out["mret_dip"].fillna(-1.0)
    out = out.sort_values(["claims_shown", "_dip"], ascending=[False, False], kind="stable").drop(columns="_dip")
    return out.reset_index(drop=True)


def format_claims_markdown(claims: pd.DataFrame) -> str:
    def yes(b):
        return "yes" if b else "no"

    lines = ["| setting | (1) Q_pos rises | (2) M_ret dip, largest N trained and kept | (3) gamma=1 helps in zone | "
             "min Q_pos gain | M_ret dip | M_ret at largest N | Q_pos gain at largest N | zone size | zone M_ret gain |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for _, r in claims.iterrows():
        def num(x, fmt="{:.2f}"):
            return "n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else fmt.format(x)

        lines.append(f"| {r['setting']} | {yes(r['claim1_qpos_rises'])} | {yes(r['claim2_mret_nonmonotonic'])} | "
                     f"{yes(r['claim3_gamma_helps_in_zone'])} | {num(r['min_qpos_gain'], '{:+.4f}')} | {num(r['mret_dip'])} | "
                     f"{num(r['mret_largest_n'])} | {num(r['qpos_gain_largest_n'], '{:+.4f}')} | {r['zone_size']} | "
                     f"{num(r['zone_mret_gain'])} |")
    return "\n".join(lines)
