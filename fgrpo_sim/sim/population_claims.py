"""The population claims of README and docs/population.md, with >= 10 seeds and bootstrap intervals.

`python -m fgrpo_sim.sim.population_claims` reruns both settings (per-prompt small run, shared-strategy
population at N = 8; about a minute each on 2 cores) with 10 runs and prints, per claim, the mean and the
95% percentile bootstrap interval over runs (paired by run index where two variants are compared: run r of
every variant starts from the same generator seed and population). An interval that includes zero is
marked as such. `python -m fgrpo_sim.sim.population_claims --settings-table` reruns the nine settings of
docs/population.md's "Every setting tried" table with 10 runs and prints its rows (a few minutes);
`--group-size` the shared population's N = 2..32 sweep; `--frontier` the per-prompt sweep across N.
"""

from __future__ import annotations

import numpy as np

RUNS = 10


def per_run_at_equal_pass1(frame, metric: str, level: float | None = None, split: str | None = None):
    """(level, {variant: [value per run]}) where each run's pass@1 curve first reaches `level`
    (default: the lowest final pass@1 of any run, so every run reaches it)."""
    from fgrpo_sim.sim.population_shared import at_equal_pass1

    rows = frame[frame["bucket"] == "all"]
    if split is not None:
        rows = rows[rows["split"] == split]
    rows = rows.assign(split="x")
    if level is None:
        last = rows[rows["step"] == rows.groupby(["variant", "run"])["step"].transform("max")]
        level = float(last["pass@1"].min())
    out: dict = {}
    for run, part in rows.sort_values("run").groupby("run"):
        for variant, value in at_equal_pass1(part, metric, "x", "all", level=level)[1].items():
            out.setdefault(variant, []).append(value)
    return level, {v: np.asarray(x) for v, x in out.items()}


def final_per_run(frame, metric: str, split: str | None = None):
    """{variant: [metric at the last evaluation, per run]} over the `all` bucket."""
    rows = frame[frame["bucket"] == "all"]
    if split is not None:
        rows = rows[rows["split"] == split]
    rows = rows[rows["step"] == rows["step"].max()]
    return {v: g.sort_values("run")[metric].to_numpy() for v, g in rows.groupby("variant")}


def _line(name, interval):
    zero = "  (interval includes 0)" if interval.includes_zero else ""
    return f"  {name}: {interval}{zero}"


def per_prompt_claims(runs: int = RUNS):
    """docs/population.md 'Results of the small run' with `runs` runs."""
    from fgrpo_sim.sim.population import PopulationSpec, TrainSpec, make_population, run_sweep, sweep_variants

    pop = make_population(PopulationSpec(num_prompts=256, beta_a=1.0, beta_b=1.0, rho=0.1, seed=0))
    base = TrainSpec(steps=300, runs=runs, prompt_batch=32, eval_every=20, seed=0)
    return run_sweep(pop, sweep_variants(base, [8], [0.0, 1.0]), device="cpu")


def shared_claims(runs: int = RUNS):
    """docs/population.md 'Results at N = 8' base command (shared strategies) with `runs` runs."""
    from fgrpo_sim.sim.population import TrainSpec, sweep_variants
    from fgrpo_sim.sim.population_shared import SharedPopulationSpec, make_shared_population, run_shared_sweep

    pop = make_shared_population(SharedPopulationSpec(num_prompts=256, heldout_prompts=256, seed=0))
    base = TrainSpec(steps=300, runs=runs, prompt_batch=32, eval_every=10, lr=0.01, seed=0)
    return run_shared_sweep(pop, sweep_variants(base, [8], [0.0, 0.5, 1.0]), device="cpu")


