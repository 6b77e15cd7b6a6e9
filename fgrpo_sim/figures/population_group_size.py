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
    return figure_data(*load_reports(options))


def load(path) -> dict:
    """The figure from the user's own study: `fgrpo simulate group-size --out FILE` (.parquet / .csv, every row
    checked) or its `--json` record (.jsonl)."""
    from fgrpo_sim.figures.from_file import existing, read_table

    path = existing(path)
    if path.suffix.lower() in (".jsonl", ".json"):
        from fgrpo_sim.sim.group_size_report import read_reports

        return figure_data(read_reports(path), str(path))
    from fgrpo_sim.sim.group_size_report import setting_reports
    from fgrpo_sim.sim.group_size_resume import TABLE_SCHEMA

    return figure_data(setting_reports(read_table(path, TABLE_SCHEMA, "fgrpo simulate group-size")), str(path))


def figure_data(reports: list[dict], source: str) -> dict:
    from fgrpo_sim.paper_tables import table2
    from fgrpo_sim.sim.group_size_report import headline_reports

    shown, lrs = headline_reports(reports)  # the rest is in the report and the docs' table
    if not shown:
        raise ValueError(f"{source} holds no setting the figure shows: it draws the default population "
                         "(--rare-correct-prob 1) at equal steps (--views equal-steps)")
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


#: The headline panel: the Table 2 reading (docs/population.md): Adam, whose parameters mix strategies (orthogonal).
HEADLINE = ("adam", "orthogonal")


def _sim_panel(ax, strip, data: dict, opt: str, kind: str, shown: dict) -> None:
    """One optimizer x map: held-out pass@256 against N per rare mass (GRPO with its band, the `shown` variants),
    the predicted dip (dotted), a marker at a dip only; below, in `strip`, the share of each N."""
    from fgrpo_sim.sim.group_size_report import curve

    reports = data["reports"]
    rares = sorted({r["rare_mass"] for r in reports})
    dips = []
    for i, rare in enumerate(rares):
        colour = RARE_COLOURS[i % len(RARE_COLOURS)]
        match = [r for r in reports if (r["optimizer"], r["parametrisation"], r["rare_mass"]) == (opt, kind, rare)]
        if not match:
            continue
        r = match[0]
        for variant, ls in shown.items():
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
    ax.set_title(f"{'Adam' if opt == 'adam' else 'SGD'} lr {lr:g}, {name}", fontsize=10)
    ax.set_ylabel("held-out pass@256", fontsize=9)
    strip.set_title("dip: " + "; ".join(dips) if dips else "no dip at any rare mass", fontsize=9)
    strip.set_ylabel("share lowest", fontsize=9)
    strip.set_ylim(0, 1)
    for a in (ax, strip):
        a.set_xscale("log", base=2)
        a.set_xlabel("group size N", fontsize=9)
        a.tick_params(labelsize=9)


def _legend_handles(data: dict, shown: dict) -> list:
    import matplotlib.pyplot as plt

    rares = sorted({r["rare_mass"] for r in data["reports"]})
    predicted = {r["rare_mass"]: r["predicted_N"] for r in data["reports"]}
    handles = [plt.Line2D([], [], color=RARE_COLOURS[i % len(RARE_COLOURS)], lw=2,
                          label=f"rare mass {r:g} (predicted dip N = {predicted[r]})") for i, r in enumerate(rares)]
    handles += [plt.Line2D([], [], color="0.3", ls=ls, marker="o" if v == "GRPO" else None, ms=3,
                           label=v.replace("gamma=", r"$\gamma$ = ").replace("m_0.5", r"$m_{0.5}$"))
                for v, ls in shown.items()]
    handles.append(plt.Line2D([], [], color="0.3", ls=PREDICTED_DIP, label="predicted dip (planner.predict_dip)"))
    handles.append(plt.Line2D([], [], color="0.3", marker="v", ls="", mec="k",
                              label="dip: GRPO lowest, both flank intervals > 0"))
    return handles


def _label_end(ax, x, y, text: str, colour, above: bool = True) -> None:
    """A line's name written at its last point: no legend box over the lines (issue 46)."""
    ax.annotate(text, (x, y), textcoords="offset points", xytext=(0, 7 if above else -7), ha="right",
                va="bottom" if above else "top", fontsize=9, color=colour)


