"""Fig 1b/1c-style plot: average pass@1 against average pass@k, math and OOD, baseline -> focal arrows.

Data in, Figure out (no registry entry: the data are the user's eval files, read by
`fgrpo_sim.llm.evaluation.report`). Each point is a dict:
    {"label": "F-GRPO", "comparison": "GRPO", "role": "baseline" | "focal",
     "math": (pass1, passk), "ood": (pass1, passk), "paper": None | {math_pass1, math_pass256, ood_pass1, ood_pass256}}
in percent. Paper numbers, when given and k = 256, are drawn as hollow markers of the same colour.
"""

from __future__ import annotations

import math

from fgrpo_sim.figures.style import new_figure


def _finite(pair) -> bool:
    return pair is not None and all(v is not None and not math.isnan(v) for v in pair)


def draw_pass1_vs_passk(points: list[dict], k: int = 256):
    """Two panels (math average, OOD average): x = pass@1, y = pass@k; an arrow from each baseline to its focal runs."""
    fig, axes = new_figure(1, 2, width=4.2, height=3.6)
    comparisons = list(dict.fromkeys(p["comparison"] for p in points))
    colours = {name: f"C{i % 10}" for i, name in enumerate(comparisons)}
    for ax, key, title in ((axes[0], "math", "Math average"), (axes[1], "ood", "OOD average")):
        bases = {p["comparison"]: p for p in points if p["role"] == "baseline"}
        for p in points:
            colour = colours[p["comparison"]]
            if _finite(p[key]):
                marker = "o" if p["role"] == "baseline" else "*"
                ax.scatter(*p[key], color=colour, marker=marker, s=60 if marker == "*" else 30, zorder=3)
                ax.annotate(p["label"], p[key], textcoords="offset points", xytext=(4, 4), fontsize=8)
                base = bases.get(p["comparison"])
                if p["role"] == "focal" and base is not None and _finite(base[key]):
                    ax.annotate("", p[key], base[key], arrowprops={"arrowstyle": "->", "color": colour, "alpha": 0.7})
            ref = (p.get("paper") or {}) if k == 256 else {}  # the paper reports pass@256 only
            ref_pair = (ref.get(f"{key}_pass1"), ref.get(f"{key}_pass256"))
            if _finite(ref_pair):
                ax.scatter(*ref_pair, facecolors="none", edgecolors=colour, marker="o" if p["role"] == "baseline" else "*",
                           s=60, zorder=2)
        ax.set_xlabel("pass@1 (%)")
        ax.set_ylabel(f"pass@{k} (%)")
        ax.set_title(title)
    if k == 256 and any(p.get("paper") for p in points):
        axes[1].text(0.02, 0.02, "hollow: paper", transform=axes[1].transAxes, fontsize=8)
    return fig


def draw_passk_curves(curves: list[dict]):
    """Fig 1b/1c style: average pass@k against k (log2 axis), math and OOD panels, one line per selected run.

    `curves` as `fgrpo_sim.llm.evaluation.report.passk_curves` returns them: {"label", "comparison", "role",
    "math": {k: pass@k %}, "ood": {...}, "paper": None | {"source", "math": {k: %}, "ood": {...}}}.
    The paper's curves (Tables 12-14, k up to 256) are dashed reference lines in the run's colour.
    """
    fig, axes = new_figure(1, 2, width=4.2, height=3.6)
    styles = {"baseline": "o", "focal": "*"}
    for ax, key, title in ((axes[0], "math", "Math average"), (axes[1], "ood", "OOD average")):
        any_paper = False
        for i, c in enumerate(curves):
            colour = f"C{i % 10}"
            points = sorted((int(k), v) for k, v in (c.get(key) or {}).items())
            if points:
                ax.plot([k for k, _ in points], [v for _, v in points], color=colour, marker=styles.get(c["role"], "o"),
                        markersize=4, label=c["label"])
            ref = sorted((int(k), v) for k, v in ((c.get("paper") or {}).get(key) or {}).items())
            if ref:
                any_paper = True
                ax.plot([k for k, _ in ref], [v for _, v in ref], color=colour, linestyle="--", linewidth=1,
                        alpha=0.8, label=f"{c['label']} (paper)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("k")
        ax.set_ylabel("pass@k (%)")
        ax.set_title(title + (" (dashed: paper)" if any_paper else ""))
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    return fig


def draw_report_figures(report: dict) -> dict:
    """The figures of an `fgrpo llm report` (`fgrpo_sim.llm.evaluation.report.build_report`'s dict):
    file name -> Figure, pass1_vs_passk.png always, passk_curves.png when the report has curves."""
    figures = {"pass1_vs_passk.png": draw_pass1_vs_passk(report["points"], k=report["k"])}
    if report.get("curves"):
        figures["passk_curves.png"] = draw_passk_curves(report["curves"])
    return figures