def report(per_prompt, shared) -> str:
    from fgrpo_sim.metrics.bootstrap import bootstrap_mean_ci as mean_ci
    from fgrpo_sim.metrics.bootstrap import bootstrap_paired_difference_ci as diff_ci

    g, f, low = "GRPO", "F-GRPO gamma=1", "GRPO low-LR (x m_1)"
    lines = [f"Per-prompt population, N = 8, {per_prompt['run'].nunique()} runs (mean [95% bootstrap interval over runs]):"]
    kept = final_per_run(per_prompt, "rare_mass_retained")
    p1 = final_per_run(per_prompt, "pass@1")
    p256 = final_per_run(per_prompt, "pass@256")
    for v in (g, f, low):
        lines.append(_line(f"{v} final rare mass kept", mean_ci(kept[v])))
    lines.append(_line("F-GRPO - GRPO final pass@1", diff_ci(p1[f], p1[g])))
    lines.append(_line("F-GRPO - GRPO final pass@256", diff_ci(p256[f], p256[g])))
    level, eq = per_run_at_equal_pass1(per_prompt, "rare_mass_retained")
    lines.append(f" at equal pass@1 = {level:.4f} (rare mass kept):")
    for v in (g, f, low):
        lines.append(_line(v, mean_ci(eq[v])))
    lines.append(_line("F-GRPO - GRPO", diff_ci(eq[f], eq[g])))
    lines.append(_line("F-GRPO - low-LR", diff_ci(eq[f], eq[low])))
    lines.append(f"Shared-strategy population, N = 8, {shared['run'].nunique()} runs, held-out prompts:")
    s1 = final_per_run(shared, "pass@1", "heldout")
    s256 = final_per_run(shared, "pass@256", "heldout")
    start = shared[(shared["step"] == 0) & (shared["bucket"] == "all") & (shared["split"] == "heldout")]
    lines.append(f"  initial pass@1 {start['pass@1'].mean():.4f}, pass@256 {start['pass@256'].mean():.4f}")
    for v in sorted(s1):
        lines.append(_line(f"{v} final pass@1", mean_ci(s1[v])))
        lines.append(_line(f"{v} final pass@256", mean_ci(s256[v])))
    for v in sorted(set(s1) - {g}):
        lines.append(_line(f"{v} - GRPO final pass@256", diff_ci(s256[v], s256[g])))
    rare_only = shared[shared["bucket"] == "rare-only"].assign(bucket="all")
    start = rare_only[(rare_only["step"] == 0) & (rare_only["split"] == "heldout")]["pass@256"].mean()
    ro = final_per_run(rare_only, "pass@256", "heldout")
    lines.append(f"  rare-only prompts: initial pass@256 {start:.4f}; final "
                 + "; ".join(f"{v} {mean_ci(ro[v])}" for v in sorted(ro)))
    level, eq = per_run_at_equal_pass1(shared, "pass@256", split="heldout")
    lines.append(f" at equal held-out pass@1 = {level:.4f} (held-out pass@256):")
    for v in sorted(eq):
        lines.append(_line(v, mean_ci(eq[v])))
    for v in sorted(set(eq) - {g}):
        lines.append(_line(f"{v} - GRPO", diff_ci(eq[v], eq[g])))
    for focal, control in (("F-GRPO gamma=0.5", "GRPO low-LR (x m_0.5)"), (f, low)):
        lines.append(_line(f"{focal} - {control}", diff_ci(eq[focal], eq[control])))
    return "\n".join(lines)


#: docs/population.md "Every setting tried": flags -> (population changes, training changes)
SHARED_SETTINGS = {
    "(none: A)": ({}, {}),
    "`--lr 0.05`": ({}, {"lr": 0.05}),
    "`--steps 600`": ({}, {"steps": 600}),
    "`--offset-scale 2`": ({"offset_scale": 2.0}, {}),
    "`--rare-correct-prob 0.3`": ({"rare_correct_prob": 0.3}, {}),
    "`--rare-only-share 0.5`": ({"rare_only_share": 0.5}, {}),
    "`--trainable-offsets`": ({"trainable_offsets": True}, {}),
    "`--optimizer sgd --lr 2`": ({}, {"optimizer": "sgd", "lr": 2.0}),
    "`--optimizer sgd --lr 10`": ({}, {"optimizer": "sgd", "lr": 10.0}),
}
SHARED_ORDER = ("GRPO", "F-GRPO gamma=0.5", "F-GRPO gamma=1", "GRPO low-LR (x m_0.5)", "GRPO low-LR (x m_1)")


