"""Input checks and atomic output: the helpers every command relies on for one-line errors."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from fgrpo_sim.atomic_io import atomic_path, check_writable, check_writable_dir, write_text_atomic
from fgrpo_sim.validation import check_integer, check_range, parse_list


@pytest.mark.parametrize("value", ["x", [1, "a"], {"a": 1}])
def test_check_range_names_parameter_for_non_numbers(value):
    with pytest.raises(ValueError, match=r"^mu must be a number"):
        check_range("mu", value, 0.0, 1.0)


@pytest.mark.parametrize("value, message", [
    (10**20, r"n must be in \[1, 2\^63 - 1\], got 100000000000000000000"),
    (1e20, r"n must be in \[1, 2\^63 - 1\], got 1e\+20"),
    (float("nan"), r"n must be an integer, got nan"),
    ([1, 2.5], r"n must be an integer, got 2.5"),
    (["a"], r"n must be an integer, got 'a'"),
    (None, r"n must be an integer, got None"),
])
def test_check_integer_messages_name_the_value(value, message):
    with pytest.raises(ValueError, match=message):
        check_integer("n", value, 1)


def test_check_integer_accepts_integral_floats_and_ints():
    assert check_integer("n", [1.0, 2, np.int32(3)], 1).tolist() == [1, 2, 3]


def test_atomic_output_gets_normal_file_permissions(tmp_path):
    target = write_text_atomic(tmp_path / "out.txt", "hello\n")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask  # not mkstemp's owner-only 0o600
    os.chmod(target, 0o640)
    write_text_atomic(target, "again\n")  # replacing a file keeps its permissions
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_atomic_path_rejects_folder_and_file_parent_cleanly(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match="is a folder"):
        write_text_atomic(tmp_path, "x")
    with pytest.raises(ValueError, match=r"a_file is a file, not a folder"):
        write_text_atomic(blocker / "out.json", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]  # no temp file left behind


def test_atomic_path_leaves_nothing_on_error(tmp_path):
    with pytest.raises(RuntimeError):
        with atomic_path(tmp_path / "out.csv") as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []


def test_check_writable_creates_nothing(tmp_path):
    check_writable(tmp_path / "new" / "deeper" / "out.csv", "--out")
    check_writable_dir(tmp_path / "figs", "--out")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match=r"^--out .*f is a file; give a folder"):
        check_writable_dir(tmp_path / "f", "--out")


def test_parse_list_types_and_messages():
    assert parse_list("--n", "2, 4,8", int) == [2, 4, 8]
    for text in ("4,,16", "4,16,", ",4"):  # an empty element is a typo for a missing value
        with pytest.raises(ValueError, match="--n has an empty element"):
            parse_list("--n", text, int)
    assert parse_list("--n", "1e3,16.0", int) == [1000, 16]
    assert parse_list("--gamma", "0,0.5", float) == [0.0, 0.5]
    assert parse_list("--method", "grpo,dapo", str) == ["grpo", "dapo"]
    for text, kind, message in (("4.5", int, "list of integers"), ("inf", int, "list of integers"),
                                ("1,x", float, "list of numbers"), (" , ", int, "list at least one value")):
        with pytest.raises(ValueError, match=f"^--n must .*{message}"):
            parse_list("--n", text, kind)


def test_check_integer_reports_out_of_range_values_as_integers():
    with pytest.raises(ValueError, match=r"^--bootstrap must be in \[0, 1000000\], got 100000000000$"):
        check_integer("--bootstrap", 100_000_000_000, 0, 10**6)
