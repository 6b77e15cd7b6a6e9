"""Maze reward: 1 for the exact target sequence (the unique route, then `<stop>`), 0 for anything else.

Partial progress (how many leading moves agree with the route) is computed too, but only as a diagnostic:
it is never fed to the optimiser.
"""

from __future__ import annotations

from typing import Sequence


def exact_match_reward(completion_ids: Sequence[int], target_ids: Sequence[int]) -> float:
    """1.0 when the completion's token ids equal the target's (moves then stop), else 0.0.

    Anything after the first stop token is ignored by TRL already (it masks past eos); a completion that
    never stops, stops early, or contains a non-move token is simply not equal to the target.
    """
    return 1.0 if list(completion_ids) == list(target_ids) else 0.0


def route_progress(completion_ids: Sequence[int], target_ids: Sequence[int]) -> float:
    """Share of the route's moves reproduced before the first disagreement (diagnostic, in [0, 1])."""
    moves = list(target_ids[:-1])  # the target ends with the stop token
    if not moves:
        return 1.0 if list(completion_ids[:1]) == list(target_ids[:1]) else 0.0
    agree = 0
    for got, want in zip(completion_ids, moves):
        if got != want:
            break
        agree += 1
    return agree / len(moves)


def make_trl_reward(tokenizer):
    """A TRL reward function: reads each row's `target` column (text) and compares token ids exactly."""
    cache: dict[str, list[int]] = {}

    def maze_exact_route(prompts, completions, completion_ids, target, **_):
        out = []
        for ids, text in zip(completion_ids, target):
            if text not in cache:
                cache[text] = tokenizer(text)["input_ids"]
            out.append(exact_match_reward(ids, cache[text]))
        return out

    return maze_exact_route
