"""Shared matplotlib settings so every figure looks like it belongs to the same paper."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # figures are files; never open a window

import matplotlib.pyplot as plt  # noqa: E402

STYLE = {
    "figure.dpi": 100,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 10,
    "axes.titlesize": 11,
    "legend.fontsize": 9,
    "legend.frameon": False,
}


def new_figure(nrows: int = 1, ncols: int = 1, *, width: float = 5.0, height: float = 3.6, **kwargs):
    """A figure with `nrows x ncols` axes, each about `width x height` inches, in the house style."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), **kwargs)
    fig.set_layout_engine("constrained")
    for ax in (axes.flat if hasattr(axes, "flat") else [axes]):
        ax.grid(True, alpha=0.3)
        ax.spines["top"].set_visible(False)
        ax.spines["right"].set_visible(False)
    return fig, axes
