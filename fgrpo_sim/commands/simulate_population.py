"""`fgrpo simulate population`: the multi-prompt mode simulator (GRPO vs F-GRPO vs low-LR across N)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import typer

from fgrpo_sim.commands.options import (executor_option, focal_smoothing_option, given, list_option, make_executor,
                                        ray_address_option, ray_cpus_option, refuse_together, refuse_unused)
from fgrpo_sim.validation import options_named, parse_list

#: Options (parameter names) that only one --sharing mode reads; giving one to the other mode is an error.
MODE_ONLY_OPTIONS = {
    "per-prompt": ("beta", "rho", "rho_max", "actions"),
    "shared": ("strategies", "strategy_mass", "common_correct_prob", "rare_correct_prob", "rare_only_share",
               "rare_only_strategies", "heldout_prompts", "offset_scale", "trainable_offsets"),
}


#: The one rule of the unweighted baseline under --gamma, stated in both commands' --help.
BASELINE_RULE = "gamma 0, the unweighted baseline, always runs, listed or not"

#: Why `simulate population` takes one value of names that are lists where a command sweeps them.
ONE_POPULATION = "one population per call; run the command once per value"
ONE_LR = "one --lr fits one optimizer; simulate group-size sweeps optimizers with --adam-lr and --sgd-lr"

#: Columns that mark a table as this command's own earlier output (both modes), and the group-size study's:
#: the overwrite rule replaces only such a table without --force (a categorical table lacks them).
POPULATION_COLUMNS = ("method", "N", "variant", "run", "step", "bucket", "pass@1")
GROUP_SIZE_COLUMNS = ("chunk", "optimizer", "parametrisation", "view", "rare_mass", "population", "N", "variant",
                      "seed", "steps", "step")


def _has_columns(path: Path, columns) -> bool:
    from fgrpo_sim.csv_rows import table_columns

    return set(columns) <= set(table_columns(path))


def register(app: typer.Typer) -> None:
    @app.command("population", short_help="Many prompts: GRPO vs F-GRPO vs low-LR control over N.")
    def population_command(
        ctx: typer.Context,
        out: Path = typer.Option(..., "--out", help="Output table (.parquet or .csv), written atomically "
                         "after each variant; the same command resumes (keeps the variants run with its settings)."),
        prompts: int = typer.Option(512, "--prompts", help="Number of prompts P, in [1, 10^7]."),
        beta: str = typer.Option("1,1", "--beta", help="Difficulty: initial success rate mu_pos ~ Beta(A,B), "
                                 "given as 'A,B' (each in (0, 1e15]); 1,1 is uniform."),
        rho: Sequence[float] = list_option("0.1", "--rho", float, one=ONE_POPULATION, help="Rare share: fraction of "
                                           "each prompt's correct mass on the rare-correct mode, in (0, 1); one value "
                                           "here (one population)."),
        rho_max: Optional[float] = typer.Option(None, "--rho-max", help="If given (> rho), rho is drawn per prompt "
                                      "log-uniformly from [rho, rho_max]."),
        actions: str = typer.Option("2,2,4", "--actions", help="Actions per mode: 'COMMON,RARE,WRONG' "
                                    "(each >= 1)."),
        group_sizes: Sequence[int] = list_option("4,8,32", "--n", int, help="Group sizes N to sweep, comma-separated integers in [1, 10^6]."),
        gammas: Sequence[float] = list_option("0,1", "--gamma", float, help="Focal exponents gamma >= 0, comma-separated; "
                                              f"{BASELINE_RULE} (GRPO, or each --method)."),
        focal_smoothing: float = focal_smoothing_option(),
        methods: Sequence[str] = list_option("grpo", "--method", str, help="Objectives from fgrpo_sim.core: grpo, dapo, cispo "
                                    "(comma-separated)."),
        low_lr: bool = typer.Option(True, "--low-lr/--no-low-lr", help="Add, for each gamma > 0, the unweighted "
                                    "method at lr x m_gamma (the paper's low-LR control)."),
        optimizer: Sequence[str] = list_option("adam", "--optimizer", str, one=ONE_LR, help="sgd or adam (one "
                                               "optimizer over all prompts' logits; one value here)."),
        parametrisation: Sequence[str] = list_option("axis", "--parametrisation", str, one=ONE_POPULATION, help="Logits "
                                                     "= M theta: axis (one parameter per action/strategy, default), "
                                                     "orthogonal (a random rotation: same SGD path, Adam mixes modes) "
                                                     "or dense (a random map into 4x as many parameters); M drawn from "
                                                     "--seed, the same initial policy for all three. One value here."),
        lr: Optional[float] = typer.Option(None, "--lr", help="Learning rate in (0, 1e6]. Default 0.05 per-prompt, "
                                           "0.01 shared (suited to Adam). With SGD per-prompt use ~50: the "
                                           "token-mean loss divides each prompt's gradient by B*N."),
        steps: int = typer.Option(200, "--steps", help="Training steps, in [0, 10^7]."),
        prompt_batch: int = typer.Option(64, "--prompt-batch", help="Prompts per step B, in [1, P]."),
        updates_per_step: int = typer.Option(1, "--updates-per-step", help="Optimizer steps per batch of "
                                             "rollouts (PPO epochs; > 1 makes clipping matter), in [1, 1000]."),
        reward_wrong: float = typer.Option(0.0, "--reward-wrong", help="Reward of an incorrect action (< 1; "
                                           "correct gets 1)."),
        runs: int = typer.Option(4, "--runs", help="Independent runs (seeds), simulated as one batch, in [1, 10^5]."),
        eval_every: int = typer.Option(10, "--eval-every", help="Evaluate every this many steps, >= 1."),
        pass_k: Sequence[int] = list_option("1,8,64,256", "--k", int, help="k values (integers >= 1, comma-separated) for exact pass@k = 1-(1-Q_pos)^k."),
        seed: int = typer.Option(0, "--seed", help="Seed of the training randomness and of the population, >= 0."),
        device: str = typer.Option("auto", "--device", help="auto (CUDA when present), cpu or cuda."),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="Show tqdm progress bars on stderr."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of the tables: out, rows, "
                                     "and summary (the final evaluation, one record per variant x N; with --sharing "
                                     "shared, one list per split)."),
        sharing: str = typer.Option("per-prompt", "--sharing", help="per-prompt (default): every prompt owns "
                                    "its logits (--beta, --rho, --rho-max, --actions apply; the [shared] "
                                    "options are an error). shared: K global "
                                    "strategies whose logits all prompts share, plus fixed per-prompt offsets; "
                                    "the --strategies ... --trainable-offsets options apply and held-out prompts "
                                    "are evaluated (docs/population.md)."),
        strategies: str = typer.Option("4,12,8", "--strategies", help="[shared] Number of strategies "
                                       "'COMMON,RARE,WRONG' (each >= 1); wrong ones are never correct."),
        strategy_mass: str = typer.Option("0.6,0.15", "--strategy-mass", help="[shared] Initial shared prior "
                                          "mass 'COMMON,RARE' of all common / all rare strategies (> 0, sum < 1; "
                                          "the rest goes to the wrong ones)."),
        common_correct_prob: float = typer.Option(0.5, "--common-correct-prob", help="[shared] Chance that a "
                                                  "common strategy is correct on a common-solvable prompt, in "
                                                  "[0, 1] (at least one always is)."),
        rare_correct_prob: float = typer.Option(0.1, "--rare-correct-prob", help="[shared] Chance that a rare "
                                                "strategy is correct on a common-solvable prompt (its rare-correct "
                                                "mode), in [0, 1]."),
        rare_only_share: float = typer.Option(0.25, "--rare-only-share", help="[shared] Share of prompts "
                                              "solvable only by rare strategies, in [0, 1]."),
        rare_only_strategies: int = typer.Option(1, "--rare-only-strategies", help="[shared] Correct rare "
                                                 "strategies of a rare-only prompt, in [1, RARE]."),
        heldout_prompts: int = typer.Option(256, "--heldout-prompts", help="[shared] Prompts drawn from the same "
                                            "distribution, evaluated but never trained, in [0, 10^7]."),
        offset_scale: float = typer.Option(1.0, "--offset-scale", help="[shared] Std of the fixed per-prompt "
                                           "logit offsets (prompt-to-prompt variety), in [0, 20]."),
        trainable_offsets: bool = typer.Option(False, "--trainable-offsets/--fixed-offsets", help="[shared] Also "
                                               "train a per-prompt offset for each training prompt (held-out "
                                               "prompts only get the shared logits). Default: fixed."),
        force: bool = typer.Option(False, "--force", help="Replace an existing --out that is not a population table."),
        executor: str = executor_option(),
        ray_address: Optional[str] = ray_address_option(),
        ray_cpus: Optional[int] = ray_cpus_option(),
    ) -> None:
        """Train a population of prompts with GRPO / F-GRPO (and the low-LR control) over N; save a tidy table.

        One row per (variant, N, run, evaluation step, difficulty bucket incl. 'all') with exact pass@k,
        rare-correct mass, retained correct mass, and per-interval group statistics: active fraction,
        observed vs Lemma 3.1 tail-miss, focal weights, unsampled-correct mass and its change.
        With --sharing shared the rows also carry split (train / heldout) and the buckets are the prompt
        types (common-solvable, rare-only, all).
        """
        from fgrpo_sim.atomic_io import check_replaceable, check_writable
        from fgrpo_sim.commands.json_output import emit_json, records
        from fgrpo_sim.validation import check_choice

        suffix = out.suffix.lower()
        check_choice("--out suffix", suffix, (".parquet", ".csv"))
        check_writable(out, "--out")
        check_replaceable(out, "--out", lambda path: _has_columns(path, POPULATION_COLUMNS), force=force)
        check_choice("--sharing", sharing, ("per-prompt", "shared"))
        _reject_options_of_other_mode(ctx, sharing)
        (rho,), (optimizer,), (parametrisation,) = rho, optimizer, parametrisation  # one value each (list_option)
        gammas = [0.0, *gammas] if 0 not in gammas else list(gammas)  # BASELINE_RULE
        if lr is None:
            lr = 0.05 if sharing == "per-prompt" else 0.01
        if sharing == "shared":
            population_spec = _shared_spec(prompts=prompts, strategies=strategies, strategy_mass=strategy_mass,
                                           common_correct_prob=common_correct_prob,
                                           rare_correct_prob=rare_correct_prob, rare_only_share=rare_only_share,
                                           rare_only_strategies=rare_only_strategies,
                                           heldout_prompts=heldout_prompts, offset_scale=offset_scale,
                                           trainable_offsets=trainable_offsets, seed=seed)
        else:
            population_spec = _per_prompt_spec(prompts=prompts, beta=beta, rho=rho, rho_max=rho_max,
                                               actions=actions, seed=seed)
        run_on = make_executor(ctx, executor, ray_address, ray_cpus)
        # every TrainSpec parameter the user set by an option, so its error names that option
        with options_named(pass_k="--k", group_size="--n", gamma="--gamma", method="--method",
                           optimizer="--optimizer", parametrisation="--parametrisation", lr="--lr", steps="--steps",
                           prompt_batch="--prompt-batch", updates_per_step="--updates-per-step",
                           reward_wrong="--reward-wrong", runs="--runs", eval_every="--eval-every", seed="--seed",
                           device="--device", focal_smoothing="--focal-smoothing"):
            specs = _train_specs(prompts, group_sizes=group_sizes, gammas=gammas, methods=methods, low_lr=low_lr,
                                 focal_smoothing=focal_smoothing,
                                 optimizer=optimizer, lr=lr, steps=steps, prompt_batch=prompt_batch,
                                 updates_per_step=updates_per_step, reward_wrong=reward_wrong, runs=runs,
                                 eval_every=eval_every, pass_k=pass_k, seed=seed,
                                 device=None if run_on.is_ray else device, parametrisation=parametrisation)
        pass_k_column = f"pass@{specs[0].pass_k[-1]}"
        if sharing == "shared":
            from fgrpo_sim.sim.population_shared import make_shared_population, run_shared_sweep

            frame = _run_population(lambda **kw: run_shared_sweep(make_shared_population(population_spec), **kw),
                                    population_spec, specs, sharing, out, suffix, device, progress, run_on)
            if as_json:
                from fgrpo_sim.sim.population_shared import shared_summary

                splits = [s for s in ("train", "heldout") if s in set(frame["split"])]
                emit_json({"out": str(out), "rows": len(frame),
                           "summary": {s: records(shared_summary(frame, s)) for s in splits}})
                return
            _print_shared_summary(frame, pass_k_column)
        else:
            from fgrpo_sim.sim import population

            frame = _run_population(lambda **kw: population.run_sweep(population.make_population(population_spec),
                                                                      **kw),
                                    population_spec, specs, sharing, out, suffix, device, progress, run_on)
            if as_json:
                emit_json({"out": str(out), "rows": len(frame), "summary": records(population.final_summary(frame))})
                return
            typer.echo(f"parametrisation: {parametrisation}")
            cols = ["variant", "N", "lr", "pass@1", pass_k_column, "rare_mass_retained", "tail_miss_observed",
                    "tail_miss_predicted"]
            typer.echo(population.final_summary(frame)[cols].to_string(index=False, float_format=_fmt))
        typer.echo(f"wrote {len(frame)} rows to {out}")


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _reject_options_of_other_mode(ctx: typer.Context, sharing: str) -> None:
    """A mode-specific option given on the command line with the other mode would be silently ignored."""
    from fgrpo_sim.commands.options import refuse_unused

    other = "shared" if sharing == "per-prompt" else "per-prompt"
    refuse_unused(ctx, MODE_ONLY_OPTIONS[other], f"applies only to --sharing {other}; it is not used with --sharing {sharing}")


def _parse_fields(flag: str, text: str, kind: type, fields: str) -> list:
    """A comma-separated value with exactly the named fields, e.g. 'COMMON,RARE' -> two numbers."""
    values = parse_list(flag, text, kind, unique=False)  # fields may be equal, e.g. Beta(1, 1)
    names = fields.split(",")
    if len(values) != len(names):
        count = {2: "two", 3: "three"}.get(len(names), str(len(names)))
        raise ValueError(f"{flag} must be {count} {'integers' if kind is int else 'numbers'} {fields}, got {text!r}")
    return values


def _per_prompt_spec(*, prompts, beta, rho, rho_max, actions, seed):
    """`--sharing per-prompt`: the validated spec of fgrpo_sim.sim.population."""
    from fgrpo_sim.sim.population import PopulationSpec

    a_b = _parse_fields("--beta", beta, float, "A,B")
    counts = _parse_fields("--actions", actions, int, "COMMON,RARE,WRONG")
    with options_named(num_prompts="--prompts", beta="--beta", rho_max="--rho-max", rho="--rho",
                       common_actions="--actions COMMON", rare_actions="--actions RARE",
                       wrong_actions="--actions WRONG", seed="--seed"):
        return PopulationSpec(num_prompts=prompts, beta_a=a_b[0], beta_b=a_b[1], rho=rho, rho_max=rho_max,
                              common_actions=counts[0], rare_actions=counts[1], wrong_actions=counts[2],
                              seed=seed).validate()


def _shared_spec(*, prompts, strategies, strategy_mass, common_correct_prob, rare_correct_prob, rare_only_share,
                 rare_only_strategies, heldout_prompts, offset_scale, trainable_offsets, seed):
    """`--sharing shared`: the validated spec of fgrpo_sim.sim.population_shared."""
    from fgrpo_sim.sim.population_shared import SharedPopulationSpec

    counts = _parse_fields("--strategies", strategies, int, "COMMON,RARE,WRONG")
    masses = _parse_fields("--strategy-mass", strategy_mass, float, "COMMON,RARE")
    if masses[0] > 0 and masses[1] > 0 and masses[0] + masses[1] >= 1:  # the help's rule, in its own words
        raise ValueError(f"--strategy-mass COMMON,RARE must be > 0 with a sum < 1, got {strategy_mass!r}")
    with options_named(num_prompts="--prompts", heldout_prompts="--heldout-prompts",
                       common_strategies="--strategies COMMON", rare_strategies="--strategies RARE",
                       wrong_strategies="--strategies WRONG", common_mass="--strategy-mass COMMON",
                       rare_mass="--strategy-mass RARE", common_correct_prob="--common-correct-prob",
                       rare_correct_prob="--rare-correct-prob", rare_only_share="--rare-only-share",
                       rare_only_strategies="--rare-only-strategies", offset_scale="--offset-scale", seed="--seed"):
        return SharedPopulationSpec(num_prompts=prompts, heldout_prompts=heldout_prompts, common_strategies=counts[0],
                                    rare_strategies=counts[1], wrong_strategies=counts[2], common_mass=masses[0],
                                    rare_mass=masses[1], common_correct_prob=common_correct_prob,
                                    rare_correct_prob=rare_correct_prob, rare_only_share=rare_only_share,
                                    rare_only_strategies=rare_only_strategies, offset_scale=offset_scale,
                                    trainable_offsets=trainable_offsets, seed=seed).validate()


def _train_specs(prompts, *, group_sizes, gammas, methods, low_lr, optimizer, lr, steps, prompt_batch,
                 updates_per_step, reward_wrong, runs, eval_every, pass_k, seed, device, parametrisation="axis",
                 focal_smoothing=0.0):
    """The sweep's training configurations (both modes), validated with the device before any compute."""
    from fgrpo_sim.sim.population import TrainSpec, resolve_device, sweep_variants

    base = TrainSpec(focal_smoothing=focal_smoothing, optimizer=optimizer, parametrisation=parametrisation, lr=lr, steps=steps, prompt_batch=prompt_batch,
                     updates_per_step=updates_per_step, reward_wrong=reward_wrong, runs=runs,
                     eval_every=eval_every, pass_k=tuple(pass_k), seed=seed)
    specs = sweep_variants(base, list(group_sizes), list(gammas),
                           methods=list(methods), low_lr_control=low_lr)
    for s in specs:
        s.validate(prompts)
    if device is not None:  # None: the Ray cluster's resources decide (sim.executor.placement)
        resolve_device(device)
    return specs


