"""population-group-size (issues 21, 28, 36): held-out pass@256 against N in the shared-strategy population, one
panel per optimizer x parametrisation (axis, orthogonal, dense; under SGD axis and orthogonal are identical by
construction, so one panel), the lemma's predicted dip marked, F-GRPO and the lr x m_gamma control beside GRPO,
and the paper's Table 2 in the last column. Under each panel: the share of bootstrap resamples of the
populations in which each N is GRPO's lowest (every N, not one marker); a dip is marked only where both flank
intervals lie above 0.

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
    from fgrpo_sim.sim.group_size_report import read_reports, setting_reports

    cached = Path(options.data_dir or "runs/figure-data") / CACHE_NAME
    if cached.exists():  # every row checked by column kind (result_table), as a resume reads it
        from fgrpo_sim.sim.group_size_resume import TABLE_SCHEMA
        from fgrpo_sim.sim.result_table import read_result_table

        hint = "delete it (a cache of figure data) or pass another --data-dir"
        table = read_result_table(cached, TABLE_SCHEMA, hint, label="--data-dir table", action="read")
        if table.empty:
            raise ValueError(f"--data-dir table {cached} holds no rows; {hint}")
        return setting_reports(table), str(cached)
    if not COMMITTED.exists():
        raise ValueError(f"no study data: run `{COMMAND}` first")
    return read_reports(COMMITTED), f"fgrpo_sim/results/{COMMITTED.name}"


def compute(options: FigureOptions) -> dict:
    from fgrpo_sim.paper_tables import table2
    from fgrpo_sim.sim.group_size_report import headline_reports

    reports, source = load_reports(options)
    shown, lrs = headline_reports(reports)  # the rest is in the report and the docs' table
    return {"reports": shown, "lrs": lrs, "paper": table2(), "source": source,
            "populations": max(r["populations"] for r in shown), "seeds": max(r["batch_seeds"] for r in shown)}


def _panels(reports) -> list[tuple[int, int, str, str]]:
    """(row, column, optimizer, map) of each simulation panel: the maps each optimizer's reports carry, in order."""
    out = []
    for row, opt in enumerate(OPTIMIZERS):
        kinds = [k for k in PARAMETRISATIONS + ("axis = orthogonal",) if any(
            (r["optimizer"], r["parametrisation"]) == (opt, k) for r in reports)]
        kinds.sort(key=lambda k: PARAMETRISATIONS.index(k.split(" ")[0]))
        out += [(2 * row, col, opt, kind) for col, kind in enumerate(kinds)]
    return out


def _share_bars(ax, r, i: int, count: int, colour) -> None:
    """Bars of the argmin share per N, side by side per rare mass on the log2 axis."""
    if r["argmin_share"] is None:
        return
    centre = (i - (count - 1) / 2) * 0.27
    left = [n * 2 ** (centre - 0.12) for n in r["N"]]
    width = [n * 2 ** (centre + 0.12) - x for n, x in zip(r["N"], left)]
    ax.bar(left, r["argmin_share"], width=width, align="edge", color=colour, alpha=0.8)


