"""Population figures: the pass@1 / pass@256 frontier over N and gamma, rare mass over training at
N = 8, and the map of the peak group size N*(mu, rho)."""

from __future__ import annotations

from pathlib import Path

from fgrpo_sim.figures.registry import FigureOptions, add_figure
from fgrpo_sim.sim.population_claims import RUNS as CLAIM_RUNS  # the run count of every number docs quote

FAMILY_STYLE = {  # variant family -> (colour, line style, marker)
    "GRPO": ("tab:blue", "-", "o"),
    "F-GRPO gamma=0.5": ("tab:orange", "-", "s"),
    "F-GRPO gamma=1": ("tab:red", "-", "D"),
    "GRPO low-LR (x m_0.5)": ("tab:gray", "--", "s"),
    "GRPO low-LR (x m_1)": ("black", "--", "D"),
}


#: styles of the variants a user's own table may hold beyond FAMILY_STYLE's (another gamma, another --method)
EXTRA_STYLES = (("tab:green", "-", "^"), ("tab:purple", "-", "v"), ("tab:brown", "--", "^"), ("tab:pink", "--", "v"),
                ("tab:olive", "-.", "P"), ("tab:cyan", "-.", "X"))


def family_styles(variants) -> dict:
    """{variant: (colour, line style, marker)} of the variants present: FAMILY_STYLE's first, in its order, then
    any other a user's table holds (`fgrpo figures --from`), in order of appearance."""
    present = list(dict.fromkeys(variants))
    styles = {f: style for f, style in FAMILY_STYLE.items() if f in present}
    others = [v for v in present if v not in FAMILY_STYLE]
    styles.update({v: EXTRA_STYLES[i % len(EXTRA_STYLES)] for i, v in enumerate(others)})
    return styles


def variant_label(family: str) -> str:
    """A variant's name as the other figures write it: Greek gamma, m_gamma as a subscript."""
    return (family.replace("gamma=", r"$\gamma$ = ").replace("m_0.5", r"$m_{0.5}$").replace("m_1", r"$m_1$"))


def _grouped_bars(ax, values_by_family: dict, tick_labels: list, *, fontsize: int) -> float:
    """One bar per family (in family_styles' colours) inside each group; returns the bar width."""
    width = 0.8 / max(len(values_by_family), 1)
    styles = family_styles(values_by_family)
    for i, (family, values) in enumerate(values_by_family.items()):
        ax.bar([j + i * width for j in range(len(values))], values, width=width,
               color=styles[family][0], label=variant_label(family), alpha=0.85)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(tick_labels))])
    ax.set_xticklabels(tick_labels, fontsize=fontsize)
    return width

def _sweep(options: FigureOptions, group_sizes, gammas, quick: dict, full: dict, beta=(1.0, 1.0)):
    from fgrpo_sim.sim.population import PopulationSpec, TrainSpec, make_population, run_sweep, sweep_variants

    settings = full if options.full else quick
    population = make_population(PopulationSpec(num_prompts=settings["prompts"], beta_a=beta[0], beta_b=beta[1],
                                                seed=options.seed))
    base = TrainSpec(steps=settings["steps"], runs=settings["runs"], prompt_batch=settings["batch"],
                     eval_every=settings["eval_every"], seed=options.seed)
    frame = run_sweep(population, sweep_variants(base, group_sizes, gammas), device=options.device,
                      progress=options.progress)
    return frame, settings, population


# ------------------------------------------------------------------ frontier

FRONTIER_BETA = (0.5, 1.0)  # a hard-leaning mix, so that pass@256 is not pinned at 1 from the start


_LABEL_OFFSETS = ((-4, 3), (4, -3), (-4, -3), (4, 3), (0, 6))  # points; one per family, in FAMILY_STYLE order