def _run_population(sweep, population_spec, specs, sharing: str, out: Path, suffix: str, device: str,
                    progress: bool, executor):
    """sweep(specs=..., ...) over the variants `out` does not hold yet with these settings (under its lock),
    saving after each; returns the whole table (sim.population_resume: what is kept, what is retrained)."""
    import pandas as pd

    from fgrpo_sim.output_lock import output_lock
    from fgrpo_sim.sim import population_resume

    with output_lock(out, name="--out", wait_hint=""):
        done = population_resume.kept_variants(out, population_spec, specs, sharing)
        missing = [i for i in range(len(specs)) if i not in done]

        def save(index, frame):  # index into `missing`
            done[missing[index]] = frame
            population_resume.save(out, done, population_spec, specs, sharing,
                                   lambda table, tmp: _write_frame(table, tmp, suffix))

        if missing:
            sweep(specs=[specs[i] for i in missing], device=device, progress=progress, executor=executor,
                  on_variant=save)
        return pd.concat([done[i] for i in range(len(specs))], ignore_index=True)


def _write_table(frame, out: Path, suffix: str) -> None:
    from fgrpo_sim.atomic_io import atomic_path

    with atomic_path(out) as tmp:
        _write_frame(frame, tmp, suffix)


def _write_frame(frame, path: Path, suffix: str) -> None:
    if suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)


