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


def test_fig6_maze_y_labels_stay_clear_of_the_titles():
    import matplotlib.pyplot as plt

    from fgrpo_sim.figures.maze import draw_fig6, load_summary

    fig = draw_fig6(load_summary(FigureOptions()))
    fig.canvas.draw()
    top = fig._suptitle.get_window_extent()
    for ax in fig.axes:
        if ax.get_ylabel():
            label = ax.yaxis.label.get_window_extent()
            assert not label.overlaps(top) and not label.overlaps(ax.title.get_window_extent()), ax.get_title()
    plt.close(fig)


def test_population_figures_write_greek_like_the_others(monkeypatch):
    import matplotlib.pyplot as plt

    import fgrpo_sim.figures.population as population

    assert population.variant_label("F-GRPO gamma=1") == r"F-GRPO $\gamma$ = 1"
    assert population.variant_label("GRPO low-LR (x m_0.5)") == r"GRPO low-LR (x $m_{0.5}$)"
    monkeypatch.setattr(population, "_sweep", _tiny_sweep)
    fig = population.draw_rare_mass(population.compute_rare_mass(FigureOptions(progress=False)))
    text = " ".join([fig._suptitle.get_text()] + [ax.get_xlabel() for ax in fig.axes]
                    + [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
                    + [t.get_text() for legend in fig.legends for t in legend.get_texts()])
    assert r"$\mu_0$" in text and r"$\rho$" in text and r"$\gamma$" in text
    assert "gamma=" not in text and "mu0" not in text and "rho =" not in text.replace(r"$\rho$ =", "")
    plt.close(fig)


def _tiny_sweep(options, group_sizes, gammas, quick, full, beta=(1.0, 1.0)):
    from fgrpo_sim.sim.population import PopulationSpec, TrainSpec, make_population, run_sweep, sweep_variants

    settings = dict(quick, prompts=32, steps=20, runs=1, batch=8, eval_every=10)
    population = make_population(PopulationSpec(num_prompts=32, beta_a=beta[0], beta_b=beta[1], seed=0))
    base = TrainSpec(steps=20, runs=1, prompt_batch=8, eval_every=10, seed=0)
    return run_sweep(population, sweep_variants(base, group_sizes, gammas), progress=False), settings, population


def smallest_font(fig) -> float:
    """The smallest font size of any visible text in `fig` (titles, labels, tick labels, legends, notes)."""
    fig.canvas.draw()
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes)


def test_sensitivity_figure_reads_without_a_key():
    """fig2-sensitivity: settings in words in a legend (no code decoded in a footnote), every text >= 9 pt."""
    import matplotlib.pyplot as plt

    from fgrpo_sim.figures.categorical import compute_sensitivity, draw_sensitivity

    fig = draw_sensitivity(compute_sensitivity(FigureOptions(data_dir=None)))  # the committed study table
    assert smallest_font(fig) >= 9
    assert not fig._supxlabel or "[YYn]" not in fig._supxlabel.get_text()
    assert len(fig.axes) <= 12  # 24 panels of one setting each were unreadable
    legend_texts = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert len(legend_texts) == 8 and "AdamW, eps 1e-08, no decay (default)" in legend_texts and "SGD" in legend_texts
    assert all("/" not in t for t in legend_texts)  # no 'distinct/adamw/eps=...' codes
    plt.close(fig)


def line_kind(line) -> str:
    """A line's dash family as a reader sees it: solid, dashed, dash-dot or dotted (dots: on-segments <= 1.5)."""
    pattern = line._unscaled_dash_pattern[1]
    if not pattern or line.get_linestyle() in ("None", " ", ""):
        return "none" if line.get_linestyle() in ("None", " ", "") else "solid"
    if len(pattern) >= 4:
        return "dash-dot"
    return "dotted" if max(pattern[0::2]) <= 1.5 else "dashed"


def legend_styles(legend) -> list[tuple]:
    import matplotlib.colors as mcolors

    return [(mcolors.to_hex(h.get_color()), line_kind(h), h.get_marker()) for h in legend.legend_handles
            if hasattr(h, "get_marker")]


def test_group_size_figure_gives_each_legend_entry_its_own_style():
    """population-group-size: GRPO low-LR and the predicted dip were both dotted; every legend entry is told apart
    by colour, dash family or marker, and every dash family drawn in the simulation panels is in the legend."""
    import matplotlib.pyplot as plt

    from fgrpo_sim.figures import population_group_size as figure

    data = figure.compute(FigureOptions(data_dir=None))
    for fig in (figure.draw(data), figure.draw_grid(data)):  # the headline and the grid
        legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
        for legend in legends:
            styles = legend_styles(legend)
            assert len(styles) == len(set(styles)), styles
        (main,) = legends
        shown = {kind for _, kind, _ in legend_styles(main)}
        drawn = {line_kind(line) for ax in fig.axes if ax.axison for line in ax.get_lines()}
        assert drawn <= shown | {"none"}, drawn - shown
        assert smallest_font(fig) >= 9
        plt.close(fig)


def test_population_bar_panels_have_legends(monkeypatch):
    """population-rare-mass (c) and population-shared (c) are bar panels: each carries a legend naming every bar
    colour (they had none), and the figures' texts are >= 9 pt except the N labels on the frontier's points."""
    import matplotlib.colors as mcolors
    import matplotlib.pyplot as plt

    import fgrpo_sim.figures.population as population

    monkeypatch.setattr(population, "_sweep", _tiny_sweep)
    monkeypatch.setattr(population, "SHARED_QUICK", dict(prompts=32, heldout=32, steps=20, runs=1, batch=8,
                                                         eval_every=10))
    options = FigureOptions(progress=False, device="cpu")
    for fig in (population.draw_rare_mass(population.compute_rare_mass(options)),
                population.draw_shared(population.compute_shared(options))):
        bar_panels = [ax for ax in fig.axes if ax.containers]
        assert bar_panels
        for ax in bar_panels:
            legends = [ax.get_legend()] if ax.get_legend() else fig.legends  # its own, or the figure's
            assert legends, ax.get_title()
            named = {mcolors.to_hex(h.get_color() if isinstance(h, plt.Line2D) else h.get_facecolor())
                     for legend in legends for h in legend.legend_handles}
            drawn = {mcolors.to_hex(c.patches[0].get_facecolor()) for c in ax.containers}
            assert drawn <= named, ax.get_title()
        assert smallest_font(fig) >= 9
        # no legend over a panel's curves or bars (issue 46: (a)'s legend lay over the curves)
        fig.canvas.draw()
        for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]:
            box = legend.get_window_extent()
            assert not any(box.overlaps(ax.get_window_extent()) for ax in fig.axes), fig._suptitle.get_text()
        plt.close(fig)


def test_population_figures_draw_the_runs_the_docs_quote(monkeypatch):
    """The README and docs/population.md quote 10-run numbers (population_claims.RUNS); the quick figures drew
    2 or 4 runs. They draw the same number of runs now, with the same settings and seeds."""
    import fgrpo_sim.figures.population as population
    from fgrpo_sim.sim.population_claims import RUNS

    asked = []

    def record(options, group_sizes, gammas, quick, full, beta=(1.0, 1.0)):
        asked.append(quick["runs"])
        raise StopIteration  # the settings are all this test needs

    monkeypatch.setattr(population, "_sweep", record)
    for compute in (population.compute_rare_mass, population.compute_frontier):
        try:
            compute(FigureOptions(progress=False))
        except StopIteration:
            pass
    assert asked == [RUNS, RUNS] and population.SHARED_QUICK["runs"] == RUNS