def compute_frontier(options: FigureOptions):
    sizes = (2, 4, 8, 16, 32, 64, 128) if options.full else (2, 4, 8, 16, 32)
    frame, settings, _ = _sweep(
        options, sizes, (0.0, 0.5, 1.0),
        quick=dict(prompts=256, steps=150, runs=CLAIM_RUNS, batch=32, eval_every=150),
        full=dict(prompts=512, steps=400, runs=8, batch=64, eval_every=100), beta=FRONTIER_BETA)
    title = (f"Population simulator, final state of each run across group sizes (the number at each point is N): "
             f"{settings['prompts']} prompts, $\\mu_0$ ~ Beta{FRONTIER_BETA}, $\\rho$ = 0.1, Adam lr 0.05, "
             f"{settings['steps']} steps x {settings['batch']} prompts, mean of {settings['runs']} runs.\nAcross N, the "
             "low-LR controls reach a given pass@1 with more rare mass than F-GRPO; along training at N = 8 "
             "(population-rare-mass (b)) F-GRPO keeps more.")
    return frontier_data(frame, title)


def frontier_data(frame, title: str) -> dict:
    """What draw_frontier draws from a per-prompt population table (one or more N)."""
    from fgrpo_sim.sim.population import final_summary

    initial = frame[(frame["step"] == 0) & (frame["bucket"] == "all")][["pass@1", "pass@256"]].mean()
    return {"summary": final_summary(frame), "title": title,
            "initial": {"pass@1": float(initial["pass@1"]), "pass@256": float(initial["pass@256"])}}


def _read_population(path, shared: bool = False):
    """The user's `fgrpo simulate population --out` table (every row checked) and the words a title says of it."""
    from fgrpo_sim.figures.from_file import POPULATION_SCHEMA, SHARED_SCHEMA, read_table

    command = "fgrpo simulate population" + (" --sharing shared" if shared else "")
    # the shared mode's table has every per-prompt column too: its 'split' tells it apart
    refuse = None if shared else ("split", "it is a --sharing shared table, which population-shared draws")
    frame = read_table(path, SHARED_SCHEMA if shared else POPULATION_SCHEMA, command, refuse)
    if not (frame["step"] == 0).any():
        raise ValueError(f"--from {path} has no step 0 row (the initial policy the figure compares with)")
    words = (f"{Path(path).name}: {frame['run'].nunique()} runs, {int(frame['step'].max())} steps, "
             f"lr {', '.join(f'{x:g}' for x in sorted(set(frame['lr'])))}")
    return frame, words


def load_frontier(path) -> dict:
    frame, words = _read_population(path)
    return frontier_data(frame, f"Population simulator, final state of each run across group sizes (the number at "
                                f"each point is N), from {words}")


def draw_frontier(data):
    from fgrpo_sim.figures.style import new_figure

    summary = data["summary"]
    fig, axes = new_figure(1, 2, width=4.8, height=3.8)
    for ax, metric, label in ((axes[0], "pass@256", "pass@256 (exact, from correct mass)"),
                              (axes[1], "rare_mass_retained", "rare-correct mass / initial")):
        for i, (family, (colour, ls, marker)) in enumerate(family_styles(summary["variant"]).items()):
            rows = summary[summary["variant"] == family].sort_values("N")
            ax.plot(rows["pass@1"], rows[metric], ls=ls, marker=marker, color=colour, label=variant_label(family), ms=4, zorder=2)
            # every point names its N; each family puts its labels on its own side of the point, so the labels
            # of neighbouring points of different families do not land on one another
            dx, dy = _LABEL_OFFSETS[i % len(_LABEL_OFFSETS)]
            for _, r in rows.iterrows():
                ax.annotate(f"{int(r['N'])}", (r["pass@1"], r[metric]), textcoords="offset points",
                            xytext=(dx, dy), ha="right" if dx < 0 else "left", va="bottom" if dy > 0 else "top",
                            fontsize=6.5, color=colour, zorder=3,
                            bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.8))
        ax.plot([data["initial"]["pass@1"]], [data["initial"][metric] if metric in data["initial"] else 1.0],
                marker="*", color="green", ms=10, ls="none", label="initial policy")
        ax.set_xlabel("pass@1 (mean correct mass over prompts)")
        ax.set_ylabel(label)
    axes[0].set_title("(a) pass@1 vs pass@256 after training")
    axes[1].set_title("(b) pass@1 vs rare-correct mass kept, after training")
    axes[1].legend(loc="upper left", fontsize=9)
    fig.suptitle(data["title"], fontsize=9)
    return fig


# ------------------------------------------------------------------ rare mass over training

