"""Tests for the last open mutants of sim/ (issue 44; benchmarks/mutation_equivalent.md, "open"): the group-size report
on a table with variants and optimizers the study does not write, DrawPlan's largest N, and the native refresh's
pointers. Each fails with its mutant switched on (checked by hand-applying it). Tiny hand-made data."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest
import torch

from fgrpo_sim.sim.categorical import sampling


# --- group_size_report: the table reader takes any variant and optimizer names, so the report must too -----------

def _table(variants, optimizer="adam"):
    """A two-step study table of one setting: 5 populations x 2 batch seeds at N = 2, 4, 8, pass@256 and pass@1
    varying with the variant, N, population and seed (so every paired interval has spread)."""
    rows = []
    for v, variant in enumerate(variants):
        for n in (2, 4, 8):
            for pop in range(5):
                for seed in range(2):
                    for step in (0, 10):
                        end = step == 10
                        rows.append({"rare_correct_prob": 1.0, "optimizer": optimizer, "parametrisation": "orthogonal",
                                     "view": "equal-steps", "rare_mass": 0.02, "base_lr": 0.01, "variant": variant,
                                     "gamma": 0.5 if variant.startswith("F-GRPO") else 0.0, "lr": 0.01, "N": n,
                                     "population": pop, "seed": seed, "steps": 10, "step": step,
                                     "heldout_pass@256": (0.8 - 0.02 * (n == 4) + 0.01 * v + 0.007 * pop
                                                          + 0.003 * seed + 0.002 * ((pop * n) % 3)) if end else 0.9,
                                     "heldout_pass@1": 0.3 + 0.01 * pop + 0.001 * seed + 0.02 * v if end else 0.1,
                                     "train_dnll_rare": 0.1 * n if end else 0.0})
    return pd.DataFrame(rows)


def _reports(frame):
    from fgrpo_sim.sim.group_size_report import setting_reports
    from fgrpo_sim.sim.group_size_study import DEFAULT_POPULATION

    return setting_reports(frame, replace(DEFAULT_POPULATION, num_prompts=8, heldout_prompts=8))


def test_report_finds_fgrpo_entries_past_a_variant_sorting_before_them():
    """_fgrpo_at_lowest_27 (`break` for `continue`): "CISPO" sorts before "F-GRPO gamma=0.5"; skipping it must not
    end the search, so the F-GRPO entry is the same as on the table without it."""
    arms = ["GRPO", "F-GRPO gamma=0.5", "GRPO low-LR (x m_0.5)"]
    with_cispo = _table(["CISPO", *arms])
    assert sorted(set(with_cispo["variant"]) - {"GRPO"})[0] == "CISPO"  # the first variant the loop meets
    [report] = _reports(with_cispo)
    [alone] = _reports(_table(["", *arms]).query("variant != ''"))  # same values per arm, no CISPO rows
    [entry] = report["fgrpo_at_lowest"]
    assert entry["variant"] == "F-GRPO gamma=0.5" and entry["gamma"] == 0.5 and "minus_control" in entry
    assert report["fgrpo_at_lowest"] == alone["fgrpo_at_lowest"]
    assert entry["minus_grpo"][0] == pytest.approx(0.01, abs=5e-6)  # one variant index apart in the table
    assert [c["variant"] for c in report["curves"]] == sorted(["CISPO", *arms])  # CISPO still has its curve


def test_brief_table_names_an_optimizer_the_study_does_not_know_by_its_own_name():
    """brief_tables_66 (`names.get(o, None)`): a hand-made table's optimizer "rmsprop" has no display name, so the
    heading shows it as written ("rmsprop lr 0.01"), not "None lr 0.01"; adam keeps its display name."""
    from fgrpo_sim.sim.group_size_report import brief_tables

    arms = ["GRPO", "F-GRPO gamma=0.5", "GRPO low-LR (x m_0.5)"]
    reports = _reports(pd.concat([_table(arms, "rmsprop"), _table(arms, "adam")], ignore_index=True))
    lines = brief_tables(reports).splitlines()
    assert lines[0].startswith("GRPO held-out pass@256 at rare mass 0.02 (default population, Adam lr 0.01, "
                               "rmsprop lr 0.01, 5 populations x 2 batch seeds;")
    assert [line.split("|")[1] for line in lines[4:]] == ["Adam, orthogonal", "rmsprop, orthogonal"]
    assert "None" not in brief_tables(reports)


# --- sampling.DrawPlan: the largest N, 2^31 - 1, is allowed; 2^31 is not -------------------------------------------

class _Reached(Exception):
    """Raised in place of the first allocation after DrawPlan's n_draws check: the check let the value through."""


