"""Fig 1b/1c-style plot: average pass@1 against average pass@k, math and OOD, baseline -> focal arrows.

Data in, Figure out (no registry entry: the data are the user's eval files, read by
`fgrpo_sim.llm.evaluation.report`). Each point is a dict:
    {"label": "F-GRPO", "comparison": "GRPO", "role": "baseline" | "focal",
     "math": (pass1, passk), "ood": (pass1, passk), "paper": None | {math_pass1, math_pass256, ood_pass1, ood_pass256}}
in percent, and optionally "key" (the checkpoint's eval files): a checkpoint under two labels is drawn once;
optionally "significant": {"math": [benchmarks], "ood": [...]}, where its comparison's paired test marks pass@1
or pass@k significant: such a point gets a black ring in that panel (the star means "focal run", not significance).
Paper numbers, when given and k = 256, are drawn as hollow markers of the same colour. Axes show plain
numbers (no offset) over at least MIN_SPAN points; a kind without data (no OOD files) gets no panel.
"""

from __future__ import annotations

import math

from fgrpo_sim.figures.style import new_figure


#: Smallest span (percentage points) of a report axis: a 7e-6 difference must look like one, not fill the panel.
MIN_SPAN = 2.0


def _finite(pair) -> bool:
    return pair is not None and all(v is not None and not math.isnan(v) for v in pair)


def _plain_axis(ax, xs: list[float], ys: list[float]) -> None:
    """No offset notation (no "1e-6+2.499999e1" to decode) and at least MIN_SPAN points per axis, centred."""
    for name, scale in (("x", ax.get_xscale()), ("y", ax.get_yscale())):
        if scale == "linear":  # a log axis (k) has no offset
            ax.ticklabel_format(axis=name, useOffset=False, style="plain")
    for values, get, set_ in ((xs, ax.get_xlim, ax.set_xlim), (ys, ax.get_ylim, ax.set_ylim)):
        low, high = get()
        if values and high - low < MIN_SPAN:
            centre = (min(values) + max(values)) / 2
            set_(centre - MIN_SPAN / 2, centre + MIN_SPAN / 2)


def _once(items: list[dict]) -> list[dict]:
    """One entry per checkpoint (`key`: its eval files): a checkpoint in two comparisons or under two labels is
    drawn once, labelled with every name it has; then every drawn label made distinct (`_distinct`)."""
    seen: dict[str, dict] = {}
    for item in items:
        key = item.get("key") or id(item)
        if key in seen:
            if item["label"] not in seen[key]["label"].split(" / "):
                seen[key]["label"] += " / " + item["label"]
            if item["comparison"] not in seen[key]["comparisons"]:
                seen[key]["comparisons"].append(item["comparison"])
            continue
        seen[key] = {**item, "comparisons": [item["comparison"]]}
    return _distinct(list(seen.values()))


def _distinct(items: list[dict]) -> list[dict]:
    """Labels a reader can tell apart: a method drawn twice (F-GRPO selected at two checkpoints, one per
    comparison) names its comparison, and its step if that is not enough ("F-GRPO (GRPO low-LR)")."""
    def counts(labels):
        return {label: labels.count(label) for label in labels}

    repeated = counts([item["label"] for item in items])
    for item in items:
        if repeated[item["label"]] > 1:
            item["label"] += f" ({' & '.join(item['comparisons'])})"
    repeated = counts([item["label"] for item in items])
    for item in items:
        if repeated[item["label"]] > 1 and item.get("step") is not None:
            item["label"] = item["label"][:-1] + f", step {item['step']})"
    return items


#: Where a point's label may go, tried in order (offset in points, alignment): beside the point first, then
#: further out; the first that overlaps no other label, marker or the axes' edge is taken.
_LABEL_SLOTS = [((dx * r, dy * r), "left" if dx > 0 else "right" if dx < 0 else "center", "bottom" if dy > 0 else "top")
                for r in (1, 2.5, 4) for dx, dy in ((5, 5), (5, -5), (-5, 5), (-5, -5), (0, 7), (0, -7))]


