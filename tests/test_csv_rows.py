"""The one CSV reader (`fgrpo_sim.csv_rows`, issue 31): jsonl's guarantees for CSV inputs."""

from __future__ import annotations

import csv
from types import SimpleNamespace

import pytest

from fgrpo_sim.csv_rows import parse_csv_rows, read_csv_dicts


def test_rows_keep_their_line_numbers_across_blank_lines_and_quoted_newlines():
    header, rows = parse_csv_rows("f.csv", 'a,b\n\n1,"x\ny"\n2,z\n')
    assert header == ["a", "b"]
    assert rows == [(3, ["1", "x\ny"]), (5, ["2", "z"])]


@pytest.mark.parametrize("text, needle", [
    ("a,b\n1,2\n3\n", "f.csv line 3: 1 fields where the header has 2"),
    ("a,b\n1,2,3\n", "f.csv line 2: 3 fields where the header has 2"),
    ("a,a\n1,2\n", "f.csv line 1: column 'a' appears twice"),
    ("a\n" + "x" * (csv.field_size_limit() + 1) + "\n", "f.csv line 2: not readable as CSV (field larger than"),
])
def test_damaged_text_is_a_value_error_naming_file_and_line(text, needle):
    with pytest.raises(ValueError, match=needle.replace("(", r"\(")):
        parse_csv_rows("f.csv", text)


def test_complete_refuses_a_last_row_cut_short_and_nothing_else():
    assert parse_csv_rows("f.csv", "a,b\n1,2", complete=False)[1] == [(2, ["1", "2"])]  # hand-written files
    assert parse_csv_rows("f.csv", "a,b\r\n1,2\r\n", complete=True)[1] == [(2, ["1", "2"])]
    with pytest.raises(ValueError, match="f.csv line 2: the last row has no line end"):
        parse_csv_rows("f.csv", "a,b\n1,2", complete=True)


def test_dicts_drop_a_bom_and_strip_fields(tmp_path):
    (tmp_path / "m.csv").write_bytes("\ufeffa, b\n 1 ,2\n".encode())
    assert read_csv_dicts(tmp_path / "m.csv") == [(2, {"a": "1", "b": "2"})]


def test_cli_maps_a_csv_error_from_any_reader_to_one_line(monkeypatch, capsys):
    from fgrpo_sim import cli

    def broken(*args, **kwargs):
        raise csv.Error("field larger than field limit (131072)")

    monkeypatch.setattr(cli, "_command", lambda: SimpleNamespace(main=broken))
    monkeypatch.setattr(cli, "merge_repeated_options", lambda argv: argv)
    with pytest.raises(SystemExit) as exc:
        cli.main(["plan"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "fgrpo: error: cannot read a CSV input: field larger than field limit (131072)"]


def test_options_named_renames_only_a_leading_parameter_name():
    from fgrpo_sim.validation import check_range, options_named

    with pytest.raises(ValueError, match=r"^--rare-mass must be in \(0, 0.4\)"):
        with options_named(rare_masses="--rare-mass", rare="--wrong"):
            check_range("rare_masses", 0.5, 0.0, 0.4, low_open=True, high_open=True)
    with pytest.raises(ValueError, match="^other must be"):  # a name it does not know is left alone
        with options_named(rare_masses="--rare-mass"):
            raise ValueError("other must be 1")