def settings_table(runs: int = RUNS, progress: bool = False) -> str:
    """The "Every setting tried" table as markdown: final pass@1 / pass@256 (run means) and pass@256 at a
    common pass@1 level with 95% bootstrap intervals over `runs` runs, per setting and split."""
    from dataclasses import replace

    from fgrpo_sim.progress import bar as progress_bar

    from fgrpo_sim.metrics.bootstrap import bootstrap_mean_ci
    from fgrpo_sim.sim.population import TrainSpec, sweep_variants
    from fgrpo_sim.sim.population_shared import SharedPopulationSpec, make_shared_population, run_shared_sweep

    lines = []
    for flags, (pop_changes, train_changes) in progress_bar(SHARED_SETTINGS.items(), progress=progress):
        pop = make_shared_population(replace(SharedPopulationSpec(num_prompts=256, heldout_prompts=256, seed=0),
                                             **pop_changes))
        base = replace(TrainSpec(steps=300, runs=runs, prompt_batch=32, eval_every=10, lr=0.01, seed=0), **train_changes)
        frame = run_shared_sweep(pop, sweep_variants(base, [8], [0.0, 0.5, 1.0]), device="cpu")
        for split in ("heldout", "train"):
            rows = frame[(frame["split"] == split) & (frame["bucket"] == "all")]
            start = rows[rows["step"] == 0][["pass@1", "pass@256"]].mean()
            p1, p256 = final_per_run(frame, "pass@1", split), final_per_run(frame, "pass@256", split)
            level, eq = per_run_at_equal_pass1(frame, "pass@256", split=split)
            cells = [flags, split, f"{start['pass@1']:.3f} / {start['pass@256']:.3f}"]
            cells += [f"{p1[v].mean():.3f} / {p256[v].mean():.3f}" for v in SHARED_ORDER]
            cells.append(f"{level:.3f}")
            for v in SHARED_ORDER:
                ci = bootstrap_mean_ci(eq[v])
                cells.append(f"{ci.estimate:.4f} [{ci.low:.4f}, {ci.high:.4f}]")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def group_size_claims(runs: int = RUNS) -> str:
    """docs/population.md's shared-population group-size sentence (N = 2..32, GRPO and F-GRPO gamma 1, equal
    steps): held-out final pass@1 and pass@256 with 95% bootstrap intervals over runs, and F-GRPO minus GRPO."""
    from fgrpo_sim.metrics.bootstrap import bootstrap_mean_ci as mean_ci
    from fgrpo_sim.metrics.bootstrap import bootstrap_paired_difference_ci as diff_ci
    from fgrpo_sim.sim.population import TrainSpec, sweep_variants
    from fgrpo_sim.sim.population_shared import SharedPopulationSpec, make_shared_population, run_shared_sweep

    pop = make_shared_population(SharedPopulationSpec(num_prompts=256, heldout_prompts=256, seed=0))
    base = TrainSpec(steps=300, runs=runs, prompt_batch=32, eval_every=10, lr=0.01, seed=0)
    frame = run_shared_sweep(pop, sweep_variants(base, [2, 4, 8, 16, 32], [0.0, 1.0], low_lr_control=False),
                             device="cpu")
    lines = [f"Shared population, equal steps, held-out, {runs} runs (mean [95% bootstrap interval]):"]
    for n, part in frame.groupby("N"):
        p1, p256 = final_per_run(part, "pass@1", "heldout"), final_per_run(part, "pass@256", "heldout")
        lines.append(f"  N={n}: GRPO pass@1 {mean_ci(p1['GRPO'])}, pass@256 {mean_ci(p256['GRPO'])}; "
                     f"F-GRPO gamma=1 pass@1 {mean_ci(p1['F-GRPO gamma=1'])}, pass@256 {mean_ci(p256['F-GRPO gamma=1'])}")
        lines.append(_line(f"N={n} F-GRPO - GRPO pass@256", diff_ci(p256["F-GRPO gamma=1"], p256["GRPO"])))
    return "\n".join(lines)


def frontier_claims(runs: int = RUNS) -> str:
    """docs/population.md's "Across N" paragraph (the population-frontier figure's quick setting: 256
    prompts, mu0 ~ Beta(0.5, 1), 150 steps of 32) with `runs` runs: final pass@1, pass@256 and rare mass
    kept per N and variant, and F-GRPO gamma 1 minus its low-LR control in rare mass kept (paired by run)."""
    from fgrpo_sim.metrics.bootstrap import bootstrap_mean_ci as mean_ci
    from fgrpo_sim.metrics.bootstrap import bootstrap_paired_difference_ci as diff_ci
    from fgrpo_sim.sim.population import PopulationSpec, TrainSpec, make_population, run_sweep, sweep_variants

    pop = make_population(PopulationSpec(num_prompts=256, beta_a=0.5, beta_b=1.0, seed=0))
    base = TrainSpec(steps=150, runs=runs, prompt_batch=32, eval_every=150, seed=0)
    frame = run_sweep(pop, sweep_variants(base, [2, 4, 8, 16, 32], [0.0, 0.5, 1.0]), device="cpu")
    lines = [f"Per-prompt population, Beta(0.5, 1), 150 steps, {runs} runs (mean [95% bootstrap interval]):"]
    for n, part in frame.groupby("N"):
        p1, p256 = final_per_run(part, "pass@1"), final_per_run(part, "pass@256")
        kept = final_per_run(part, "rare_mass_retained")
        for v in sorted(p1):
            lines.append(f"  N={n} {v}: pass@1 {mean_ci(p1[v])}, pass@256 {mean_ci(p256[v])}, rare kept {mean_ci(kept[v])}")
        lines.append(_line(f"N={n} F-GRPO gamma=1 - low-LR (x m_1), rare kept",
                           diff_ci(kept["F-GRPO gamma=1"], kept["GRPO low-LR (x m_1)"])))
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    if "--settings-table" in sys.argv:
        print(settings_table(progress=True))
    elif "--group-size" in sys.argv:
        print(group_size_claims())
    elif "--frontier" in sys.argv:
        print(frontier_claims())
    else:
        print(report(per_prompt_claims(), shared_claims()))
