"""`fgrpo simulate categorical`: the paper's categorical-policy simulation (Sec. 5.1, App. J) as a tidy table."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import typer

from fgrpo_sim.commands.json_output import emit_json as _emit_json, records as _records
from fgrpo_sim.commands.options import (executor_option, focal_smoothing_option, list_option, make_executor,
                                        ray_address_option, ray_cpus_option)

#: The options `--study` reads; every other one given with it is refused.
STUDY_OPTIONS = ("out", "steps", "device", "wait", "progress", "study", "as_json")
PAPER_N = ",".join(str(2**k) for k in range(1, 18))


def register(app: typer.Typer) -> None:
    """Add `categorical` to `fgrpo simulate`."""

    @app.command("categorical", short_help="Softmax policy over K actions (paper Fig 2) -> tidy table.")
    def categorical_command(
        ctx: typer.Context,
        out: Path = typer.Option(..., "--out", help="Result table, .parquet or .csv (written atomically after each chunk of runs)."),
        group_sizes: Sequence[int] = list_option(PAPER_N, "--n", int, show_default=False, help="Group sizes N (draws per step), comma-separated integers in [1, 2^31 - 1], e.g. --n 8,64,1024. The default is the paper's grid 2,4,...,2^17."),
        gammas: Sequence[float] = list_option("0,1", "--gamma", float, help="Focal exponents gamma in [0, 100], comma-separated (0 = unweighted GRPO), e.g. --gamma 0,0.5,1."),
        focal_smoothing: float = focal_smoothing_option(),
        seeds: Sequence[int] = list_option("0,1,2,3", "--seeds", int, help="Seed values, comma-separated integers in [0, 2^62], e.g. --seeds 0,1,2,3 (runs with equal seed share random streams)."),
        steps: int = typer.Option(1000, "--steps", help="Update steps per run, in [0, 10^7]. The paper uses 1000."),
        surrogate: str = typer.Option("logprob", "--surrogate", help="Surrogate: logprob (policy gradient: sum over the N draws of (R_j - mean R) log p), distinct (Hu et al.: sum over distinct sampled actions of R_i p_i), draws (App. J: sum over the N draws of (R_j - mean R) p). logprob is the setting that reproduces Fig 2's claims (see docs/categorical.md)."),
        optimizer: Sequence[str] = list_option("adamw", "--optimizer", str, one="one run's settings; --study sweeps optimizers", help="Optimizer on the logits: sgd, adam (L2 weight decay), adamw (decoupled); one value here."),
        lr: float = typer.Option(1e-2, "--lr", help="Learning rate, in (0, 1000]. The paper uses 1e-2."),
        beta1: float = typer.Option(0.9, "--beta1", help="Adam beta1 in [0, 1)."),
        beta2: float = typer.Option(0.999, "--beta2", help="Adam beta2 in [0, 1)."),
        eps: float = typer.Option(1e-8, "--eps", help="Adam eps in [0, 1] (0 needs --dtype float64). It matters: large-N gradients are ~1e-9."),
        weight_decay: float = typer.Option(0.0, "--weight-decay", help="Weight decay in [0, 1/lr] (L2 for sgd/adam, decoupled for adamw)."),
        stride: int = typer.Option(10, "--stride", help="Record metrics every STRIDE steps (and at the last step), in [1, 10^7]."),
        num_actions: int = typer.Option(128_000, "--num-actions", help="Actions K, in [2, 2^31 - 1]. The paper uses 128000."),
        num_correct: int = typer.Option(10_000, "--num-correct", help="Correct actions (first NUM_CORRECT, action 0 is the anchor), 1 .. K-1."),
        anchor_logit: float = typer.Option(5.0, "--anchor-logit", help="Initial logit of the anchor correct action, in [-50, 50]."),
        correct_logit: float = typer.Option(3.0, "--correct-logit", help="Initial logit of the other correct actions, in [-50, 50]."),
        incorrect_logit: float = typer.Option(0.0, "--incorrect-logit", help="Initial logit of incorrect actions, in [-50, 50]."),
        reward_correct: float = typer.Option(1.0, "--reward-correct", help="Reward R_c of a correct action, |R_c| <= 1e18 in float32, 1e152 in float64 (the update squares gradients of that size)."),
        reward_wrong: float = typer.Option(-1.0, "--reward-wrong", help="Reward R_w of an incorrect action, < R_c."),
        dtype: str = typer.Option("float32", "--dtype", help="State precision: float32 (fast) or float64."),
        device: str = typer.Option("auto", "--device", help="auto (CUDA when present), cpu, cuda, cuda:K."),
        backend: str = typer.Option("auto", "--backend", help="auto (native on CPU when a C compiler exists, else torch), native (fused C kernels, CPU), torch (any device)."),
        chunk_runs: int = typer.Option(68, "--chunk-runs", help="Runs simulated together per batch, in [1, 10^6] (memory ~ 20 MB per run in float32); results are saved after each chunk."),
        resume: bool = typer.Option(True, "--resume/--no-resume", help="Skip runs of the same setting already complete in OUT and keep other settings' rows (default), or start OUT afresh."),
        study: bool = typer.Option(False, "--study", help="Run the sensitivity study instead (surrogate x optimizer x eps x weight decay on a reduced grid; uses only --out, --steps, --device, --wait, --progress, --json; any other option given is refused) and print the claims table."),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar on stderr."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of the table: out, rows, setting and final_means (one record per N x gamma: group_size, gamma, q_pos, m_ret); with --study, claims (one record per claim)."),
        executor: str = executor_option(),
        ray_address: Optional[str] = ray_address_option(),
        ray_cpus: Optional[int] = ray_cpus_option(),
        wait: bool = typer.Option(False, "--wait", help="When another run is writing OUT (it holds the hidden lock file .OUT.lock next to it), wait for it to finish and then resume from its rows. Default: exit 2 at once with a message naming the lock."),
    ) -> None:
        """Simulate a softmax policy over K actions trained with group-relative updates (paper Sec. 5.1).

        Every (N, gamma, seed) run advances in one batched program; per recorded step the table holds
        Q_pos, M_ret, unsampled correct mass, entropy, anchor probability, share of correct actions
        above their start, worst relative drop, and the latest batch's mu_hat and focal weight.
        """
        if study:  # the study runs its own grid: any other setting given would be dropped in silence
            from fgrpo_sim.commands.options import refuse_unused
            from fgrpo_sim.sim.categorical.study import claims_table, format_claims_markdown, run_study

            refuse_unused(ctx, [p.name for p in ctx.command.params if p.name not in STUDY_OPTIONS], "is not used with "
                          "--study (the study runs its own grid; it uses only --out, --steps, --device, --wait, --progress, --json)")
            from fgrpo_sim.validation import options_named

            with options_named(out="--out"):  # run_study names its table out; the user typed --out
                table = run_study(out, steps=steps, progress=progress, device=device, wait_for_lock=wait)
            claims = claims_table(table)
            if as_json:
                _emit_json({"out": str(out), "claims": _records(claims)})
            else:
                typer.echo(format_claims_markdown(claims))
            return
        from fgrpo_sim.sim.categorical import CategoricalConfig, run_grid

        from fgrpo_sim.validation import options_named

        # the config names its fields group_sizes and gammas, run_grid its table out; the user typed --n, --gamma, --out
        with options_named(group_sizes="--n", gammas="--gamma", seeds="--seeds", out="--out",
                           focal_smoothing="--focal-smoothing"):
            config = CategoricalConfig(
                num_actions=num_actions, num_correct=num_correct, anchor_logit=anchor_logit,
                correct_logit=correct_logit, incorrect_logit=incorrect_logit, reward_correct=reward_correct,
                reward_wrong=reward_wrong, steps=steps, group_sizes=tuple(group_sizes),
                gammas=tuple(gammas), focal_smoothing=focal_smoothing, seeds=tuple(seeds), surrogate=surrogate,
                optimizer=optimizer[0], lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                stride=stride, dtype=dtype, device=device, sampler=backend, chunk_runs=chunk_runs,
            )
            table = run_grid(config, out, resume=resume, progress=progress, wait_for_lock=wait,
                             executor=make_executor(ctx, executor, ray_address, ray_cpus))
        final = table[table["step"] == config.steps]
        summary = final.groupby(["group_size", "gamma"])[["q_pos", "m_ret"]].mean().reset_index()
        if as_json:
            _emit_json({"out": str(out), "rows": len(table), "setting": config.config_id(),
                        "final_means": _records(summary)})
            return
        typer.echo(f"wrote {out} ({len(table)} rows of setting {config.config_id()}); final means over seeds:")
        typer.echo(summary.to_string(index=False, float_format=lambda x: f"{x:.4f}"))

