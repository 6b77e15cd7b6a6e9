"""Theory figures (paper numbering): fig1a, fig3 and fig5 (tail-miss probability), fig4 (focal-weighted advantages).

All numbers come from fgrpo_sim.theory; these functions only choose grids and draw.
"""

from __future__ import annotations

import numpy as np

from fgrpo_sim.figures.registry import FigureOptions, add_figure

_COLORS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e"]


def _log2_axis(ax, n_max):
    ax.set_xscale("log", base=2)
    ax.set_xlim(1, n_max)
    ax.set_xlabel("group size N (rollouts per prompt, log2 scale)")


# ---- Fig. 1(a): the tail-miss probability rises, then falls ------------------------------------------


def compute_fig1a(options: FigureOptions) -> dict:
    from fgrpo_sim.theory import activity_probability, peak_group_size, tail_miss_probability

    mu, n = 0.3, np.arange(1, 129)
    curves = {}
    for rho in (0.05, 0.1, 0.2):
        peak = peak_group_size(mu, mu * rho)
        curves[rho] = dict(prob=tail_miss_probability(n, mu, mu * rho), n_star=peak.n_star, peak=peak.probability)
    return dict(mu=mu, n=n, curves=curves, active=activity_probability(n, mu))


def draw_fig1a(data):
    from fgrpo_sim.figures.style import new_figure

    fig, ax = new_figure(width=7.4)  # wide enough for the curves plus the legend at their right
    ax.plot(data["n"], data["active"], color="0.55", ls=":", lw=1.5, label=r"$\Pr(A_N)$ (group active)")
    for color, (rho, c) in zip(_COLORS, data["curves"].items()):
        ax.plot(data["n"], c["prob"], color=color, lw=2, label=rf"$\Pr(B)$, $\rho = {rho:g}$")
        ax.plot(c["n_star"], c["peak"], marker="*", ms=12, color=color, mec="k", mew=0.6, ls="none")
    _log2_axis(ax, 128)
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("probability")
    ax.set_title(rf"Tail miss: active group, rare correct subset unsampled ($\mu = {data['mu']:g}$)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))  # outside the axes: no curve under it
    return fig


# ---- Fig. 3: three success rates, four rarities, a star at each peak ----------------------------------


def compute_fig3(options: FigureOptions) -> dict:
    from fgrpo_sim.theory import peak_group_size, tail_miss_probability

    n = np.arange(1, 513)
    panels = []
    for mu in (0.8, 0.5, 0.2):
        curves = {}
        for rho in (0.01, 0.05, 0.1, 0.2):
            peak = peak_group_size(mu, mu * rho)
            curves[rho] = dict(prob=tail_miss_probability(n, mu, mu * rho), n_star=peak.n_star, peak=peak.probability)
        panels.append(dict(mu=mu, curves=curves))
    return dict(n=n, panels=panels)


def draw_fig3(data):
    from fgrpo_sim.figures.style import new_figure

    fig, axes = new_figure(1, 3, width=4.3, height=3.6, sharey=True)
    for ax, panel in zip(axes, data["panels"]):
        for color, (rho, c) in zip(_COLORS, panel["curves"].items()):
            ax.plot(data["n"], c["prob"], color=color, lw=1.8, label=rf"$\rho = {rho:g}$ ($N^* = {c['n_star']}$)")
            ax.plot(c["n_star"], c["peak"], marker="*", ms=13, color=color, mec="k", mew=0.6, ls="none")
        _log2_axis(ax, 512)
        ax.set_ylim(0, 1.3)
        ax.set_yticks(np.linspace(0, 1, 6))
        ax.set_title(rf"$\mu = {panel['mu']:g}$")
        ax.legend(loc="upper center", ncol=2, fontsize=7.5, columnspacing=1.0, handlelength=1.5)
    axes[0].set_ylabel(r"tail-miss probability $\Pr(B)$")
    fig.suptitle(r"$\Pr(B) = (1-\tau)^N - (\mu-\tau)^N - (1-\mu)^N$, $\tau = \rho\mu$; stars mark the peak $N^*$")
    return fig


# ---- Fig. 4: focal weighting scales positive and negative advantages ----------------------------------


def compute_fig4(options: FigureOptions) -> dict:
    from fgrpo_sim.theory import focal_advantage_magnitudes

    mu = np.linspace(0.005, 0.995, 397)
    curves = {}
    for gamma in (0.0, 0.5, 1.0):
        pos, neg = focal_advantage_magnitudes(mu, gamma)
        curves[gamma] = dict(pos=pos, neg=neg)
    return dict(mu=mu, curves=curves)


def draw_fig4(data):
    from fgrpo_sim.figures.style import new_figure

    fig, ax = new_figure(width=6.8, height=3.8)
    for color, (gamma, c) in zip(_COLORS, data["curves"].items()):
        ax.plot(data["mu"], c["pos"], color=color, lw=2, label=rf"$g\,|A^+|$, $\gamma = {gamma:g}$")
        ax.plot(data["mu"], c["neg"], color=color, lw=2, ls="--", label=rf"$g\,|A^-|$, $\gamma = {gamma:g}$")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 4)
    ax.set_xlabel(r"success probability $\mu$ of the prompt")
    ax.set_ylabel("advantage magnitude (binary rewards)")
    ax.set_title(r"Focal weight $g = (1-\mu)^\gamma$ on GRPO advantages")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), title="solid: correct\ndashed: incorrect")
    return fig


