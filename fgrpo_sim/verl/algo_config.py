"""Reading verl's `algorithm` config, whatever shape verl hands it in.

Its own module because the estimators, ds_grpo and the launch checks all read it, and ds_grpo is
registered by the estimators module (one-way imports, no circle).
"""
from __future__ import annotations

from typing import Any


def algo_setting(config: Any, key: str, default: Any) -> Any:
    """config.key for a DictConfig, a dict or verl's AlgoConfig dataclass; default when absent or None."""
    if config is None:
        return default
    value = config.get(key, default) if hasattr(config, "get") else getattr(config, key, default)
    return default if value is None else value
