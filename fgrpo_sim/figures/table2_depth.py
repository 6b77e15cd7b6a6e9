"""table2-depth (issue 48): the simulated GRPO row of Table 2, fitted to the paper's GRPO row, and the unfitted
F-GRPO and control points at N = 8, beside the paper's Table 2 (and Table 3's controls) on the same axes: pass@256,
pass@1 and dNLL_rare against N, one panel each, every simulated value with its 95% t interval over populations.

Data: the committed record fgrpo_sim/results/table2-depth.json (`fgrpo simulate table2-depth` writes it; shipped in
the wheel), or the user's own with `--from FILE`. compute/load return plain data (`figure_data`); `draw` only draws.
"""

from __future__ import annotations

import math

from fgrpo_sim.figures.registry import FigureOptions, add_figure
from fgrpo_sim.packaged import committed_result
# the engine's checked reader (every field the figure reads typed and in range, every interval holding its
# estimate; a bad record is one line naming the file and the field), also what the notebook and tests import here
from fgrpo_sim.sim.table2_depth_record import read_record

COMMITTED = committed_result("table2-depth.json")
COMMAND = "fgrpo simulate table2-depth"
#: the panels, in order, and how each metric reads on its axis
PANELS = {"pass@256": "pass@256 (%)", "pass@1": "pass@1 (%)", "dnll_rare": r"$\Delta$NLL$_{rare}$ (nats)"}
#: the paper tables' metric names -> the record's
_PAPER_METRIC = {"pass@1": "pass@1", "pass@256": "pass@256", "delta_nll_rare": "dnll_rare"}
#: one colour per simulated method; a method the record adds later takes the next of OTHER_COLOURS
COLOURS = {"GRPO": "tab:blue", "F-GRPO": "tab:orange", "low-LR": "tab:green"}
OTHER_COLOURS = ("tab:purple", "tab:brown", "tab:pink", "tab:olive")
#: the paper's marker per method (Table 2: GRPO row and F-GRPO; Table 3: the controls)
PAPER_MARKERS = {"GRPO": "o", "F-GRPO": "*"}
#: a prediction's cell names its method as the paper does ("GRPO low-LR"); the simulated rows as the engine does
_CELL_METHOD = {"GRPO low-LR": "low-LR"}


def compute(options: FigureOptions) -> dict:
    if not COMMITTED.exists():
        raise ValueError(f"no committed record {COMMITTED.name}: run `{COMMAND}` first")
    return figure_data(read_record(COMMITTED), f"fgrpo_sim/results/{COMMITTED.name}")


def load(path) -> dict:
    """The figure from the user's own record (`fgrpo simulate table2-depth --out FILE`)."""
    from fgrpo_sim.figures.from_file import existing

    path = existing(path)
    return figure_data(read_record(path), str(path))


def _paper_rows() -> dict[str, dict[str, list[tuple[int, float]]]]:
    """Table 2 (Qwen2.5-7B, math average; dNLL_rare on its rare-correct trajectories): method -> metric ->
    [(N, value)], N ascending."""
    from fgrpo_sim.paper_tables import table2

    out: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for r in table2().itertuples():
        metric = _PAPER_METRIC.get(r.metric)
        if metric is None or (metric != "dnll_rare" and r.scope != "math_avg"):
            continue
        out.setdefault(r.method, {}).setdefault(metric, []).append((int(r.group_size), float(r.value)))
    return {m: {k: sorted(v) for k, v in by.items()} for m, by in out.items()}


def figure_data(record: dict, source: str) -> dict:
    """What the figure draws: the simulated rows per method and metric (N, mean, low, high), the paper's Table 2
    rows, each prediction (cell, paper, predicted, interval, tolerance, hit), the GRPO dip and the fitted cells."""
    sim: dict[str, dict[str, list[tuple[int, float, float, float]]]] = {}
    for row in record["simulated_rows"]:
        for metric in PANELS:
            if metric in row:
                s = row[metric]
                sim.setdefault(row["method"], {}).setdefault(metric, []).append(
                    (int(row["N"]), s["mean"], s["ci_low"], s["ci_high"]))
    sim = {m: {k: sorted(v) for k, v in by.items()} for m, by in sim.items()}
    predictions = [{"method": _simulated_method(p, sim), "paper_method": p["cell"]["method"],
                    "N": int(p["cell"]["N"]), "metric": p["cell"]["metric"], "paper": p["paper"],
                    "predicted": p["predicted"], "ci_low": p["ci_low"], "ci_high": p["ci_high"],
                    "tolerance": p.get("tolerance", 0.0), "hit": bool(p["hit"]), "contrast": p.get("contrast")}
                   for p in record["predictions"]]
    if predictions:  # GRPO and the rows behind a prediction: a control's other coefficients are not drawn
        sim = {m: by for m, by in sim.items() if m == "GRPO" or any(p["method"] == m for p in predictions)}
    return {"sim": sim, "paper": _paper_rows(), "predictions": predictions, "dip": record["grpo_dip_points"],
            "fitted": sorted({(t["metric"], int(t["N"])) for t in record["fit_targets"]}),
            "populations": record["populations"], "source": source}