def _print_shared_summary(frame, k: str) -> None:
    """Per split: the final table, and `k` where each variant's mean pass@1 curve reaches a common level."""
    from fgrpo_sim.sim.population_shared import at_equal_pass1, shared_summary

    cols = ["variant", "N", "lr", "pass@1", k, "rare_mass_retained", "common_strategy_mass"]
    splits = [s for s in ("train", "heldout") if s in set(frame["split"])]
    initial = frame[(frame["step"] == 0) & (frame["bucket"] == "all")]
    typer.echo(f"parametrisation: {frame['parametrisation'].iloc[0]}")
    for split in splits:
        start = initial[initial["split"] == split][["pass@1", k]].mean()
        typer.echo(f"{split} prompts (all types), last evaluation, mean of runs; initial pass@1 "
                   f"{start['pass@1']:.4f}, {k} {start[k]:.4f}:")
        typer.echo(shared_summary(frame, split)[cols].to_string(index=False, float_format=_fmt))
        for n in sorted(set(frame["N"])):
            level, values = at_equal_pass1(frame[frame["N"] == n], metric=k, split=split)
            typer.echo(f"  N={n}, {k} where the mean pass@1 curve first reaches {level:.4f} (lowest final): "
                       + "; ".join(f"{v} {x:.4f}" for v, x in values.items()))


