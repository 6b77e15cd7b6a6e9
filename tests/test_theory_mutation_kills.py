"""Contracts of fgrpo_sim/theory/ that its mutation run (benchmarks/mutation.py, issue 44) found untested: bounds
and messages of the inputs, defaults, a single draw, batched policies, warnings, the digits of 1 - mu, the
argmax where float64 cannot tell two neighbours apart, and the generator that writes theory/_generated/ (run
here from the derivations in-process: tests/test_theory_generated.py compares the files' text, which a mutation
tool's rewritten copy of the package cannot pass). Every expected value is computed here independently."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import math
import warnings

import mpmath
import numpy as np
import pytest

from fgrpo_sim import theory
from fgrpo_sim.theory import generate, lambdified as lam, peak_group_size
from fgrpo_sim.theory.smoothing import MAX_GROUP_SIZE, expected_smoothed_focal_weight, smoothed_lr_multiplier
from fgrpo_sim.theory.tail_miss import log_tail_miss_probability, tail_miss_probability

P = np.array([0.2, 0.3, 0.5])
CORRECT = np.array([True, True, False])


def _softmax_mass_changes(p, correct, counts, r_c, r_w, eta):
    """(first-order, exact) (dQ_pos, dQ_upos) of one logit step, from the definitions in plain numpy."""
    sampled = counts > 0
    reward = np.where(sampled, np.where(correct, r_c, r_w), 0.0)
    s_r = r_c * p[sampled & correct].sum() + r_w * p[sampled & ~correct].sum()
    dz = eta / counts.sum() * p * (reward - s_r)
    upos = correct & ~sampled

    def first(members):  # the softmax subset-mass identity
        return (p * dz)[members].sum() - p[members].sum() * (p * dz).sum()

    moved = p * np.exp(dz) / (p * np.exp(dz)).sum()
    return (first(correct), first(upos)), ((moved - p)[correct].sum(), (moved - p)[upos].sum())


@pytest.mark.parametrize("counts", [[0, 1, 0], [0, 0, 1], [2, 0, 3]])
def test_mass_changes_at_one_draw_and_their_defaults(counts):
    counts = np.array(counts)
    (first_pos, first_upos), (exact_pos, exact_upos) = _softmax_mass_changes(P, CORRECT, counts, 1.0, 0.0, 1.0)
    assert theory.first_order_mass_change(P, CORRECT, counts) == pytest.approx((first_pos, first_upos), abs=1e-15)
    assert theory.exact_mass_change(P, CORRECT, counts) == pytest.approx((exact_pos, exact_upos), abs=1e-15)
    # a 0/1 integer mask is the boolean one
    assert theory.exact_mass_change(P, [1, 1, 0], counts, 2.0, -1.0, 0.5) == pytest.approx(
        _softmax_mass_changes(P, CORRECT, counts, 2.0, -1.0, 0.5)[1], abs=1e-15)


def test_lemma_h1_at_a_single_draw_and_over_a_batch():
    # one correct draw lands on correct action o with probability p(o) / mu (mu = 0.5): sum p(o)^2 / mu
    assert theory.expected_sampled_correct_mass(P, CORRECT, 1, 1) == pytest.approx((0.2**2 + 0.3**2) / 0.5, rel=1e-14)
    assert theory.expected_sampled_incorrect_mass(P, CORRECT, 1, 0) == pytest.approx(0.5, rel=1e-14)
    # BroRL's E[U2] at one draw: sum p^2 (1 - p)
    assert theory.expected_unsampled_square_mass(P, 1) == pytest.approx(float(np.sum(P**2 * (1 - P))), rel=1e-14)
    # a batch of 2 x 3 policies with k per column: each entry is its own policy's value
    rng = np.random.default_rng(4)
    batch = rng.dirichlet(np.ones(3), size=(2, 3))
    k = np.array([0, 2, 4])
    got = theory.expected_sampled_correct_mass(batch, CORRECT, 4, k)
    assert got.shape == (2, 3)
    wrong = theory.expected_sampled_incorrect_mass(batch, CORRECT, 4, k)
    assert wrong.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            mu = batch[i, j][CORRECT].sum()
            want = sum(q * (1 - (1 - q / mu) ** k[j]) for q in batch[i, j][CORRECT])
            assert got[i, j] == pytest.approx(want, rel=1e-13)
            q = batch[i, j][2]  # the one incorrect action gets every one of the 4 - k wrong draws
            assert wrong[i, j] == pytest.approx(q if k[j] < 4 else 0.0, rel=1e-13)


@pytest.mark.parametrize("call, message", [
    (lambda: theory.expected_sampled_correct_mass(P, CORRECT, 0, 0), r"^n must be in \[1, inf\], got 0$"),
    (lambda: theory.expected_sampled_incorrect_mass(P, CORRECT, 2, -1), r"^k must be in \[0, inf\], got -1$"),
    (lambda: theory.expected_unsampled_square_mass(P, 0), r"^n must be in \[1, inf\], got 0$"),
    (lambda: theory.first_order_mass_change(0.5, True, 1), r"^p must be an array of action probabilities"),
    (lambda: tail_miss_probability(4, 0.5, 0.1, one_minus_mu=1.5), r"^one_minus_mu must be in \[0, 1\], got 1\.5$"),
    (lambda: peak_group_size(None, 0.1, one_minus_mu=1.0), r"^one_minus_mu must be in \[0, 1\), got 1$"),
    (lambda: peak_group_size(1.0, 1.5), r"^tau must be in \[0, 1\], got 1\.5$"),
    (lambda: expected_smoothed_focal_weight(MAX_GROUP_SIZE + 1, 0.5, 1.0), r"^n must be in \[1, 2\^20\], got 1048577$"),
    (lambda: smoothed_lr_multiplier(MAX_GROUP_SIZE + 1, 1.0), r"^n must be in \[2, 2\^20\], got 1048577$"),
    (lambda: theory.first_order_mass_change([1.5, -0.5], CORRECT[:2], [1, 1]), r"^p must be in \[0, 1\], got 1\.5$"),
    (lambda: theory.first_order_mass_change(P, [0, 2, 1], [1, 1, 1]), r"^correct must be a boolean mask"),
    (lambda: theory.exact_mass_change(P, CORRECT, [0, 0, 0]), r"^counts must contain at least one draw"),
    (lambda: theory.exact_mass_change(P, CORRECT, [1, 1, 1], 1.0, 1.0), r"^reward_wrong must be in .*, 1\), got 1$"),
    (lambda: tail_miss_probability(4, 0.5, 0.1, one_minus_mu=0.4),
     r"^one_minus_mu must be 1 - mu, got 0\.4 with mu = 0\.5$"),
    (lambda: theory.exact_mass_change(P, CORRECT, [1, 1, 1], math.nan),
     r"^reward_correct must be in \[-inf, inf\], got nan$"),
    # the sum named is the row farthest from 1 (0.5, the second row), not the first or the largest (1.2)
    (lambda: theory.exact_mass_change([[0.6, 0.6], [0.25, 0.25]], [True, False], [1, 1]), r"got a sum of 0\.5$"),
    (lambda: theory.focal_weight(0.5, math.inf), r"^gamma must be in \[0, inf\), got inf$"),
    (lambda: expected_smoothed_focal_weight(4, 0.5, math.inf), r"^gamma must be in \[0, inf\), got inf$"),
    (lambda: peak_group_size(0.5, 0.0), r"^tau must be in \(0, mu\], got 0 \(with tau = 0, Pr\(B\) = Pr\(A_N\) rises"),
    # 1 - 1e-12 rounds up in float64: tau equal to that float exceeds the mu that one_minus_mu gives exactly
    (lambda: peak_group_size(None, 1.0 - 1e-12, one_minus_mu=1e-12), r"^tau must be in \(0, mu\], got 0\.9999"),
])
def test_out_of_range_inputs_name_the_parameter_and_its_range(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_certain_group_is_silent_and_degenerate():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from log1p(-1) or 0 / 0 reaches the user
        assert tail_miss_probability(4, 1.0, 1.0) == 0.0
        assert tail_miss_probability(np.array([1, 4]), 1.0, np.array([0.5, 1.0])).tolist() == [0.0, 0.0]
    peak = peak_group_size(1.0, 0.5)  # mu = 1: no group is ever active
    assert (peak.n_star, peak.probability) == (1, 0.0) and math.isnan(peak.n_continuous)


def test_closed_forms_hold_under_a_callers_raise_on_every_float_error():
    """Underflow to 0 (and lr_multiplier's overflowing denominator) is the right answer, not an error, so a caller's
    np.errstate(all="raise") must not turn it into one; outside it, no RuntimeWarning either."""
    for errors in ({"all": "raise"}, None):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with np.errstate(**errors) if errors else contextlib.nullcontext():
                assert theory.expected_unsampled_square_mass(P, 10**6) == 0.0
                assert theory.lr_multiplier(np.array([0.0, 1e300])).tolist() == pytest.approx([1.0, 0.0], rel=1e-14)
                assert theory.lr_multiplier(1e300, weight="variance") == 0.0  # 6 / ((g + 2)(g + 3)) overflows
                assert tail_miss_probability(np.array([10**6, 2]), 0.5, 0.1).tolist() == pytest.approx(
                    [0.0, 0.4], rel=1e-14)
                # a lone correct action (q = 1) and no correct draw: 0 draws x log(0) never reaches the result
                assert theory.expected_sampled_correct_mass(P, [True, False, False], 2, 0) == 0.0


def test_scalars_come_back_as_floats_and_arrays_keep_their_shape():
    assert all(type(v) is float for v in theory.first_order_mass_change(P, CORRECT, [1, 0, 1]))
    assert type(theory.expected_unsampled_square_mass(P, 2)) is float
    assert type(tail_miss_probability(4, 0.5, 0.1)) is float
    peak = peak_group_size(np.array([[0.3, 0.4], [0.5, 0.6]]), 0.01)
    assert peak.n_star.shape == peak.probability.shape == peak.n_continuous.shape == (2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # log1p(-1) of a certain action: no divide-by-zero warning
        assert theory.expected_unsampled_square_mass([1.0, 0.0], 3) == 0.0


def test_batches_give_each_row_its_own_value():
    batch = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    assert theory.expected_unsampled_square_mass(batch, 3).tolist() == pytest.approx(
        [float(np.sum(row**2 * (1 - row) ** 3)) for row in batch], rel=1e-14)
    assert smoothed_lr_multiplier(np.array([4, 8]), 1.0).tolist() == pytest.approx(
        [smoothed_lr_multiplier(4, 1.0), smoothed_lr_multiplier(8, 1.0)], rel=1e-14)


def test_smoothed_lr_multiplier_defaults_to_the_papers_estimate():
    n, gamma = 8, 1.5
    c = np.arange(1, n)
    weight = np.sqrt(c * (n - c))
    want = float(np.sum(weight * (1 - c / n) ** gamma) / np.sum(weight))  # App. N's sum at alpha = 0
    assert smoothed_lr_multiplier(n, gamma) == pytest.approx(want, rel=1e-13)


def test_peak_probability_keeps_the_digits_of_one_minus_mu():
    comp, tau = 1e-12, 0.5
    peak = peak_group_size(None, tau, one_minus_mu=comp)
    with mpmath.workdps(60):
        c, t, n = mpmath.mpf(comp), mpmath.mpf(tau), peak.n_star
        exact = (1 - t) ** n - (1 - c - t) ** n - c**n
    assert peak.probability == pytest.approx(float(exact), rel=1e-12, abs=0)  # about 1e-12: no absolute slack


def test_derivation_prints_both_sides():
    import sympy as sp

    from fgrpo_sim.theory import Derivation

    row = Derivation("demo", "a demo", sp.Symbol("alpha"), sp.Symbol("beta") ** 2)
    assert (row.text(), row.latex()) == ("alpha = beta**2", "\\alpha = \\beta^{2}")


def test_log_tail_miss_keeps_the_digits_of_one_minus_mu():
    comp, tau, n = 1e-12, 1e-13, 1000
    with mpmath.workdps(60):
        c, t = mpmath.mpf(comp), mpmath.mpf(tau)
        exact = mpmath.log((1 - t) ** n - (1 - c - t) ** n - c**n)
    got = log_tail_miss_probability(n, 1.0 - comp, tau, one_minus_mu=comp)
    assert got == pytest.approx(float(exact), rel=1e-12)
    # without the digits the float mu = 1 - 1.000089e-12 gives another number: the keyword is what keeps them
    assert abs(log_tail_miss_probability(n, 1.0 - comp, tau) - float(exact)) > 1e-5


# found by search: float64's error bound cannot certify the sign of Pr(B)(n + 1) - Pr(B)(n) next to the real
# maximiser, so 60-digit arithmetic decides (at the second point with 1 - mu given to full precision, where the
# term in x^n matters)
@pytest.mark.parametrize("mu, tau, one_minus_mu", [(1.4e-12, 2.2e-13, None), (None, 7.25e-07, 2.11e-13)])
def test_peak_where_only_60_digits_tell_the_neighbours_apart(mu, tau, one_minus_mu):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing deprecated on the way (np.finfo(None) would warn)
        peak = peak_group_size(mu, tau, one_minus_mu=one_minus_mu)
    with mpmath.workdps(60):
        c = mpmath.mpf(one_minus_mu) if one_minus_mu is not None else 1 - mpmath.mpf(mu)
        t = mpmath.mpf(tau)

        def tail(k):
            return (1 - t) ** k - (1 - c - t) ** k - c**k

        floor = int(math.floor(peak.n_continuous))
        values = {k: tail(k) for k in (floor - 1, floor, floor + 1, floor + 2)}
    assert peak.n_star == max(values, key=values.get)


def test_the_limit_of_the_tail_miss_is_zero():
    # the helper behind `fgrpo theory derive`'s tail_miss_limit (derivations() itself takes seconds of sympy)
    from fgrpo_sim.theory.symbols import N
    from fgrpo_sim.theory.tail_miss import symbolic_tail_miss

    limit_at_infinity = importlib.import_module("fgrpo_sim.theory.derivations")._limit_at_infinity
    assert limit_at_infinity(symbolic_tail_miss(), N) == 0


def test_closed_form_registers_a_valid_name_and_refuses_another():
    def derive():
        return None

    try:
        assert lam.closed_form("a_new_form")(derive) is derive
        assert lam.DERIVATIONS["a_new_form"] is derive
    finally:
        lam.DERIVATIONS.pop("a_new_form", None)
    with pytest.raises(ValueError, match=r"^name must be a Python identifier, got 'a-new-form'$"):
        lam.closed_form("a-new-form")


# ---- the generator: what `make theory-generated` writes -----------------------------------------------------


@pytest.fixture(scope="module")
def regenerated():
    return generate.generated_sources()


def _form(text: str):
    namespace: dict = {}
    exec(compile(text, "<regenerated>", "exec"), namespace)
    form = namespace["FORM"]
    return form if isinstance(form, tuple) else (form,)


def test_regenerated_forms_compute_the_shipped_numbers(regenerated):
    assert set(regenerated) == set(lam.DERIVATIONS)
    for name, text in regenerated.items():
        assert generate.MARKER in text.splitlines()[2]
        assert text.splitlines()[3] == "tests/test_theory_generated.py regenerates it from the derivation and compares."
        shipped = lam.lambdified(name)
        shipped = shipped if isinstance(shipped, tuple) else (shipped,)
        for fresh, known in zip(_form(text), shipped, strict=True):
            args = [0.3] * fresh.__code__.co_argcount  # inside every form's domain (a probability, a size, a log)
            assert float(fresh(*args)) == pytest.approx(float(known(*args)), rel=1e-12), name


def test_module_source_imports_what_lambdify_used_and_no_builtin():
    import sympy as sp

    x = sp.Symbol("x")

    def derive_one():  # a builtin (max) that lambdify's namespace holds, before a numpy name
        return sp.lambdify(x, sp.Function("max")(x, 1) ** sp.exp(x), modules=[{"max": max}, "numpy"])

    def derive_pair():
        return sp.lambdify(x, 2 * x, modules="numpy"), sp.lambdify(x, sp.exp(x), modules="numpy")

    text = generate.module_source("demo", derive_one)
    assert "\nfrom numpy import exp\n\n" in text and "max" not in text.split("def demo")[0]
    (demo,) = _form(text)
    assert demo.__name__ == "demo" and demo(2.0) == pytest.approx(2.0 ** math.exp(2.0), rel=1e-15)
    pair = _form(generate.module_source("pair", derive_pair))
    assert [f.__name__ for f in pair] == ["pair_0", "pair_1"]
    assert (pair[0](1.5), pair[1](0.0)) == (3.0, 1.0)
    assert "\n\nFORM = (pair_0, pair_1)\n" in generate.module_source("pair", derive_pair)

    for argument in (sp.Symbol("lambda"), sp.Function("f")(x)):  # lambdify renames both to a fresh Dummy
        with pytest.raises(ValueError, match=r"^dummy: lambdify renamed an argument to a Dummy"):
            generate.module_source("dummy", lambda: sp.lambdify(argument, 2 * argument, modules="numpy"))

    def derive_other():  # not lambdify's output: the error shows the first 60 characters of its source
        return lambda v: 2 * v  # a lambda's source is its whole line, this comment included, longer than 60

    with pytest.raises(ValueError) as refused:
        generate.module_source("other", derive_other)
    source = inspect.getsource(derive_other())
    assert len(source) > 60 and str(refused.value) == f"other: unexpected lambdify source {source[:60]!r}"

    def derive_foreign():  # a global from none of numpy, scipy.special, math: its source could not import it
        return sp.lambdify(x, sp.Function("twice")(x), modules=[{"twice": lambda v: 2 * v}, "math"])

    with pytest.raises(ValueError, match=r"^foreign: lambdify's name 'twice' comes from none of \('numpy'"):
        generate.module_source("foreign", derive_foreign)


def test_generate_main_reports_rewrites_and_refuses_a_foreign_file(regenerated, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "_generated"
    folder.mkdir()
    monkeypatch.setattr(generate, "GENERATED_DIR", folder)
    monkeypatch.setattr(generate, "generated_sources", lambda: regenerated)
    names = sorted(regenerated)
    for name in names[1:]:
        (folder / f"{name}.py").write_text(regenerated[name])
    (folder / "__init__.py").write_text("")  # the package's own file: never stale
    assert generate.stale(regenerated) == [f"{names[0]}.py"]  # the missing one alone
    (folder / f"{names[1]}.py").write_bytes(b"# " + generate.MARKER.encode() + b" \xff stale\n")
    assert generate.main(["--check"]) == 1
    assert capsys.readouterr().err.splitlines() == [f"stale: fgrpo_sim/theory/_generated/{names[0]}.py",
                                                    f"stale: fgrpo_sim/theory/_generated/{names[1]}.py"]
    (folder / "retired.py").write_text(f"# {generate.MARKER}\n")
    assert generate.main([]) == 0
    assert capsys.readouterr().out.splitlines() == [f"wrote fgrpo_sim/theory/_generated/{names[0]}.py",
                                                    f"wrote fgrpo_sim/theory/_generated/{names[1]}.py",
                                                    "removed retired.py"]
    assert generate.stale(regenerated) == [] and generate.main(["--check"]) == 0
    (folder / f"{names[2]}.py").write_text("# someone's own file\n")  # no marker: not ours to replace
    with pytest.raises(ValueError, match=f"^generated closed form .*{names[2]}.py exists and was not written by this"):
        generate.main([])
    assert (folder / f"{names[2]}.py").read_text() == "# someone's own file\n"
    assert generate.main(["--fix"]) == 2
    assert capsys.readouterr().err == "usage: python -m fgrpo_sim.theory.generate [--check]\n"
    monkeypatch.setattr("sys.argv", ["generate.py", "--fix"])  # no argv given: the command line's
    assert generate.main() == 2
