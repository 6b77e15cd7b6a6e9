"""population-group-size (issue 21): pass@1, pass@256 and dNLL_rare against N in the shared-strategy
population, the lemma's predicted dip marked, F-GRPO beside GRPO, and the paper's Table 2 in a panel.

Data: DATA_DIR/population-group-size.parquet when present (`fgrpo simulate group-size --out` that file),
else the committed final rows docs/population-group-size.csv (from the same command at its defaults), so
the figure draws in seconds and is in the default set.
"""

from __future__ import annotations

from pathlib import Path

from fgrpo_sim.figures.registry import FigureOptions, add_figure

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "population-group-size.csv"
CACHE_NAME = "population-group-size.parquet"
COMMAND = "fgrpo simulate group-size --out runs/figure-data/population-group-size.parquet"
RARE_COLOURS = ("tab:purple", "tab:green", "tab:orange", "tab:brown")
SHOWN = {"GRPO": "-", "F-GRPO gamma=0.5": "--", "GRPO low-LR (x m_0.5)": ":"}
PANELS = (("adam", "equal-steps", "heldout_pass@1", "pass@1 (held-out)"),
          ("adam", "equal-steps", "heldout_pass@256", "pass@256 (held-out)"),
          ("adam", "equal-steps", "train_dnll_rare", r"$\Delta$NLL$_{rare}$ (train)"),
          ("adam", "equal-rollouts", "heldout_pass@256", "pass@256, equal rollouts"),
          ("sgd", "equal-steps", "heldout_pass@256", "pass@256, SGD lr 2"),
          ("sgd", "equal-steps", "train_dnll_rare", r"$\Delta$NLL$_{rare}$, SGD lr 2"))


def load_final(options: FigureOptions):
    """Final rows of the study: the cached run when present, else the committed CSV."""
    import pandas as pd

    from fgrpo_sim.sim.group_size_study import final_rows

    cached = Path(options.data_dir or "runs/figure-data") / CACHE_NAME
    if cached.exists():
        return final_rows(pd.read_parquet(cached)), str(cached)
    if not COMMITTED.exists():
        raise ValueError(f"no study data: run `{COMMAND}` first")
    return pd.read_csv(COMMITTED), "docs/population-group-size.csv"


def compute(options: FigureOptions) -> dict:
    import pandas as pd

    from fgrpo_sim.paper_tables import table2
    from fgrpo_sim.metrics.bootstrap import bootstrap_mean_ci
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec, dip_report, predicted_dips

    final, source = load_final(options)
    spec = GroupSizeStudySpec(rare_masses=tuple(sorted(final["rare_mass"].unique())),
                              group_sizes=tuple(sorted(final["N"].unique())))
    predictions = predicted_dips(spec)
    points = []
    for opt, view, metric, _ in PANELS:
        part = final[(final["optimizer"] == opt) & (final["view"] == view) & final["variant"].isin(list(SHOWN))]
        for (rare, variant, n), g in part.groupby(["rare_mass", "variant", "N"]):
            ci = bootstrap_mean_ci(g[metric].to_numpy(), n_resamples=2000)
            points.append(dict(optimizer=opt, view=view, metric=metric, rare_mass=rare, variant=variant, N=n,
                               mean=ci.estimate, low=ci.low, high=ci.high))
    return {"points": pd.DataFrame(points), "predictions": predictions, "paper": table2(), "source": source,
            "report": dip_report(final, predictions), "seeds": int(final["seed"].nunique())}


def draw(data: dict):
    import matplotlib.pyplot as plt

    from fgrpo_sim.figures.style import new_figure

    fig, axes = new_figure(2, 4, width=3.4, height=2.9)
    points, predictions = data["points"], data["predictions"]
    rares = sorted(predictions)
    for ax, (opt, view, metric, title) in zip([a for i, a in enumerate(axes.flat) if i % 4 != 3], PANELS):
        part = points[(points["optimizer"] == opt) & (points["view"] == view) & (points["metric"] == metric)]
        for i, rare in enumerate(rares):
            colour = RARE_COLOURS[i % len(RARE_COLOURS)]
            for variant, ls in SHOWN.items():
                g = part[(part["rare_mass"] == rare) & (part["variant"] == variant)].sort_values("N")
                ax.fill_between(g["N"], g["low"], g["high"], color=colour, alpha=0.12, lw=0)
                ax.plot(g["N"], g["mean"], ls, color=colour, lw=1.3, marker="o" if variant == "GRPO" else None, ms=3)
            ax.axvline(predictions[rare], color=colour, ls=(0, (1, 3)), lw=1.2)
        ax.set_xscale("log", base=2)
        ax.set_title(title, fontsize=9)
        ax.set_ylabel(title.split(" (")[0].split(",")[0], fontsize=8)
        ax.set_xlabel("group size N", fontsize=8)
        ax.tick_params(labelsize=7)
    paper = data["paper"]
    grpo = paper[paper["method"] == "GRPO"]
    ax = axes[0, 3]
    for metric, colour in (("pass@1", "tab:blue"), ("pass@256", "tab:red")):
        rows = grpo[(grpo["scope"] == "math_avg") & (grpo["metric"] == metric)].sort_values("group_size")
        ax.plot(rows["group_size"], rows["value"], "-o", color=colour, ms=3, label=f"GRPO {metric}")
        focal = paper[(paper["method"] != "GRPO") & (paper["scope"] == "math_avg") & (paper["metric"] == metric)]
        ax.plot(focal["group_size"], focal["value"], "*", color=colour, ms=11, label=f"F-GRPO {metric}")
    ax.set_title("paper, Table 2 (Qwen2.5-7B, math avg, %)", fontsize=9)
    ax.set_ylabel("pass@k (%)", fontsize=8)
    ax.legend(fontsize=6.5)
    ax = axes[1, 3]
    rows = grpo[grpo["metric"] == "delta_nll_rare"].sort_values("group_size")
    ax.plot(rows["group_size"], rows["value"], "-o", color="k", ms=3, label="GRPO")
    focal = paper[(paper["method"] != "GRPO") & (paper["metric"] == "delta_nll_rare")]
    ax.plot(focal["group_size"], focal["value"], "*", color="k", ms=11, label="F-GRPO")
    ax.set_title(r"paper, Table 2: $\Delta$NLL$_{rare}$", fontsize=9)
    ax.set_ylabel("nats", fontsize=8)
    ax.legend(fontsize=7)
    for ax in axes[:, 3]:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("group size N", fontsize=8)
        ax.tick_params(labelsize=7)
    handles = [plt.Line2D([], [], color=RARE_COLOURS[i], lw=2, label=f"rare mass {r:g} (predicted dip N = {predictions[r]})")
               for i, r in enumerate(rares)]
    handles += [plt.Line2D([], [], color="0.3", ls=ls, label=v.replace("gamma", r"$\gamma$")) for v, ls in SHOWN.items()]
    handles.append(plt.Line2D([], [], color="0.3", ls=(0, (1, 3)), label="predicted dip (planner.predict_dip)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=7.5)
    fig.suptitle(f"Shared-strategy population vs N (Adam lr 0.01 unless noted; {data['seeds']} seeds, bands: 95% "
                 f"bootstrap over seeds; data: {data['source']})", fontsize=10)
    return fig


add_figure("population-group-size", "pass@1, pass@256, dNLL_rare vs N in the shared population with the "
           "predicted dip, beside the paper's Table 2 (reads the cached/committed study)", compute, draw)
