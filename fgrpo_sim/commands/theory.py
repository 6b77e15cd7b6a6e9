"""`fgrpo theory ...`: evaluate and print the paper's closed forms (numbers come from fgrpo_sim.theory)."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Optional, Sequence

import typer

from fgrpo_sim import jsonl as json  # standard JSON out: non-finite numbers as null, never bare NaN
from fgrpo_sim.commands.options import focal_smoothing_option, list_option
from fgrpo_sim.commands.tables import echo_table

app = typer.Typer(
    help=(
        "The theory of F-GRPO as numbers: tail-miss probability (Lemma 3.1), the group size where it peaks, "
        "the focal learning-rate multiplier, and the sympy derivations behind them."
    ),
    no_args_is_help=True,
)

_MU_HELP = "mu: the prompt's success probability, Pr[a rollout is correct], in [0, 1]."
_TAU_HELP = (
    "tau: probability mass of a rare subset E of the correct rollouts, in [0, mu] "
    "(e.g. one uncommon correct solution). Give --tau or --rho, not both."
)
_RHO_HELP = "rho = tau / mu: E's share of the correct mass, in [0, 1]; an alternative to --tau. Default 0.1 if neither is given."


def _resolve_tau(mu: float, tau: Optional[float], rho: Optional[float]) -> tuple[float, float]:
    """(tau, rho) from whichever of the two the user gave."""
    from fgrpo_sim.validation import _fmt, check_range

    if tau is not None and rho is not None:
        raise ValueError("give either --tau or --rho, not both (rho = tau / mu)")
    check_range("mu", mu, 0.0, 1.0)
    if tau is None:
        rho = 0.1 if rho is None else rho
        check_range("rho", rho, 0.0, 1.0)
        return min(mu * rho, mu), rho
    check_range("tau", tau, 0.0, 1.0)
    if tau > mu:
        raise ValueError(f"tau must be in [0, mu], got {_fmt(tau)} with mu = {_fmt(mu)}")
    return tau, (tau / mu if mu > 0 else float("nan"))


def _check_derived_tau(mu: float, tau: float, rho: float, rho_given: Optional[float]) -> None:
    """`theory peak` without --tau: tau = mu x rho must be > 0 (at tau = 0 Pr(B) rises to 1 and never peaks).
    peak_group_size's own check names tau, which this user never typed: name --rho or --mu instead."""
    from fgrpo_sim.validation import _fmt

    if tau > 0:
        return
    rho_text = f"--rho {_fmt(rho)}" if rho_given is not None else f"the default --rho {_fmt(rho)}"
    if rho == 0:
        raise ValueError("--rho must be in (0, 1] for theory peak, got 0 (tau = mu x rho = 0: Pr(B) = Pr(A_N) "
                         "rises to 1 and never peaks)")
    raise ValueError(f"--mu {mu!r} is too small for {rho_text}: tau = mu x rho underflows to 0, and Pr(B) "
                     "would peak beyond the largest group size handled exactly (2^53); give a larger --mu or --rho")


def _named_as_typed(exc: ValueError, mu: float, tau_given: Optional[float], rho: float,
                    rho_given: Optional[float]) -> ValueError:
    """peak_group_size's error names mu and tau; name the options the user typed instead (--rho, or the
    default --rho, when tau was derived as mu x rho)."""
    from fgrpo_sim.validation import _fmt

    text = str(exc)
    prefix, sep, rest = text.partition(": ")
    if not sep or not prefix.startswith("mu and tau"):
        return exc
    rest = rest.split("; got ")[0]
    if tau_given is not None:
        return ValueError(f"--mu and --tau too small: {rest}; got --mu {_fmt(mu)}, --tau {_fmt(tau_given)}")
    rho_text = f"--rho {_fmt(rho)}" if rho_given is not None else f"the default --rho {_fmt(rho)}"
    return ValueError(f"--mu {_fmt(mu)} is too small for {rho_text}: {rest}; give a larger --mu or --rho")


def _one_minus(typed: Decimal, mu: float) -> Optional[float]:
    """1 - mu computed from the decimal digits given, for mu in [0.5, 1): near 1 the float nearest mu keeps
    only a few digits of 1 - mu (0.9999999972552174 -> 1 - mu off by 2e-8 relative); None elsewhere."""
    import decimal

    if not (math.isfinite(mu) and 0.5 <= mu < 1.0):
        return None
    try:
        return float(decimal.Decimal(1) - typed)
    except decimal.InvalidOperation:
        return None