def compute_rare_mass(options: FigureOptions):
    frame, settings, _ = _sweep(
        options, (8,), (0.0, 0.5, 1.0),
        quick=dict(prompts=256, steps=300, runs=CLAIM_RUNS, batch=32, eval_every=15),
        full=dict(prompts=512, steps=600, runs=8, batch=64, eval_every=20))
    keep = ["variant", "run", "step", "bucket", "rare_mass_retained", "pass@1", "tail_miss_observed",
            "tail_miss_predicted"]
    s = settings
    return {"frame": frame[keep], "title": f"GRPO vs F-GRPO vs low-LR control at N = 8: {s['prompts']} prompts, "
            f"$\\mu_0$ ~ Beta(1, 1), $\\rho$ = 0.1, Adam lr 0.05, {s['batch']} prompts/step, mean of {s['runs']} runs"}


def load_rare_mass(path) -> dict:
    """population-rare-mass from the user's `fgrpo simulate population --out FILE`: its N = 8 rows, or its
    smallest N when it has no 8 (the title names the N drawn)."""
    from fgrpo_sim.figures.from_file import one_group_size

    frame, words = _read_population(path)
    n = one_group_size(frame)
    return {"frame": frame[frame["N"] == n], "title": f"Rare-correct mass at N = {n}, from {words}"}


def draw_rare_mass(data):
    from fgrpo_sim.figures.style import new_figure

    frame = data["frame"]
    fig, axes = new_figure(1, 3, width=3.7, height=3.4)
    overall = frame[frame["bucket"] == "all"]
    for family, (colour, ls, _) in family_styles(frame["variant"]).items():
        rows = overall[overall["variant"] == family]
        mean = rows.groupby("step")[["rare_mass_retained", "pass@1"]].mean()
        axes[0].plot(mean.index, mean["rare_mass_retained"], color=colour, ls=ls, label=variant_label(family))
        axes[1].plot(mean["pass@1"], mean["rare_mass_retained"], color=colour, ls=ls, label=variant_label(family))
    last = frame[frame["step"] == frame["step"].max()]
    buckets = [b for b in dict.fromkeys(frame["bucket"]) if b != "all"]
    families = list(family_styles(frame["variant"]))
    _grouped_bars(axes[2], {
        family: [last[(last["variant"] == family) & (last["bucket"] == b)]["rare_mass_retained"].mean() for b in buckets]
        for family in families
    }, [b.replace("mu0 ", "") for b in buckets], fontsize=9)
    axes[2].set_xlabel(r"initial success rate $\mu_0$ (bucket)")
    axes[2].set_ylabel("rare-correct mass / initial, at the end")
    axes[2].axhline(1.0, color="gray", lw=0.8)
    axes[0].set_ylabel("rare-correct mass / initial")
    axes[1].set_ylabel("rare-correct mass / initial")
    axes[0].set_xlabel("training step")
    axes[1].set_xlabel("pass@1 along training")
    axes[0].set_title("(a) rare-correct mass, all prompts")
    axes[1].set_title("(b) the same at equal pass@1")
    axes[2].set_title("(c) by difficulty")
    # one legend for the three panels, below them: inside (a) it lay over the curves (issue 46)
    fig.legend(handles=axes[0].get_legend_handles_labels()[0], loc="outside lower center",
               ncols=len(families), fontsize=9)
    fig.suptitle(data["title"], fontsize=9)
    return fig


# ------------------------------------------------------------------ peak map

def compute_peak_map(options: FigureOptions):
    import numpy as np

    from fgrpo_sim import theory

    mu = np.linspace(0.02, 0.98, 97 if options.full else 49)
    rho = np.geomspace(1e-3, 0.5, 120 if options.full else 60)
    grid_mu, grid_rho = np.meshgrid(mu, rho)
    peak = theory.peak_group_size(grid_mu, grid_rho * grid_mu)
    return {"mu": mu, "rho": rho, "n_star": np.asarray(peak.n_star, float),
            "probability": np.asarray(peak.probability, float)}


