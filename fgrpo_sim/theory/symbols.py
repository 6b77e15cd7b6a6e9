"""The sympy symbols shared by every derivation, so expressions from different modules combine.

Assumptions are the weakest that still let sympy simplify: probabilities are positive (the edge
values 0 and 1 are limits, handled by the numeric wrappers), N is a positive integer.
"""

from __future__ import annotations

import sympy as sp

N = sp.Symbol("N", positive=True, integer=True)  # group size
N_real = sp.Symbol("N", positive=True)  # the same, relaxed to a real for the continuous maximiser
mu = sp.Symbol("mu", positive=True)  # success probability of the prompt, Pr[o correct]
tau = sp.Symbol("tau", positive=True)  # mass of the rare correct subset E
rho = sp.Symbol("rho", positive=True)  # tau / mu, the share of the correct mass held by E
gamma = sp.Symbol("gamma", nonnegative=True)  # focal exponent
eta = sp.Symbol("eta", positive=True)  # logit step size
R_c, R_w = sp.symbols("R_c R_w", real=True)  # rewards of correct / incorrect sampled actions
