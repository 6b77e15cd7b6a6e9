"""Figures carry their message: Greek symbols, enough colorbar ticks, legends off the curves."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from fgrpo_sim.figures.registry import FigureOptions  # noqa: E402


def test_peak_map_uses_greek_symbols_and_readable_colorbars():
    import matplotlib.pyplot as plt

    from fgrpo_sim.figures.population import compute_peak_map, draw_peak_map

    fig = draw_peak_map(compute_peak_map(FigureOptions()))
    heatmaps = [ax for ax in fig.axes if ax.get_xlabel()]
    colorbars = [ax for ax in fig.axes if ax not in heatmaps]
    assert all(r"$\mu$" in ax.get_xlabel() and r"$\rho" in ax.get_ylabel() for ax in heatmaps)
    assert all(len(ax.get_yticks()) >= 5 for ax in colorbars)  # N* ticks 2..256, Pr(B) ticks every 0.1
    plt.close(fig)


def test_fig1a_legend_sits_outside_the_axes():
    import matplotlib.pyplot as plt

    from fgrpo_sim.figures.theory_figures import compute_fig1a, draw_fig1a

    fig = draw_fig1a(compute_fig1a(FigureOptions()))
    fig.canvas.draw()
    ax = fig.axes[0]
    legend_box = ax.get_legend().get_window_extent()
    assert legend_box.x0 >= ax.get_window_extent().x1  # right of the plotting area: no curve under it
    plt.close(fig)