def draw_peak_map(data):
    import numpy as np
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import NullFormatter, NullLocator

    from fgrpo_sim.figures.style import new_figure

    fig, axes = new_figure(1, 2, width=5.0, height=3.9)
    fig.get_layout_engine().set(w_pad=0.12)  # room between (a)'s colorbar label and (b)'s y-label
    mu, rho = data["mu"], data["rho"]
    top = data["n_star"].max()
    mesh = axes[0].pcolormesh(mu, rho, data["n_star"], norm=LogNorm(vmin=2, vmax=top), cmap="viridis", shading="auto")
    levels = [n for n in (4, 8, 16, 32, 64, 128, 256, 512) if n < top]
    contours = axes[0].contour(mu, rho, data["n_star"], levels=levels, colors="white", linewidths=0.7)
    # short labels (the level only) spaced along the lines, so neighbouring contours' labels do not collide
    axes[0].clabel(contours, fmt=lambda v: f"{int(v)}", fontsize=7, inline_spacing=2)
    bar = fig.colorbar(mesh, ax=axes[0], label=r"peak group size $N^*$ (white contours)")
    ticks = [n for n in (2, 4, 8, 16, 32, 64, 128, 256, 512) if n <= top]
    bar.set_ticks(ticks, labels=[str(n) for n in ticks])
    bar.ax.yaxis.set_minor_locator(NullLocator())
    bar.ax.yaxis.set_minor_formatter(NullFormatter())
    prob = axes[1].pcolormesh(mu, rho, data["probability"], vmin=0, vmax=1, cmap="magma", shading="auto")
    bar = fig.colorbar(prob, ax=axes[1], label=r"$\Pr(B)$ at $N^*$")
    bar.set_ticks(np.linspace(0, 1, 11))
    for ax in axes:
        ax.set_yscale("log")
        ax.set_xlabel(r"success probability $\mu$")
        ax.set_ylabel(r"rare share $\rho = \tau / \mu$")
        ax.grid(False)
    axes[0].set_title(r"(a) $N^* = \mathrm{argmax}_N\, \Pr(B)$ (Lemma 3.1)")
    axes[1].set_title(r"(b) the peak tail-miss probability $\Pr(B)$ at $N^*$")
    fig.suptitle(r"Where the tail miss is worst: rarer modes (small $\rho$) and extreme success rates "
                 r"($\mu$ near 0 or 1) push $N^*$ up", fontsize=10)
    return fig


add_figure("population-frontier",
           "Population simulator: pass@1 vs pass@256 and rare mass over N, GRPO / F-GRPO / low-LR control",
           compute_frontier, draw_frontier, load=load_frontier)
add_figure("population-rare-mass",
           "Population simulator: rare-correct mass over training at N = 8, GRPO vs F-GRPO vs low-LR control",
           compute_rare_mass, draw_rare_mass, load=load_rare_mass)
add_figure("peak-map", "Peak group size N*(mu, rho) of Lemma 3.1 over the (mu, rho) plane, with Pr(B) at the peak",
           compute_peak_map, draw_peak_map)


# ------------------------------------------------------------------ shared-parameter population

SHARED_QUICK = dict(prompts=256, heldout=256, steps=300, runs=CLAIM_RUNS, batch=32, eval_every=10)
SHARED_FULL = dict(prompts=512, heldout=512, steps=600, runs=8, batch=64, eval_every=10)
SHARED_LR = 0.01  # Adam, on the shared strategy logits


def compute_shared(options: FigureOptions):
    """N = 8 on the shared-strategy population (default SharedPopulationSpec): GRPO, F-GRPO 0.5 / 1, low-LR."""
    from fgrpo_sim.sim.population import TrainSpec, sweep_variants
    from fgrpo_sim.sim.population_shared import SharedPopulationSpec, make_shared_population, run_shared_sweep

    s = SHARED_FULL if options.full else SHARED_QUICK
    population = make_shared_population(SharedPopulationSpec(num_prompts=s["prompts"], heldout_prompts=s["heldout"],
                                                             seed=options.seed))
    base = TrainSpec(steps=s["steps"], runs=s["runs"], prompt_batch=s["batch"], eval_every=s["eval_every"],
                     lr=SHARED_LR, seed=options.seed)
    frame = run_shared_sweep(population, sweep_variants(base, (8,), (0.0, 0.5, 1.0)), device=options.device,
                             progress=options.progress)
    keep = ["variant", "run", "step", "split", "bucket", "pass@1", "pass@256", "rare_mass_retained"]
    return {"frame": frame[keep], "title": f"Shared strategy logits, N = 8: {s['prompts']} training + {s['heldout']} "
            "held-out prompts (4 common, 12 rare, 8 wrong strategies; 25% rare-only prompts), Adam lr "
            f"{SHARED_LR}, {s['steps']} steps x {s['batch']} prompts, mean of {s['runs']} runs"}


