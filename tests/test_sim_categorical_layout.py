"""Layout of the categorical engine (issue 23): one subpackage, the C kernel a package file."""

from __future__ import annotations

import fnmatch
import importlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import fgrpo_sim

REPO = Path(fgrpo_sim.__file__).resolve().parent.parent
CATEGORICAL = Path(fgrpo_sim.__file__).resolve().parent / "sim" / "categorical"


def test_old_single_module_names_still_import_from_the_package():
    from fgrpo_sim.sim.categorical import METRICS, CategoricalBatch, initial_logits, resolve_device
    from fgrpo_sim.sim.categorical.engine import CategoricalBatch as engine_batch

    assert CategoricalBatch is engine_batch and callable(initial_logits) and callable(resolve_device)
    assert "q_pos" in METRICS
    import fgrpo_sim.sim.categorical as package

    assert set(package.__all__) == {"CategoricalConfig", "resolve_device", "run_grid", "CategoricalBatch", "METRICS",
                                    "run_study", "claims_table"}
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        package.nope  # noqa: B018


def test_reading_a_config_does_not_load_torch():
    code = ("import sys\nfrom fgrpo_sim.sim.categorical import CategoricalConfig\n"
            "from fgrpo_sim.sim.categorical.config import CategoricalConfig as direct\n"
            "assert direct is CategoricalConfig and CategoricalConfig().config_id\nprint('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_c_kernel_is_a_package_file_not_a_python_string():
    from fgrpo_sim.sim.categorical import sampling

    source = (CATEGORICAL / sampling.KERNEL_FILE).read_text()
    for fn in ("sample_counts_f32", "refresh_f64", "sample_sparse_f32", "fused_step_f64"):
        assert fn in source
    assert sampling.kernel_source() == source
    for module in CATEGORICAL.glob("*.py"):
        assert "#include" not in module.read_text(), f"{module.name} holds C source; it belongs in kernel.c"


def test_c_kernel_ships_in_a_wheel_as_package_data():
    """A non-editable install carries only the package data named in pyproject (checked by building a wheel
    once: without this entry the wheel has no kernel.c and every install falls back to the torch sampler)."""
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = package_data.get("fgrpo_sim.sim.categorical", [])
    assert any(fnmatch.fnmatch("kernel.c", p) for p in patterns)


def test_compiled_kernel_cache_follows_the_kernel_source(monkeypatch, tmp_path):
    from fgrpo_sim.sim.categorical import sampling

    if not sampling.native_available():
        pytest.skip("no C compiler")
    source = sampling.kernel_source()
    assert sampling.library_path(source).exists()  # what was loaded is the build of today's kernel.c
    monkeypatch.setenv("FGRPO_CACHE_DIR", str(tmp_path))
    edited = sampling.library_path(source + "\n/* edited */\n")
    assert edited != sampling.library_path(source)
    assert edited.parent == tmp_path / "fgrpo-sim" / f"native-{os.geteuid()}"  # this user's private folder
