"""Tensor input checks for the core layer (ValueError naming the parameter, as everywhere else)."""

from __future__ import annotations

import contextlib
import contextvars
import math
from typing import Any, Iterator

import torch

# Checks of tensor *values* (finite, in range) read the device: one host sync each. A caller that builds its
# inputs itself and runs many small steps (the simulators, on a GPU) switches them off for a block with
# `values_trusted()`; shapes, dtypes and Python scalars are still checked. Everyone else keeps them.
_VALUES_TRUSTED = contextvars.ContextVar("fgrpo_core_values_trusted", default=False)


@contextlib.contextmanager
def values_trusted() -> Iterator[None]:
    """Inside, core skips its device-reading value checks (the caller vouches for finite, in-range inputs)."""
    token = _VALUES_TRUSTED.set(True)
    try:
        yield
    finally:
        _VALUES_TRUSTED.reset(token)


def values_checked() -> bool:
    return not _VALUES_TRUSTED.get()


def as_float_tensor(name: str, value: Any, *, like: torch.Tensor | None = None) -> torch.Tensor:
    """Return `value` as a floating tensor; integer/bool tensors become the default float dtype."""
    if not isinstance(value, torch.Tensor):
        kwargs = {} if like is None else {"device": like.device}
        try:
            value = torch.as_tensor(value, **kwargs)
        except (TypeError, ValueError, RuntimeError):  # strings, ragged lists, None: name the parameter
            raise ValueError(f"{name} must be a tensor or an array of numbers, got {value!r}") from None
        if like is not None and like.is_floating_point() and not value.is_floating_point():
            value = value.to(like.dtype)
    if not value.is_floating_point():
        value = value.to(torch.get_default_dtype())
    return value


def check_rewards(rewards: Any) -> torch.Tensor:
    """Rewards must be a finite [groups, N] tensor with N >= 1."""
    rewards = as_float_tensor("rewards", rewards)
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be shaped [groups, N], got shape {tuple(rewards.shape)}")
    if rewards.shape[1] < 1:
        raise ValueError(f"rewards must have group size N >= 1, got N = {rewards.shape[1]}")
    if values_checked() and not bool(torch.isfinite(rewards).all()):
        raise ValueError("rewards must be finite, got NaN or inf")
    return rewards


def check_rewards_between(rewards: Any, low: float, high: float) -> torch.Tensor:
    """check_rewards plus low <= rewards <= high, with a single device sync on the good path.

    The trainer calls this every step, so the checks share one reduction; the slow path only runs
    to build the error message.
    """
    rewards = as_float_tensor("rewards", rewards)
    if rewards.dim() != 2 or rewards.shape[1] < 1:
        return check_rewards(rewards)  # raises with the shape message
    if not values_checked() or bool(((rewards >= low) & (rewards <= high)).all()):  # NaN fails: lands below
        return rewards
    check_rewards(rewards)  # NaN/inf message first
    bad = rewards[(rewards < low) | (rewards > high)].flatten()[0].item()
    raise ValueError(f"rewards must be in [{low:g}, {high:g}] (between reward_wrong and reward_correct), got {bad:g}")


def check_scalar(name: str, value: Any, low: float | None = None, high: float | None = None) -> float:
    """A finite Python number in [low, high]."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    if not math.isfinite(x) or (low is not None and x < low) or (high is not None and x > high):
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {x:g}")
    return x