def load_shared(path) -> dict:
    """population-shared from the user's `fgrpo simulate population --sharing shared --out FILE`: its N = 8 rows,
    or its smallest N (the title names it). Without held-out prompts there is nothing to draw."""
    from fgrpo_sim.figures.from_file import one_group_size

    frame, words = _read_population(path, shared=True)
    if not (frame["split"] == "heldout").any():
        raise ValueError(f"--from {path} has no held-out rows (split 'heldout'), which population-shared draws; "
                         "run `fgrpo simulate population --sharing shared` with --heldout-prompts > 0")
    n = one_group_size(frame)
    return {"frame": frame[frame["N"] == n], "title": f"Shared strategy logits, N = {n}, from {words}"}


def draw_shared(data):
    from fgrpo_sim.figures.style import new_figure

    frame = data["frame"]
    fig, axes = new_figure(1, 3, width=3.8, height=3.5)
    held = frame[(frame["split"] == "heldout") & (frame["bucket"] == "all")]
    styles = family_styles(frame["variant"])
    families = list(styles)
    for family in families:
        colour, ls, marker = styles[family]
        mean = held[held["variant"] == family].groupby("step")[["pass@1", "pass@256"]].mean()
        axes[0].plot(mean.index, mean["pass@256"], color=colour, ls=ls, label=variant_label(family))
        axes[1].plot(mean["pass@1"], mean["pass@256"], color=colour, ls=ls, label=variant_label(family))
        axes[1].plot(mean["pass@1"].iloc[-1:], mean["pass@256"].iloc[-1:], color=colour, marker=marker, ls="none")
    start = held[held["step"] == 0][["pass@1", "pass@256"]].mean()
    axes[0].axhline(start["pass@256"], color="green", lw=0.8, ls=":", label="initial policy")
    axes[1].plot([start["pass@1"]], [start["pass@256"]], marker="*", color="green", ms=10, ls="none",
                 label="initial policy")
    last = frame[(frame["step"] == frame["step"].max()) & (frame["bucket"] != "all")]
    groups = [(split, bucket) for split in ("train", "heldout") for bucket in ("common-solvable", "rare-only")]
    width = _grouped_bars(axes[2], {
        family: [last[(last["variant"] == family) & (last["split"] == sp) & (last["bucket"] == b)]["pass@256"].mean()
                 for sp, b in groups]
        for family in families
    }, [f"{sp.replace('heldout', 'held-out')}\n{b.replace('-solvable', '')}" for sp, b in groups], fontsize=9)
    initial = frame[(frame["step"] == 0) & (frame["bucket"] != "all")]
    for j, (sp, b) in enumerate(groups):
        value = initial[(initial["split"] == sp) & (initial["bucket"] == b)]["pass@256"].mean()
        axes[2].plot([j - width / 2, j + 0.8 - width / 2], [value, value], color="green", ls=":", lw=1.2,
                     label="initial policy" if j == 0 else None)
    axes[2].set_ylabel("pass@256 at the end (dotted: initial)")
    axes[2].set_xlabel("split / prompts (common: solvable by a common strategy)")
    axes[0].set_xlabel("training step")
    axes[0].set_ylabel("held-out pass@256 (exact)")
    axes[1].set_xlabel("held-out pass@1 along training")
    axes[1].set_ylabel("held-out pass@256")
    axes[0].set_title("(a) held-out pass@256 over training")
    axes[1].set_title("(b) the same against pass@1")
    axes[2].set_title("(c) by split and prompt type")
    # one legend for the three panels, below them: inside (a) it lay over the curves (issue 46)
    fig.legend(handles=axes[0].get_legend_handles_labels()[0], loc="outside lower center",
               ncols=len(families) + 1, fontsize=9)
    fig.suptitle(data["title"], fontsize=9)
    return fig


add_figure("population-shared",
           "Shared-strategy population at N = 8: held-out pass@256 falls under GRPO while pass@1 rises; F-GRPO / low-LR",
           compute_shared, draw_shared, load=load_shared)
