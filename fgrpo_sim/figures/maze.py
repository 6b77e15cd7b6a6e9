"""Maze figures (paper Sec. 5.2): Table 4 analogue, Fig 6 (-log pass@K vs N) and Fig 7 (training curves).

compute() reads the summary of a finished `fgrpo maze run` from FigureOptions.data_dir / "maze" / PRESET
(`--full` selects the paper preset, else cpu); when that folder has no summary it falls back to the
committed fgrpo_sim/results/maze-results.json of the same preset, and only when neither exists does it run the
experiment there (times of the cpu preset: benchmarks/RESULTS.md, "Command times").
"""

from __future__ import annotations

import math
from pathlib import Path

from fgrpo_sim.figures.registry import FigureOptions, add_figure
from fgrpo_sim.packaged import committed_result

COMMITTED = committed_result("maze-results.json")
GAMMA_STYLE = {0.0: ("GRPO", "tab:gray", "o"), 0.5: ("F-GRPO $\\gamma$=0.5", "tab:blue", "s"),
               1.0: ("F-GRPO $\\gamma$=1.0", "tab:red", "^")}
FIG6_KS = ("1", "128", "1024", "2048")  # Fig 6's panels: pass@1 and the large K where the paper's gap shows
FIG7_N = 8  # Fig 7's group size (the paper's Fig 7 shows one N too); another N when the summary lacks it


def _style(gamma: float):
    return GAMMA_STYLE.get(float(gamma), (f"F-GRPO $\\gamma$={gamma:g}", None, "d"))


def _results_folder(options: FigureOptions) -> tuple[str, Path]:
    preset_name = "paper" if options.full else "cpu"
    return preset_name, Path(options.data_dir or "runs/figure-data") / "maze" / preset_name


def _existing_summary(options: FigureOptions) -> dict | None:
    """A finished run's summary in the data folder, else the committed one of the same preset, else None."""
    from fgrpo_sim.maze.experiment import same_settings
    from fgrpo_sim.maze.presets import get_preset

    preset_name, folder = _results_folder(options)
    from fgrpo_sim.jsonl import read_json_file

    from fgrpo_sim.maze.summary_record import check_summary

    if (folder / "summary.json").exists():  # checked field by field: a damaged record is one line, not a figure
        return check_summary(read_json_file(folder / "summary.json", "maze summary"), folder / "summary.json")
    if COMMITTED.exists():
        committed = check_summary(read_json_file(COMMITTED, "maze summary"), COMMITTED)
        if same_settings(committed.get("preset", {}), get_preset(preset_name).to_dict()):
            return committed
    return None


def refuse_paper_run_unconfirmed(options: FigureOptions) -> None:
    """`--full` with no finished paper-size results would start App. K's Maze (days on a GPU): ask first."""
    if not options.full or options.yes or _existing_summary(options) is not None:
        return
    _, folder = _results_folder(options)
    raise ValueError(f"--full would run the paper-size Maze experiment (App. K: 1M 17x17 mazes, 20K RL steps, days "
                     f"on a GPU) because {folder}/summary.json does not exist; run it with `fgrpo maze run --preset "
                     f"paper --out {folder}` (resumable), or add --yes to start it from here")


def load_summary(options: FigureOptions) -> dict:
    refuse_paper_run_unconfirmed(options)  # also when compute is called without the CLI's preflight
    existing = _existing_summary(options)
    if existing is not None:
        return existing
    from fgrpo_sim.maze.experiment import run_experiment
    from fgrpo_sim.maze.presets import get_preset

    from fgrpo_sim.sim.categorical import resolve_device

    preset_name, folder = _results_folder(options)
    device = resolve_device(options.device).type  # cuda without CUDA: one-line error before training
    return run_experiment(get_preset(preset_name), folder, progress=options.progress, device=device)