def _simulated_method(prediction: dict, sim: dict) -> str:
    """The simulated row a prediction was read from: the method whose mean at the cell's N is the predicted value
    (the record names a control as the paper does, GRPO-KL, and its row by the coefficient run, KL 0.01)."""
    cell = prediction["cell"]
    named = _CELL_METHOD.get(cell["method"], cell["method"])
    matches = [m for m, by in sim.items() for n, mean, *_ in by.get(cell["metric"], [])
               if n == cell["N"] and mean == prediction["predicted"]]
    return named if named in matches or not matches else matches[0]


def paper_dip(paper: dict) -> tuple[int, float, float]:
    """The paper's GRPO pass@256 dip: (lowest N, first N minus it, last N minus it), in points."""
    row = paper["GRPO"]["pass@256"]
    low_n, low = min(row, key=lambda p: p[1])
    return low_n, row[0][1] - low, row[-1][1] - low


def _colour(method: str, order: list[str]) -> str:
    if method in COLOURS:
        return COLOURS[method]
    others = [m for m in order if m not in COLOURS]
    return OTHER_COLOURS[(others.index(method) if method in others else len(others)) % len(OTHER_COLOURS)]


def _offset(n: float, i: int, count: int) -> float:
    """Points of several methods at one N side by side on the log2 axis, so no interval hides another."""
    return n * 2 ** ((i - (count - 1) / 2) * 0.12)


def _strict(predictions: list[dict]) -> str:
    """The strict rule's count, where the record has paired contrasts (schema v2)."""
    contrasts = [p["contrast"] for p in predictions if p.get("contrast")]
    if not contrasts:
        return ""
    return (f";\npaired contrast to simulated GRPO at the same N inside its 95% interval, no widening: "
            f"{sum(c['hit'] for c in contrasts)} of {len(contrasts)}")


def _at(predictions: list[dict]) -> str:
    """'N = 8' (or 'N = 4, 8'): the group sizes the predictions are at."""
    return "N = " + ", ".join(str(n) for n in sorted({p["N"] for p in predictions}))


def interval_text(low: float, high: float, decimals: int = 1, sign: str = "") -> str:
    """[low, high] rounded outward at `decimals` (the printed interval still holds the computed one), as
    docs/population.md prints the record's intervals; `sign` "+" writes every bound signed."""
    scale = 10 ** decimals
    # rounded to 9 places first: 1.5 computed as 1.5000000000000002 must not print as a ceiling of 1.6
    lo, hi = math.floor(round(low * scale, 9)) / scale, math.ceil(round(high * scale, 9)) / scale
    return f"[{lo:{sign}.{decimals}f}, {hi:{sign}.{decimals}f}]"


def _verdict(p: dict, metric: str) -> str:
    """One prediction in words: the simulated mean and interval, the widening the hit rule adds (the fit's RMS
    error on that metric), the paper's value, hit or miss."""
    d = 2 if metric == "dnll_rare" else 1
    text = (f"{p['paper_method']} {p['predicted']:.{d}f} {interval_text(p['ci_low'], p['ci_high'], d)} "
            f"+/- {p['tolerance']:.{d}f} vs {p['paper']:.{d}f}: {'HIT' if p['hit'] else 'MISS'}")
    c = p.get("contrast")
    if c:  # the strict rule: the paired contrast to GRPO at that N, no widening
        text += (f"\n  paired, minus GRPO: {c['predicted']:+.{d}f} {interval_text(c['ci_low'], c['ci_high'], d, '+')} vs "
                 f"{c['paper']:+.{d}f}: {'HIT' if c['hit'] else 'MISS'}")
    return text


