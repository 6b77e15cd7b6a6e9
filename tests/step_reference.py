"""Shared by tests that step the categorical simulator by given counts and compare it with `fgrpo check`'s autograd
reference (checks_exact._reference_steps)."""

import numpy as np
import torch


def assert_steps_match_reference(config, p0: np.ndarray, counts: list[np.ndarray], min_move: float) -> None:
    """One row started at log(p0), stepped by each count vector, equals the reference to 1e-9 of the move, and the
    move is at least min_move (so the comparison is not of two unmoved policies)."""
    from fgrpo_sim.sim.categorical import CategoricalBatch
    from fgrpo_sim.sim.checks_exact import _reference_steps

    batch = CategoricalBatch(config, [len(p0)], [1.0], [0])
    batch.logits[0] = torch.as_tensor(np.log(p0))
    if batch.native is not None:
        batch.native.refresh(batch.logits)
    for c in counts:
        batch.step_with_counts(torch.as_tensor(c).unsqueeze(0))
    want = _reference_steps(p0, config.num_correct, counts, config, 1.0)
    moved = float((want - torch.as_tensor(np.log(p0))).abs().max())
    assert moved > min_move
    assert float((batch.logits[0].to(torch.float64) - want).abs().max()) <= 1e-9 * moved