def register_group_size(app: typer.Typer) -> None:
    @app.command("group-size", short_help="pass@1, pass@256 and dNLL_rare against N (does Table 2's dip appear?), batched, resumable.")
    def group_size_command(
        ctx: typer.Context,
        out: Optional[Path] = typer.Option(None, "--out", help="Output table (.parquet or .csv), written atomically "
                                           "after each (optimizer, parametrisation) chunk; a rerun resumes (skips "
                                           "chunks already there). Needed unless --from."),
        from_record: Optional[str] = typer.Option(None, "--from", metavar="RECORD", help="Print the report of a "
                                                  "saved --json record instead of simulating: a path, or a committed "
                                                  "record's name (population-group-size.jsonl: the study "
                                                  "docs/population.md reads; population-group-size-heldout.jsonl: "
                                                  "its held-out settings). --rare-mass, --optimizer and "
                                                  "--parametrisation, when given, select settings."),
        group_sizes: Sequence[int] = list_option("2,4,8,16,32,64,128,256,512,1024", "--n", int, help="Group sizes N, comma-separated, e.g. --n 4,8,32."),
        rare_mass: Sequence[float] = list_option("0.005,0.02,0.1", "--rare-mass", float, help="Shared prior mass on the rare strategies "
                                      "(one rare-share setting each), comma-separated, in (0, 0.4)."),
        gammas: Sequence[float] = list_option("0.5,1", "--gamma", float, help="F-GRPO exponents, comma-separated, each "
                                              f">= 0; {BASELINE_RULE} (GRPO; a low-LR control runs for each exponent > 0)."),
        focal_smoothing: float = focal_smoothing_option(),
        optimizers: Sequence[str] = list_option("adam,sgd", "--optimizer", str, help="Optimizers to compare, comma-separated: adam and/or sgd (--optimizer adam,sgd)."),
        parametrisations: Sequence[str] = list_option("axis,orthogonal,dense", "--parametrisation", str, help="Logits = M theta "
                                             "(comma-separated): axis (one parameter per strategy), orthogonal "
                                             "(random rotation, same SGD path), dense (random map into 4K "
                                             "parameters); M drawn from each population's seed."),
        adam_lr: Sequence[float] = list_option("0.01,0.03", "--adam-lr", float, help="Adam learning rates, comma-separated, in (0, 10]."),
        sgd_lr: Sequence[float] = list_option("2,6", "--sgd-lr", float, help="SGD learning rates, comma-separated, in (0, 1000]."),
        populations: int = typer.Option(10, "--populations", help="Population draws (seeds 0..P-1), in [2, 10^4]; intervals resample them."),
        seeds: int = typer.Option(2, "--runs", help="Independent runs (batch seeds) per population draw, in [1, 10^4]."),
        steps: int = typer.Option(200, "--steps", help="Equal-steps view: steps for every N (equal-rollouts: steps x 8 / N)."),
        prompt_batch: int = typer.Option(32, "--prompt-batch", help="Prompts per step B, in [1, 256]."),
        rare_correct_prob: float = typer.Option(1.0, "--rare-correct-prob", help="Chance that a rare strategy is "
                                                "correct on a common-solvable prompt, in [0, 1]: 1 (default) makes "
                                                "them Lemma 3.1's E on every such prompt (and the globally best "
                                                "strategies); below 0.5 they are worse than the common ones."),
        views: Sequence[str] = list_option("equal-steps", "--views", str, help="Comparisons, comma-separated: equal-steps (Table 2) and/or equal-rollouts."),
        eval_every: int = typer.Option(20, "--eval-every", help="Evaluate every this many steps (and last), >= 1."),
        device: str = typer.Option("auto", "--device", help="auto (CUDA when present), cpu or cuda."),
        resume: bool = typer.Option(True, "--resume/--no-resume", help="Keep OUT's finished chunks (and other "
                                    "settings' rows) and train only the missing ones (default), or start afresh."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object per setting (a line each) "
                                     "instead of the tables."),
        markdown: bool = typer.Option(False, "--markdown", help="Print docs/population.md's table (each "
                                      "optimizer's smaller lr) instead of the text table."),
        brief: bool = typer.Option(False, "--brief", help="With --markdown: the short table docs/population.md "
                                   "shows (default population, each optimizer's smaller lr; one per rare mass)."),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="Show tqdm progress bars on stderr."),
        force: bool = typer.Option(False, "--force", help="Replace an existing --out that is not a group-size table."),
        executor: str = executor_option(),
        ray_address: Optional[str] = ray_address_option(),
        ray_cpus: Optional[int] = ray_cpus_option(),
    ) -> None:
        """Shared-strategy population: GRPO, F-GRPO and the low-LR controls over N, per optimizer x
        parametrisation x rare share x learning rate, over population draws and batch seeds. Prints, per
        setting, the predicted and observed lowest N of held-out pass@256, the share of bootstrap resamples
        (over populations) where it is lowest, paired intervals, pass@1 and dNLL_rare, and F-GRPO at the dip
        against GRPO and the control; docs/population.md, "Group size: Table 2's dip"."""
        from dataclasses import replace

        from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec
        from fgrpo_sim.sim.population import resolve_device

        if as_json and markdown:
            raise ValueError("--json and --markdown conflict; give only one")
        if brief and not markdown:
            raise ValueError("--brief shapes the --markdown table; add --markdown")
        if from_record is not None:
            refuse_together(ctx, "from_record", "out", why="--from reads a saved record, --out runs the study")
            refuse_unused(ctx, [name for name in ctx.params if name not in FROM_OPTIONS], "is not used with --from")
            filters = {key: values for key, name, values in (("rare_mass", "rare_mass", rare_mass),
                                                            ("optimizer", "optimizers", optimizers),
                                                            ("parametrisation", "parametrisations", parametrisations))
                       if given(ctx, name)}
            _print_saved_report(from_record, filters, as_json, markdown, brief)
            return
        if out is None:
            raise ValueError("--out is needed: the table to write (or --from RECORD to print a saved report)")
        suffix = out.suffix.lower()
        if suffix not in (".parquet", ".csv"):
            raise ValueError(f"--out must end in .parquet or .csv, got {out.name!r}")
        base = GroupSizeStudySpec()
        with options_named(group_sizes="--n", rare_masses="--rare-mass", gammas="--gamma", optimizers="--optimizer",
                           parametrisations="--parametrisation", adam_lrs="--adam-lr", sgd_lrs="--sgd-lr",
                           views="--views", populations="--populations", seeds="--runs", steps="--steps",
                           prompt_batch="--prompt-batch", eval_every="--eval-every",
                           focal_smoothing="--focal-smoothing"):
            focal = tuple(g for g in gammas if g != 0)  # BASELINE_RULE: the study runs GRPO itself
            if not focal:
                raise ValueError(f"--gamma must list an exponent > 0 ({BASELINE_RULE}), got {','.join(f'{g:g}' for g in gammas)}")
            spec = replace(base, group_sizes=tuple(group_sizes),
                           rare_masses=tuple(rare_mass),
                           gammas=focal, focal_smoothing=focal_smoothing,
                           optimizers=tuple(optimizers),
                           parametrisations=tuple(parametrisations),
                           adam_lrs=tuple(adam_lr),
                           sgd_lrs=tuple(sgd_lr),
                           views=tuple(views), populations=populations, seeds=seeds,
                           steps=steps, prompt_batch=prompt_batch, eval_every=eval_every,
                           population=replace(base.population, rare_correct_prob=rare_correct_prob)).validate()
        run_on = make_executor(ctx, executor, ray_address, ray_cpus)
        if not run_on.is_ray:  # a cluster's driver may lack the workers' device: Ray's resources decide there
            resolve_device(device)
        frame = _run_group_size(spec, out, suffix, resume, device, progress, force, run_on)
        _print_group_size_report(frame, as_json, markdown, brief)
        if not (as_json or markdown):
            typer.echo(f"{out} holds {len(frame)} rows")