# ---- Fig. 5: the categorical simulation's rare action ---------------------------------------------------


def compute_fig5(options: FigureOptions) -> dict:
    from fgrpo_sim.sim.categorical.config import CategoricalConfig
    from fgrpo_sim.theory import peak_group_size, tail_miss_probability

    # The simulator's exact start (Q_pos = 0.630075, tau = 6.2967e-5), not the caption's 0.64 (App. J: 0.63) / 6.3e-5.
    start = CategoricalConfig().initial_masses()
    mu, tau = start["q_pos"], start["tau"]
    n = np.unique(np.round(np.logspace(0, 17, 800, base=2)).astype(np.int64))
    powers = 2 ** np.arange(18)
    peak = peak_group_size(mu, tau)
    return dict(mu=mu, tau=tau, n=n, prob=tail_miss_probability(n, mu, tau), powers=powers,
                prob_at_powers=tail_miss_probability(powers, mu, tau), n_star=peak.n_star, peak=peak.probability)


def times_ten(x: float, digits: int = 1) -> str:
    """Mathtext for x in scientific notation: 2.6e-04 -> '2.6 \\times 10^{-4}'."""
    mantissa, exponent = f"{x:.{digits}e}".split("e")
    return rf"{mantissa} \times 10^{{{int(exponent)}}}"


def draw_fig5(data):
    from fgrpo_sim.figures.style import new_figure

    fig, (left, right) = new_figure(1, 2, width=4.6, height=3.6)
    for ax, start in ((left, 1), (right, 2)):  # Pr(B) = 0 at N = 1 has no place on a log axis
        keep, keep_pow = data["n"] >= start, data["powers"] >= start
        ax.plot(data["n"][keep], data["prob"][keep], color=_COLORS[1], lw=2)
        ax.plot(data["powers"][keep_pow], data["prob_at_powers"][keep_pow], "o", color=_COLORS[1], ms=3.5,
                label=r"$N = 2^k$" if ax is right else None, clip_on=False)
        _log2_axis(ax, 2**17)
        ax.set_xlim(1, 2**17.6)  # a little room right of 2^17 so its marker sits inside the axes
        ax.set_ylabel(r"tail-miss probability $\Pr(B)$")
    left.plot(data["n_star"], data["peak"], marker="*", ms=13, color=_COLORS[1], mec="k", mew=0.6, ls="none",
              label=rf"peak $N^* = {data['n_star']}$, $\Pr(B) = {data['peak']:.4f}$")
    left.set_ylim(0, 1.05)
    left.set_title("linear scale")
    left.legend(loc="lower center")
    right.set_yscale("log")
    right.set_ylim(max(1e-6, data["prob"][data["prob"] > 0].min() / 3), 2)
    last = data["prob_at_powers"][-1]
    right.annotate(rf"$N = 2^{{17}}$: $\Pr(B) = {times_ten(last)}$", xy=(2**17, last), xytext=(2**3, last * 3),
                   arrowprops=dict(arrowstyle="->", color="0.3"))
    right.set_title("log scale")
    right.legend(loc="lower left")
    fig.suptitle(rf"Rare correct action at the categorical simulation's start: $\mu = Q_{{pos}} = {data['mu']:.6f}$, "
                 rf"$\tau = {times_ten(data['tau'], 4)}$ (paper: 0.64, $6.3 \times 10^{{-5}}$)")
    return fig


add_figure("fig1a", "Tail-miss probability vs group size, mu = 0.3, rho in {0.05, 0.1, 0.2} (paper Fig. 1a)",
           compute_fig1a, draw_fig1a)
add_figure("fig3", "Tail-miss probability for mu in {0.8, 0.5, 0.2}, four rarities, stars at the peaks (paper Fig. 3)",
           compute_fig3, draw_fig3)
add_figure("fig4", "Focal-weighted |A+| and |A-| vs mu for gamma in {0, 0.5, 1} (paper Fig. 4)", compute_fig4, draw_fig4)
def _fig5_description() -> str:
    from fgrpo_sim.sim.categorical.config import CategoricalConfig  # light: no torch

    start = CategoricalConfig().initial_masses()
    return (f"Tail-miss probability up to N = 2^17 at the categorical simulation's start, mu = Q_pos = "
            f"{start['q_pos']:.6f}, tau = {start['tau'] * 1e5:.4f}e-5 (paper: 0.64 in the Fig. 5 caption, 0.63 in App. J; 6.3e-5)")


add_figure("fig5", _fig5_description(),
           compute_fig5, draw_fig5)
