"""tools/uv_index_args.py: uv gets the package sources pip is configured with (uv ignores pip.conf)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _module():
    spec = importlib.util.spec_from_file_location("uv_index_args", ROOT / "tools" / "uv_index_args.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pip_sources_become_uv_flags_environment_first():
    tool = _module()
    listing = """:env:.default-timeout='180'
:env:.find-links='/opt/wheels'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/elsewhere'
global.index-url='https://mirror.example/simple'"""
    args = tool.uv_args(tool.pip_settings(listing))
    assert args == ["--index-url", "https://mirror.example/simple",
                    "--extra-index-url", "file:///opt/pypi/simple", "--extra-index-url", "file:///opt/pypi-more/simple",
                    "--find-links", "/opt/wheels", "--constraint", "/etc/xdg/pip/constraints.txt",
                    "--index-strategy", "unsafe-best-match"]
    assert tool.uv_args(tool.pip_settings("")) == ["--index-strategy", "unsafe-best-match"]


def test_makefile_installs_with_uv_when_present_else_pip():
    makefile = (ROOT / "Makefile").read_text()
    assert "tools/uv_index_args.py" in makefile and "$(1)/bin/pip install -q" in makefile
    # every venv (.venv, .venv-verl, .venv-oldest) goes through the one macro, and each pins its constraints;
    # .venv three times: the base dependencies alone for `make figures`, the cluster extra alone for
    # `make install-cluster`, every extra for `make test`
    assert makefile.count("$(call install_into,") == 5 and "$(call install_into,$(VENV),cluster)" in makefile and "$(call install_into,$(VENV),)" in makefile
    assert "-c $(or $(3),constraints.txt)" in makefile and "$(call install_into,$(OLDEST_VENV),$(EXTRAS),constraints-oldest.txt)" in makefile


def test_a_fresh_clone_without_uv_bootstraps_it(tmp_path):
    """Without uv on PATH, `make install` first puts uv into build/uv with pip (issue 46: a first `make test` paid
    two pip installs); `make UV=` still forces pip; a uv on PATH is used as it is. Dry runs (`make -n`) only."""
    import shutil
    import subprocess

    import pytest

    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    bare = tmp_path / "bin"  # a PATH holding python3 and sh but no uv
    bare.mkdir()
    for tool in ("python3", "sh"):
        (bare / tool).symlink_to(shutil.which(tool))

    def dry(*args, path=str(bare)):
        done = subprocess.run([make, "-n", "-B", "install", *args], cwd=ROOT, capture_output=True, text=True,
                              env={"PATH": path, "HOME": str(tmp_path)})
        assert done.returncode == 0, done.stderr
        return done.stdout

    fresh = dry()
    assert "python3 -m venv build/uv && build/uv/bin/pip install -q uv" in fresh
    assert "build/uv/bin/uv pip install -q --python .venv/bin/python" in fresh
    assert "build/uv" not in dry("UV=") and ".venv/bin/pip install -q" in dry("UV=")
    (bare / "uv").write_text("#!/bin/sh\n")
    (bare / "uv").chmod(0o755)
    on_path = dry()
    assert "build/uv" not in on_path and f"{bare / 'uv'} pip install -q" in on_path