def _run_group_size(spec, out: Path, suffix: str, resume: bool, device: str, progress: bool, force: bool,
                    executor=None):
    """Train the chunks of `spec` missing from `out` (under its lock), saving after each; returns the whole table."""
    import pandas as pd

    from fgrpo_sim.atomic_io import check_replaceable, check_writable
    from fgrpo_sim.output_lock import output_lock
    from fgrpo_sim.sim.group_size_resume import read_kept_chunks
    from fgrpo_sim.sim.group_size_study import chunk_id, chunks, run_study

    check_writable(out, "--out")
    try:
        ours = not out.exists() or _has_columns(out, GROUP_SIZE_COLUMNS)
    except Exception as exc:  # noqa: BLE001 - e.g. a parquet file cut short has no schema to read
        if not force:
            raise ValueError(f"--out {out} exists but is not a readable table ({' '.join(str(exc).split())}); "
                             "pass --force to replace it, or choose another path") from None
        ours = False
    check_replaceable(out, "--out", lambda path: _has_columns(path, GROUP_SIZE_COLUMNS), force=force)
    resume = resume and ours  # a foreign file replaced with --force holds nothing to resume from
    planned = {chunk_id(spec, opt, kind) for opt, kind in chunks(spec)}
    with output_lock(out, name="--out", wait_hint=""):
        saved = []
        if resume and out.exists():  # every row and every kept chunk checked, or one line naming file and line
            saved.append(read_kept_chunks(out, spec))
        skip = set(saved[0]["chunk"]) & planned if saved else set()

        order = [chunk_id(spec, opt, kind) for opt, kind in chunks(spec)]
        fresh = {}

        def save(frame):  # the kept rows, then the new chunks in the study's order whatever order they finish in
            fresh[frame["chunk"].iloc[0]] = frame
            _write_table(pd.concat(saved + [fresh[c] for c in order if c in fresh], ignore_index=True), out, suffix)

        run_study(spec, progress=progress, device=device, skip=skip, on_chunk=save, executor=executor)
        if not saved and not fresh:
            raise ValueError("--out: nothing to report (no chunk trained)")
        return pd.concat(saved + [fresh[c] for c in order if c in fresh], ignore_index=True)