def _emit_json(rows: list[dict]) -> None:
    """JSON Lines: one object per row, however many rows the lists give (as `simulate group-size`), so a
    reader never meets an object in one case and a list in another; non-finite numbers as null."""
    for row in rows:
        typer.echo(json.dumps(row))


#: --mu keeps the digits typed (Decimal) for 1 - mu near 1; repeats are judged as numbers (.5 and 5e-1 are one)
def _mu_option(default: str, help: str):
    return list_option(default, "--mu", Decimal, help=help)


def _tau_option(more: str):
    return list_option(None, "--tau", float, help=f"{_TAU_HELP} {more}")


def _rho_option(more: str):
    return list_option(None, "--rho", float, help=f"{_RHO_HELP} {more}")


def _json_lines_option(keys: str):
    return typer.Option(False, "--json", help=f"Print JSON Lines: one object per row ({keys}).")


@app.command("tail-miss", short_help="Pr(B): an active group misses the rare subset E (Lemma 3.1).")
def tail_miss_command(
    n: Sequence[int] = list_option("8", "--n", int, help="Group size(s) N (rollouts per prompt), integers >= 1, "
                                   "comma-separated for a table: --n 4,8,16 (as in plan and simulate)."),
    mus: Sequence[Decimal] = _mu_option("0.5", help=_MU_HELP + " Comma-separated for one table per mu: "
                                        "--mu 0.2,0.5 (as in theory peak)."),
    taus: Optional[Sequence[float]] = _tau_option("Comma-separated for one table each."),
    rhos: Optional[Sequence[float]] = _rho_option("Comma-separated for one table each: --rho 0.01,0.1."),
    as_json: bool = _json_lines_option("n, mu, tau, rho, probability, log_probability (natural log), "
                                       "activity_probability"),
) -> None:
    """Pr(B) = (1-tau)^N - (mu-tau)^N - (1-mu)^N: the group is active (has both correct and incorrect
    rollouts, so GRPO learns from it) yet never samples the rare correct subset E."""
    from fgrpo_sim.validation import check_integer

    check_integer("n", n, 1, 2**62)
    tables = [_tail_miss_table(n, mu, tau, rho) for mu in mus for tau in taus or [None] for rho in rhos or [None]]
    if as_json:
        _emit_json([{"n": k, "mu": mu, "tau": tau, "rho": rho, "probability": p, "log_probability": lg,
                     "activity_probability": a} for mu, tau, rho, rows in tables for k, p, lg, a in rows])
        return
    for index, (mu, tau, rho, rows) in enumerate(tables):
        if index:
            typer.echo("")
        typer.echo(f"mu = {mu:g}, tau = {tau:.6g}, rho = tau/mu = {rho:.6g}")
        echo_table(["N", "Pr(B) tail miss", "log10 Pr(B)", "Pr(A_N) active"],
                   [(k, f"{p:.10g}", f"{lg / math.log(10):.6g}", f"{a:.10g}") for k, p, lg, a in rows])


def _tail_miss_table(n: list, typed: Decimal, tau: Optional[float], rho: Optional[float]):
    """(mu, tau, rho, [(N, Pr(B), ln Pr(B), Pr(active))]) for one mu as typed and one --tau or --rho."""
    from fgrpo_sim.theory import activity_probability, log_tail_miss_probability, tail_miss_probability

    mu = float(typed)
    tau, rho = _resolve_tau(mu, tau, rho)
    # 1 - mu from the digits typed, as `theory peak` reads it (the float nearest mu keeps few of them near 1)
    comp = _one_minus(typed, mu)
    rows = [(k, tail_miss_probability(k, mu, tau, one_minus_mu=comp),
             log_tail_miss_probability(k, mu, tau, one_minus_mu=comp),  # finite where Pr(B) underflows
             activity_probability(k, mu, one_minus_mu=comp)) for k in n]
    return mu, tau, rho, rows


