"""Issues 21 and 28: the batched group-size engine against the shared-population simulator and torch's Adam,
its parametrisations, its device-clean step loop, and the study's per-setting JSON."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from fgrpo_sim.sim.group_size_study import (DEFAULT_POPULATION, GroupSizeStudySpec, RowAdam, advantage_tables,
                                            final_rows, logit_gradient, predicted_dips, run_study, RowCounts,
                                            row_keys, study_rows)
from fgrpo_sim.sim.parametrisation import logit_map
from fgrpo_sim.sim.population import StepBatch, TrainSpec
from fgrpo_sim.sim.population_shared import SharedPolicy, make_shared_population, shared_population_loss


@pytest.mark.parametrize("n,gamma,kind", [(2, 0.0, "axis"), (8, 0.0, "axis"), (8, 1.0, "orthogonal"), (32, 0.5, "dense")])
def test_count_gradient_equals_the_core_loss_through_autograd(n, gamma, kind):
    torch.set_default_dtype(torch.float64)
    try:
        pop = make_shared_population(replace(DEFAULT_POPULATION, num_prompts=16, heldout_prompts=0, seed=3))
        policy = SharedPolicy(pop, runs=1, device="cpu", dtype=torch.float64, parametrisation=kind, seed=5)
        with torch.no_grad():
            policy.shared_map.theta += 0.3 * torch.randn_like(policy.shared_map.theta)
        gen = torch.Generator().manual_seed(1)
        prompts = torch.randperm(16, generator=gen)[:6][None]
        probs = torch.softmax(policy.logits(prompts).detach(), -1)
        actions = torch.multinomial(probs[0], n, replacement=True, generator=gen)[None]
        correct = torch.as_tensor(pop.correct["train"])
        train = TrainSpec(group_size=n, gamma=gamma, prompt_batch=6, runs=1)
        loss, _, _, _ = shared_population_loss(policy, StepBatch(prompts, actions), correct, train)
        loss.backward()
        counts = torch.zeros_like(probs).scatter_add_(-1, actions, torch.ones_like(probs[..., :1]).expand_as(actions).clone())
        corr = correct[prompts]
        x = (counts * corr).sum(-1).long()
        a_c, a_w = advantage_tables([(n, gamma)], n)
        grad = logit_gradient(probs, counts, a_c[0][x], a_w[0][x], corr, torch.tensor([n]))
        m = torch.as_tensor(logit_map(kind, pop.kind.size, 5))
        # the engine's g_theta = M^T g_s against autograd into theta
        torch.testing.assert_close(grad @ m, policy.shared_map.theta.grad, rtol=1e-9, atol=1e-12)
    finally:
        torch.set_default_dtype(torch.float32)


def test_row_adam_equals_torch_adam_with_one_lr_per_row():
    params = torch.randn(3, 5, dtype=torch.float64)
    lrs = torch.tensor([0.1, 0.01, 0.003], dtype=torch.float64)
    ours = params.clone()
    adam = RowAdam(ours.shape, lrs)
    refs = [torch.nn.Parameter(params[i].clone()) for i in range(3)]
    opts = [torch.optim.Adam([p], lr=float(lrs[i])) for i, p in enumerate(refs)]
    gen = torch.Generator().manual_seed(0)
    for step in range(6):
        grad = torch.randn(3, 5, dtype=torch.float64, generator=gen)
        active = 3 if step < 3 else 2  # the rows still training are a prefix: row 2 stops after 3 steps
        adam.step(ours, grad[:active], active, step + 1)
        for i in range(active):
            opts[i].zero_grad()
            refs[i].grad = grad[i].clone()
            opts[i].step()
    torch.testing.assert_close(ours, torch.stack([p.detach() for p in refs]), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("sampler", ["torch", "native"])
def test_row_counts_are_multinomial_and_keyed_by_the_row(sampler):
    from fgrpo_sim.sim.categorical.sampling import native_available

    if sampler == "native" and not native_available():
        pytest.skip("no C compiler: the native sampler falls back to torch")
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=torch.float64).expand(500, 40, -1).contiguous()
    keys = torch.arange(500 * 40, dtype=torch.int64).view(500, 40) * 7919 + 11
    counts = RowCounts(np.full(500, 16), keys, torch.device("cpu"), sampler).draw(probs, 500, step=3)
    assert torch.all(counts.sum(-1) == 16) and torch.all(counts >= 0) and torch.equal(counts, counts.round())
    flat = counts.reshape(-1, 4)
    torch.testing.assert_close(flat.mean(0), 16 * probs[0, 0], atol=0.05, rtol=0)
    torch.testing.assert_close(flat.var(0), 16 * probs[0, 0] * (1 - probs[0, 0]), atol=0.1, rtol=0.05)
    # row 7 alone, among other N, and at another step: its counts are its key's and its step's only
    alone = RowCounts(np.array([16]), keys[7:8], torch.device("cpu"), sampler).draw(probs[7:8], 1, step=3)
    mixed = RowCounts(np.array([4, 16, 1024]), keys[6:9], torch.device("cpu"), sampler).draw(probs[6:9], 3, step=3)
    assert torch.equal(alone[0], counts[7]) and torch.equal(mixed[1], counts[7])
    assert not torch.equal(RowCounts(np.array([16]), keys[7:8], torch.device("cpu"), sampler)
                           .draw(probs[7:8], 1, step=4)[0], counts[7])


def test_row_keys_name_the_row_not_the_run():
    spec = GroupSizeStudySpec(group_sizes=(2, 8), gammas=(0.5,), populations=2, seeds=1, prompt_batch=4,
                              optimizers=("adam",), parametrisations=("axis",), adam_lrs=(0.01,), rare_masses=(0.02,))
    wider = replace(spec, group_sizes=(2, 4, 8), gammas=(1.0, 2.0))
    keys, rows = row_keys(spec, study_rows(spec)), study_rows(spec)
    keys_w, rows_w = row_keys(wider, study_rows(wider)), study_rows(wider)
    assert keys.shape == (len(rows), 4) and len(set(keys.reshape(-1).tolist())) == keys.numel()
    index = {tuple(r): i for i, r in enumerate(rows_w[["N", "variant", "population", "seed"]].itertuples(index=False))}
    for i, r in enumerate(rows[["N", "variant", "population", "seed"]].itertuples(index=False)):
        if tuple(r) in index:
            assert torch.equal(keys[i], keys_w[index[tuple(r)]])
    assert sum(tuple(r) in index for r in rows[["N", "variant", "population", "seed"]].itertuples(index=False)) == 4


SMALL_POP = replace(DEFAULT_POPULATION, num_prompts=32, heldout_prompts=32)


def test_small_study_layout_and_pairing():
    spec = GroupSizeStudySpec(group_sizes=(2, 8), rare_masses=(0.02,), gammas=(1.0,), populations=2, seeds=2, steps=8,
                              eval_every=4, views=("equal-steps", "equal-rollouts"), parametrisations=("axis", "dense"),
                              adam_lrs=(0.01,), sgd_lrs=(2.0,), population=SMALL_POP)
    frame = run_study(spec)
    final = final_rows(frame)
    # 2 optimizers x 2 parametrisations x 2 views x 2 N x 3 variants x 2 populations x 2 seeds
    assert len(final) == 192 and final["chunk"].nunique() == 4
    assert sorted(set(final[final["optimizer"] == "sgd"]["lr"].round(9))) == [1.0, 2.0]  # sgd lr and its m_1 control
    eq = final[final["view"] == "equal-rollouts"].groupby("N")["steps"].first()
    assert eq.loc[2] == 32 and eq.loc[8] == 8  # 8 x 8 / N steps
    assert set(final["variant"]) == {"GRPO", "F-GRPO gamma=1", "GRPO low-LR (x m_1)"}
    start = frame[frame["step"] == 0]
    assert np.allclose(start["train_dnll_rare"], 0.0)
    # the same population (and so the same initial policy) for every row of a population draw, whatever the map
    # (to rounding: the dense map's least-norm start reproduces the logits to ~1e-16, not bit for bit)
    spread = start.groupby("population")["heldout_pass@256"].agg(lambda v: v.max() - v.min())
    assert spread.max() < 1e-12
    assert start["heldout_pass@256"].round(9).nunique() == 2
    assert final["heldout_pass@256"].between(0, 1).all() and np.isfinite(final["train_dnll_rare"]).all()
    assert set(predicted_dips(spec)) == {0.02}


def test_orthogonal_equals_axis_under_sgd_in_the_study_engine():
    spec = GroupSizeStudySpec(group_sizes=(2, 16), rare_masses=(0.02,), gammas=(1.0,), populations=2, seeds=1,
                              steps=20, eval_every=10, optimizers=("sgd", "adam"), adam_lrs=(0.01,), sgd_lrs=(2.0,),
                              parametrisations=("axis", "orthogonal"), population=SMALL_POP)
    final = final_rows(run_study(spec))
    table = final.pivot_table(index=["optimizer", "N", "variant", "population", "seed"], columns="parametrisation",
                              values="heldout_pass@256")
    gap = (table["orthogonal"] - table["axis"]).abs().groupby("optimizer").max()
    assert gap["sgd"] < 1e-9
    assert gap["adam"] > 1e-4  # the test can fail: Adam does tell the maps apart


def test_a_setting_gives_the_same_numbers_alone_and_beside_others():
    """Issue 36: one setting alone equals the same setting inside a run with other rare masses, learning rates,
    more populations and more batch seeds (each (setting, population, batch seed) draws from its own key)."""
    common = dict(group_sizes=(2, 8, 32), gammas=(0.5,), steps=6, eval_every=3, population=SMALL_POP,
                  optimizers=("adam",), parametrisations=("orthogonal",))
    alone = final_rows(run_study(GroupSizeStudySpec(rare_masses=(0.02,), adam_lrs=(0.01,), populations=2, seeds=1,
                                                    **common)))
    beside = final_rows(run_study(GroupSizeStudySpec(rare_masses=(0.005, 0.02), adam_lrs=(0.003, 0.01), populations=3,
                                                     seeds=2, **common)))
    keys = ["N", "variant", "population", "seed"]
    same = beside[(beside["rare_mass"] == 0.02) & (beside["base_lr"] == 0.01)].merge(alone[keys], on=keys)
    a, b = (f.sort_values(keys).reset_index(drop=True) for f in (alone, same))
    assert len(a) == len(b) == 18
    for metric in ("heldout_pass@256", "heldout_pass@1", "train_dnll_rare"):
        np.testing.assert_array_equal(a[metric].to_numpy(), b[metric].to_numpy())
    assert a["heldout_pass@256"].nunique() > 1  # the rows did train apart


@pytest.mark.parametrize("view", ["equal-steps", "equal-rollouts"])
def test_a_rows_numbers_do_not_depend_on_the_n_list_or_the_gammas(view):
    """Issue 44: GRPO's rows, and the rows of the N values both runs share, are bit-identical when N values are
    added and the gamma list changes (each row draws its counts from its own key)."""
    common = dict(rare_masses=(0.02,), adam_lrs=(0.01,), sgd_lrs=(2.0,), populations=2, seeds=1, steps=6,
                  eval_every=3, population=SMALL_POP, parametrisations=("orthogonal",), views=(view,),
                  reference_n=8)
    first = final_rows(run_study(GroupSizeStudySpec(group_sizes=(2, 8), gammas=(0.5,), **common)))
    second = final_rows(run_study(GroupSizeStudySpec(group_sizes=(2, 4, 8, 32), gammas=(1.0, 0.5), **common)))
    keys = ["optimizer", "N", "variant", "population", "seed"]
    shared = second.merge(first[keys], on=keys)
    a, b = (f.sort_values(keys).reset_index(drop=True) for f in (first, shared))
    assert len(a) == len(b) == 2 * 2 * 3 * 2  # optimizers x N x (GRPO, F 0.5, its control) x populations
    metrics = ["heldout_pass@256", "heldout_pass@1", "train_pass@1", "train_dnll_rare", "heldout_rare_strategy_mass"]
    for metric in metrics:
        np.testing.assert_array_equal(a[metric].to_numpy(), b[metric].to_numpy(), err_msg=metric)
    assert a["heldout_pass@256"].nunique() > 4  # the rows did train apart


def test_step_loop_never_reads_the_device(monkeypatch):
    """No .item() / .tolist() / bool(tensor) inside the step loop: count host reads per step."""
    import fgrpo_sim.sim.group_size_study as study

    reads = []
    for name in ("item", "tolist", "__bool__"):
        real = getattr(torch.Tensor, name)

        def spy(self, *a, _real=real, _name=name, **k):
            reads.append(_name)
            return _real(self, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, spy)
    spec = GroupSizeStudySpec(group_sizes=(2, 8), rare_masses=(0.02,), gammas=(1.0,), populations=1, seeds=1,
                              optimizers=("adam",), parametrisations=("dense",), adam_lrs=(0.01,), eval_every=1000,
                              population=SMALL_POP)
    reads.clear()
    # the torch sampler: the one a device runs (the C kernel runs on the CPU only, where a read is no sync)
    study._train_chunk(replace(spec, steps=2), "adam", "dense", torch.device("cpu"), False, sampler="torch")
    few = len(reads)
    reads.clear()
    study._train_chunk(replace(spec, steps=12), "adam", "dense", torch.device("cpu"), False, sampler="torch")
    assert len(reads) == few  # ten more steps, not one more host read (reads happen at evaluations only)


def test_cli_json_prints_one_object_per_setting(run_cli, tmp_path):
    import json

    out = tmp_path / "gs.parquet"
    args = ("simulate", "group-size", "--out", out, "--n", "2,8,32", "--rare-mass", "0.02", "--populations", "3",
            "--runs", "2", "--steps", "6", "--eval-every", "3", "--adam-lr", "0.01", "--sgd-lr", "2",
            "--parametrisation", "axis,orthogonal", "--device", "cpu", "--json", "--no-progress")
    result = run_cli(*args)
    assert result.exit_code == 0, result.stderr
    items = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(items) == 4  # 2 optimizers x 2 parametrisations x 1 rare share x 1 lr
    assert {(i["optimizer"], i["parametrisation"]) for i in items} == {(o, p) for o in ("adam", "sgd")
                                                                        for p in ("axis", "orthogonal")}
    for item in items:
        assert item["rare_mass"] == 0.02 and item["lr"] in (0.01, 2.0) and item["predicted_N"] in (2, 8, 32)
        assert all(" " not in key for key in item)  # keys jq and pandas take as they are (issue 39)
        assert item["observed_lowest_N"] in (2, 8, 32)
        # 3 populations: too few for argmin shares (issue 36), flagged, never a bare share of 1.00
        assert item["few_units"] is True and item["lowest_share"] is None and item["argmin_share"] is None
        assert item["populations"] == 3 and item["batch_seeds"] == 2 and item["unit"] == "population"
        lo_first, lo_last = item["first_minus_lowest"], item["last_minus_lowest"]
        assert len(lo_first) == 3 and lo_first[1] <= lo_first[0] <= lo_first[2] and len(lo_last) == 3
        assert item["verdict"].startswith("dip at N =" if item["dip"] else "no dip")
        assert len(item["pass256"]) == len(item["pass1"]) == len(item["dnll_rare"]) == 3
        assert [e["gamma"] for e in item["fgrpo_at_lowest"]] == [0.5, 1.0]
        for entry in item["fgrpo_at_lowest"]:
            assert {"minus_grpo", "minus_control", "equal_pass1_minus_grpo"} <= set(entry)
        assert {c["variant"] for c in item["curves"]} >= {"GRPO", "F-GRPO gamma=0.5"}
        assert item["best_checkpoint"]["observed_lowest_N"] in (2, 8, 32)
    assert "fewer than 5" in result.stderr  # the flag reaches a --json user too
    # a rerun resumes: every chunk is there, nothing trains, the same report
    again = run_cli(*args)
    assert again.exit_code == 0 and again.stdout == result.stdout


def test_study_spec_validation():
    with pytest.raises(ValueError, match="views"):
        GroupSizeStudySpec(views=("equal-flops",)).validate()
    with pytest.raises(ValueError, match="parametrisations"):
        GroupSizeStudySpec(parametrisations=("spherical",)).validate()
    with pytest.raises(ValueError, match="populations"):
        GroupSizeStudySpec(populations=0).validate()
    with pytest.raises(ValueError, match="rare_masses"):
        GroupSizeStudySpec(rare_masses=(0.5,)).validate()
