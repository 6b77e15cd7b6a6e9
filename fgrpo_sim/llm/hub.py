"""Fail fast on a Hugging Face hub id that cannot be loaded here, before transformers/datasets retry for a minute.

Offline (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE / HF_DATASETS_OFFLINE set) or without a route to the hub,
`from_pretrained("org/name")` and `load_dataset("org/name")` spend 30-100 s in retries and then print a
paragraph. `require_loadable(name)` says in one line, at once, why the name cannot be loaded: it is not a
folder, not in the local hub cache, and the hub is off-limits or unreachable.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

_TRUE = ("1", "true", "yes", "on")
OFFLINE_VARIABLES = {"model": ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"),
                     "dataset": ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
PROBE_TIMEOUT_S = 5.0


def offline_variable(kind: str = "model") -> str | None:
    """The first offline switch that is on for `kind` (model or dataset), or None."""
    return next((v for v in OFFLINE_VARIABLES[kind] if os.environ.get(v, "").strip().lower() in _TRUE), None)


def _in_hub_cache(repo_id: str, kind: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    filename = "config.json" if kind == "model" else "README.md"
    for name in (filename, "tokenizer_config.json"):
        try:
            if isinstance(try_to_load_from_cache(repo_id, name, repo_type=kind), str):
                return True
        except Exception:  # noqa: BLE001 - an id the cache cannot parse is simply not cached
            return False
    return False


def _hub_unreachable() -> str | None:
    """Why the hub endpoint cannot be reached (DNS or TCP within PROBE_TIMEOUT_S), or None when it can."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urlparse(endpoint)
    host, port = parsed.hostname or "huggingface.co", parsed.port or (443 if parsed.scheme != "http" else 80)
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S):
            return None
    except OSError as exc:
        return f"{endpoint} cannot be reached ({exc.strerror or exc})"


def require_loadable(name: str | os.PathLike, kind: str = "model") -> None:
    """ValueError (one line) unless `name` is an existing path, a cached hub id, or the hub can be reached.

    kind: "model" (models and tokenizers) or "dataset".
    """
    text = str(name)
    if not text.strip():  # Path("") is "." (it exists); huggingface_hub would answer with its repo-id rules
        raise ValueError(f"{kind} name is empty; give a local folder or a hub id")
    if Path(text).exists():
        config = Path(text) / "config.json"
        if config.is_file():  # transformers would fail deep inside with a TypeError on a damaged config
            from fgrpo_sim.jsonl import read_json_file

            data = read_json_file(config, f"{kind} config")
            if not isinstance(data, dict):
                raise ValueError(f"{config}: expected a JSON object (a {kind} config), got {type(data).__name__}")
        return
    if _in_hub_cache(text, kind):
        return
    switch = offline_variable(kind)
    if switch is not None:
        raise ValueError(f"{kind} {text!r} is neither a local folder nor in the Hugging Face cache, and {switch} is set "
                         f"(offline): download it first (`hf download {text}`) or give a local folder")
    reason = _hub_unreachable()
    if reason is not None:
        raise ValueError(f"{kind} {text!r} is neither a local folder nor in the Hugging Face cache, and {reason}: "
                         "download it on a machine with network access, or give a local folder")


__all__ = ["require_loadable", "offline_variable"]
