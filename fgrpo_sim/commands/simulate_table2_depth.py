"""`fgrpo simulate table2-depth`: the fitted population's GRPO, F-GRPO and low-LR rows beside Table 2 (issue 48)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import typer

from fgrpo_sim.commands.options import given, list_option

#: the options a record's `command` repeats when given (the run's settings); --progress, --device, --force and
#: --json change how it runs or prints, not what it computes
RECORDED = (("populations", "--populations"), ("group_sizes", "--n"), ("rare_mass", "--rare-mass"),
            ("rare_only_share", "--rare-only-share"), ("rare_strategies", "--rare-strategies"),
            ("offset_scale", "--offset-scale"), ("lr", "--lr"), ("steps", "--steps"), ("prompt_batch", "--prompt-batch"),
            ("common_correct_prob", "--common-correct-prob"), ("optimizer", "--optimizer"),
            ("parametrisation", "--parametrisation"), ("seed_offset", "--seed-offset"))
#: why --optimizer and --parametrisation take one value here (they are lists where the group-size study sweeps them)
ONE_CHOICE = "one fitted setting per call; benchmarks/table2_depth_robustness.py runs the alternatives"



def register(app: typer.Typer) -> None:
    from fgrpo_sim.sim.table2_depth import FITTED, FITTED_POPULATIONS, GROUP_SIZES

    @app.command("table2-depth", short_help="Table 2's depth: the fitted population beside the paper, with the "
                 "unfitted F-GRPO and Table 3 control cells predicted.")
    def table2_depth_command(
        ctx: typer.Context,
        out: Path = typer.Option(..., "--out", help="The JSON record to write (atomically), e.g. "
                                 "fgrpo_sim/results/table2-depth.json; an earlier record is replaced, another "
                                 "file only with --force."),
        populations: int = typer.Option(FITTED_POPULATIONS, "--populations", help="Population draws (seeds "
                                        "S..S+P-1, S the --seed-offset), in [2, 10^4]; every interval is a 95% t "
                                        "interval over them."),
        group_sizes: Sequence[int] = list_option(",".join(map(str, GROUP_SIZES)), "--n", int,
                                                 help="Group sizes N, comma-separated (Table 2's by default)."),
        rare_mass: Sequence[float] = list_option(f"{FITTED.rare_mass:g}", "--rare-mass", float,
                                                 one="one fitted population per call",
                                                 help="Shared prior mass on the rare strategies, in (0, 0.4)."),
        rare_only_share: float = typer.Option(FITTED.rare_only_share, "--rare-only-share",
                                              help="Share of prompts solvable only by a rare strategy, in [0, 1]."),
        rare_strategies: int = typer.Option(FITTED.rare_strategies, "--rare-strategies",
                                            help="Number of rare strategies, in [1, 1000]."),
        offset_scale: float = typer.Option(FITTED.offset_scale, "--offset-scale", help="Spread of per-prompt "
                                           "success at the start (std of the per-prompt offsets), in [0, 20]."),
        lr: float = typer.Option(FITTED.lr, "--lr", help="Learning rate of --optimizer, in (0, 10] for adam, "
                                 "(0, 1000] for sgd; the low-LR control runs at lr x m_0.5."),
        steps: int = typer.Option(FITTED.steps, "--steps", help="Training steps for every N (Table 2's equal "
                                  "steps), in [1, 10^6]."),
        prompt_batch: int = typer.Option(FITTED.prompt_batch, "--prompt-batch", help="Prompts per step B, in [1, 256]."),
        common_correct_prob: float = typer.Option(FITTED.common_correct_prob, "--common-correct-prob",
                                                  help="Chance that a common strategy solves a common-solvable "
                                                  "prompt (the start's success level), in (0, 1]."),
        optimizer: Sequence[str] = list_option(FITTED.optimizer, "--optimizer", str, one=ONE_CHOICE,
                                               help="adam or sgd (the group-size study's optimizers)."),
        parametrisation: Sequence[str] = list_option(FITTED.parametrisation, "--parametrisation", str,
                                                     one=ONE_CHOICE, help="Logits = M theta: axis, orthogonal or "
                                                     "dense (sim/parametrisation.py)."),
        seed_offset: int = typer.Option(FITTED.seed_offset, "--seed-offset", help="The first population seed S: "
                                        "draws S..S+P-1, in [0, 10^9] (40 with 40 populations: a fresh set)."),
        device: str = typer.Option("auto", "--device", help="auto (CUDA when present), cpu or cuda."),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a tqdm progress bar on stderr."),
        force: bool = typer.Option(False, "--force", help="Replace an existing --out that is not such a record."),
        as_json: bool = typer.Option(False, "--json", help="Print the record instead of the predictions table."),
    ) -> None:
        """Train the fitted population (sim/table2_depth.py: the group-size study's engine; Adam and the
        orthogonal map unless --optimizer, --parametrisation say otherwise) for GRPO at every N, F-GRPO gamma 0.5,
        the low-LR control (lr x m_0.5) and the entropy and KL controls on the paper's coefficient grids; write the record (fit targets: Table 2's GRPO row only;
        predictions of the unfitted cells under v1's hit rule and, as contrasts to GRPO at N = 8, v2's; the GRPO
        dip's flanks). docs/population.md, "Table 2's depth: a prediction"."""
        from dataclasses import replace

        from fgrpo_sim.atomic_io import check_replaceable, check_writable, write_text_atomic
        from fgrpo_sim.jsonl import dumps
        from fgrpo_sim.sim.population import resolve_device
        from fgrpo_sim.sim.table2_depth import build_record, run_setting, study_spec
        from fgrpo_sim.sim.table2_depth_record import is_record
        from fgrpo_sim.validation import options_named

        check_writable(out, "--out")  # first: a path typed as a folder ("rec.json/") is named as such
        if out.suffix.lower() != ".json":
            raise ValueError(f"--out must end in .json, got {out.name!r}")
        with options_named(rare_mass="--rare-mass", rare_only_share="--rare-only-share",
                           rare_strategies="--rare-strategies", offset_scale="--offset-scale", lr="--lr",
                           steps="--steps", prompt_batch="--prompt-batch", populations="--populations",
                           common_correct_prob="--common-correct-prob", optimizer="--optimizer",
                           parametrisation="--parametrisation", seed_offset="--seed-offset",
                           group_sizes="--n"):
            setting = replace(FITTED, rare_mass=rare_mass[0], rare_only_share=rare_only_share,
                              rare_strategies=rare_strategies, offset_scale=offset_scale, lr=lr, steps=steps,
                              prompt_batch=prompt_batch, common_correct_prob=common_correct_prob,
                              optimizer=optimizer[0], parametrisation=parametrisation[0],
                              seed_offset=seed_offset).validate()
            study_spec(setting, populations, tuple(group_sizes))  # every range checked before any work
        resolve_device(device)
        check_replaceable(out, "--out", is_record, force=force)
        frame = run_setting(setting, populations, tuple(group_sizes), device=device, progress=progress)
        record = build_record(setting, frame, populations, recorded_command(ctx, out))
        write_text_atomic(out, dumps(record, indent=1) + "\n", is_ours=is_record, force=force, name="--out")
        if as_json:
            typer.echo(dumps(record))
            return
        _print_predictions(record)
        typer.echo(f"{out} written")


