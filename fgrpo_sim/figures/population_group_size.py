"""population-group-size (issues 21, 28): held-out pass@256 against N in the shared-strategy population, one
panel per optimizer x parametrisation (axis, orthogonal, dense), the lemma's predicted dip marked, F-GRPO and
the lr x m_gamma control beside GRPO, and the paper's Table 2 in the last column.

Data: DATA_DIR/population-group-size.parquet when present (`fgrpo simulate group-size --out` that file), else
the committed per-setting report fgrpo_sim/results/population-group-size.jsonl (shipped in the wheel) (the same command's `--json` output), so the
figure draws in seconds and is in the default set.
"""

from __future__ import annotations

from pathlib import Path

from fgrpo_sim.figures.registry import FigureOptions, add_figure
from fgrpo_sim.packaged import committed_result

COMMITTED = committed_result("population-group-size.jsonl")
CACHE_NAME = "population-group-size.parquet"
COMMAND = "fgrpo simulate group-size --out runs/figure-data/population-group-size.parquet"
RARE_COLOURS = ("tab:purple", "tab:green", "tab:orange", "tab:brown")
# one line style per variant, none dotted: dotted is the predicted dip (a vertical line per rare mass)
SHOWN = {"GRPO": "-", "F-GRPO gamma=0.5": "--", "GRPO low-LR (x m_0.5)": "-."}
PREDICTED_DIP = (0, (1, 3))
PARAMETRISATIONS = ("axis", "orthogonal", "dense")
OPTIMIZERS = ("adam", "sgd")


def load_reports(options: FigureOptions) -> tuple[list[dict], str]:
    """Per-setting reports: from the cached run when present, else the committed JSON lines."""
    import pandas as pd

    from fgrpo_sim.jsonl import read_json_objects
    from fgrpo_sim.sim.group_size_report import setting_reports

    cached = Path(options.data_dir or "runs/figure-data") / CACHE_NAME
    if cached.exists():
        return setting_reports(pd.read_parquet(cached)), str(cached)
    if not COMMITTED.exists():
        raise ValueError(f"no study data: run `{COMMAND}` first")
    return [obj for _, obj in read_json_objects(COMMITTED)], f"fgrpo_sim/results/{COMMITTED.name}"


def compute(options: FigureOptions) -> dict:
    from fgrpo_sim.paper_tables import table2

    reports, source = load_reports(options)
    # the figure shows the default population (rare strategies correct on every common-solvable prompt), equal
    # steps, each optimizer at its first (smaller) learning rate; the rest is in the report and the docs' table
    main = [r for r in reports if r["rare_correct_prob"] == 1.0 and r["view"] == "equal-steps"]
    lrs = {opt: min(r["lr"] for r in main if r["optimizer"] == opt) for opt in {r["optimizer"] for r in main}}
    shown = [r for r in main if r["lr"] == lrs[r["optimizer"]]]
    return {"reports": shown, "lrs": lrs, "paper": table2(), "source": source,
            "populations": max(r["populations"] for r in shown), "seeds": max(r["batch_seeds"] for r in shown)}