def draw(data: dict):
    import matplotlib.pyplot as plt

    from fgrpo_sim.figures.style import new_figure
    from fgrpo_sim.sim.group_size_report import curve

    fig, axes = new_figure(4, 4, width=3.9, height=2.15, gridspec_kw={"height_ratios": [3, 1.25, 3, 1.25]})
    reports = data["reports"]
    rares = sorted({r["rare_mass"] for r in reports})
    used = set()
    for row, col, opt, kind in _panels(reports):
        ax, strip = axes[row, col], axes[row + 1, col]
        used |= {(row, col), (row + 1, col)}
        dips = []
        for i, rare in enumerate(rares):
            colour = RARE_COLOURS[i % len(RARE_COLOURS)]
            match = [r for r in reports if (r["optimizer"], r["parametrisation"], r["rare_mass"]) == (opt, kind, rare)]
            if not match:
                continue
            r = match[0]
            for variant, ls in SHOWN.items():
                arm = curve(r, variant)
                if arm is None:
                    continue
                mean, low, high = zip(*arm["pass256"])
                if variant == "GRPO":
                    ax.fill_between(r["N"], low, high, color=colour, alpha=0.15, lw=0)
                ax.plot(r["N"], mean, ls, color=colour, lw=1.3, marker="o" if variant == "GRPO" else None, ms=3)
            ax.axvline(r["predicted_N"], color=colour, ls=PREDICTED_DIP, lw=1.2)
            if r["dip"]:  # only a dip gets a marker: a lowest N at the edge, or a flank including 0, is none
                low_n = r["observed_lowest_N"]
                ax.plot([low_n], [r["pass256"][r["N"].index(low_n)]], "v", color=colour, ms=8, mec="k", mew=0.6)
                dips.append(f"{rare:g} at N = {low_n}")
            _share_bars(strip, r, i, len(rares), colour)
        lr = data["lrs"].get(opt)
        name = f"{kind} maps (identical under SGD)" if kind == "axis = orthogonal" else f"{kind} map"
        ax.set_title(f"{'Adam' if opt == 'adam' else 'SGD'} lr {lr:g}, {name}", fontsize=9)
        ax.set_ylabel("held-out pass@256", fontsize=9)
        strip.set_title("dip: " + "; ".join(dips) if dips else "no dip at any rare mass", fontsize=9)
        strip.set_ylabel("share lowest", fontsize=9)
        strip.set_ylim(0, 1)
        for a in (ax, strip):
            a.set_xscale("log", base=2)
            a.set_xlabel("group size N", fontsize=9)
            a.tick_params(labelsize=9)
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
    ax = axes[2, 3]
    rows = grpo[grpo["metric"] == "delta_nll_rare"].sort_values("group_size")
    ax.plot(rows["group_size"], rows["value"], "-o", color="k", ms=3, label="GRPO")
    focal = paper[(paper["method"] != "GRPO") & (paper["metric"] == "delta_nll_rare")]
    ax.plot(focal["group_size"], focal["value"], "*", color="k", ms=11, label="F-GRPO")
    ax.set_title(r"paper, Table 2: $\Delta$NLL$_{rare}$", fontsize=9)
    ax.set_ylabel("nats", fontsize=9)
    ax.legend(fontsize=9)
    used |= {(0, 3), (2, 3)}
    for ax in (axes[0, 3], axes[2, 3]):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("group size N", fontsize=9)
        ax.tick_params(labelsize=9)
    for row in range(axes.shape[0]):
        for col in range(axes.shape[1]):
            if (row, col) not in used:
                axes[row, col].remove()
    predicted = {r["rare_mass"]: r["predicted_N"] for r in reports}
    handles = [plt.Line2D([], [], color=RARE_COLOURS[i], lw=2, label=f"rare mass {r:g} (predicted dip N = {predicted[r]})")
               for i, r in enumerate(rares)]
    handles += [plt.Line2D([], [], color="0.3", ls=ls, marker="o" if v == "GRPO" else None, ms=3, label=v.replace("gamma=", r"$\gamma$ = ").replace("m_0.5", r"$m_{0.5}$"))
                for v, ls in SHOWN.items()]
    handles.append(plt.Line2D([], [], color="0.3", ls=PREDICTED_DIP, label="predicted dip (planner.predict_dip)"))
    handles.append(plt.Line2D([], [], color="0.3", marker="v", ls="", mec="k",
                              label="dip: GRPO lowest, both flank intervals > 0"))
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=9)
    fig.suptitle(f"Shared-strategy population vs N, by parametrisation (logits = M theta); {data['populations']} "
                 f"populations x {data['seeds']} batch seeds; data: {data['source']}\nbands: 95% t intervals over "
                 "populations; bars: share of bootstrap resamples (over populations) in which each N is GRPO's lowest",
                 fontsize=10)
    return fig


add_figure("population-group-size", "held-out pass@256 vs N per optimizer x parametrisation in the shared population "
           "with the predicted dip, beside the paper's Table 2 (reads the cached/committed study)", compute, draw)
