"""`simulate population` keeps finished variants and the same command resumes (issue 47; sim.population_resume).

A run interrupted after its first saved variant keeps that variant (exit 130, the one line naming the file),
and the same command trains only the others, to the same bytes as an uninterrupted run; that run's bytes are
the table the command wrote before resuming existed (`run_sweep` then `to_csv`, here recomputed). A resume
with other settings keeps only the variants whose settings match, a table changed by someone else nothing;
rows a sidecar vouches for are checked whole (a variant missing an evaluation is one line, exit 2).
The same under Ray: tests/test_ray_executor.py.
"""

from __future__ import annotations

import pytest

PER_PROMPT = ("simulate", "population", "--prompts", "12", "--n", "4,8", "--gamma", "0,1", "--runs", "2",
              "--steps", "6", "--eval-every", "3", "--prompt-batch", "4", "--no-progress", "--json")
SHARED = (*PER_PROMPT, "--sharing", "shared", "--heldout-prompts", "8")
VARIANTS = 6  # GRPO, F-GRPO gamma=1 and the low-LR control, at N 4 and 8


def interrupt_after_first_save(monkeypatch):
    """The first variant's save completes, then Ctrl-C arrives in the driver, as a user's would."""
    from fgrpo_sim.sim import population_resume

    original, calls = population_resume.save, []

    def save_then_interrupt(*args, **kwargs):
        result = original(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return result

    monkeypatch.setattr(population_resume, "save", save_then_interrupt)


def count_trained(monkeypatch):
    """The variants each run trains (local executor)."""
    from fgrpo_sim.sim import population, population_shared

    trained = []
    for module, name in ((population, "simulate_population"), (population_shared, "simulate_shared_population")):
        original = getattr(module, name)

        def spy(pop, spec, *args, _original=original, **kwargs):
            trained.append(spec.group_size)
            return _original(pop, spec, *args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    return trained


def test_table_is_the_one_written_before_resume_existed(run_cli, tmp_path):
    """The command's bytes equal run_sweep's frame written by to_csv (what main wrote before this change)."""
    from fgrpo_sim.sim import population

    out = tmp_path / "t.csv"
    assert run_cli(*PER_PROMPT, "--out", out).exit_code == 0
    pop = population.make_population(population.PopulationSpec(num_prompts=12))
    base = population.TrainSpec(lr=0.05, steps=6, prompt_batch=4, runs=2, eval_every=3)
    frame = population.run_sweep(pop, population.sweep_variants(base, [4, 8], [0.0, 1.0]), device="auto")
    frame.to_csv(tmp_path / "old.csv", index=False)
    assert out.read_bytes() == (tmp_path / "old.csv").read_bytes()


@pytest.mark.parametrize("command, suffix", [(PER_PROMPT, ".csv"), (PER_PROMPT, ".parquet"), (SHARED, ".csv")],
                         ids=["per-prompt", "parquet", "shared"])
def test_interrupted_run_keeps_finished_variants_and_resumes(run_cli, tmp_path, monkeypatch, command, suffix):
    reference, out = tmp_path / f"whole{suffix}", tmp_path / f"t{suffix}"
    whole = run_cli(*command, "--out", reference)
    assert whole.exit_code == 0, whole.stderr
    trained = count_trained(monkeypatch)
    with monkeypatch.context() as patch:
        interrupt_after_first_save(patch)
        stopped = run_cli(*command, "--out", out)
    assert stopped.exit_code == 130
    assert stopped.stderr.strip() == (f"fgrpo: interrupted; the finished work is kept in {out}: run the same "
                                      "command again to resume from it")
    assert trained == [4]  # the first variant, saved
    resumed = run_cli(*command, "--out", out)
    assert resumed.exit_code == 0, resumed.stderr
    assert trained == [4, 4, 4, 8, 8, 8]  # the resume trained the five others, not the kept one
    assert out.read_bytes() == reference.read_bytes()  # same rows, same order, same values to the last bit
    assert resumed.stdout == whole.stdout.replace(str(reference), str(out))
    again = run_cli(*command, "--out", out)  # all kept: nothing trained, the same table
    assert again.exit_code == 0 and len(trained) == VARIANTS and out.read_bytes() == reference.read_bytes()


def _with(command, option, value):
    args = list(command)
    args[args.index(option) + 1] = value
    return tuple(args)


def test_other_settings_keep_only_the_matching_variants(run_cli, tmp_path, monkeypatch):
    """--n 4,16 after --n 4,8 keeps N = 4 and trains N = 16 (N = 8 is dropped: the table is this command's);
    --seed (which no row shows) or --steps changed keeps nothing."""
    out, fresh = tmp_path / "t.csv", tmp_path / "fresh.csv"
    assert run_cli(*PER_PROMPT, "--out", out).exit_code == 0
    trained = count_trained(monkeypatch)
    other_n = _with(PER_PROMPT, "--n", "4,16")
    assert run_cli(*other_n, "--out", out).exit_code == 0
    assert trained == [16, 16, 16]
    assert run_cli(*other_n, "--out", fresh).exit_code == 0
    assert out.read_bytes() == fresh.read_bytes()
    for option, value in (("--seed", "1"), ("--steps", "3")):
        del trained[:]
        changed = _with(other_n, option, value) if option in other_n else (*other_n, option, value)
        assert run_cli(*changed, "--out", out).exit_code == 0
        assert trained == [4, 4, 4, 16, 16, 16], option


def test_table_changed_by_hand_is_not_resumed_from(run_cli, tmp_path, monkeypatch):
    """The sidecar names the table by its SHA-256: an edited table is retrained, never trusted."""
    out = tmp_path / "t.csv"
    assert run_cli(*PER_PROMPT, "--out", out).exit_code == 0
    out.write_bytes(out.read_bytes() + b"\n")
    trained = count_trained(monkeypatch)
    assert run_cli(*PER_PROMPT, "--out", out).exit_code == 0
    assert len(trained) == VARIANTS


def test_kept_variant_missing_an_evaluation_is_one_line(run_cli, tmp_path):
    """Rows the sidecar vouches for are checked whole (sim.result_table, then the variant's grid)."""
    import json

    from fgrpo_sim.sim.population_resume import sidecar_path

    out = tmp_path / "t.csv"
    assert run_cli(*PER_PROMPT, "--out", out).exit_code == 0
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:3] + lines[4:]))  # one row of the first variant gone
    record = sidecar_path(out)
    tables = json.loads(record.read_text())["tables"]
    import hashlib

    record.write_text(json.dumps({"tables": {hashlib.sha256(out.read_bytes()).hexdigest(): tables.popitem()[1]}}))
    result = run_cli(*PER_PROMPT, "--out", out)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"fgrpo: error: cannot resume from {out}: variant 'grpo|GRPO|N=4', bucket")
    assert len(result.stderr.strip().splitlines()) == 1


