"""Categorical-simulation figures (paper Sec. 5.1, App. J): Fig 2 and the sensitivity study behind our defaults.

fig2: (a) Q_pos vs step, (b) M_ret vs step, (c) final Q_pos and M_ret vs N; gamma = 0 solid, gamma = 1
dashed, regimes I/II/III shaded in (c). The quick preset (default) runs 6 group sizes x 1 seed on the
paper's 128,000-action setup for the paper's 1000 steps; `--full` runs the paper's 17 N x 2 gamma x 4
seeds. Results are cached (and resumed) in DATA_DIR/fig2-{quick,full}.parquet.

fig2-sensitivity: final M_ret and Q_pos vs N for every setting of the sensitivity study (a column per
surrogate, a colour per optimizer setting). Reads
DATA_DIR/categorical-study.parquet, else the committed fgrpo_sim/results/categorical-study.csv, else runs the
study (times: benchmarks/RESULTS.md, "Command times"), so it is not in the default set.

fig2-full: fig2 with `--full` implied (the paper's grid; cached like fig2), kept out of the default
set so that `make figures` stays quick.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fgrpo_sim.packaged import committed_result
from fgrpo_sim.figures.registry import FigureOptions, add_figure
from fgrpo_sim.recorded_times import quoted
from fgrpo_sim.validation import options_named

QUICK_GROUP_SIZES = (2, 16, 128, 1024, 8192, 131072)
COMMITTED_STUDY = committed_result("categorical-study.csv")
#: How an error names a cached table in the folder the user gave as --data-dir.
DATA_DIR_TABLE = "--data-dir table"
# regime II: final M_ret (gamma = 0) below this, i.e. the run lost more than 5% of its correct mass; regimes I
# and III keep M_ret near 1 below and above it (docs/categorical.md states the same rule)
ZONE_THRESHOLD = 0.95


def fig2_config(full: bool, device: str = "auto", seed: int = 0):
    from fgrpo_sim.sim.categorical.config import CategoricalConfig

    base = CategoricalConfig(device=device, stride=10)
    if full:
        return base.with_(seeds=tuple(seed + s for s in base.seeds))
    return base.with_(group_sizes=QUICK_GROUP_SIZES, seeds=(seed,))


def compute_fig2(options: FigureOptions) -> dict:
    from fgrpo_sim.sim.categorical.run import run_grid

    config = fig2_config(options.full, options.device, options.seed)
    cache = Path(options.data_dir or "runs/figure-data") / f"fig2-{'full' if options.full else 'quick'}.parquet"
    # a concurrent `fgrpo figures` on the same data folder: wait for it, then reuse its cache
    with options_named(out=DATA_DIR_TABLE):  # the table's errors say "out"; this user typed --data-dir
        table = run_grid(config, cache, resume=True, progress=options.progress, wait_for_lock=True,
                         fresh_start_hint="delete it (a cache of figure data) or pass another --data-dir")
    return fig2_data(table, "paper grid" if options.full else "quick preset")


SETTING_KEYS = ("surrogate", "optimizer", "lr", "eps", "weight_decay")


def fig2_data(table, preset: str) -> dict:
    """What draw_fig2 draws from a categorical result table of one setting (`preset`: the title's words)."""
    mean = table.groupby(["group_size", "gamma", "step"])[["q_pos", "m_ret"]].mean().reset_index()
    first = table.iloc[0]
    return {"mean": mean, "final": final_summary(table), "seeds": int(table["seed"].nunique()), "preset": preset,
            "start_entropy": float(table[table["step"] == 0]["entropy"].mean()),
            "setting": {k: first[k].item() if hasattr(first[k], "item") else first[k] for k in SETTING_KEYS}}


def load_fig2(path) -> dict:
    """Fig 2 from the user's `fgrpo simulate categorical --out FILE` (one setting; every row checked)."""
    from fgrpo_sim.figures.from_file import read_table
    from fgrpo_sim.sim.categorical.run import TABLE_SCHEMA

    table = read_table(path, TABLE_SCHEMA, "fgrpo simulate categorical")
    settings = sorted(set(table["config_id"]))
    if len(settings) > 1:  # one figure shows one setting: the title names it, and means over settings mean nothing
        raise ValueError(f"--from {path} holds {len(settings)} settings (config_id {', '.join(settings)}); "
                         "fig2 draws one: write each setting to its own --out")
    if 0 not in set(table["step"]):
        raise ValueError(f"--from {path} has no step 0 row (the start the figure compares with)")
    return fig2_data(table, f"from {Path(path).name}")


def final_summary(table):
    """Last step of every run: mean, min and max over seeds of Q_pos, M_ret and the policy entropy (nats),
    one row per (group_size, gamma); columns like q_pos, q_pos_min, q_pos_max."""
    last = table[table["step"] == table["step"].max()]
    grouped = last.groupby(["group_size", "gamma"])[["q_pos", "m_ret", "entropy"]]
    out = grouped.mean()
    for stat in ("min", "max"):
        out = out.join(grouped.agg(stat).add_suffix(f"_{stat}"))
    return out.reset_index()


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
    """Left: the final state vs N (Q_pos, M_ret, entropy; gamma 0 vs 1; bars = range over seeds; regimes
    I/II/III shaded). Right: small multiples, one panel per N, of the Q_pos and M_ret trajectories."""
    import math

    import matplotlib.pyplot as plt
    import numpy as np

    from fgrpo_sim.figures.style import STYLE

    mean, final = data["mean"], data["final"]
    ns = sorted(mean["group_size"].unique())
    cols = 6 if len(ns) > 9 else 3
    rows = math.ceil(len(ns) / cols)
    styles = {0.0: "-", 1.0: "--"}
    colors = {"q_pos": "tab:blue", "m_ret": "tab:red", "entropy": "tab:green"}
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=(4.2 + 2.0 * cols, max(7.5, 2.0 * rows + 1.8)), layout="constrained")
        left, right = fig.subfigures(1, 2, width_ratios=[4.2, 2.0 * cols], wspace=0.02)
        summary_axes = left.subplots(3, 1, sharex=True)
        grid = right.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)

    g0 = final[final["gamma"] == 0.0].sort_values("group_size")
    shades = {"I": "tab:green", "II": "tab:orange", "III": "tab:purple"}
    panels = (("q_pos", "final $Q_{pos}$ (correct mass)"), ("m_ret", "final $M_{ret}$ (retained mass)"),
              ("entropy", "final entropy (nats)"))
    for ax, (metric, ylabel) in zip(summary_axes, panels):
        for gamma, part in final.groupby("gamma"):
            part = part.sort_values("group_size")
            err = [part[metric] - part[f"{metric}_min"], part[f"{metric}_max"] - part[metric]]
            ax.errorbar(part["group_size"], part[metric], yerr=err, fmt=styles.get(gamma, ":"), color=colors[metric],
                        marker="o" if gamma == 0 else "s", ms=3.5, capsize=2, lw=1.3,
                        mfc=colors[metric] if gamma == 0 else "white", label=rf"$\gamma$ = {gamma:g}")
        for label, lo, hi in regimes(g0):
            ax.axvspan(lo, hi, color=shades[label], alpha=0.08)
            if ax is summary_axes[0]:  # mid-height: Q_pos sits low in regime I and high in II and III
                ax.text(np.sqrt(lo * hi), 0.45, f"regime {label}", ha="center", va="center", fontsize=9,
                        transform=ax.get_xaxis_transform(), color="0.25")
        ax.set_xscale("log", base=2)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7, loc="best")
    summary_axes[0].axhline(mean[mean["step"] == 0]["q_pos"].mean(), color="0.5", ls=":", lw=1)
    summary_axes[2].axhline(data["start_entropy"], color="0.5", ls=":", lw=1)
    spread = "bars: range over seeds; " if data["seeds"] > 1 else ""
    summary_axes[0].set_title(f"final state (step {int(mean['step'].max())}) vs N\n{spread}dotted: start", fontsize=10)
    summary_axes[-1].set_xlabel("group size N")

    for ax, n in zip(grid.flat, ns):
        for (size, gamma), part in mean[mean["group_size"] == n].groupby(["group_size", "gamma"]):
            ax.plot(part["step"], part["q_pos"], styles.get(gamma, ":"), color=colors["q_pos"], lw=1.2)
            ax.plot(part["step"], part["m_ret"], styles.get(gamma, ":"), color=colors["m_ret"], lw=1.2)
        ax.set_title(f"N = {n}", fontsize=9, pad=2)
        ax.set_ylim(-0.03, 1.05)
        ax.tick_params(labelsize=7)
    for ax in grid.flat[len(ns):]:
        ax.set_axis_off()
    for ax in grid[:, 0]:
        ax.set_ylabel("mass", fontsize=8)
    for ax in grid[-1, :]:
        ax.set_xlabel("step", fontsize=8)
    handles = [plt.Line2D([], [], color=colors["q_pos"], label="$Q_{pos}$"),
               plt.Line2D([], [], color=colors["m_ret"], label="$M_{ret}$"),
               plt.Line2D([], [], color="k", ls="-", label=r"$\gamma$=0 (GRPO)"),
               plt.Line2D([], [], color="k", ls="--", label=r"$\gamma$=1 (F-GRPO)")]
    right.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=9)
    right.suptitle(f"trajectories over {int(mean['step'].max())} steps, one panel per group size N", fontsize=10)
    s = data["setting"]
    seeds = data["seeds"]
    fig.suptitle(f"Categorical simulation, {data['preset']} ({seeds} seed{'s' if seeds != 1 else ''}, mean): "
                 f"{s['surrogate']} surrogate, {s['optimizer']} lr={s['lr']:g} eps={s['eps']:g} "
                 f"wd={s['weight_decay']:g}", fontsize=11)
    return fig


