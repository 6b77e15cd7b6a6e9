"""Data preparation and benchmark loaders: schema, row-numbered errors, duplicates, length filter."""

from __future__ import annotations

import json

import pytest

from fgrpo_sim.llm.training.config import PAPER_SYSTEM_PROMPT
from fgrpo_sim.llm.evaluation.data import load_benchmark, read_records
from fgrpo_sim.llm.training.data import load_prepared, prepare_deepscaler, write_jsonl


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_prepare_deepscaler_dedups_drops_conflicts_and_long_prompts(tmp_path):
    from fgrpo_sim.llm.tiny import build_char_tokenizer

    rows = [
        {"problem": "What is 1+1?", "answer": "2", "solution": "..."},
        {"problem": "what is  1+1?", "answer": "2"},            # duplicate (case/space), same answer: merged
        {"problem": "Pick x.", "answer": "3"},
        {"problem": "Pick  x.", "answer": "4"},                 # conflicting duplicate: both dropped
        {"problem": "", "answer": "5"},                          # no problem: reported with its line number
        {"problem": "Long " * 400, "answer": "1"},              # > 1024 characters = tokens of the char tokenizer
        {"question": "Alt column?", "final_answer": ["$7$"]},   # other column names, list answer, $..$ stripped
    ]
    source = _jsonl(tmp_path / "deepscaler.jsonl", rows)
    kept, report = prepare_deepscaler(source, build_char_tokenizer(), max_prompt_tokens=1024)
    assert [r["problem"] for r in kept] == ["What is 1+1?", "Alt column?"]
    assert kept[1]["answer"] == "7"
    assert kept[0]["prompt"] == [{"role": "system", "content": PAPER_SYSTEM_PROMPT},
                                 {"role": "user", "content": "What is 1+1?"}]
    assert (report.rows_read, report.duplicates_merged, report.conflicting_dropped, report.too_long) == (7, 1, 2, 1)
    assert len(report.bad_rows) == 1 and "row 5 has no problem" in report.bad_rows[0]
    assert report.as_dict()["dropped"] == {"bad row: has no problem": 1, "conflicting answers": 2,
                                           "duplicate": 1, "prompt too long": 1}
    assert report.kept + sum(report.dropped.values()) == report.rows_read
    out = write_jsonl(kept, tmp_path / "prepared.jsonl")
    dataset = load_prepared(out)
    assert dataset.column_names == ["prompt", "answer", "problem_id"] and len(dataset) == 2


@pytest.mark.parametrize("name, row, expected_id", [
    ("math500", {"problem": "p", "answer": "\\frac12", "unique_id": "test/algebra/1.json"}, "test/algebra/1.json"),
    ("aime24", {"id": 60, "problem": "p", "answer": "204"}, "60"),
    ("amc23", {"question": "p", "answer": 27.0}, "amc23-1"),
    ("minerva", {"question": "p", "answer": "2.5e-3"}, "minerva-1"),
    ("olympiadbench", {"id": 1606, "question": "p", "final_answer": ["$\\sqrt{2}$"]}, "1606"),
])
def test_benchmark_layouts_map_to_one_schema(tmp_path, name, row, expected_id):
    path = _jsonl(tmp_path / f"{name}.jsonl", [row])
    (item,) = load_benchmark(name, path)
    assert set(item) == {"problem_id", "problem", "answer"} and item["problem_id"] == expected_id
    assert item["answer"] and "$" not in item["answer"]


def test_json_and_parquet_files_are_read(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"problem": "a", "answer": "1"}, {"problem": "b", "answer": "2"}]
    (tmp_path / "b.json").write_text(json.dumps({"data": rows}))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "b.parquet")
    assert [r for _, r in read_records(tmp_path / "b.json")] == rows
    assert [i["problem_id"] for i in load_benchmark("generic", tmp_path / "b.parquet")] == ["generic-1", "generic-2"]


