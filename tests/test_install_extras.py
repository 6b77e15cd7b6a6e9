"""The `vllm` and `deepspeed` extras resolve inside the ranges TRL 1.16 declares, and the docs say how to install them."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent


def our_extra(extra: str, package: str) -> Requirement:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extra in extras, f"pyproject.toml has no [{extra}] extra"
    (requirement,) = [Requirement(r) for r in extras[extra] if Requirement(r).name == package]
    return requirement


def trl_extra(extra: str, package: str) -> Requirement:
    """TRL's own requirement on `package` under its extra `extra`, from its installed metadata."""
    try:
        requires = metadata.requires("trl") or []
    except metadata.PackageNotFoundError:
        pytest.skip("TRL is not installed (the llm extra)")
    found = [Requirement(r) for r in requires
             if Requirement(r).name == package and Requirement(r).marker and
             Requirement(r).marker.evaluate({"extra": extra})]
    assert found, f"TRL {metadata.version('trl')} declares no {package} under its {extra} extra"
    return found[0]


def candidate_versions(*requirements: Requirement) -> list[Version]:
    """Every 0.x.y release up to 0.99.9, plus each bound the specifiers name (and its neighbours)."""
    versions = {Version(f"0.{minor}.{patch}") for minor in range(100) for patch in range(10)}
    for requirement in requirements:
        for spec in requirement.specifier:
            bound = Version(spec.version)
            versions |= {bound, Version(f"{bound.public}.post1"), Version(f"{bound.public}.1")}
    versions |= {Version("1.0.0"), Version("2.0.0")}
    return sorted(versions)


@pytest.mark.parametrize("extra, package", [("vllm", "vllm"), ("deepspeed", "deepspeed")])
def test_extra_lies_inside_the_range_trl_declares(extra, package):
    ours, theirs = our_extra(extra, package), trl_extra(extra, package)
    assert ours.marker is None and not ours.extras
    allowed = [v for v in candidate_versions(ours, theirs) if ours.specifier.contains(v, prereleases=True)]
    assert allowed, f"{ours} admits no release"
    outside = [str(v) for v in allowed if not theirs.specifier.contains(v, prereleases=True)]
    assert not outside, f"pyproject's {ours} admits {outside[:5]}, outside TRL's {theirs.specifier}"
    assert any(spec.operator in ("<", "<=", "==", "~=") for spec in ours.specifier), f"{ours} has no upper bound"


def test_docs_say_how_to_install_deepspeed_for_zero3():
    assert (ROOT / "recipes/accelerate/zero3.yaml").is_file()
    text = (ROOT / "docs/llm.md").read_text()
    paragraphs = re.split(r"\n\s*\n", text)
    install = re.compile(r'pip install -e "\.\[[a-z,]*\bdeepspeed\b[a-z,]*\]"')
    assert any("zero3.yaml" in p and install.search(p) for p in paragraphs), \
        'docs/llm.md names no `pip install -e ".[...deepspeed]"` next to recipes/accelerate/zero3.yaml'
