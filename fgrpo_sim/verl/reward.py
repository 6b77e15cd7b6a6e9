"""The paper's math reward as verl's custom reward function (App. L.2: math-verify, 1.0 / 0.0).

Point verl at it with
    reward.custom_reward_function.path=pkg://fgrpo_sim.verl.reward
    reward.custom_reward_function.name=compute_score
Grading is `fgrpo_sim.llm.rewards.MathVerifier` (last \\boxed{} answer, math-verify, time limits), the
same verifier the TRL trainer uses; nothing is re-implemented here. verl's reward loop calls this
from worker threads; the verifier is thread-safe and runs math-verify in a guarded process there.
Reward values can be changed with `reward.custom_reward_function.reward_kwargs` (reward_correct /
reward_wrong); keep them equal to `algorithm.focal_reward_correct / focal_reward_wrong`.
"""

from __future__ import annotations

from typing import Any


def compute_score(data_source: Any = None, solution_str: str = "", ground_truth: Any = None, extra_info: Any = None,
                  reward_correct: float = 1.0, reward_wrong: float = 0.0, **kwargs) -> dict[str, Any]:
    """verl's reward signature: score 1.0 / 0.0 by default, plus `acc` (1 when correct) and `no_answer`.

    Only numbers go back: verl averages the extra fields into its metrics.
    """
    from fgrpo_sim.llm.rewards import math_reward  # its verifier: one per process, thread-safe

    result = math_reward.verifier.score(solution_str, ground_truth)
    return {"score": float(reward_correct if result.correct else reward_wrong), "acc": float(result.correct),
            "no_answer": float(result.status == "no_answer")}


__all__ = ["compute_score"]
