"""Theory figures: registered, computed from the library, drawn with labelled axes."""

from __future__ import annotations

import numpy as np
import pytest

import fgrpo_sim.figures.theory_figures  # noqa: F401  (registers the figures; other figure modules are not needed)
from fgrpo_sim.figures.registry import FIGURES, FigureOptions
from fgrpo_sim.theory import peak_group_size

NAMES = ("fig1a", "fig3", "fig4", "fig5")


@pytest.fixture(scope="module")
def computed():
    registry = FIGURES
    return {name: registry[name].compute(FigureOptions(progress=False)) for name in NAMES}


def test_registered_in_default_set():
    registry = FIGURES
    for name in NAMES:
        assert name in registry and registry[name].in_default_set


def test_fig3_stars_sit_on_the_peaks(computed):
    for panel in computed["fig3"]["panels"]:
        for rho, curve in panel["curves"].items():
            assert curve["n_star"] == int(np.argmax(curve["prob"])) + 1  # N = 1..512 on the grid
            assert curve["n_star"] == peak_group_size(panel["mu"], panel["mu"] * rho).n_star


def test_fig5_plateau_and_tail_as_the_paper_describes(computed):
    data = computed["fig5"]
    at = dict(zip(data["powers"].tolist(), data["prob_at_powers"].tolist()))
    assert at[2**5] > 0.99 and at[2**10] > 0.9  # plateau near 1
    assert at[2**17] < 1e-3  # fallen below 1e-3 at N = 2^17
    # the simulator's exact start, which the paper's caption rounds to mu = 0.64, tau = 6.3e-5
    assert data["mu"] == pytest.approx(0.630075, abs=1e-6) and data["tau"] == pytest.approx(6.2967e-5, rel=1e-4)
    assert data["n_star"] == peak_group_size(data["mu"], data["tau"]).n_star


def test_times_ten_formats_scientific_numbers_for_mathtext():
    from fgrpo_sim.figures.theory_figures import times_ten

    assert times_ten(2.6e-4) == r"2.6 \times 10^{-4}"
    assert times_ten(6.2967e-5, 4) == r"6.2967 \times 10^{-5}"


def test_every_panel_has_a_y_label(computed):
    import matplotlib.pyplot as plt

    for name in NAMES:
        fig = FIGURES[name].draw(computed[name])
        for ax in fig.axes:
            if ax.get_visible() and ax.has_data() and name != "fig3":  # fig3 shares its y axis
                assert ax.get_ylabel(), name
        plt.close(fig)


def test_fig4_gamma_zero_is_plain_grpo(computed):
    data = computed["fig4"]
    mu = data["mu"]
    assert np.allclose(data["curves"][0.0]["pos"], np.sqrt((1 - mu) / mu))
    assert np.all(data["curves"][1.0]["neg"] <= data["curves"][0.0]["neg"])


def test_draw_has_labelled_axes(computed):
    import matplotlib.pyplot as plt

    registry = FIGURES
    for name in NAMES:
        fig = registry[name].draw(computed[name])
        for ax in fig.axes:
            if ax.get_visible() and ax.has_data():
                assert ax.get_xlabel()
        assert any(ax.get_ylabel() for ax in fig.axes)
        assert any(ax.get_legend() is not None for ax in fig.axes)
        plt.close(fig)
