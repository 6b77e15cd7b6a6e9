"""The F-GRPO theory layer: closed forms derived in sympy, evaluated by lambdified numpy functions.

Modules: `tail_miss` (Lemma 3.1), `peak` (the group size N* that maximises the tail-miss probability),
`focal` (focal weight, learning-rate multiplier), `smoothing` (the same with the smoothed estimate
(c + alpha) / (N + 2 alpha): expected weight, m_gamma at group size N), `categorical` (one-step mass changes, Lemma H.1),
`derivations` (every symbolic object by name, with LaTeX). sympy is imported only when a function first
needs its derivation, so importing this package stays cheap.
"""

from fgrpo_sim.theory.categorical import (
    exact_mass_change,
    expected_sampled_correct_mass,
    expected_sampled_incorrect_mass,
    expected_unsampled_square_mass,
    first_order_mass_change,
)
from fgrpo_sim.theory.derivations import Derivation, derivations
from fgrpo_sim.theory.focal import focal_advantage_magnitudes, focal_weight, lr_multiplier
from fgrpo_sim.theory.peak import PeakGroupSize, peak_group_size
from fgrpo_sim.theory.smoothing import expected_smoothed_focal_weight, smoothed_lr_multiplier
from fgrpo_sim.theory.tail_miss import (
    activity_probability,
    log_tail_miss_probability,
    tail_miss_from_rho,
    tail_miss_probability,
)

__all__ = [
    "Derivation",
    "PeakGroupSize",
    "derivations",
    "peak_group_size",
    "activity_probability",
    "exact_mass_change",
    "expected_smoothed_focal_weight",
    "expected_sampled_correct_mass",
    "expected_sampled_incorrect_mass",
    "expected_unsampled_square_mass",
    "first_order_mass_change",
    "focal_advantage_magnitudes",
    "focal_weight",
    "log_tail_miss_probability",
    "lr_multiplier",
    "smoothed_lr_multiplier",
    "tail_miss_from_rho",
    "tail_miss_probability",
]
