"""`fgrpo plan`: choose a group size N (and gamma) before training, from a pilot run's success rates."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import typer

from fgrpo_sim.commands.options import focal_smoothing_option, list_option
from fgrpo_sim.validation import options_named, parse_list


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def register(app: typer.Typer) -> None:
    @app.command("plan", short_help="Choose a group size N (and gamma) from pilot success rates.")
    def plan_command(
        success_rates: Optional[Path] = typer.Argument(
            None,
            help="Pilot-run file with one row per prompt and a success_rate column in [0, 1]: CSV with a "
            "header row, or JSON lines ({\"success_rate\": 0.25} per line); or `fgrpo llm eval` output (one line "
            "per sample; rate = correct / samples per problem). Omit it and give --beta instead.",
        ),
        beta: Optional[str] = typer.Option(
            None, "--beta", help="Difficulty as a Beta distribution 'A,B' (A, B > 0; up to ~100 for the quadrature) instead of a pilot file, "
            "e.g. --beta 0.5,0.5 for a mix of very easy and very hard prompts."),
        column: str = typer.Option("success_rate", "--column", help="Name of the success-rate column in the file."),
        rho: Sequence[float] = list_option("0.1", "--rho", float, help="Rare share(s) rho in (0, 1): the share of a prompt's correct "
            "mass held by its rare correct answers (tau = rho * mu), comma-separated. To choose it: in a pilot with "
            "many samples per prompt, take the share of correct samples whose answer (or solution path) is not "
            "the prompt's most common correct one; without a pilot, compare --rho 0.02,0.05,0.1 and size N for the "
            "smallest (the rarer the mode, the larger the N at which groups miss it)."),
        group_sizes: Sequence[int] = list_option("2,4,8,16,32,64,128,256", "--n", int, help="Candidate group sizes N (integers in [1, 16384]), comma-separated."),
        gammas: Sequence[float] = list_option("0,0.5,1", "--gamma", float, help="Focal exponents gamma >= 0 whose mean weight to report, comma-separated."),
        focal_smoothing: float = focal_smoothing_option(" Changes only the g(G) columns."),
        max_tail_miss: float = typer.Option(
            0.1, "--max-tail-miss", help="Recommendation: largest acceptable average Pr(B), in [0, 1]."),
        min_active: float = typer.Option(
            0.5, "--min-active", help="Recommendation: smallest acceptable fraction of active groups, in [0, 1]."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object (rows + recommendation) instead of text."),
    ) -> None:
        """Expected active groups, tail-miss probability (Lemma 3.1) and focal weights for each candidate N.

        Averages over prompts: a pilot run's per-prompt success rates as given, or a Beta(A, B) by exact
        Gauss-Jacobi quadrature. Ends with a plain-language recommendation.
        """
        from fgrpo_sim.planner import beta_difficulty, empirical_difficulty, format_table, plan_group_size, read_success_rates

        if success_rates is not None and not success_rates.exists() and _is_number(str(success_rates)):
            # `plan --n 4 8`: the 8 landed in SUCCESS_RATES; say what happened, not "no file named 8"
            raise ValueError(f"got a stray value {str(success_rates)!r} where the pilot file goes: lists take "
                             "commas, not spaces (--n 4,8,16, --rho 0.05,0.1, --gamma 0,0.5,1)")
        if (success_rates is None) == (beta is None):
            raise ValueError("give exactly one of SUCCESS_RATES (a pilot file) or --beta A,B")
        from fgrpo_sim.planner import MAX_GROUP_SIZE
        from fgrpo_sim.validation import check_integer

        sizes = list(group_sizes)
        check_integer("--n", sizes, 1, MAX_GROUP_SIZE)  # before the quadrature is sized from max(N)
        if beta is not None:
            params = parse_list("--beta", beta, float, unique=False)  # Beta(A, B): A = B is fine
            if len(params) != 2:
                raise ValueError(f"--beta must be two numbers A,B, got {beta!r}")
            difficulty = beta_difficulty(params[0], params[1], max_group_size=max(sizes))
        else:
            difficulty = empirical_difficulty(read_success_rates(success_rates, column), label=str(success_rates))
        with options_named(rho="--rho", N="--n", gamma="--gamma", max_tail_miss="--max-tail-miss",
                           min_active="--min-active", focal_smoothing="--focal-smoothing"):  # the planner names its parameters, the user typed options
            plan = plan_group_size(difficulty, rhos=list(rho), group_sizes=sizes,
                                   gammas=list(gammas), max_tail_miss=max_tail_miss, min_active=min_active,
                                   focal_smoothing=focal_smoothing)
        if as_json:
            typer.echo(plan.to_json())
            return
        typer.echo(f"Difficulty: {plan.difficulty}")
        _echo_wrapped("Columns: active = E[Pr(0 < X < N)], X correct of N; tail_miss = E[Pr(B)] (Lemma 3.1, "
                      "tau = rho*mu); miss|active = tail_miss / active; g(G) = mean (1 - X/N)^G over active "
                      "groups" + (f" with X/N smoothed to (X + {focal_smoothing:g}) / (N + 2 x {focal_smoothing:g})"
                                  if focal_smoothing else "") + "; --json prints every column.")
        typer.echo(format_table(plan))
        typer.echo("")
        for line in plan.recommendation.splitlines():
            _echo_wrapped(line)
        _echo_wrapped(_dip_line(difficulty, plan))


#: The text output fits a 100-column terminal (or a doc page) without wrapping mid-word.
WIDTH = 100


def _echo_wrapped(line: str) -> None:
    """One paragraph wrapped to WIDTH, continuation lines indented two more than its first."""
    import textwrap

    indent = " " * (len(line) - len(line.lstrip()))
    typer.echo(textwrap.fill(line.strip(), WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                             break_on_hyphens=False))


def _dip_line(difficulty, plan) -> str:
    """One line: where pass@k should be lowest at equal steps (planner.predict_dip), per rho."""
    from fgrpo_sim.planner import predict_dip

    sizes = plan.settings["N"]
    parts = [f"N = {predict_dip(difficulty, rho, sizes).n_star} (rho = {rho:g})" for rho in plan.settings["rho"]]
    return ("pass@k is predicted to dip near " + "; ".join(parts) + " among your candidates, at equal steps "
            "(peak of Lemma 3.1's tail miss weighted by the group's mean |advantage|; a one-group, first-order "
            "estimate: in the shared-strategy simulator the dip, where it shows, sits between half and 8x this N; "
            "docs/population.md).")