def table_rows(summary: dict, ks=("1", "128", "256")) -> list[dict]:
    """Table 4 analogue: one row per (N, gamma) with mean and 95% CI over seeds (percent)."""
    rows = []
    for cell in summary["cells"]:
        row = {"N": cell["N"], "gamma": cell["gamma"], "seeds": len(cell["seeds"])}
        for k in ks:
            stat = cell["pass_at_k"][k]
            row[f"pass@{k}"] = (100 * stat["mean"], None if stat["lo"] is None else 100 * stat["lo"],
                                None if stat["hi"] is None else 100 * stat["hi"])
        rows.append(row)
    return rows


def format_table(summary: dict) -> str:
    """Markdown: rows N, columns pass@1/128/256, each cell 'GRPO / F-GRPO 0.5 / F-GRPO 1.0' as mean ± CI half-width."""
    gammas = sorted({c["gamma"] for c in summary["cells"]})
    ns = sorted({c["N"] for c in summary["cells"]})
    by = {(c["N"], c["gamma"]): c for c in summary["cells"]}
    head = "gamma " + " / ".join(f"{g:g}" for g in gammas)
    lines = [f"| N | pass@1 ({head}) | pass@128 | pass@256 |", "| --- | --- | --- | --- |"]
    sft = summary.get("sft", {}).get("pass_at_k", {})
    if all(k in sft for k in ("1", "128", "256")):
        def fmt(stat):
            half = "" if stat["lo"] is None else f" ± {100 * (stat['hi'] - stat['mean']):.1f}"
            return f"{100 * stat['mean']:.1f}{half}"
        lines.append("| SFT (before RL) | " + " | ".join(fmt(sft[k]) for k in ("1", "128", "256")) + " |")
    for n in ns:
        parts = []
        for k in ("1", "128", "256"):
            vals = []
            for g in gammas:
                cell = by.get((n, g))
                if cell is None:
                    vals.append("-")
                    continue
                s = cell["pass_at_k"][k]
                half = "" if s["lo"] is None else f" ± {100 * (s['hi'] - s['mean']):.1f}"
                vals.append(f"{100 * s['mean']:.1f}{half}")
            parts.append(" / ".join(vals))
        lines.append(f"| {n} | " + " | ".join(parts) + " |")
    return "\n".join(lines)


def paired_differences(summary: dict, k: str) -> list[dict]:
    """Per-seed F-GRPO minus GRPO held-out pass@K at the same N (seeds share their SFT checkpoint, so the
    comparison is paired), with the mean and 95% paired t-interval: one row per (N, gamma > 0)."""
    from fgrpo_sim.maze.experiment import _t_interval

    by = {(c["N"], c["gamma"]): c for c in summary["cells"]}
    rows = []
    for (n, gamma), cell in sorted(by.items()):
        base = by.get((n, 0.0))
        if gamma == 0.0 or base is None:
            continue
        grpo = dict(zip(base["seeds"], base["pass_at_k"][k]["values"]))
        focal = dict(zip(cell["seeds"], cell["pass_at_k"][k]["values"]))
        seeds = sorted(set(grpo) & set(focal))
        diffs = [focal[s] - grpo[s] for s in seeds]
        rows.append({"N": n, "gamma": gamma, "seeds": seeds, "differences": diffs, **_t_interval(diffs)})
    return rows