def _panel(ax, data: dict, metric: str, methods: list[str]) -> None:
    paper = data["paper"]
    row = paper.get("GRPO", {}).get(metric, [])
    if row:
        ax.plot([n for n, _ in row], [v for _, v in row], "-", color="k", lw=1.4, marker="o", ms=4,
                label="paper: GRPO (Table 2)")
    for method, by in paper.items():
        if method != "GRPO" and metric in by:
            ns, vs = zip(*by[metric])
            ax.plot(ns, vs, PAPER_MARKERS.get(method, "D"), color=_colour(method, methods) if method in methods
                    else "k", ms=13 if method == "F-GRPO" else 8, mfc="none", mew=1.5, label=f"paper: {method} (Table 2)",
                    ls="")
    predicted = {p["method"] for p in data["predictions"]}
    for p in data["predictions"]:  # Table 3's controls: the paper's value is in the record's prediction
        if p["metric"] == metric and p["method"] not in paper:
            ax.plot([p["N"]], [p["paper"]], "D", color=_colour(p["method"], methods), mfc="none", mew=1.5, ms=8,
                    ls="", label=f"paper: {p['paper_method']} (Table 3)")
    for i, method in enumerate(methods):
        points = data["sim"][method].get(metric, [])
        if not points:
            continue
        colour = _colour(method, methods)
        ns, mean, low, high = (list(x) for x in zip(*points))
        xs = [_offset(n, i, len(methods)) for n in ns]
        what = "fitted" if method == "GRPO" else "predicted" if method in predicted else "simulated"
        ax.errorbar(xs, mean, yerr=[[m - lo for m, lo in zip(mean, low)], [hi - m for m, hi in zip(mean, high)]],
                    fmt="-s" if len(ns) > 1 else "s", color=colour, ms=4, lw=1.2, capsize=3,
                    label=f"simulated: {method} ({what}), 95% t")
    verdicts = [_verdict(p, metric) for p in data["predictions"] if p["metric"] == metric]
    ax.set_xscale("log", base=2)
    ns = sorted({n for by in data["sim"].values() for n, *_ in by.get(metric, [])} | {n for n, _ in row})
    ax.set_xticks(ns, [str(n) for n in ns])
    # the predictions in words under the axis (part of its label, so the layout keeps room for them)
    at = _at([p for p in data["predictions"] if p["metric"] == metric])
    ax.set_xlabel("group size N" + (f"\n\npredicted at {at} vs the paper:\n" + "\n".join(verdicts) if verdicts
                                    else ""), fontsize=9)
    ax.set_ylabel(PANELS[metric], fontsize=9)
    fitted = [n for m, n in data["fitted"] if m == metric]
    ax.set_title(f"{metric.replace('dnll_rare', 'dNLL_rare')}: " +
                 ("GRPO fitted at N = " + ", ".join(map(str, fitted)) if fitted else "not fitted"), fontsize=10)
    ax.tick_params(labelsize=9)


def draw(data: dict):
    from fgrpo_sim.figures.style import new_figure

    metrics = [m for m in PANELS if any(m in by for by in data["sim"].values())]
    methods = sorted(data["sim"], key=lambda m: (m != "GRPO", m != "F-GRPO", m))
    # room under each panel for its verdict lines (one per prediction, two with a paired contrast)
    lines = max((sum(2 if p.get("contrast") else 1 for p in data["predictions"] if p["metric"] == m)
                 for m in metrics), default=0)
    fig, axes = new_figure(1, len(metrics), width=5.2, height=3.8 + 0.2 * lines, squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        _panel(ax, data, metric, methods)
    dip = data["dip"]
    low_n, first, last = paper_dip(data["paper"])
    (left, right) = dip["left"], dip["right"]
    hits = sum(p["hit"] for p in data["predictions"])
    predicted = (f"{' and '.join(dict.fromkeys(p['paper_method'] for p in data['predictions']))} at "
                 f"{_at(data['predictions'])} predicted without refitting: {hits} of {len(data['predictions'])} hit "
                 "(the paper's value inside the interval widened by the fit's RMS error)" + _strict(data["predictions"])
                 if data["predictions"] else "no prediction in the record")
    fig.suptitle(
        "Table 2's depth: a simulated GRPO row fitted to the paper's (Qwen2.5-7B, math average);\n"
        f"{predicted}\n"
        f"simulated GRPO pass@256 dips at N = {dip['dip_N']}: {left['points']:+.1f} "
        f"{interval_text(left['ci_low'], left['ci_high'], sign='+')} points at N = {left['N']}, "
        f"{right['points']:+.1f} {interval_text(right['ci_low'], right['ci_high'], sign='+')} at N = {right['N']}; "
        f"the paper's at N = {low_n}: {first:+.1f} and {last:+.1f}\n"
        f"95% t intervals over {data['populations']} populations; data: {data['source']}", fontsize=10)
    handles, labels = {}, []
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    fig.legend([handles[lab] for lab in labels], labels, loc="outside lower center", ncols=3, fontsize=9)
    return fig


add_figure("table2-depth", "Table 2's depth: the simulated GRPO row fitted to the paper's, F-GRPO and the controls "
           "predicted at N = 8, beside Tables 2 and 3 (reads the committed record; --from: your own)", compute, draw,
           load=load)
