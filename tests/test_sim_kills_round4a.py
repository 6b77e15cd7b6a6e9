"""Tests written for the survivors of sim/'s fourth fresh samples, strata rep and chk (seed 505, issue 44;
benchmarks/mutation_equivalent.md "sim/: fourth fresh samples (seed 505), strata rep and chk"). Each asserts
behaviour a user relies on, on tiny hand-made data: a table2-depth record reads back with its own fields only,
the simulator's SGD with L2 weight decay takes the steps torch.optim.SGD takes (the reference `fgrpo check`'s
paths are measured against), and the pass@k variance check reaches k = 1, the k every paired test starts from."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from step_reference import assert_steps_match_reference

import fgrpo_sim

COMMITTED_DEPTH = Path(fgrpo_sim.__file__).resolve().parent / "results" / "table2-depth.json"


# --- table2_depth_record.py: a checked record's simulated rows are the rows written ---------------------------------

def test_depth_record_rows_read_back_as_written():
    """check_record_96 (the checked method stored under a new key "METHOD"): the committed record is already well
    typed, so reading it back must give every simulated row as written, with no field added (the figure and
    `--from` readers pass these rows on)."""
    from fgrpo_sim.sim.table2_depth_record import check_record

    raw = json.loads(COMMITTED_DEPTH.read_text(encoding="utf-8"))
    checked = check_record(json.loads(json.dumps(raw)), "table2-depth.json")
    assert len(checked["simulated_rows"]) == len(raw["simulated_rows"]) > 0
    assert [sorted(r) for r in checked["simulated_rows"]] == [sorted(r) for r in raw["simulated_rows"]]
    assert checked["simulated_rows"] == raw["simulated_rows"]


# --- checks_exact.py: the autograd reference's SGD keeps its L2 weight decay ---------------------------------------

@pytest.mark.parametrize("surrogate", ["logprob", "distinct"])
def test_sgd_with_weight_decay_matches_the_torch_optim_reference(surrogate):
    """_reference_steps_15 (torch.optim.SGD built without `weight_decay`): `fgrpo check`'s reference for the SGD
    path is "SGD with L2 decay"; the simulator's SGD with decay 0.05 must agree with it to 1e-9 of the step.
    Independently of the reference: decay alone shrinks every logit by (1 - lr * wd) per step, so with a step whose
    gradient is zero (every action unsampled, the distinct surrogate; or mu_hat = 1, gamma = 1) the logits are
    exactly z0 * (1 - lr wd)^steps. The CPU is asked for (device="cpu"): the comparison is float64 on one machine."""
    from fgrpo_sim.sim.categorical import CategoricalConfig
    from fgrpo_sim.sim.checks_exact import _reference_steps

    p0 = np.array([0.4, 0.1, 0.3, 0.2])
    counts = [np.array([2, 1, 0, 1]), np.array([0, 1, 2, 1]), np.array([1, 0, 1, 2])]
    config = CategoricalConfig(num_actions=4, num_correct=2, surrogate=surrogate, optimizer="sgd", lr=0.5,
                               weight_decay=0.05, dtype="float64", device="cpu", steps=3)
    assert_steps_match_reference(config, p0, counts, min_move=1e-2)

    # decay alone: all-correct groups (mu_hat = 1) carry the focal weight (1 - 1)^1 = 0, so no gradient but the decay
    alone = [np.array([3, 1, 0, 0])] * 3
    z = _reference_steps(p0, 2, alone, config, 1.0)
    np.testing.assert_allclose(z.numpy(), np.log(p0) * (1 - 0.5 * 0.05) ** 3, rtol=1e-12)


# --- checks_exact.py: the variance check reaches k = 1 -------------------------------------------------------------

def test_variance_checks_fail_on_a_variance_wrong_only_at_k_1(monkeypatch):
    """variance_checks_24 (k from 2): a pass@k variance wrong only at k = 1 (pass@1, the paired test's commonest
    k) must fail the unbiasedness check at both n; the honest variance passes."""
    import fgrpo_sim.metrics as metrics
    from fgrpo_sim.sim.checks_exact import variance_checks

    assert all(r["passed"] for r in variance_checks(True, 0, "cpu"))
    real = metrics.pass_at_k_variance
    monkeypatch.setattr(metrics, "pass_at_k_variance", lambda n, c, k: real(n, c, k) + (1e-6 if k == 1 else 0.0))
    assert [r["passed"] for r in variance_checks(True, 0, "cpu")] == [False, False]