def test_draw_plan_allows_n_up_to_2_31_minus_1_without_allocating(monkeypatch):
    """DrawPlan__init___25 (`n >= 2**31 - 1`) refuses the largest N the docs allow (DEVELOPERS.md, "N may reach
    2^31 - 1"). A plan of 2^31 - 1 draws needs ~100 GB of host tensors, so the first allocation after the check
    (the draws' run index, `torch.repeat_interleave`) raises a sentinel instead: reaching it means the check passed."""
    def reached(*args, **kwargs):
        raise _Reached

    monkeypatch.setattr(sampling.torch, "repeat_interleave", reached)
    for n in (2**31 - 1, 0):
        with pytest.raises(_Reached):
            sampling.DrawPlan([n], [7], actions=3, device="cpu")
    for n in (2**31, -1):
        with pytest.raises(ValueError, match=r"^n_draws must be in \[0, 2147483647\]$"):
            sampling.DrawPlan([5, n], [7, 8], actions=3, device="cpu")


# --- native.NativeState.refresh: every pointer reaches the kernel; a None one is a ValueError, not a crash ---------

def _native_state(logits):
    from fgrpo_sim.sim.categorical.native import NativeState

    if not sampling.native_available():
        pytest.skip("no C compiler: no native kernel")
    return NativeState(logits, num_correct=2, group_sizes=torch.tensor([4, 4]), threads=1)


def test_native_refresh_by_hand():
    """refresh_10 passes None (NULL) for the weights and crashed the process; with every kernel refusing a None
    argument before the call, it is a ValueError here. The values: w = exp(z - row max), 40 actions = two blocks
    of 32, the totals, the correct actions' (first two) weight and the largest weight, 1."""
    logits = torch.linspace(-3.0, 2.0, 80, dtype=torch.float64).reshape(2, 40).flip(1).contiguous()
    logits[1, 5] = 4.0  # row 1's max sits past the correct actions
    state = _native_state(logits)
    state.refresh(logits)
    w = torch.exp(logits - logits.amax(1, keepdim=True))
    assert torch.allclose(state.weights, w, rtol=1e-12, atol=0)
    assert torch.allclose(state.shift, logits.amax(1), rtol=0, atol=0)
    assert torch.allclose(state.block_sums, torch.stack([w[:, :32].sum(1), w[:, 32:].sum(1)], 1), rtol=1e-12)
    assert torch.allclose(state.totals, w.sum(1), rtol=1e-12)
    assert torch.allclose(state.correct_weight, w[:, :2].sum(1), rtol=1e-12)
    assert state.max_weight.tolist() == [1.0, 1.0]


def test_native_kernels_refuse_a_none_argument_before_the_call():
    """ctypes passes None as NULL and the kernel would write through it: refused before the call, naming the
    argument and the kernel; fused_step's Adam moments (arguments 1, 2) may be None, as SGD passes them."""
    logits = torch.zeros(2, 4, dtype=torch.float64)
    state = _native_state(logits)
    rows = torch.arange(2, dtype=torch.int64)
    args = [logits.data_ptr(), state.weights.data_ptr(), 4, 2, rows.data_ptr(), 2, state.shift.data_ptr(),
            state.block_sums.data_ptr(), state.totals.data_ptr(), state.correct_weight.data_ptr(),
            state.max_weight.data_ptr()]
    for i in range(len(args)):
        with pytest.raises(ValueError, match=f"^argument {i} of the native kernel refresh_f64 must be a pointer or "
                                             "a number, got None$"):
            state._fn("refresh")(*args[:i], None, *args[i + 1:])
    assert state.totals.tolist() == [0.0, 0.0]  # the kernel never ran
    state._fn("refresh")(*args)
    assert state.totals.tolist() == [4.0, 4.0]
    fused, calls = state._fn("fused_step"), []
    fused.fn = lambda *args: calls.append(args)  # a stand-in: only the check before the call runs
    fused(1, None, None, 4)
    assert calls == [(1, None, None, 4)]
    with pytest.raises(ValueError, match="^argument 3 of the native kernel <lambda> must be a pointer"):
        fused(1, None, None, None)