def load_study(options: FigureOptions):
    import pandas as pd

    from fgrpo_sim.sim.categorical.study import final_means

    cached = Path(options.data_dir or "runs/figure-data") / "categorical-study.parquet"
    if cached.exists():
        from fgrpo_sim.sim.categorical.run import _read_existing

        hint = "delete it (a cache of figure data) or pass another --data-dir"
        with options_named(out=DATA_DIR_TABLE):  # a foreign or damaged cache: one line naming it and the row
            table = _read_existing(cached, hint)
        if "setting" not in table.columns:
            raise ValueError(f"{cached} is not a sensitivity-study table (no column 'setting'); {hint}")
        return final_means(table)
    if COMMITTED_STUDY.exists():  # checked row by row, as every record read back (docs/reliability.md)
        from fgrpo_sim.sim.categorical.study import read_final_means

        return read_final_means(COMMITTED_STUDY)
    from fgrpo_sim.sim.categorical.study import run_study

    return final_means(run_study(cached, progress=options.progress, device=options.device,
                                 fresh_start_hint="delete it (a cache of figure data) or pass another --data-dir"))


def compute_sensitivity(options: FigureOptions) -> dict:
    # the claims each setting shows are docs/categorical.md's table (study.score_claims), not part of the figure
    return {"final": load_study(options)}