@app.command("peak", short_help="Group size N* where the tail-miss probability peaks.")
def peak_command(
    mus: Sequence[Decimal] = _mu_option("0.5", help=_MU_HELP.replace("in [0, 1]", "in (0, 1]")
                                        + " Comma-separated for a table: --mu 0.2,0.5,0.8."),
    taus: Optional[Sequence[float]] = _tau_option("Must be > 0 (at tau = 0 there is no peak). Comma-separated for "
                                                  "a table."),
    rhos: Optional[Sequence[float]] = _rho_option("Comma-separated for a table: --rho 0.01,0.05,0.1."),
    as_json: bool = _json_lines_option("mu, tau, rho, n_star, n_continuous, probability"),
) -> None:
    """The group size N* at which the tail-miss probability peaks (exact integer argmax) and Pr(B) there.

    Larger groups first make active groups likelier, then make it likelier that some rollout finds E:
    Pr(B) rises, peaks at N*, and falls. Rarer subsets (smaller rho) peak later and higher. Lists give one
    row per (mu, tau or rho) pair."""
    from fgrpo_sim.theory import peak_group_size
    from fgrpo_sim.validation import _fmt, check_range

    rows = []
    for typed in mus:
        mu = float(typed)
        check_range("--mu", mu, 0.0, 1.0, low_open=True)  # the option's range here (mu = 0 has no peak)
        one_minus_mu = _one_minus(typed, mu)
        for tau_given in taus or [None]:
            for rho_given in rhos or [None]:
                tau, rho = _resolve_tau(mu, tau_given, rho_given)
                if tau_given is None:
                    _check_derived_tau(mu, tau, rho, rho_given)
                try:
                    if one_minus_mu is None:
                        result = peak_group_size(mu, tau)
                    else:  # 1 - mu from the digits typed, not from the float nearest mu
                        result = peak_group_size(None, tau, one_minus_mu=one_minus_mu)
                except ValueError as exc:
                    raise _named_as_typed(exc, mu, tau_given, rho, rho_given) from None
                rows.append({"mu": mu, "tau": tau, "rho": rho, "n_star": result.n_star,
                             "n_continuous": result.n_continuous, "probability": result.probability})
    if as_json:
        _emit_json(rows)
        return
    for row in rows:
        typer.echo(
            f"N* = {row['n_star']} (continuous maximiser {row['n_continuous']:.10g}), Pr(B) at N* = "
            f"{row['probability']:.10g}  [mu = {_fmt(row['mu'])}, tau = {row['tau']:.6g}, rho = {row['rho']:.6g}]"
        )


@app.command("lr-multiplier", short_help="m_gamma: learning-rate factor matching focal weighting.")
def lr_multiplier_command(
    gammas: Sequence[float] = list_option("0.5", "--gamma", float, help="Focal exponent gamma >= 0 (0 = plain "
                                          "GRPO); comma-separated for one line each: --gamma 0.5,1."),
    weight: str = typer.Option(
        "mean_abs_advantage", "--weight",
        help="How prompts are weighted when averaging (1-mu)^gamma over mu in [0, 1]: mean_abs_advantage "
        "(2 sqrt(mu(1-mu)), the paper's 0.679) or variance (mu(1-mu), the paper's prose).",
    ),
    base_lr: Optional[float] = typer.Option(None, "--base-lr", help="Optional learning rate of the unweighted run, > 0; also print base_lr * m_gamma."),
    n: Optional[Sequence[int]] = list_option(None, "--n", int, help="Group size(s) N >= 2: m_gamma(N, alpha), the "
                                             "average over what groups of N carry (c uniform on 0..N, each group "
                                             "weighted by its mean |advantage|); needs --weight mean_abs_advantage. "
                                             "Default: none, App. N's N -> infinity form."),
    focal_smoothing: float = focal_smoothing_option(" Needs --n (at N -> infinity alpha changes nothing)."),
    as_json: bool = _json_lines_option("gamma, weight, multiplier[, n, focal_smoothing][, base_lr, matched_lr]"),
) -> None:
    """m_gamma: the learning-rate factor whose average scale reduction matches focal weighting (App. N).

    m_gamma = B(3/2, gamma + 3/2) / B(3/2, 3/2); m_0 = 1, m_0.5 = 0.679 (lr 1e-6 -> 6.8e-7). With --n, the
    same average at group size N, with the weight of the estimate (c + alpha) / (N + 2 alpha)."""
    from fgrpo_sim.theory import lr_multiplier, smoothed_lr_multiplier
    from fgrpo_sim.validation import check_range

    if base_lr is not None:
        check_range("base_lr", base_lr, 0.0, math.inf, low_open=True, high_open=True)
    check_range("focal_smoothing", focal_smoothing, 0.0, math.inf, high_open=True)
    if n is None and focal_smoothing > 0:
        raise ValueError("--focal-smoothing needs --n: as N -> infinity the smoothed estimate is the raw one")
    if n is not None and weight != "mean_abs_advantage":
        raise ValueError("--n takes only --weight mean_abs_advantage (each group weighted by its mean |advantage|)")
    payloads = []
    for gamma in gammas:
        for size in n or [None]:
            if size is None:
                payload = {"gamma": gamma, "weight": weight, "multiplier": lr_multiplier(gamma, weight=weight)}
            else:
                payload = {"gamma": gamma, "weight": weight, "n": size, "focal_smoothing": focal_smoothing,
                           "multiplier": smoothed_lr_multiplier(size, gamma, focal_smoothing)}
            if base_lr is not None:
                payload.update(base_lr=base_lr, matched_lr=base_lr * payload["multiplier"])
            payloads.append(payload)
    if as_json:
        _emit_json(payloads)
        return
    for payload in payloads:
        at_n = f", N = {payload['n']}, focal_smoothing = {payload['focal_smoothing']:g}" if "n" in payload else ""
        line = f"m_gamma = {payload['multiplier']:.6g}  [gamma = {payload['gamma']:g}, weight = {weight}{at_n}]"
        if base_lr is not None:
            line += f"; learning rate {base_lr:g} -> {payload['matched_lr']:.4g}"
        typer.echo(line)


