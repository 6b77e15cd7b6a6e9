"""Every symbolic object of the theory layer by name, with a one-line meaning and LaTeX.

`derivations()` runs the derivations (and their built-in sympy checks) and returns them in reading order;
`fgrpo theory derive [--latex]` prints them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class Derivation:
    name: str
    description: str
    lhs: object  # sympy expression or symbol naming the quantity
    rhs: object  # sympy expression

    def text(self) -> str:
        import sympy as sp

        return f"{sp.sstr(self.lhs)} = {sp.sstr(self.rhs)}"

    def latex(self) -> str:
        import sympy as sp

        return f"{sp.latex(self.lhs)} = {sp.latex(self.rhs)}"


def _limit_at_infinity(expr, n):
    """lim_{N->oo} of a sum of c_k * base_k^N with every base in (0, 1): write base = exp(-lambda), lambda > 0."""
    import sympy as sp

    powers = sorted(expr.atoms(sp.Pow), key=sp.default_sort_key)
    rates = {}
    for power in powers:
        if power.exp == n:
            rates[power] = sp.exp(-n * sp.Symbol(f"lambda_{len(rates)}", positive=True))
    return sp.limit(expr.xreplace(rates), n, sp.oo)


@cache
def derivations() -> dict[str, Derivation]:
    import sympy as sp

    from fgrpo_sim.theory import categorical, focal, peak, smoothing, tail_miss
    from fgrpo_sim.theory.symbols import N, N_real, gamma, mu, rho, tau

    tail_miss.verify_rearrangement()
    categorical.verify_subset_mass_identity()
    pr_b = tail_miss.symbolic_tail_miss()
    s, kernel = tail_miss.symbolic_activity_kernel()
    x = (mu - tau) / (1 - tau)
    mu_hat = sp.Symbol("mu_hat", nonnegative=True)
    a_pos, a_neg, mean_abs = focal.symbolic_advantages()
    m_gamma = focal.symbolic_lr_multiplier()
    dq_pos, dq_upos = categorical.symbolic_mass_changes()
    printed_pos, printed_upos = categorical.printed_mass_changes()
    q, k, inclusion, inclusion_stable = categorical.symbolic_inclusion_probability()
    pr = sp.Function("Pr")
    B, A = sp.Symbol("B"), sp.Symbol("A_N")

    items = [
        Derivation("tail_miss", "Lemma 3.1: group active (0 < #correct < N) yet no rollout in the rare subset E",
                   pr(B), pr_b),
        Derivation("activity", "Pr(A_N): the group has both correct and incorrect rollouts (tau = 0)",
                   pr(A), tail_miss.symbolic_activity()),
        Derivation("tail_miss_rho", "the same with tau = rho * mu (rho = share of the correct mass in E)",
                   pr(B), sp.expand(pr_b.subs(tau, rho * mu))),
        Derivation("tail_miss_factored", "verified rearrangement used for numbers: (1-tau)^N K(N, x), x = (mu-tau)/(1-tau)",
                   pr(B), (1 - tau) ** N * (1 - x**N - (1 - x) ** N)),
        Derivation("activity_kernel_stable", "K(N, s) = 1 - s^N - (1-s)^N in cancellation-free form (s <= 1/2)",
                   sp.Function("K")(N, s), kernel),
        Derivation("tail_miss_at_N1", "one rollout is never active", pr(B).subs(B, sp.Symbol("B_1")),
                   sp.simplify(pr_b.subs(N, 1))),
        Derivation("tail_miss_limit", "N -> infinity (0 < tau < mu < 1): every term decays geometrically",
                   sp.Limit(pr(B), N, sp.oo), _limit_at_infinity(pr_b, N)),
        Derivation("tail_miss_slope", "derivative in a real group size N", sp.Derivative(pr(B), N_real),
                   peak.symbolic_slope()),
        Derivation("tail_miss_scaled_slope",
                   "h(N) = dPr(B)/dN / (1-tau)^N: strictly decreasing, its root is the continuous peak N*",
                   sp.Function("h")(N_real), peak.symbolic_scaled_slope()),
        Derivation("focal_weight", "F-GRPO's per-group advantage scale", sp.Function("g")(mu_hat),
                   (1 - mu_hat) ** gamma),
        Derivation("abs_advantage_correct", "|A+| of a binary-reward group with success rate mu",
                   sp.Abs(sp.Symbol("A_+")), a_pos),
        Derivation("abs_advantage_incorrect", "|A-| of a binary-reward group with success rate mu",
                   sp.Abs(sp.Symbol("A_-")), a_neg),
        Derivation("mean_abs_advantage", "mu |A+| + (1 - mu) |A-|", sp.Symbol("E|A|"), mean_abs),
        Derivation("lr_multiplier", "App. N: learning-rate factor matching focal weighting's average scale",
                   sp.Symbol("m_gamma"), m_gamma),
        Derivation("lr_multiplier_half", "m_gamma at gamma = 1/2", sp.Symbol("m_1/2"),
                   sp.nsimplify(sp.gammasimp(m_gamma.subs(gamma, sp.Rational(1, 2))))),
        Derivation("lr_multiplier_variance", "the alternative reading with prompt weight mu(1 - mu)",
                   sp.Symbol("m_gamma_var"), focal.symbolic_lr_multiplier("variance")),
        Derivation("smoothed_focal_weight", "the weight with the smoothed estimate (c + alpha) / (N + 2 alpha), c correct",
                   sp.Function("g_alpha")(sp.Symbol("c")), smoothing.symbolic_smoothed_weight()[2]),
        Derivation("expected_smoothed_focal_weight", "E[g_alpha] over c ~ Binomial(N, mu)",
                   sp.Symbol("E[g_alpha]"), smoothing.symbolic_expected_weight()[0]),
        Derivation("expected_smoothed_focal_weight_gamma1", "the same at gamma = 1 (checked at N = 1..6)",
                   sp.Symbol("E[g_alpha]_1"), smoothing.symbolic_expected_weight()[1]),
        Derivation("lr_multiplier_smoothed", "m_gamma at group size N with g_alpha: c uniform, each group weighted by "
                   "its mean |advantage|", sp.Symbol("m_gamma(N, alpha)"), smoothing.symbolic_smoothed_lr_multiplier()),
        Derivation("dQ_pos", "first-order change of the correct mass (Hu et al.), from the subset-mass identity",
                   sp.Symbol("dQ_pos"), sp.factor_terms(dq_pos)),
        Derivation("dQ_upos", "Proposition 3.2: first-order change of the unsampled correct mass",
                   sp.Symbol("dQ_upos"), sp.factor_terms(dq_upos)),
        Derivation("dQ_pos_minus_printed", "check: derived dQ_pos minus Hu et al.'s printed form (Q_neg = 1 - Q_pos)",
                   sp.Symbol("dQ_pos - printed"), sp.simplify(dq_pos - printed_pos)),
        Derivation("dQ_upos_minus_printed", "check: derived dQ_upos minus Proposition 3.2 as printed",
                   sp.Symbol("dQ_upos - printed"), sp.simplify(dq_upos - printed_upos)),
        Derivation("inclusion_probability", "Lemma H.1: an action of within-class probability q appears in k draws",
                   sp.Function("Pr")(sp.Symbol("o_in_sample")), inclusion),
    ]
    return {d.name: d for d in items}