def draw_fig6(summary: dict):
    """Top: -log pass@K against N, one panel per K, one line per gamma, 95% CI over seeds as error bars.
    Bottom: the paired difference F-GRPO minus GRPO per seed (dots) with its 95% paired t-interval."""
    import matplotlib.ticker as ticker

    from fgrpo_sim.figures.style import new_figure

    ks = [k for k in FIG6_KS if k in summary["cells"][0]["pass_at_k"]]
    fig, axes = new_figure(2, len(ks), width=3.2, height=3.0, squeeze=False)
    gammas = sorted({c["gamma"] for c in summary["cells"]})
    all_ns = sorted({c["N"] for c in summary["cells"]})
    for ax, k in zip(axes[0], ks):
        for j, g in enumerate(gammas):
            cells = sorted((c for c in summary["cells"] if c["gamma"] == g), key=lambda c: c["N"])
            ns = [c["N"] for c in cells]
            mean = [-math.log(max(c["pass_at_k"][k]["mean"], 1e-12)) for c in cells]
            lo = [mean[i] + math.log(max(c["pass_at_k"][k]["hi"], 1e-12)) if c["pass_at_k"][k]["hi"] is not None
                  else 0.0 for i, c in enumerate(cells)]
            hi = [-math.log(max(c["pass_at_k"][k]["lo"], 1e-12)) - mean[i] if c["pass_at_k"][k]["lo"] is not None
                  else 0.0 for i, c in enumerate(cells)]
            label, color, marker = _style(g)
            dodge = 2 ** (0.06 * (j - (len(gammas) - 1) / 2))  # spread the error bars of one N apart
            ax.errorbar([x * dodge for x in ns], mean, yerr=[lo, hi], label=label, color=color, marker=marker,
                        capsize=3)
        ax.set_title(f"K = {k}")
        # two lines: on one, the label is taller than the panel and runs into the title above it
        ax.set_ylabel("-log pass@K\n(held-out, lower is better)" if k == ks[0] else "-log pass@K")
    for ax, k in zip(axes[1], ks):
        rows = paired_differences(summary, k)
        focal_gammas = sorted({r["gamma"] for r in rows})
        for j, g in enumerate(focal_gammas):
            label, color, marker = _style(g)
            dodge = 2 ** (0.08 * (j - (len(focal_gammas) - 1) / 2))
            for r in (r for r in rows if r["gamma"] == g):
                x = r["N"] * dodge
                ax.plot([x] * len(r["differences"]), [100 * d for d in r["differences"]], ls="none", marker=marker,
                        color=color, alpha=0.35, ms=4)
                if r["lo"] is not None:
                    ax.errorbar([x], [100 * r["mean"]], yerr=[[100 * (r["mean"] - r["lo"])], [100 * (r["hi"] - r["mean"])]],
                                color=color, marker=marker, ms=6, capsize=4, lw=1.8)
        ax.axhline(0.0, color="k", lw=0.8)
        ax.set_title(f"F-GRPO minus GRPO, pass@{k}")
        ax.set_ylabel("paired difference (points)" if k == ks[0] else "points")
    for ax in axes.flat:
        ax.set_xscale("log", base=2)
        ax.set_xticks(all_ns)
        ax.get_xaxis().set_major_formatter(ticker.ScalarFormatter())
        ax.get_xaxis().set_minor_locator(ticker.NullLocator())
        ax.set_xlabel("group size N")
    handles, labels = axes[0][0].get_legend_handles_labels()
    handles.append(__import__("matplotlib").lines.Line2D([], [], color="0.4", marker="o", ls="none", alpha=0.35))
    labels.append("one seed (bottom row)")
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels))
    p = summary["preset"]
    fig.suptitle(f"Maze {p['size']}x{p['size']} ({p['name']} preset), {p['seeds']} seeds. Top: -log pass@K vs N, mean "
                 "and 95% CI over seeds. Bottom: F-GRPO minus GRPO per seed (same SFT checkpoint), mean and "
                 "95% paired t-interval; above 0 = F-GRPO better", fontsize=10, wrap=True)
    return fig


def fig7_group_size(summary: dict) -> int:
    """The N fig7-maze draws by default: FIG7_N when the summary holds it, else its smallest N."""
    ns = sorted({c["N"] for c in summary["cells"]})
    return FIG7_N if FIG7_N in ns else ns[0]