def test_bad_rows_are_reported_with_line_numbers(tmp_path):
    path = tmp_path / "bench.jsonl"
    path.write_text('{"problem": "a", "answer": "1"}\n\n{"problem": "b"}\n')
    with pytest.raises(ValueError, match=r"row 3 has no answer"):
        load_benchmark("math500", path)
    path.write_text('{"problem": "a", "answer": "1"}\n{not json\n')
    with pytest.raises(ValueError, match=r"line 2: not valid JSON"):
        load_benchmark("math500", path)
    path.write_text('{"id": 1, "problem": "a", "answer": "1"}\n{"id": 1, "problem": "b", "answer": "2"}\n')
    with pytest.raises(ValueError, match="appears twice"):
        load_benchmark("aime24", path)
    with pytest.raises(ValueError, match="benchmark must be one of"):
        load_benchmark("gsm8k", path)


def test_equivalent_answers_of_duplicates_do_not_conflict(tmp_path):
    rows = [
        {"problem": "Half of one?", "answer": "\\frac{1}{2}"},
        {"problem": "half of one?", "answer": "1/2"},
        {"problem": "Half of  one?", "answer": "0.5"},      # three spellings of one number: one kept
        {"problem": "Third?", "answer": "\\frac{1}{3}"},
        {"problem": "third?", "answer": "0.3"},            # really different: both dropped
    ]
    kept, report = prepare_deepscaler(_jsonl(tmp_path / "d.jsonl", rows))
    assert [(r["problem"], r["answer"]) for r in kept] == [("Half of one?", "\\frac{1}{2}")]
    assert report.dropped == {"duplicate": 2, "conflicting answers": 2}


def test_json_file_holding_json_lines_or_a_list_is_read(tmp_path):
    rows = [{"problem": "p1", "answer": "1"}, {"problem": "p2", "answer": "2"}]
    lines = _jsonl(tmp_path / "lines.json", rows)   # JSON lines under a .json name
    array = tmp_path / "array.json"
    array.write_text(json.dumps(rows, indent=1))
    for path in (lines, array):
        kept, report = prepare_deepscaler(path)
        assert [r["answer"] for r in kept] == ["1", "2"] and report.kept == 2
    broken = tmp_path / "broken.json"
    broken.write_text('{"problem": "p1", "answer": "1"}\n{"problem": oops}\n')
    with pytest.raises(ValueError, match="line 2"):
        prepare_deepscaler(broken)


def test_run_system_prompt_wins_over_the_prepared_one(tmp_path):
    rows = [{"problem": "What is 2+2?", "answer": "4"}]
    kept, _ = prepare_deepscaler(_jsonl(tmp_path / "d.jsonl", rows))   # stored with the paper's prompt
    prepared = write_jsonl(kept, tmp_path / "prepared.jsonl")
    with pytest.warns(UserWarning, match="another system prompt"):
        custom = load_prepared(prepared, "Answer tersely.")
    assert custom[0]["prompt"] == [{"role": "system", "content": "Answer tersely."},
                                   {"role": "user", "content": "What is 2+2?"}]
    with pytest.warns(UserWarning):
        assert load_prepared(prepared, None)[0]["prompt"] == [{"role": "user", "content": "What is 2+2?"}]
    assert load_prepared(prepared)[0]["prompt"] == kept[0]["prompt"]   # same prompt: no rebuild surprise


def test_prepare_data_cli_reports_kept_and_dropped_per_reason_on_a_deepscaler_shaped_file(run_cli, tmp_path):
    rows = [  # DeepScaleR's columns: problem, answer, solution
        {"problem": "Compute 3/6.", "answer": "\\frac{1}{2}", "solution": "..."},
        {"problem": "compute 3/6.", "answer": "0.5", "solution": "..."},      # equivalent: a duplicate
        {"problem": "Name x.", "answer": "2", "solution": "..."},
        {"problem": "Name  x.", "answer": "3", "solution": "..."},            # conflicting: both dropped
        {"problem": "No answer here", "solution": "..."},                     # bad row
        {"problem": "Fine.", "answer": "7", "solution": "..."},
    ]
    source = _jsonl(tmp_path / "deepscaler.json", rows)                       # JSON lines under a .json name
    out = tmp_path / "prepared.jsonl"
    result = run_cli("llm", "prepare-data", source, "--out", out, "--system-prompt", "Be brief.", "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["rows_read"] == 6 and summary["kept"] == 2
    assert summary["dropped"] == {"bad row: has no answer": 1, "conflicting answers": 2, "duplicate": 1}
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["answer"] for r in kept] == ["\\frac{1}{2}", "7"]
    assert kept[0]["prompt"][0] == {"role": "system", "content": "Be brief."}