def recorded_command(ctx: typer.Context, out: Path) -> str:
    """The command that reproduces the record: --out as typed and every run setting given on the command line."""
    parts = ["fgrpo simulate table2-depth", f"--out {out}"]
    for name, flag in RECORDED:
        if given(ctx, name):
            value = ctx.params[name]
            value = ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value) \
                if isinstance(value, (list, tuple)) else (f"{value:g}" if isinstance(value, float) else str(value))
            parts.append(f"{flag} {value}")
    return " ".join(parts)


def _print_predictions(record: dict) -> None:
    from fgrpo_sim.commands.tables import echo_table

    def contrast(c: dict) -> list[str]:
        return [f"{c['paper']:+.2f}", f"{c['predicted']:+.2f} [{c['ci_low']:+.2f}, {c['ci_high']:+.2f}]",
                "hit" if c["hit"] else "miss"]

    rows = [[p["cell"]["method"], str(p["cell"]["N"]), p["cell"]["metric"], f"{p['paper']:g}",
             f"{p['predicted']:.2f} [{p['ci_low']:.2f}, {p['ci_high']:.2f}]", "hit" if p["hit"] else "miss",
             *contrast(p["contrast"])] for p in record["predictions"]]
    echo_table(["method", "N", "metric", "paper", "predicted [95% t]", "v1 rule", "paper - GRPO",
                "sim - GRPO [paired 95% t]", "v2 rule"], rows, left=(0, 2, 5, 8))
    dip = record["grpo_dip_points"]
    typer.echo(f"GRPO pass@256 lowest at N = {dip['dip_N']}; flanks: N = {dip['left']['N']} "
               f"{dip['left']['points']:+.2f} [{dip['left']['ci_low']:+.2f}, {dip['left']['ci_high']:+.2f}], "
               f"N = {dip['right']['N']} {dip['right']['points']:+.2f} "
               f"[{dip['right']['ci_low']:+.2f}, {dip['right']['ci_high']:+.2f}] points")