def draw(data: dict):
    import matplotlib.pyplot as plt

    from fgrpo_sim.figures.style import new_figure

    fig, axes = new_figure(2, 4, width=3.9, height=3.1)
    reports = data["reports"]
    rares = sorted({r["rare_mass"] for r in reports})
    for row, opt in enumerate(OPTIMIZERS):
        for col, kind in enumerate(PARAMETRISATIONS):
            ax = axes[row, col]
            for i, rare in enumerate(rares):
                colour = RARE_COLOURS[i % len(RARE_COLOURS)]
                match = [r for r in reports if (r["optimizer"], r["parametrisation"], r["rare_mass"]) == (opt, kind, rare)]
                if not match:
                    continue
                r = match[0]
                for variant, ls in SHOWN.items():
                    curve = r["curves"].get(variant)
                    if curve is None:
                        continue
                    mean, low, high = zip(*curve["pass@256"])
                    if variant == "GRPO":
                        ax.fill_between(r["N"], low, high, color=colour, alpha=0.15, lw=0)
                    ax.plot(r["N"], mean, ls, color=colour, lw=1.3, marker="o" if variant == "GRPO" else None, ms=3)
                ax.axvline(r["predicted_N"], color=colour, ls=PREDICTED_DIP, lw=1.2)
                low_n = r["observed_lowest_N"]
                ax.plot([low_n], [r["pass@256"][r["N"].index(low_n)]], "v", color=colour, ms=8, mec="k", mew=0.6)
            lr = data["lrs"].get(opt)
            ax.set_title(f"{'Adam' if opt == 'adam' else 'SGD'} lr {lr:g}, {kind} map", fontsize=9)
            ax.set_ylabel("held-out pass@256", fontsize=9)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("group size N", fontsize=9)
            ax.tick_params(labelsize=9)
    paper = data["paper"]
    grpo = paper[paper["method"] == "GRPO"]
    ax = axes[0, 3]
    for metric, colour in (("pass@1", "tab:blue"), ("pass@256", "tab:red")):
        rows = grpo[(grpo["scope"] == "math_avg") & (grpo["metric"] == metric)].sort_values("group_size")
        ax.plot(rows["group_size"], rows["value"], "-o", color=colour, ms=3, label=f"GRPO {metric}")
        focal = paper[(paper["method"] != "GRPO") & (paper["scope"] == "math_avg") & (paper["metric"] == metric)]
        ax.plot(focal["group_size"], focal["value"], "*", color=colour, ms=11, label=f"F-GRPO {metric}")
    ax.set_title("paper, Table 2 (Qwen2.5-7B, math avg, %)", fontsize=9)
    ax.set_ylabel("pass@k (%)", fontsize=9)
    ax.legend(fontsize=9)
    ax = axes[1, 3]
    rows = grpo[grpo["metric"] == "delta_nll_rare"].sort_values("group_size")
    ax.plot(rows["group_size"], rows["value"], "-o", color="k", ms=3, label="GRPO")
    focal = paper[(paper["method"] != "GRPO") & (paper["metric"] == "delta_nll_rare")]
    ax.plot(focal["group_size"], focal["value"], "*", color="k", ms=11, label="F-GRPO")
    ax.set_title(r"paper, Table 2: $\Delta$NLL$_{rare}$", fontsize=9)
    ax.set_ylabel("nats", fontsize=9)
    ax.legend(fontsize=9)
    for ax in axes[:, 3]:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("group size N", fontsize=9)
        ax.tick_params(labelsize=9)
    predicted = {r["rare_mass"]: r["predicted_N"] for r in reports}
    handles = [plt.Line2D([], [], color=RARE_COLOURS[i], lw=2, label=f"rare mass {r:g} (predicted dip N = {predicted[r]})")
               for i, r in enumerate(rares)]
    handles += [plt.Line2D([], [], color="0.3", ls=ls, marker="o" if v == "GRPO" else None, ms=3, label=v.replace("gamma=", r"$\gamma$ = ").replace("m_0.5", r"$m_{0.5}$"))
                for v, ls in SHOWN.items()]
    handles.append(plt.Line2D([], [], color="0.3", ls=PREDICTED_DIP, label="predicted dip (planner.predict_dip)"))
    handles.append(plt.Line2D([], [], color="0.3", marker="v", ls="", mec="k", label="observed lowest N (GRPO)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=9)
    fig.suptitle(f"Shared-strategy population vs N, by parametrisation (logits = M theta); {data['populations']} "
                 f"populations x {data['seeds']} batch seeds, bands: 95% bootstrap over populations; data: {data['source']}",
                 fontsize=10)
    return fig


add_figure("population-group-size", "held-out pass@256 vs N per optimizer x parametrisation in the shared population "
           "with the predicted dip, beside the paper's Table 2 (reads the cached/committed study)", compute, draw)
