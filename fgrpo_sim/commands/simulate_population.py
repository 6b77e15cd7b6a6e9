"""`fgrpo simulate population`: the multi-prompt mode simulator (GRPO vs F-GRPO vs low-LR across N)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from fgrpo_sim.validation import parse_list


def register(app: typer.Typer) -> None:
    @app.command("population", short_help="Many prompts: GRPO vs F-GRPO vs low-LR control over N.")
    def population_command(
        out: Path = typer.Option(..., "--out", help="Output table (.parquet or .csv), written atomically."),
        prompts: int = typer.Option(512, "--prompts", help="Number of prompts P, in [1, 10^7]."),
        beta: str = typer.Option("1,1", "--beta", help="Difficulty: initial success rate mu_pos ~ Beta(A,B), "
                                 "given as 'A,B' (A, B > 0); 1,1 is uniform."),
        rho: float = typer.Option(0.1, "--rho", help="Rare share: fraction of each prompt's correct mass on the "
                                  "rare-correct mode, in (0, 1)."),
        rho_max: Optional[float] = typer.Option(None, "--rho-max", help="If given (> rho), rho is drawn per prompt "
                                      "log-uniformly from [rho, rho_max]."),
        actions: str = typer.Option("2,2,4", "--actions", help="Actions per mode: 'COMMON,RARE,WRONG' "
                                    "(each >= 1)."),
        group_sizes: str = typer.Option("4,8,32", "--n", help="Group sizes N to sweep, comma-separated integers in [1, 10^6]."),
        gammas: str = typer.Option("0,1", "--gamma", help="Focal exponents gamma >= 0, comma-separated "
                                   "(0 = unweighted)."),
        methods: str = typer.Option("grpo", "--method", help="Objectives from fgrpo_sim.core: grpo, dapo, cispo "
                                    "(comma-separated)."),
        low_lr: bool = typer.Option(True, "--low-lr/--no-low-lr", help="Add, for each gamma > 0, the unweighted "
                                    "method at lr x m_gamma (the paper's low-LR control)."),
        optimizer: str = typer.Option("adam", "--optimizer", help="sgd or adam (one optimizer over all prompts' "
                                      "logits)."),
        lr: float = typer.Option(0.05, "--lr", help="Learning rate (> 0), suited to Adam. With SGD use "
                                 "~50: the token-mean loss divides each prompt's gradient by B*N."),
        steps: int = typer.Option(200, "--steps", help="Training steps, in [0, 10^7]."),
        prompt_batch: int = typer.Option(64, "--prompt-batch", help="Prompts per step B, in [1, P]."),
        updates_per_step: int = typer.Option(1, "--updates-per-step", help="Optimizer steps per batch of "
                                             "rollouts (PPO epochs; > 1 makes clipping matter), in [1, 1000]."),
        reward_wrong: float = typer.Option(0.0, "--reward-wrong", help="Reward of an incorrect action (< 1; "
                                           "correct gets 1)."),
        runs: int = typer.Option(4, "--runs", help="Independent runs (seeds), simulated as one batch, in [1, 10^5]."),
        eval_every: int = typer.Option(10, "--eval-every", help="Evaluate every this many steps, >= 1."),
        pass_k: str = typer.Option("1,8,64,256", "--pass-k", help="k values (integers >= 1) for exact pass@k = 1-(1-Q_pos)^k."),
        seed: int = typer.Option(0, "--seed", help="Seed of the training randomness and of the population, >= 0."),
        device: str = typer.Option("auto", "--device", help="auto (CUDA when present), cpu or cuda."),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="Show tqdm progress bars on stderr."),
    ) -> None:
        """Train a population of prompts with GRPO / F-GRPO (and the low-LR control) over N; save a tidy table.

        One row per (variant, N, run, evaluation step, difficulty bucket incl. 'all') with exact pass@k,
        rare-correct mass, retained correct mass, and per-interval group statistics: active fraction,
        observed vs Lemma 3.1 tail-miss, focal weights, unsampled-correct mass and its change.
        """
        from fgrpo_sim.atomic_io import atomic_path
        from fgrpo_sim.sim.population import (PopulationSpec, TrainSpec, final_summary, make_population,
                                              resolve_device, run_sweep, sweep_variants)
        from fgrpo_sim.validation import check_choice

        from fgrpo_sim.atomic_io import check_writable

        suffix = out.suffix.lower()
        check_choice("--out suffix", suffix, (".parquet", ".csv"))
        check_writable(out, "--out")
        a_b = parse_list("--beta", beta, float)
        if len(a_b) != 2:
            raise ValueError(f"--beta must be two numbers A,B, got {beta!r}")
        counts = parse_list("--actions", actions, int)
        if len(counts) != 3:
            raise ValueError(f"--actions must be three integers COMMON,RARE,WRONG, got {actions!r}")
        spec = PopulationSpec(num_prompts=prompts, beta_a=a_b[0], beta_b=a_b[1], rho=rho, rho_max=rho_max,
                              common_actions=counts[0], rare_actions=counts[1], wrong_actions=counts[2], seed=seed)
        population = make_population(spec)
        base = TrainSpec(optimizer=optimizer, lr=lr, steps=steps, prompt_batch=prompt_batch,
                         updates_per_step=updates_per_step, reward_wrong=reward_wrong, runs=runs,
                         eval_every=eval_every, pass_k=tuple(parse_list("--pass-k", pass_k, int)), seed=seed)
        specs = sweep_variants(base, parse_list("--n", group_sizes, int), parse_list("--gamma", gammas, float),
                               methods=parse_list("--method", methods, str), low_lr_control=low_lr)
        for s in specs:
            s.validate(prompts)  # fail before any compute
        resolve_device(device)
        frame = run_sweep(population, specs, device=device, progress=progress)
        with atomic_path(out) as tmp:
            if suffix == ".parquet":
                frame.to_parquet(tmp, index=False)
            else:
                frame.to_csv(tmp, index=False)
        summary = final_summary(frame)
        cols = ["variant", "N", "lr", "pass@1", f"pass@{base.pass_k[-1]}", "rare_mass_retained",
                "tail_miss_observed", "tail_miss_predicted"]
        typer.echo(summary[cols].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        typer.echo(f"wrote {len(frame)} rows to {out}")
