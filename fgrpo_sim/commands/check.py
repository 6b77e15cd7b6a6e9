"""`fgrpo check`: the theory's closed forms against simulation (Lemma 3.1, Lemma H.1, BroRL's E[U2], Prop. 3.2,
the focal weight and m_gamma, raw and smoothed), and the exact checks of N*, pass@k, the paired test's variance, core's
advantages and focal weight, the categorical start and every surrogate x optimizer path (`sim.checks_exact`)."""

from __future__ import annotations

import typer

from fgrpo_sim import jsonl as json  # standard JSON out: non-finite numbers as null, never bare NaN


def register(app: typer.Typer) -> None:
    """Add the `check` command to the top-level app."""

    @app.command("check", short_help="Check every closed form of the theory against simulation.")
    def check_command(
        as_json: bool = typer.Option(False, "--json", help="Print a JSON list of {name, closed_form, estimate, interval, kind, passed} (plus level for an interval, trials/etas/errors where they apply)."),
        quick: bool = typer.Option(False, "--quick", help="Reduced grid and fewer trials: 73 checks instead of 130 (6-10 s of CPU measured; what the test suite runs)."),
        seed: int = typer.Option(0, "--seed", help="Base random seed, integer in [0, 2^40]."),
        device: str = typer.Option("auto", "--device", help="Torch device for the Monte Carlo draws: auto (CUDA when present, like every command), cpu, cuda or cuda:K."),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar on stderr."),
    ) -> None:
        """Compare every closed form of the theory with simulation: each line shows the closed form, the
        simulated estimate, its bounds and the verdict. Exits with status 1 if any check fails.

        A fixed set of checks whatever the seed. Each sampling interval is at level 0.1% / (the number of
        intervals) (Bonferroni), so a correct build fails a whole run with probability at most 0.1%; the
        tolerance checks are deterministic.
        """
        from fgrpo_sim.sim.checks import format_results, run_checks
        from fgrpo_sim.validation import check_integer

        check_integer("seed", seed, 0, 2**40)
        results = run_checks(quick=quick, seed=seed, device=device, progress=progress and not as_json)
        if as_json:
            typer.echo(json.dumps(results, indent=1))
        else:
            typer.echo(format_results(results))
        if not all(r["passed"] for r in results):
            raise typer.Exit(1)