def load_sensitivity(path) -> dict:
    """The sensitivity figure from the user's `fgrpo simulate categorical --study --out FILE`."""
    from fgrpo_sim.figures.from_file import read_table
    from fgrpo_sim.sim.categorical.run import TABLE_SCHEMA
    from fgrpo_sim.sim.categorical.study import final_means

    table = read_table(path, TABLE_SCHEMA, "fgrpo simulate categorical --study")
    if "setting" not in table.columns:
        raise ValueError(f"--from {path} is not a sensitivity-study table (no column 'setting'); pass the --out "
                         "table of `fgrpo simulate categorical --study` (fig2 draws a plain run)")
    return {"final": final_means(table)}


# the sensitivity figure, in words: one column per surrogate, one row per quantity (M_ret, Q_pos) and gamma, one
# coloured line per optimizer setting; which Fig 2 claims each setting shows is the table in docs/categorical.md
SURROGATE_TITLES = {"logprob": "log-prob surrogate (default)", "distinct": "linear in p, distinct actions",
                    "draws": "linear in p, every draw"}
SENSITIVITY_ROWS = (("m_ret", 0.0, r"final $M_{ret}$, GRPO ($\gamma$ = 0)"),
                    ("m_ret", 1.0, r"final $M_{ret}$, F-GRPO ($\gamma$ = 1)"),
                    ("q_pos", 0.0, r"final $Q_{pos}$, GRPO ($\gamma$ = 0)"),
                    ("q_pos", 1.0, r"final $Q_{pos}$, F-GRPO ($\gamma$ = 1)"))


