"""benchmarks/paired_test_calibration.py's grid record tools: merging a rerun of some cells at more draws into the
published record, and the 3.5-6.5% band verdict of each size cell (tiny hand-made records, no test is run)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def calibration():
    spec = importlib.util.spec_from_file_location("calibration", ROOT / "benchmarks" / "paired_test_calibration.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _point(calibration, problems, law, draws, rejections, shift=0.0):
    """A size (or power) point at n = 2: k = 1 and 2, every draw given a verdict."""
    entries = calibration._rates_entry([rejections, rejections], [draws, draws])
    return {"problems": problems, "n": 2, "law": law, "shift": shift, "draws": draws, "ks": [1, 2],
            "conditional": entries, "no_test_share": [0.0, 0.0],
            "u_statistic": {"ks": [1], "per_k": calibration._rates_entry([rejections], [draws])}}


def _record(points, machine="old box"):
    return {"benchmark": "paired_test_calibration --grid", "alpha": 0.05, "size_range": [0.0, 1.0],
            "machine": machine, "points": points}


def test_merge_replaces_matching_points_keeps_order_and_recomputes_the_range(calibration):
    base = _record([_point(calibration, 5, "mid", 100, 9), _point(calibration, 10, "mid", 100, 2),
                    _point(calibration, 5, "mid", 100, 30, shift=0.1)])
    rerun = _record([_point(calibration, 5, "mid", 2000, 100), _point(calibration, 30, "mid", 2000, 80)], "new box")
    merged = calibration.merge_grid(base, rerun)
    assert [(p["problems"], p["draws"], p["shift"]) for p in merged["points"]] == [
        (5, 2000, 0.0), (10, 100, 0.0), (5, 100, 0.1), (30, 2000, 0.0)]
    # the power point (shift 0.1) is not a size cell: the range is 2/100 .. 100/2000
    assert merged["size_range"] == pytest.approx([0.02, 0.05])
    assert merged["machine"] == "new box; old box"
    assert base["points"][0]["draws"] == 100  # the base record is not changed in place


def test_merge_refuses_another_alpha(calibration):
    with pytest.raises(ValueError, match="alpha"):
        calibration.merge_grid(_record([]), {**_record([]), "alpha": 0.01})


@pytest.mark.parametrize(("rejections", "trials", "verdict"), [
    (100, 2000, "inside"),    # 5.0% [4.1, 6.0]
    (40, 2000, "outside"),    # 2.0% [1.4, 2.7]: wholly below 3.5%
    (200, 2000, "outside"),   # 10.0% [8.7, 11.4]: wholly above 6.5%
    (5, 100, "open"),         # 5.0% [1.6, 11.3]: too few draws to tell
    (70, 1000, "open"),       # 7.0% [5.5, 8.8]: crosses 6.5%
])
def test_band_verdict(calibration, rejections, trials, verdict):
    cell = calibration._rates_entry([rejections], [trials])[0]
    assert calibration.band_verdict(cell) == verdict


def test_markdown_shows_draws_and_band_counts_per_draws(calibration):
    record = _record([_point(calibration, 5, "mid", 2000, 100), _point(calibration, 10, "degenerate", 2000, 200),
                      _point(calibration, 1000, "mid", 100, 5), _point(calibration, 5, "mid", 200, 50, shift=0.1)])
    text = calibration.grid_markdown(record)
    assert "| 5 | 2 | mid | 2,000 | 5.0% (100/2000) [4.1, 6.0] | = | = | 5.0% (100/2000) [4.1, 6.0] |" in text
    assert "- 2,000 draws: 4 cells, 2 inside, 2 outside, 0 crossing an edge (0 of the 2 not inside contain 5%)." in text
    assert "- 100 draws: 2 cells, 0 inside, 0 outside, 2 crossing an edge (2 of the 2 not inside contain 5%)." in text
    assert "10/2/degenerate/k = 1: 10.0% (200/2000) [8.7, 11.4] outside" in text
    assert "1000/2/mid" not in text  # only the cells at the most draws are named