@app.command("expected-weight", short_help="E[g]: the focal weight expected at success probability mu.")
def expected_weight_command(
    n: Sequence[int] = list_option("2,8", "--n", int, help="Group size(s) N >= 1, comma-separated: --n 2,8,16."),
    mus: Sequence[float] = list_option("0.5", "--mu", float, help=_MU_HELP + " Comma-separated: --mu 0.2,0.8."),
    gammas: Sequence[float] = list_option("0.5", "--gamma", float, help="Focal exponent(s) gamma >= 0, comma-separated."),
    focal_smoothing: float = focal_smoothing_option(""),
    as_json: bool = _json_lines_option("n, mu, gamma, focal_smoothing, expected_weight, raw_expected_weight"),
) -> None:
    """E[(1 - (c + alpha) / (N + 2 alpha))^gamma] over c ~ Binomial(N, mu), beside the paper's alpha = 0.

    At N = 2 the raw weight takes only 1, 0.5^gamma and 0; alpha > 0 pulls all three towards 0.5^gamma."""
    from fgrpo_sim.theory import expected_smoothed_focal_weight

    rows = [{"n": size, "mu": mu, "gamma": gamma, "focal_smoothing": focal_smoothing,
             "expected_weight": expected_smoothed_focal_weight(size, mu, gamma, focal_smoothing),
             "raw_expected_weight": expected_smoothed_focal_weight(size, mu, gamma)}
            for gamma in gammas for mu in mus for size in n]
    if as_json:
        _emit_json(rows)
        return
    typer.echo(f"focal_smoothing alpha = {focal_smoothing:g}")
    echo_table(["N", "mu", "gamma", "E[g] smoothed", "E[g] raw (alpha 0)"],
               [(r["n"], f"{r['mu']:g}", f"{r['gamma']:g}", f"{r['expected_weight']:.6g}",
                 f"{r['raw_expected_weight']:.6g}") for r in rows])


@app.command("derive", short_help="Print the sympy derivations behind the numbers.")
def derive_command(
    latex: bool = typer.Option(False, "--latex", help="Print LaTeX instead of plain sympy text. Default: off."),
    name: Optional[Sequence[str]] = list_option(None, "--name", str, help="Print only these derivations, "
                                                "comma-separated, e.g. tail_miss,lr_multiplier,dQ_pos; an unknown "
                                                "name lists them all. Default: all."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object: name -> {description, text} "
                                 "(text in LaTeX with --latex)."),
) -> None:
    """Run the sympy derivations (tail miss, its slope and limits, m_gamma, dQ_pos / dQ_upos, Lemma H.1) and print them."""
    from fgrpo_sim.theory import derivations

    items = derivations()
    selected = list(name) if name else list(items)
    unknown = [n for n in selected if n not in items]
    if unknown:
        raise ValueError(f"unknown derivation {', '.join(unknown)}; --name must be one of {', '.join(items)}")
    if as_json:
        typer.echo(json.dumps({key: {"description": items[key].description,
                                     "text": items[key].latex() if latex else items[key].text()} for key in selected}))
        return
    for key in selected:
        item = items[key]
        typer.echo(f"# {item.name}: {item.description}")
        typer.echo(item.latex() if latex else item.text())