def draw_fig7(summary: dict, n: int | None = None):
    """Training reward, held-out pass@1 and pass@2048 over RL steps for one N (default 8), per gamma:
    the seed mean as a line, the seeds' range as a band (or, for summaries without per-seed curves, each
    seed's final held-out value as dots with the 95% t-interval at the last step)."""
    import numpy as np

    from fgrpo_sim.figures.style import new_figure

    n = n if n is not None else fig7_group_size(summary)
    cells = sorted((c for c in summary["cells"] if c["N"] == n), key=lambda c: c["gamma"])
    big = str(max(int(k[len("pass@"):]) for k in cells[0]["curve"][0]
                  if k.startswith("pass@") and k[len("pass@"):].isdigit()))
    window = 10
    panels = [("train_reward", "training reward", f"training reward\n(mean of 8 prompts x N, {window}-step window)"),
              ("pass@1", "held-out pass@1", "held-out pass@1"),
              (f"pass@{big}", f"held-out pass@{big}", f"held-out pass@{big}")]
    fig, axes = new_figure(1, 3, width=3.5, height=3.1)
    sft = summary.get("sft", {}).get("pass_at_k", {})
    seeds = summary["preset"]["seeds"]
    for ax, (key, title, ylabel) in zip(axes, panels):
        for c in cells:
            label, color, marker = _style(c["gamma"])
            rows = [r for r in c["curve"] if key in r]
            steps = np.array([r["step"] for r in rows], dtype=float)
            mean = np.array([r[key] for r in rows])
            per_seed = np.array([r[f"{key}_seeds"] for r in rows]) if all(f"{key}_seeds" in r for r in rows) else None
            if key == "train_reward":  # one step's reward is a mean over only 8 prompts: smooth it
                w = min(window, len(mean))
                smooth = lambda v: np.convolve(v, np.ones(w) / w, mode="valid")  # noqa: E731
                steps, mean = steps[w - 1:], smooth(mean)
                if per_seed is not None:
                    per_seed = np.stack([smooth(per_seed[:, i]) for i in range(per_seed.shape[1])], axis=1)
            ax.plot(steps, mean, label=label, color=color, marker=None if key == "train_reward" else marker, ms=3)
            if per_seed is not None:
                ax.fill_between(steps, per_seed.min(axis=1), per_seed.max(axis=1), color=color, alpha=0.15, lw=0)
            elif key.startswith("pass@") and key[5:] in c["pass_at_k"]:
                final = c["pass_at_k"][key[5:]]
                x = steps[-1] + 6 + 5 * (c["gamma"] * 2)  # dodge the gammas right of the curves' end
                ax.plot([x] * len(final["values"]), final["values"], ls="none", marker=marker, color=color, ms=3.5,
                        alpha=0.5)
                if final["lo"] is not None:
                    ax.errorbar([x], [final["mean"]], yerr=[[final["mean"] - final["lo"]], [final["hi"] - final["mean"]]],
                                color=color, capsize=3, lw=1.2)
        if key.startswith("pass@") and key[5:] in sft:
            ax.axhline(sft[key[5:]]["mean"], color="k", ls=":", lw=1, label="SFT (before RL)")
        ax.set_xlabel("RL step")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
    has_band = any(f"{panels[1][0]}_seeds" in r for c in cells for r in c["curve"])
    spread = (f"band: range over the {seeds} seeds" if has_band else
              f"dots at the end: each seed's final value, bar: 95% t-interval over {seeds} seeds")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels))
    p = summary["preset"]
    fig.suptitle(f"Maze {p['size']}x{p['size']} ({p['name']} preset), N = {n}: line = mean over {seeds} seeds, "
                 f"{spread}\n(pass@K: unbiased estimator, {p['eval_samples']} samples per held-out maze)", fontsize=10)
    return fig


add_figure("fig6-maze", "Maze: -log pass@K vs group size N for GRPO and F-GRPO (paper Fig 6 analogue)",
           load_summary, draw_fig6, preflight=refuse_paper_run_unconfirmed)
add_figure("fig7-maze", "Maze: training reward, held-out pass@1 and pass@2048 over RL steps (paper Fig 7 analogue)",
           load_summary, draw_fig7, preflight=refuse_paper_run_unconfirmed)
