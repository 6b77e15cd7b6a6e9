"""docs/theory.md's numbers, computed by fgrpo_sim.theory and the figure functions that draw them."""

from __future__ import annotations

import math
import re
import shlex
from fractions import Fraction
from functools import cache

from doc_census import ROOT, Claim, Given

_GAMMAS = (0.0, 0.25, 0.5, 1.0, 2.0, 3.5)  # where a closed form is compared with lr_multiplier


def _beta(x: float, y: float) -> float:
    return math.exp(math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y))


def _text(value: Fraction) -> str:
    return str(value)  # 3/2, 2


@cache
def _beta_parameter(weight: str) -> Fraction:
    """The a with lr_multiplier(gamma, weight) = B(a, gamma+a)/B(a, a) at every gamma of _GAMMAS: App. N's
    average of (1-mu)^gamma under the weight mu^(a-1) (1-mu)^(a-1), mu uniform."""
    from fgrpo_sim.theory import lr_multiplier

    for a in (Fraction(k, 2) for k in range(1, 9)):
        if all(math.isclose(_beta(a, g + a) / _beta(a, a), lr_multiplier(g, weight), rel_tol=1e-12) for g in _GAMMAS):
            return a
    raise AssertionError(f"lr_multiplier(weight={weight!r}) is no Beta ratio B(a, gamma+a)/B(a, a)")


def _mean_abs_advantage_coefficient() -> float:
    """E|A| / sqrt(mu(1-mu)) for binary rewards, from the magnitudes focal_advantage_magnitudes returns."""
    import numpy as np

    from fgrpo_sim.theory import focal_advantage_magnitudes

    mu = np.linspace(0.05, 0.95, 19)
    positive, negative = focal_advantage_magnitudes(mu, 0.0)
    ratio = (mu * positive + (1 - mu) * negative) / np.sqrt(mu * (1 - mu))
    assert np.allclose(ratio, ratio[0], rtol=1e-12), ratio
    return float(ratio[0])


def _mean_abs_advantage_phrase() -> str:
    from fgrpo_sim.theory import lr_multiplier

    # E|A| = c sqrt(mu(1-mu)) is the weight mu^(1/2) (1-mu)^(1/2), hence a = 3/2: the paper's formula
    assert _beta_parameter("mean_abs_advantage") == Fraction(3, 2)
    return f"E|A| = {_mean_abs_advantage_coefficient():g} sqrt(mu(1-mu)) gives the paper's formula and {lr_multiplier(0.5):.3f}"


def _variance_phrase(gamma: float = 0.5) -> str:
    """B(a, gamma+a)/B(a, a) for the variance weight; with a = 2 it is 1/B(2, 2) / ((gamma+2)(gamma+3))."""
    from fgrpo_sim.theory import lr_multiplier

    a = _beta_parameter("variance")
    numerator = round(1 / _beta(a, a))
    rational = all(math.isclose(numerator / ((g + a) * (g + a + 1)), lr_multiplier(g, "variance"), rel_tol=1e-12)
                   for g in _GAMMAS)
    closed = f"{numerator}/((gamma+{_text(a)})(gamma+{_text(a + 1)}))" if rational else "no rational form"
    return (f"B({_text(a)}, gamma+{_text(a)})/B({_text(a)}, {_text(a)}) = {closed} = "
            f"{lr_multiplier(gamma, 'variance'):.3f} at gamma = {gamma:g}")


def _api_lr_multiplier_phrase() -> str:
    """The API table's m_gamma formula and m_0.5 as a rational multiple of 1/pi."""
    from fgrpo_sim.theory import lr_multiplier

    a, m = _beta_parameter("mean_abs_advantage"), lr_multiplier(0.5)
    times_pi = Fraction(m * math.pi).limit_denominator(1000)
    exact = math.isclose(float(times_pi) / math.pi, m, rel_tol=1e-12)
    return (f"m_gamma = B({_text(a)}, gamma+{_text(a)})/B({_text(a)}, {_text(a)}); m_0.5 = "
            + (f"{times_pi.numerator}/({times_pi.denominator} pi)" if exact else "no multiple of 1/pi") + f" = {m:.3f}")