def optimizer_words(optimizer: str, eps: float, weight_decay: float) -> str:
    """An optimizer setting as a legend says it: 'AdamW, eps 1e-08, decoupled decay 0.01'."""
    if optimizer == "sgd":
        return "SGD" + (f", L2 decay {weight_decay:g}" if weight_decay else "")
    decay = ("no decay" if not weight_decay else
             f"{'decoupled' if optimizer == 'adamw' else 'L2'} decay {weight_decay:g}")
    return f"{'AdamW' if optimizer == 'adamw' else 'Adam'}, eps {eps:g}, {decay}"


def draw_sensitivity(data: dict):
    import matplotlib.pyplot as plt

    from fgrpo_sim.figures.style import new_figure
    from fgrpo_sim.sim.categorical.config import CategoricalConfig
    from fgrpo_sim.sim.categorical.study import OPTIMIZER_SETTINGS, setting_label

    final = data["final"]
    default = CategoricalConfig()
    surrogates = ("logprob", "distinct", "draws")
    fig, axes = new_figure(len(SENSITIVITY_ROWS), len(surrogates), width=4.0, height=2.6, sharex=True, sharey=True)
    colors = plt.get_cmap("tab10").colors
    markers = "osD^vP*X"  # flat lines of different settings overlap: markers tell them apart
    handles = []
    for k, (opt, eps, wd) in enumerate(OPTIMIZER_SETTINGS):
        words = optimizer_words(opt, eps, wd)
        if (opt, eps, wd) == (default.optimizer, default.eps, default.weight_decay):
            words += " (default)"
        style = dict(color=colors[k], marker=markers[k], ms=3.5, lw=1.4)
        handles.append(plt.Line2D([], [], label=words, **style))
        for j, surrogate in enumerate(surrogates):
            part = final[final["setting"] == setting_label(surrogate, opt, eps, wd)]
            for i, (column, gamma, _) in enumerate(SENSITIVITY_ROWS):
                g = part[part["gamma"] == gamma].sort_values("group_size")
                axes[i, j].plot(g["group_size"], g[column], **style)
    for i, (_, _, row_title) in enumerate(SENSITIVITY_ROWS):
        for j, surrogate in enumerate(surrogates):
            ax = axes[i, j]
            ax.set_title(f"{SURROGATE_TITLES[surrogate]}: {row_title}", fontsize=9.5)
            ax.set_xscale("log", base=2)
            ax.set_ylim(-0.05, 1.05)
            ax.tick_params(labelsize=9)
        axes[i, 0].set_ylabel(row_title.split(",")[0].replace("final ", ""), fontsize=10)
    for ax in axes[-1, :]:
        ax.set_xlabel("group size N", fontsize=10)
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=9.5,
               title="optimizer (lr 1e-2, 1000 steps, one seed)", title_fontsize=10)
    fig.suptitle("Sensitivity of the categorical simulation: final state vs N for 3 surrogates x 8 optimizer settings",
                 fontsize=12)
    return fig


add_figure("fig2", "Categorical simulation (Sec. 5.1): Q_pos, M_ret over steps and final state vs N (quick preset; --full: paper grid)",
           compute_fig2, draw_fig2, load=load_fig2)
add_figure("fig2-full", f"Fig 2 on the paper's full grid (17 N x 2 gamma x 4 seeds; {quoted('fig2-full')}, "
           "benchmarks/RESULTS.md)",
           lambda options: compute_fig2(replace(options, full=True)), draw_fig2, in_default_set=False, load=load_fig2)
add_figure("fig2-sensitivity", "Categorical simulation: final M_ret/Q_pos vs N for each surrogate x optimizer x eps x weight-decay setting",
           compute_sensitivity, draw_sensitivity, in_default_set=False, load=load_sensitivity)
