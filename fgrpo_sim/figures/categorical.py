"""Categorical-simulation figures (paper Sec. 5.1, App. J): Fig 2 and the sensitivity study behind our defaults.

fig2: (a) Q_pos vs step, (b) M_ret vs step, (c) final Q_pos and M_ret vs N; gamma = 0 solid, gamma = 1
dashed, regimes I/II/III shaded in (c). The quick preset (default) runs 6 group sizes x 1 seed on the
paper's 128,000-action setup for the paper's 1000 steps; `--full` runs the paper's 17 N x 2 gamma x 4
seeds. Results are cached (and resumed) in DATA_DIR/fig2-{quick,full}.parquet.

fig2-sensitivity: final M_ret and Q_pos vs N for every setting of the sensitivity study. Reads
DATA_DIR/categorical-study.parquet, else the committed docs/categorical-study.csv, else runs the
study (about 30 minutes on 2 busy cores), so it is not in the default set.

fig2-full: fig2 with `--full` implied (the paper's grid; cached like fig2), kept out of the default
set so that `make figures` stays quick.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fgrpo_sim.figures.registry import FigureOptions, add_figure

QUICK_GROUP_SIZES = (2, 16, 128, 1024, 8192, 131072)
COMMITTED_STUDY = Path(__file__).resolve().parents[2] / "docs" / "categorical-study.csv"
ZONE_THRESHOLD = 0.5  # regime II: final M_ret (gamma = 0) below this


def fig2_config(full: bool, device: str = "auto", seed: int = 0):
    from fgrpo_sim.sim.categorical_config import CategoricalConfig

    base = CategoricalConfig(device=device, stride=10)
    if full:
        return base.with_(seeds=tuple(seed + s for s in base.seeds))
    return base.with_(group_sizes=QUICK_GROUP_SIZES, seeds=(seed,))


def compute_fig2(options: FigureOptions) -> dict:
    from fgrpo_sim.sim.categorical_run import run_grid

    config = fig2_config(options.full, options.device, options.seed)
    cache = Path(options.data_dir or "runs/figure-data") / f"fig2-{'full' if options.full else 'quick'}.parquet"
    table = run_grid(config, cache, resume=True, progress=options.progress,
                     fresh_start_hint="delete it (a cache of figure data) or pass another --data-dir")
    mean = table.groupby(["group_size", "gamma", "step"])[["q_pos", "m_ret"]].mean().reset_index()
    setting = config.setting()
    return {"mean": mean, "seeds": len(config.seeds), "preset": "paper grid" if options.full else "quick preset",
            "setting": {k: setting[k] for k in ("surrogate", "optimizer", "lr", "eps", "weight_decay")}}


def regimes(final_gamma0) -> list[tuple[str, float, float]]:
    """(label, N_low, N_high) spans: II where final M_ret (gamma = 0) < ZONE_THRESHOLD, I below, III above."""
    ns = final_gamma0["group_size"].to_numpy()
    low = final_gamma0["m_ret"].to_numpy() < ZONE_THRESHOLD
    if not low.any():
        return []
    first, last = int(low.argmax()), int(len(low) - 1 - low[::-1].argmax())
    spans = []
    geo = lambda a, b: (a * b) ** 0.5  # noqa: E731 - boundaries halfway on the log axis
    left = geo(ns[first - 1], ns[first]) if first > 0 else ns[0] / 1.5
    right = geo(ns[last], ns[last + 1]) if last + 1 < len(ns) else ns[-1] * 1.5
    if first > 0:
        spans.append(("I", ns[0] / 1.5, left))
    spans.append(("II", left, right))
    if last + 1 < len(ns):
        spans.append(("III", right, ns[-1] * 1.5))
    return spans


def draw_fig2(data: dict):
    import matplotlib.pyplot as plt
    import numpy as np

    from fgrpo_sim.figures.style import new_figure

    mean = data["mean"]
    fig, axes = new_figure(1, 3, width=4.6, height=3.6)
    ns = sorted(mean["group_size"].unique())
    cmap = plt.get_cmap("viridis")
    colors = {n: cmap(i / max(len(ns) - 1, 1)) for i, n in enumerate(ns)}
    styles = {0.0: "-", 1.0: "--"}
    for ax, metric, title in ((axes[0], "q_pos", "(a) correct mass $Q_{pos}$"),
                              (axes[1], "m_ret", "(b) retained positive mass $M_{ret}$")):
        for (n, gamma), part in mean.groupby(["group_size", "gamma"]):
            ax.plot(part["step"], part[metric], styles.get(gamma, ":"), color=colors[n], lw=1.3)
        ax.set_xlabel("step")
        ax.set_ylabel(metric.replace("q_pos", "$Q_{pos}$").replace("m_ret", "$M_{ret}$"))
        ax.set_title(title)
        ax.set_ylim(-0.02, 1.02)
    handles = [plt.Line2D([], [], color=colors[n], lw=2, label=f"N={n}") for n in ns]
    handles += [plt.Line2D([], [], color="k", ls="-", label=r"$\gamma$=0 (GRPO)"),
                plt.Line2D([], [], color="k", ls="--", label=r"$\gamma$=1 (F-GRPO)")]
    axes[0].legend(handles=handles, fontsize=7, ncol=2 if len(ns) > 8 else 1, loc="lower right")

    ax = axes[2]
    final = mean[mean["step"] == mean["step"].max()]
    for gamma, part in final.groupby("gamma"):
        part = part.sort_values("group_size")
        ls = styles.get(gamma, ":")
        ax.plot(part["group_size"], part["q_pos"], ls, color="tab:blue", marker="o", ms=3,
                label=f"$Q_{{pos}}$, $\\gamma$={gamma:g}")
        ax.plot(part["group_size"], part["m_ret"], ls, color="tab:red", marker="s", ms=3,
                label=f"$M_{{ret}}$, $\\gamma$={gamma:g}")
    shades = {"I": "tab:green", "II": "tab:orange", "III": "tab:purple"}
    g0 = final[final["gamma"] == 0.0].sort_values("group_size")
    for label, lo, hi in regimes(g0):
        ax.axvspan(lo, hi, color=shades[label], alpha=0.08)
        ax.text(np.sqrt(lo * hi), 1.04, label, ha="center", va="bottom", fontsize=10)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("group size N")
    ax.set_ylabel("final value (step %d)" % int(final["step"].max()))
    ax.set_ylim(-0.02, 1.12)
    ax.set_title("(c) final state vs N")
    ax.legend(fontsize=7, loc="lower left")
    s = data["setting"]
    fig.suptitle(f"Categorical simulation, {data['preset']} ({data['seeds']} seed(s)): {s['surrogate']} surrogate, "
                 f"{s['optimizer']} lr={s['lr']:g} eps={s['eps']:g} wd={s['weight_decay']:g}", fontsize=10)
    return fig


def load_study(options: FigureOptions):
    import pandas as pd

    from fgrpo_sim.sim.categorical_study import final_means

    cached = Path(options.data_dir or "runs/figure-data") / "categorical-study.parquet"
    if cached.exists():
        return final_means(pd.read_parquet(cached))
    if COMMITTED_STUDY.exists():
        return pd.read_csv(COMMITTED_STUDY)
    from fgrpo_sim.sim.categorical_study import run_study

    return final_means(run_study(cached, progress=options.progress, device=options.device,
                                 fresh_start_hint="delete it (a cache of figure data) or pass another --data-dir"))


def compute_sensitivity(options: FigureOptions) -> dict:
    from fgrpo_sim.sim.categorical_study import score_claims

    final = load_study(options)
    verdicts = {s: score_claims(part) for s, part in final.groupby("setting", sort=False)}
    return {"final": final, "verdicts": verdicts}


def draw_sensitivity(data: dict):
    from fgrpo_sim.figures.style import new_figure
    from fgrpo_sim.sim.categorical_study import OPTIMIZER_SETTINGS, SURROGATE_ORDER, setting_label

    final = data["final"]
    rows, cols = len(OPTIMIZER_SETTINGS), len(SURROGATE_ORDER)
    fig, axes = new_figure(rows, cols, width=3.3, height=1.9, sharex=True, sharey=True)
    for i, (opt, eps, wd) in enumerate(OPTIMIZER_SETTINGS):
        for j, surrogate in enumerate(SURROGATE_ORDER):
            ax = axes[i, j]
            label = setting_label(surrogate, opt, eps, wd)
            part = final[final["setting"] == label]
            if part.empty:
                ax.text(0.5, 0.5, "not run", ha="center", transform=ax.transAxes)
            for gamma, g in part.groupby("gamma"):
                g = g.sort_values("group_size")
                ls = "-" if gamma == 0 else "--"
                ax.plot(g["group_size"], g["m_ret"], ls, color="tab:red", lw=1.2)
                ax.plot(g["group_size"], g["q_pos"], ls, color="tab:blue", lw=1.0, alpha=0.7)
            v = data["verdicts"].get(label)
            marks = "".join("Y" if v and v[k] else "n" for k in
                            ("claim1_qpos_rises", "claim2_mret_nonmonotonic", "claim3_gamma_helps_in_zone"))
            ax.set_title(f"{label}  [{marks}]", fontsize=6.5)
            ax.set_xscale("log", base=2)
            ax.set_ylim(-0.05, 1.05)
            if i == rows - 1:
                ax.set_xlabel("N", fontsize=8)
            if j == 0:
                ax.set_ylabel("final value", fontsize=8)
            ax.tick_params(labelsize=6)
    fig.suptitle("Sensitivity of the categorical simulation: final $M_{ret}$ (red) and $Q_{pos}$ (blue) vs N, "
                 r"$\gamma$=0 solid, $\gamma$=1 dashed; [claims 1,2,3: Y shown / n not shown]", fontsize=9)
    return fig


add_figure("fig2", "Categorical simulation (Sec. 5.1): Q_pos, M_ret over steps and final state vs N (quick preset; --full: paper grid)",
           compute_fig2, draw_fig2)
add_figure("fig2-full", "Fig 2 on the paper's full grid (17 N x 2 gamma x 4 seeds; about 1-3 minutes on 2 CPU cores)",
           lambda options: compute_fig2(replace(options, full=True)), draw_fig2, in_default_set=False)
add_figure("fig2-sensitivity", "Categorical simulation: final M_ret/Q_pos vs N for each surrogate x optimizer x eps x weight-decay setting",
           compute_sensitivity, draw_sensitivity, in_default_set=False)