# the options --from honours; the others shape a run, which --from does not start
FROM_OPTIONS = ("from_record", "rare_mass", "optimizers", "parametrisations", "as_json", "markdown", "brief", "progress")


def _print_saved_report(record: str, filters: dict, as_json: bool, markdown: bool, brief: bool) -> None:
    """The report of a saved --json record (a path, else a committed record's name), settings selected by the
    options given."""
    from fgrpo_sim.packaged import committed_result
    from fgrpo_sim.sim.group_size_report import read_reports

    path = Path(record)
    if not path.exists() and path.name == record and committed_result(record).exists():
        path = committed_result(record)
    reports = read_reports(path)
    selected = [r for r in reports if all(r[key] in values for key, values in filters.items())]
    if not selected:
        raise ValueError(f"--from {record}: no setting matches " + ", ".join(
            f"--{key.replace('_', '-')} {','.join(map(str, values))}" for key, values in filters.items()))
    _print_reports(selected, as_json, markdown, brief)


def _print_group_size_report(frame, as_json: bool, markdown: bool = False, brief: bool = False) -> None:
    from fgrpo_sim.sim.group_size_report import setting_reports

    _print_reports(setting_reports(frame), as_json, markdown, brief)


def _print_reports(reports: list[dict], as_json: bool, markdown: bool, brief: bool) -> None:
    from fgrpo_sim import jsonl
    from fgrpo_sim.sim.group_size_report import brief_tables, few_units_warning, format_report, markdown_table

    warning = few_units_warning(reports)
    if warning and (as_json or markdown):  # the text table carries it in its header
        typer.echo(f"fgrpo: {warning}", err=True)
    if as_json:
        for item in reports:
            typer.echo(jsonl.dumps(item))
    elif markdown:
        typer.echo(brief_tables(reports) if brief else markdown_table(reports))
    else:
        typer.echo(format_report(reports))