def _place_labels(ax, labelled: list[tuple[tuple[float, float], str]]) -> None:
    """Point labels that do not overprint: each takes the first slot whose box overlaps no label placed before it,
    no marker and stays inside the axes (else the slot with the least overlap). Measured after layout; the labels
    stay out of the layout so that it does not move the points under them."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    markers = [ax.transData.transform(xy) for xy, _ in labelled]
    taken = [(x - 5, y - 5, x + 5, y + 5) for x, y in markers]
    if ax.get_legend() is not None:
        legend = ax.get_legend().get_window_extent(renderer)
        taken.append((legend.x0, legend.y0, legend.x1, legend.y1))

    def overlap(box) -> float:
        area = sum(max(0.0, min(box.x1, b[2]) - max(box.x0, b[0])) * max(0.0, min(box.y1, b[3]) - max(box.y0, b[1]))
                   for b in taken)
        outside = box.width * box.height - max(0.0, min(box.x1, frame.x1) - max(box.x0, frame.x0)) * \
            max(0.0, min(box.y1, frame.y1) - max(box.y0, frame.y0))
        return area + outside

    for xy, text in labelled:
        best = None
        for offset, ha, va in _LABEL_SLOTS:
            note = ax.annotate(text, xy, textcoords="offset points", xytext=offset, ha=ha, va=va, fontsize=8)
            note.set_in_layout(False)
            box = note.get_window_extent(renderer)
            score = overlap(box)
            if best is None or score < best[0]:
                if best is not None:
                    best[1].remove()
                best = (score, note, box)
            else:
                note.remove()
            if score == 0:
                break
        taken.append((best[2].x0, best[2].y0, best[2].x1, best[2].y1))


def _panels(has: dict[str, bool], width: float = 4.2, height: float = 3.6):
    """(figure, [(axis, key, title)]) with one panel per kind that has data (math, OOD); at least one panel."""
    kinds = [(key, title) for key, title in (("math", "Math average"), ("ood", "OOD average")) if has[key]] or \
        [("math", "Math average")]
    fig, axes = new_figure(1, len(kinds), width=width, height=height)
    axes = list(axes.flat) if hasattr(axes, "flat") else [axes]
    return fig, [(ax, key, title) for ax, (key, title) in zip(axes, kinds)]


def draw_pass1_vs_passk(points: list[dict], k: int = 256):
    """Two panels (math average, OOD average): x = pass@1, y = pass@k; an arrow from each baseline to its focal runs."""
    comparisons = list(dict.fromkeys(p["comparison"] for p in points))
    colours = {name: f"C{i % 10}" for i, name in enumerate(comparisons)}
    fig, panels = _panels({key: any(_finite(p[key]) for p in points) for key in ("math", "ood")})
    to_label = []
    for ax, key, title in panels:
        bases = {p["comparison"]: p for p in points if p["role"] == "baseline"}
        xs, ys, labelled = [], [], []
        for p in _once(points):
            if _finite(p[key]):
                marker = "o" if p["role"] == "baseline" else "*"
                ax.scatter(*p[key], color=colours[p["comparison"]], marker=marker, s=60 if marker == "*" else 30,
                           zorder=3)
                labelled.append((tuple(p[key]), p["label"]))
                xs.append(p[key][0])
                ys.append(p[key][1])
        ringed = {p.get("key") or id(p) for p in points if (p.get("significant") or {}).get(key)}
        for p in _once(points):
            if _finite(p[key]) and (p.get("key") or id(p)) in ringed:
                ax.scatter(*p[key], facecolors="none", edgecolors="black", marker="o", s=190, linewidths=1.2, zorder=4)
        for p in points:
            colour = colours[p["comparison"]]
            base = bases.get(p["comparison"])
            if p["role"] == "focal" and base is not None and _finite(p[key]) and _finite(base[key]) \
                    and tuple(p[key]) != tuple(base[key]):
                ax.annotate("", p[key], base[key], arrowprops={"arrowstyle": "->", "color": colour, "alpha": 0.7})
            ref = (p.get("paper") or {}) if k == 256 else {}  # the paper reports pass@256 only
            ref_pair = (ref.get(f"{key}_pass1"), ref.get(f"{key}_pass256"))
            if _finite(ref_pair):
                ax.scatter(*ref_pair, facecolors="none", edgecolors=colour, marker="o" if p["role"] == "baseline" else "*",
                           s=60, zorder=2)
                xs.append(ref_pair[0])
                ys.append(ref_pair[1])
        _plain_axis(ax, xs, ys)
        ax.set_xlabel("pass@1 (%)")
        ax.set_ylabel(f"pass@{k} (%)")
        ax.set_title(title)
        to_label.append((ax, labelled))
    _comparison_legend(panels[0][0], colours, k == 256 and any(p.get("paper") for p in points),
                       any(any((p.get("significant") or {}).values()) for p in points))
    for ax, labelled in to_label:  # after every panel is drawn: the layout is final
        _place_labels(ax, labelled)
    return fig


def _comparison_legend(ax, colours: dict[str, str], with_paper: bool, with_rings: bool = False) -> None:
    """Colour = comparison (arrow: its baseline -> its focal runs), marker = role; hollow = the paper's numbers;
    black ring = a significant difference from its baseline on at least one benchmark of the panel."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colour, marker="s", linestyle="", label=name) for name, colour in colours.items()]
    handles += [Line2D([], [], color="0.3", marker="o", linestyle="", label="baseline"),
                Line2D([], [], color="0.3", marker="*", markersize=9, linestyle="", label="focal")]
    if with_paper:
        handles.append(Line2D([], [], color="0.3", marker="o", mfc="none", linestyle="", label="paper (hollow)"))
    if with_rings:
        handles.append(Line2D([], [], marker="o", mfc="none", mec="black", markersize=11, linestyle="",
                              label="significant vs baseline\n(>= 1 benchmark, see table)"))
    ax.legend(handles=handles, fontsize=7, loc="lower right", title="comparison", title_fontsize=7)


