"""Print the uv options that match pip's configured package sources (used by the Makefile).

uv ignores pip.conf and PIP_* variables, so a machine whose wheels come from local folders or extra
indexes (find-links, extra-index-url, a global constraint file) would resolve differently, or from PyPI
alone. This reads what pip itself would use (`pip config list`, which includes PIP_* variables, the
environment winning) and prints the equivalent uv flags. --index-strategy unsafe-best-match is pip's
own rule: the best version across every source, not the first source that has the name.
Standard library only: it runs with the system python3 before any venv exists.
"""

from __future__ import annotations

import shlex
import subprocess
import sys

FLAGS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
         "constraint": "--constraint"}


def pip_settings(listing: str) -> dict[str, str]:
    """{key: value} from `pip config list` lines like "global.find-links='/opt/wheels'"; :env: entries win."""
    found: dict[str, tuple[bool, str]] = {}
    for line in listing.splitlines():
        name, sep, value = line.partition("=")
        if not sep:
            continue
        key = name.rsplit(".", 1)[-1]
        from_env = name.startswith(":env:")
        value = value.strip().strip("'\"")
        if key not in found or from_env or not found[key][0]:
            found[key] = (from_env, value)
    return {k: v for k, (_, v) in found.items()}


def uv_args(settings: dict[str, str]) -> list[str]:
    args = []
    for key, flag in FLAGS.items():
        for item in settings.get(key, "").split():
            args += [flag, item]
    return args + ["--index-strategy", "unsafe-best-match"]


def main() -> None:
    result = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    print(shlex.join(uv_args(pip_settings(result.stdout if result.returncode == 0 else ""))))


if __name__ == "__main__":
    main()
