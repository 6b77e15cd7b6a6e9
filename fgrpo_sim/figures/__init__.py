"""Figures, one compute and one draw function each; see `registry` and `fgrpo figures --list`."""

from fgrpo_sim.figures.registry import FIGURES, FigureOptions, add_figure, load_all, save_figure

__all__ = ["FIGURES", "FigureOptions", "add_figure", "load_all", "save_figure"]