def draw_passk_curves(curves: list[dict]):
    """Fig 1b/1c style: average pass@k against k (log2 axis), math and OOD panels, one line per selected run.

    `curves` as `fgrpo_sim.llm.evaluation.report.passk_curves` returns them: {"label", "comparison", "role",
    "math": {k: pass@k %}, "ood": {...}, "paper": None | {"source", "math": {k: %}, "ood": {...}}}.
    The paper's curves (Tables 12-14, k up to 256) are dashed reference lines in the run's colour.
    """
    styles = {"baseline": "o", "focal": "*"}
    curves = _once(curves)
    fig, panels = _panels({key: any(c.get(key) for c in curves) for key in ("math", "ood")})
    for ax, key, title in panels:
        any_paper = False
        ys = []
        for i, c in enumerate(curves):
            colour = f"C{i % 10}"
            points = sorted((int(k), v) for k, v in (c.get(key) or {}).items())
            if points:
                ax.plot([k for k, _ in points], [v for _, v in points], color=colour, marker=styles.get(c["role"], "o"),
                        markersize=4, label=c["label"])
                ys += [v for _, v in points]
            ref = sorted((int(k), v) for k, v in ((c.get("paper") or {}).get(key) or {}).items())
            if ref:
                any_paper = True
                ax.plot([k for k, _ in ref], [v for _, v in ref], color=colour, linestyle="--", linewidth=1,
                        alpha=0.8, label=f"{c['label']} (paper)")
        ax.set_xscale("log", base=2)
        _plain_axis(ax, [], ys)
        ax.set_xlabel("k")
        ax.set_ylabel("pass@k (%)")
        ax.set_title(title + (" (dashed: paper)" if any_paper else ""))
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    return fig


def draw_passk_bands(curves: list[dict]):
    """`fgrpo passk --plot`: pass@k against k (log2 axis when k spans more than one value) for one or more eval
    files, each with its bootstrap band over problems. `curves`: {"label", "k", "pass_at_k", "ci_low",
    "ci_high"} (`PassAtKCurve.as_dict()` plus a label), pass@k as fractions."""
    fig, ax = new_figure(1, 1, width=5.0, height=3.6)
    for i, c in enumerate(curves):
        colour = f"C{i % 10}"
        ax.plot(c["k"], c["pass_at_k"], color=colour, marker="o", markersize=3, label=c["label"])
        if any(lo != hi for lo, hi in zip(c["ci_low"], c["ci_high"])):
            ax.fill_between(c["k"], c["ci_low"], c["ci_high"], color=colour, alpha=0.2, linewidth=0)
    if len({k for c in curves for k in c["k"]}) > 1:
        ax.set_xscale("log", base=2)
    ax.ticklabel_format(axis="y", useOffset=False, style="plain")
    ax.set_xlabel("k")
    ax.set_ylabel("pass@k")
    level = round(100 * curves[0].get("confidence", 0.95)) if curves else 95
    ax.set_title(f"pass@k, bands: {level}% bootstrap over problems" if any(
        lo != hi for c in curves for lo, hi in zip(c["ci_low"], c["ci_high"])) else "pass@k")
    ax.legend(fontsize=8)
    return fig