def test_sidecar_that_is_a_link_is_refused(run_cli, tmp_path):
    """The sidecar is written atomically, which follows links: a planted link would redirect our write."""
    from fgrpo_sim.sim.population_resume import sidecar_path

    out, target = tmp_path / "t.csv", tmp_path / "elsewhere.txt"
    assert run_cli(*PER_PROMPT, "--out", out).exit_code == 0
    target.write_text("keep me")
    sidecar_path(out).unlink()
    sidecar_path(out).symlink_to(target)
    result = run_cli(*PER_PROMPT, "--out", out)
    assert result.exit_code == 2
    assert result.stderr.strip() == (f"fgrpo: error: --out {out}: its sidecar {sidecar_path(out)} is a symbolic "
                                     "link; remove it")
    assert target.read_text() == "keep me"


def test_gammas_that_print_alike_are_retrained_not_mixed(run_cli, tmp_path, monkeypatch):
    """gamma 1.0000001 and 1.0000002 share the label "F-GRPO gamma=1": neither is kept (rows would mix), and the
    table, whose key includes gamma and lr, is still read back."""
    command = (*_with(PER_PROMPT, "--gamma", "1.0000001,1.0000002"), "--no-low-lr")
    out = tmp_path / "t.csv"
    assert run_cli(*command, "--out", out).exit_code == 0
    first = out.read_bytes()
    trained = count_trained(monkeypatch)
    again = run_cli(*command, "--out", out)
    assert again.exit_code == 0, again.stderr
    assert trained == [4, 4, 8, 8]  # GRPO kept at both N; the two alike-labelled variants retrained
    assert out.read_bytes() == first