def _underflow_example_phrase() -> str:
    """The page's first doc-test (`tail-miss --n 1,8,64,1048576 --mu 0.3 --rho 0.05`): its largest N, where Pr(B)
    underflows to 0 and its log stays finite."""
    from fgrpo_sim.theory import log_tail_miss_probability, tail_miss_probability

    command = re.search(r"^\$ (fgrpo theory tail-miss .*--rho .*)$", (ROOT / "docs" / "theory.md").read_text(), re.M)
    words = shlex.split(command.group(1))
    n = max(int(v) for i, w in enumerate(words) if w == "--n" for v in words[i + 1].split(","))  # a comma list
    mu, rho = (float(words[words.index(flag) + 1]) for flag in ("--mu", "--rho"))
    tau = mu * rho
    underflows = tail_miss_probability(n, mu, tau) == 0 and math.isfinite(log_tail_miss_probability(n, mu, tau))
    where = f"N = 2^{math.log2(n):g}, tau = {tau:g}" if underflows else "nowhere"
    return f"finite where Pr(B) underflows (e.g. {where})"


def _options():
    from fgrpo_sim.figures.registry import FigureOptions

    return FigureOptions()


def _braces(values) -> str:
    return "{" + ", ".join(f"{v:g}" for v in values) + "}"


def _fig1a_phrase() -> str:
    from fgrpo_sim.figures.theory_figures import compute_fig1a

    data = compute_fig1a(_options())
    return (f"vs N = {data['n'].min()}..{data['n'].max()}, mu = {data['mu']:g}, rho in {_braces(data['curves'])}, "
            "peaks starred")


def _fig3_phrase() -> str:
    from fgrpo_sim.figures.theory_figures import compute_fig3

    data = compute_fig3(_options())
    rhos = {tuple(p["curves"]) for p in data["panels"]}
    assert len(rhos) == 1, rhos
    return (f"mu in {_braces(p['mu'] for p in data['panels'])} x rho in {_braces(rhos.pop())}, "
            f"N = {data['n'].min()}..{data['n'].max()}, each N* starred")


def _fig4_phrase() -> str:
    from fgrpo_sim.figures.theory_figures import compute_fig4

    return f"vs mu, gamma in {_braces(compute_fig4(_options())['curves'])}"


@cache
def _fig5():
    from fgrpo_sim.figures.theory_figures import compute_fig5

    return compute_fig5(_options())


def _fig5_grid_phrase() -> str:
    n = _fig5()["n"]
    return f"N = 2^{math.log2(n.min()):g}..2^{math.log2(n.max()):g}"


def _e_notation(x: float, digits: int) -> str:
    mantissa, exponent = f"{x:.{digits}e}".split("e")
    return f"{mantissa}e{int(exponent)}"  # 6.3e-5, as the page writes it


def _fig5_rounding_phrase() -> str:
    """The simulator's start (CategoricalConfig().initial_masses()) rounded as the paper prints it."""
    from fgrpo_sim.sim.categorical.config import CategoricalConfig

    start = CategoricalConfig().initial_masses()
    return f"the paper rounds them to {start['q_pos']:.2f} and {_e_notation(start['tau'], 1)}"


def _fig5_tail_phrase(near: int = 1024) -> str:
    """Pr(B) at the start: near 1 at N = `near`, below a power of ten at the grid's largest N."""
    from fgrpo_sim.theory import tail_miss_probability

    data = _fig5()
    largest = int(data["n"].max())
    at_near, at_largest = (tail_miss_probability(n, data["mu"], data["tau"]) for n in (near, largest))
    near_word = "near 1" if at_near > 0.9 else f"{at_near:.2f}"
    return (f"Pr(B) is still {near_word} at N = {near} but below 10^{math.ceil(math.log10(at_largest))} "
            f"at 2^{math.log2(largest):g}")


CLAIMS = [
    Claim(_mean_abs_advantage_phrase, source="theory.focal_advantage_magnitudes, theory.lr_multiplier(0.5)"),
    Claim(_variance_phrase, source="theory.lr_multiplier(gamma, weight='variance') as a Beta ratio"),
    Claim(_api_lr_multiplier_phrase, source="theory.lr_multiplier(gamma) as a Beta ratio; m_0.5 * pi"),
    Claim(_underflow_example_phrase, source="theory.tail_miss_probability at the page's doc-test N, mu, rho"),
    Claim(_fig1a_phrase, source="figures.theory_figures.compute_fig1a"),
    Claim(_fig3_phrase, source="figures.theory_figures.compute_fig3"),
    Claim(_fig4_phrase, source="figures.theory_figures.compute_fig4"),
    Claim(_fig5_grid_phrase, source="figures.theory_figures.compute_fig5"),
    Claim(_fig5_rounding_phrase, source="CategoricalConfig().initial_masses()"),
    Claim(_fig5_tail_phrase, source="theory.tail_miss_probability at the categorical start (compute_fig5)"),
]

GIVEN = [
    Given("its caption says mu 0.64", why="a quote of the paper's Fig 5 caption; no shipped table holds it"),
]