def draw_paired_difference(curves: list[dict], compared: dict):
    """`fgrpo passk RESULTS --compare OTHER --plot`: left, both files' pass@k against k; right, the paired
    difference RESULTS - OTHER per k with the paired test's interval, significant k filled and starred, untested k
    hollow without a bar. The right panel is what the table's test says; per-file bands over problems are not
    drawn (they describe another question and overlap where the paired test finds a difference).

    `curves`: two {"label", "k", "pass_at_k"}; `compared`: `fgrpo passk --json`'s "compare" object (test,
    test_description, alpha, per_k rows with difference, ci_low, ci_high, significant or skipped)."""
    fig, (left, right) = new_figure(1, 2, width=4.6, height=3.6)
    for i, c in enumerate(curves):
        left.plot(c["k"], c["pass_at_k"], color=f"C{i}", marker="o", markersize=3, label=c["label"])
    left.set_ylabel("pass@k")
    left.set_title("pass@k", fontsize=10)
    left.legend(fontsize=8)
    left.ticklabel_format(axis="y", useOffset=False, style="plain")
    rows = compared["per_k"]
    tested = [r for r in rows if "skipped" not in r]
    significant = [r for r in tested if r["significant"]]
    plain = [r for r in tested if not r["significant"]]
    right.axhline(0.0, color="0.4", linewidth=0.8)
    level = round(100 * (1 - compared["alpha"]))
    for group, style in ((plain, {"color": "C7", "mfc": "white", "label": "not significant"}),
                         (significant, {"color": "C3", "mfc": "C3", "label": f"significant (p < {compared['alpha']:g})"})):
        if group:
            ks = [r["k"] for r in group]
            diffs = [r["difference"] for r in group]
            errors = [[r["difference"] - r["ci_low"] for r in group], [r["ci_high"] - r["difference"] for r in group]]
            right.errorbar(ks, diffs, yerr=errors, fmt="o", markersize=5, capsize=3, color=style["color"],
                           mfc=style["mfc"], label=style["label"])
    for r in significant:
        right.annotate("*", (r["k"], r["ci_high"]), textcoords="offset points", xytext=(0, 2), ha="center",
                       color="C3", fontsize=12)
    untested = [r for r in rows if "skipped" in r]
    if untested:
        diffs = {k: a - b for k, a, b in zip(curves[0]["k"], curves[0]["pass_at_k"], curves[1]["pass_at_k"])}
        right.scatter([r["k"] for r in untested], [diffs[r["k"]] for r in untested], marker="x", color="0.5",
                      label=f"untested ({untested[0]['skipped']})")
    right.set_ylabel(f"{curves[0]['label']} - {curves[1]['label']}")
    right.set_title(f"paired difference, {level}% interval of the test", fontsize=10)
    right.margins(y=0.12)  # room for the stars above the intervals
    right.ticklabel_format(axis="y", useOffset=False, style="plain")
    right.legend(fontsize=7, title=f"{compared['test']} test, alpha = {compared['alpha']:g}", title_fontsize=7)
    for ax in (left, right):
        if len({k for c in curves for k in c["k"]}) > 1:
            ax.set_xscale("log", base=2)
        ax.set_xlabel("k")
    return fig


def draw_report_figures(report: dict) -> dict:
    """The figures of an `fgrpo llm report` (`fgrpo_sim.llm.evaluation.report.build_report`'s dict):
    file name -> Figure, pass1_vs_passk.png always, passk_curves.png when the report has curves."""
    figures = {"pass1_vs_passk.png": draw_pass1_vs_passk(report["points"], k=report["k"])}
    if report.get("curves"):
        figures["passk_curves.png"] = draw_passk_curves(report["curves"])
    return figures