def _paper_panels(ax_pass, ax_nll, paper) -> None:
    """The paper's Table 2 (Qwen2.5-7B, math average): GRPO's pass@1 and pass@256 and dNLL_rare over N, F-GRPO's
    single N starred; every line named at its end, so nothing covers a line."""
    grpo = paper[paper["method"] == "GRPO"]
    for metric, colour in (("pass@256", "tab:red"), ("pass@1", "tab:blue")):
        rows = grpo[(grpo["scope"] == "math_avg") & (grpo["metric"] == metric)].sort_values("group_size")
        ax_pass.plot(rows["group_size"], rows["value"], "-o", color=colour, ms=3)
        _label_end(ax_pass, rows["group_size"].iloc[-1], rows["value"].iloc[-1], f"GRPO {metric}", colour)
        focal = paper[(paper["method"] != "GRPO") & (paper["scope"] == "math_avg") & (paper["metric"] == metric)]
        ax_pass.plot(focal["group_size"], focal["value"], "*", color=colour, ms=11)
        ax_pass.annotate(f"F-GRPO {metric}", (focal["group_size"].iloc[0], focal["value"].iloc[0]),
                         textcoords="offset points", xytext=(0, 9), ha="center", va="bottom", fontsize=9, color=colour)
    ax_pass.set_title("paper, Table 2 (Qwen2.5-7B, math avg)", fontsize=10)
    ax_pass.set_ylabel("pass@k (%)", fontsize=9)
    rows = grpo[grpo["metric"] == "delta_nll_rare"].sort_values("group_size")
    ax_nll.plot(rows["group_size"], rows["value"], "-o", color="k", ms=3)
    _label_end(ax_nll, rows["group_size"].iloc[-1], rows["value"].iloc[-1], "GRPO", "k")
    focal = paper[(paper["method"] != "GRPO") & (paper["metric"] == "delta_nll_rare")]
    ax_nll.plot(focal["group_size"], focal["value"], "*", color="k", ms=11)
    ax_nll.annotate("F-GRPO", (focal["group_size"].iloc[0], focal["value"].iloc[0]), textcoords="offset points",
                    xytext=(0, 9), ha="center", va="bottom", fontsize=9)
    ax_nll.set_title(r"paper, Table 2: $\Delta$NLL$_{rare}$ (nats)", fontsize=10)
    ax_nll.set_ylabel("nats", fontsize=9)
    for ax in (ax_pass, ax_nll):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("group size N", fontsize=9)
        ax.tick_params(labelsize=9)


def draw(data: dict):
    """The headline: where GRPO's held-out pass@256 dips under Adam with mixing parameters (the Table 2 reading),
    beside the paper's Table 2. The other optimizers and maps: population-group-size-grid."""
    import matplotlib.pyplot as plt

    from fgrpo_sim.figures.style import STYLE

    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=(15.5, 5.2), layout="constrained")
        grid = fig.add_gridspec(2, 3, height_ratios=[3, 1.2], width_ratios=[1.25, 1, 1])
        ax, strip = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[1, 0])
        ax_pass, ax_nll = fig.add_subplot(grid[:, 1]), fig.add_subplot(grid[:, 2])
    for a in fig.axes:
        a.grid(True, alpha=0.3)
        a.spines[["top", "right"]].set_visible(False)
    opt, kind = HEADLINE
    shown = {v: ls for v, ls in SHOWN.items() if "low-LR" not in v}  # the control: in the grid
    _sim_panel(ax, strip, data, opt, kind, shown)
    ax.set_title(f"simulation: {ax.get_title()}", fontsize=10)
    _paper_panels(ax_pass, ax_nll, data["paper"])
    fig.legend(handles=_legend_handles(data, shown), loc="outside lower center", ncols=4, fontsize=9)
    fig.suptitle(f"Where GRPO's held-out pass@256 dips in N: the shared-strategy population under Adam with parameters "
                 f"that mix strategies (left; {data['populations']} populations x {data['seeds']} batch seeds, 95% t "
                 "bands; bars: share of bootstrap resamples in which each N is lowest),\nbeside the paper's Table 2 "
                 f"(right). Every optimizer and map: population-group-size-grid. Data: {data['source']}", fontsize=10)
    return fig


def draw_grid(data: dict):
    """The robustness grid: one panel per optimizer x map (Adam: axis, orthogonal, dense; SGD: axis = orthogonal,
    dense), GRPO, F-GRPO and the lr x m_gamma control, a share strip under each; the legend in the free slot."""
    from fgrpo_sim.figures.style import new_figure

    fig, axes = new_figure(4, 3, width=4.4, height=2.2, gridspec_kw={"height_ratios": [3, 1.25, 3, 1.25]})
    used = set()
    for row, col, opt, kind in _panels(data["reports"]):
        _sim_panel(axes[row, col], axes[row + 1, col], data, opt, kind, SHOWN)
        used |= {(row, col), (row + 1, col)}
    free = [(row, col) for row in range(0, 4, 2) for col in range(3) if (row, col) not in used]
    for row in range(axes.shape[0]):
        for col in range(axes.shape[1]):
            if (row, col) not in used:
                axes[row, col].set_axis_off()
    handles = _legend_handles(data, SHOWN)
    if free:  # SGD has one panel fewer: the legend sits in its slot, not over any panel
        row, col = free[-1]
        axes[row, col].legend(handles=handles, loc="center", fontsize=9, frameon=False)
    else:
        fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=9)
    fig.suptitle(f"Shared-strategy population vs N, every optimizer x map (logits = M theta); {data['populations']} "
                 f"populations x {data['seeds']} batch seeds; data: {data['source']}\nbands: 95% t intervals over "
                 "populations; bars: share of bootstrap resamples (over populations) in which each N is GRPO's lowest",
                 fontsize=10)
    return fig


add_figure("population-group-size", "where GRPO's held-out pass@256 dips in N (Adam, orthogonal map) beside the "
           "paper's Table 2 (reads the cached/committed study; --from: your own)", compute, draw, load=load)
add_figure("population-group-size-grid", "held-out pass@256 vs N per optimizer x parametrisation in the shared "
           "population, the predicted dip marked (reads the cached/committed study; --from: your own)", compute,
           draw_grid, load=load)
