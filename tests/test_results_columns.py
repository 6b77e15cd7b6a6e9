"""The columnar reader of eval files (`jsonl.read_json_columns`, `metrics.results_io`): the same counts as the
strict line reader, and every guarantee of the strict reader kept on the fast path (issue 37)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fgrpo_sim import jsonl
from fgrpo_sim.metrics import results_io
from fgrpo_sim.metrics.results_io import read_results_jsonl

pytest.importorskip("pyarrow")


def _eval_lines(problems=3, samples=4, text=""):
    """Lines as `fgrpo llm eval` writes them (with --save-completions when `text`)."""
    lines = []
    for p in range(problems):
        for s in range(samples):
            record = {"problem_id": f"math500/{p}", "sample_index": s, "correct": (p + s) % 3 == 0,
                      "status": "correct", "num_tokens": 100 + s, "finished": True}
            if text:
                record["completion"] = text
            lines.append(json.dumps(record, ensure_ascii=False))
    return lines


def _write(path, lines, end="\n"):
    path.write_bytes(("\n".join(lines) + end).encode() if isinstance(lines[0], str) else b"\n".join(lines) + b"\n")
    return path


def _strict(path):
    return results_io._read_lines(path)


def test_columns_give_the_strict_readers_counts(tmp_path):
    path = _write(tmp_path / "eval.jsonl", _eval_lines(text="so \\boxed{3} \u2028 \"q\""))
    fast, strict = results_io._read_columns(path), _strict(path)
    assert fast is not None  # the fast path read it
    assert fast.problem_ids == strict.problem_ids and fast.first_line == strict.first_line
    assert (fast.n == strict.n).all() and (fast.c == strict.c).all()
    assert (fast.sample_lines, fast.count_lines) == (strict.sample_lines, strict.count_lines)
    counts = _write(tmp_path / "counts.jsonl", [json.dumps({"problem_id": 7, "n": 8, "c": c}) for c in (3,)] +
                    [json.dumps({"problem_id": 9, "n": 4, "c": 4})])
    fast, strict = results_io._read_columns(counts), _strict(counts)
    assert fast.problem_ids == strict.problem_ids == ["7", "9"] and (fast.c == strict.c).all()


def test_a_clean_file_never_reaches_the_line_reader(tmp_path, monkeypatch):
    path = _write(tmp_path / "eval.jsonl", _eval_lines())
    monkeypatch.setattr(results_io, "_read_lines", lambda path: pytest.fail("read line by line"))
    assert read_results_jsonl(path).n.tolist() == [4, 4, 4]


#: (what is wrong, the file's lines, the error's text): each refused by the fast path itself (it returns None)
#: and then named by line by the strict reader.
BAD_FILES = [
    ("bad JSON on line 3", _eval_lines()[:2] + ['{"problem_id": "x", "correct": tru}'], "line 3: not valid JSON"),
    ("a duplicate key the reader does not use", _eval_lines()[:1] +
     ['{"problem_id": "math500/0", "sample_index": 1, "correct": true, "status": "a", "status": "b", '
      '"num_tokens": 1, "finished": true}'], "line 2: key 'status' appears twice"),
    ("a duplicate key it uses", _eval_lines()[:1] +
     ['{"problem_id": "math500/0", "sample_index": 1, "correct": true, "correct": false, "status": "a", '
      '"num_tokens": 1, "finished": true}'], "line 2: key 'correct' appears twice"),
    ("a lone surrogate in an unused field", _eval_lines(text="x")[:1] +
     [_eval_lines(text="x")[1].replace('"x"', '"\\udc00x"')], "line 2: the string .* lone surrogate"),
    ("an integer too long for Python in an unused field", _eval_lines()[:2] +
     [_eval_lines()[2].replace('"num_tokens": 102', '"num_tokens": ' + "9" * 5000)], "line 3: number out of range"),
    ("a null correct", _eval_lines()[:1] + [_eval_lines()[1].replace("false", "null").replace("true", "null")],
     "line 2: 'correct' must be true or false"),
    ("two objects on one line", _eval_lines()[:1] + [_eval_lines()[1] + " " + _eval_lines()[2]],
     "line 2: not valid JSON"),
    ("a sample given twice", _eval_lines()[:2] + [_eval_lines()[1]], "line 3: .*sample_index 1 already appeared on line 2"),
]


@pytest.mark.parametrize("what, lines, error", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_fast_path_refuses_and_the_error_names_the_line(tmp_path, what, lines, error):
    path = _write(tmp_path / "bad.jsonl", lines)
    assert results_io._read_columns(path) is None
    with pytest.raises(ValueError, match=error):
        read_results_jsonl(path)


def test_bytes_that_are_not_utf8_in_an_unused_field(tmp_path):
    lines = [line.encode() for line in _eval_lines(text="ok")]
    lines[1] = lines[1].replace(b'"ok"', b'"o\xffk"')
    path = _write(tmp_path / "bad.jsonl", lines)
    assert jsonl.read_json_columns(path, ["problem_id"]) is None
    with pytest.raises(ValueError, match="line 2: not UTF-8 text"):
        read_results_jsonl(path)


def test_blank_lines_and_a_key_missing_go_to_the_line_reader(tmp_path):
    blank = _write(tmp_path / "blank.jsonl", _eval_lines()[:2] + ["", "  "] + _eval_lines()[2:])
    assert results_io._read_columns(blank) is None
    assert read_results_jsonl(blank).first_line == _strict(blank).first_line == [1, 7, 11]
    records = [json.loads(line) for line in _eval_lines()]
    del records[5]["status"]  # a key the first line has is missing: still a valid file
    uneven = _write(tmp_path / "uneven.jsonl", [json.dumps(r) for r in records])
    assert read_results_jsonl(uneven).n.tolist() == [4, 4, 4]


def test_only_the_needed_columns_are_kept_whatever_the_text(tmp_path):
    """Memory that does not grow with fields pass@k does not read: the columns kept are the five it asks for,
    and their bytes are about the same (one more block's bitmaps) for a file with no text and one with 20 kB
    of text per line (4 MB in all)."""
    kept = {}
    for size in (0, 20_000):
        path = _write(tmp_path / f"text{size}.jsonl", _eval_lines(problems=5, samples=40, text="x" * size))
        columns = jsonl.read_json_columns(path, results_io._COLUMNS)
        assert set(columns) == set(results_io._COLUMNS) and "completion" not in columns
        kept[size] = sum(c.nbytes for c in columns.values() if c is not None)
    assert kept[0] <= kept[20_000] <= kept[0] + 64


def test_first_json_object_reads_the_first_line_only(tmp_path):
    path = _write(tmp_path / "eval.jsonl", ["", _eval_lines()[0], "not JSON at all"])
    assert jsonl.first_json_object(path)["problem_id"] == "math500/0"
    with pytest.raises(ValueError, match="line 1: expected a JSON object"):
        jsonl.first_json_object(_write(tmp_path / "list.jsonl", ["[1]"]))
    with pytest.raises(ValueError, match="not found"):
        jsonl.first_json_object(tmp_path / "missing.jsonl")


def test_plan_tells_an_eval_file_by_its_first_line(tmp_path, monkeypatch):
    """`fgrpo plan` parsed a whole eval file once to tell its kind, then again to count it."""
    from fgrpo_sim import planner

    path = _write(tmp_path / "eval.jsonl", _eval_lines())
    monkeypatch.setattr(jsonl, "read_text_file", lambda *a, **k: pytest.fail("read the whole file as text"))
    rates = planner.read_success_rates(path)
    assert np.allclose(rates, [2 / 4, 1 / 4, 1 / 4])


def test_an_integer_too_long_for_python_in_a_float_field(tmp_path):
    """pyarrow reads a 5000-digit integer in a float column as infinity; Python refuses to convert it."""
    lines = [json.dumps({**json.loads(line), "score": 0.5}) for line in _eval_lines()]
    lines[2] = lines[2].replace('"score": 0.5', '"score": ' + "9" * 5000)
    path = _write(tmp_path / "bad.jsonl", lines)
    assert jsonl.read_json_columns(path, ["problem_id"]) is None
    with pytest.raises(ValueError, match="line 3: number out of range"):
        read_results_jsonl(path)


_BASE = '{"problem_id": "p", "sample_index": 0, "correct": true, "num_tokens": 5, "x": 1.5}'
#: Second lines that bend JSON: pyarrow's reader and Python's must agree on each (none read only by pyarrow).
_ODD_LINES = [_BASE.replace(old, new).replace('"sample_index": 0', '"sample_index": 1') for old, new in [
    ('"x": 1.5', '"x": NaN'), ('"x": 1.5', '"x": Infinity'), ('"x": 1.5', '"x": 1e5'), ('"x": 1.5', '"x": .5'),
    ('"x": 1.5', '"x": 1.'), ('"x": 1.5', '"x": +1'), ('"x": 1.5', '"x": -'), ('1.5}', '1.5,}'), ('1.5}', '1.5} x'),
    ('1.5}', '1.5} // note'), ('"p"', '"p\\x"'), ("true", "TRUE"), ('"num_tokens": 5', '"num_tokens": 5.0'),
    ('"num_tokens": 5', '"num_tokens": 05'), ("{", "\x00{"), ("1.5}", "1.5}\x00"), ("1.5}", "1.5}\r"),
    ("{", "\ufeff{"), ('1.5}', '1.5, "problem_id": "q"}'), ('"', "'"),
]]


@pytest.mark.parametrize("line", _ODD_LINES)
def test_the_fast_path_accepts_nothing_the_strict_reader_refuses(tmp_path, line):
    path = tmp_path / "odd.jsonl"
    path.write_text(_BASE + "\n" + line + "\n", encoding="utf-8")
    try:
        jsonl.read_json_objects(path)
    except ValueError:
        assert jsonl.read_json_columns(path, ["problem_id", "sample_index", "correct"]) is None
