"""IFEval in the public schema (google/IFEval: key, prompt, instruction_id_list, kwargs): grading, loading, NLTK
data only where needed, and `fgrpo llm eval --benchmark ifeval` end to end (tiny model, offline)."""

from __future__ import annotations

import json

import pytest
from extras import require

from fgrpo_sim.llm.evaluation.grading import grade, grade_detailed
from fgrpo_sim.llm.evaluation.ood_data import load_ood_benchmark

require("if_verifiable")

LONG = ("i really like to eat a banana every morning because it gives me energy for the whole day "
        "and it tastes good with some yogurt and honey.")

#: Every kwargs field of the hub copy of google/IFEval; a row lists all of them, None where unused.
HUB_KWARGS = ("num_highlights", "relation", "num_words", "num_placeholders", "prompt_to_repeat", "num_bullets",
              "section_spliter", "num_sections", "capital_relation", "capital_frequency", "keywords",
              "num_paragraphs", "language", "let_relation", "letter", "let_frequency", "end_phrase",
              "forbidden_words", "keyword", "frequency", "num_sentences", "postscript_marker", "first_word",
              "nth_paragraph")


def hub_row(key, prompt, ids, kwargs):
    """One row as google/IFEval stores it: key, prompt, instruction_id_list, kwargs (all fields, None unused)."""
    return {"key": key, "prompt": prompt, "instruction_id_list": ids,
            "kwargs": [{field: k.get(field) for field in HUB_KWARGS} for k in kwargs]}


PUBLIC_CASES = [  # (row, completion, prompt-level strict)
    (hub_row(1001, "Write about bananas in lowercase, at least 10 words, no commas.",
             ["change_case:english_lowercase", "length_constraints:number_words", "punctuation:no_comma"],
             [{}, {"relation": "at least", "num_words": 10}, {}]), LONG, True),
    (hub_row(1001, "Write about bananas in lowercase, at least 10 words, no commas.",
             ["change_case:english_lowercase", "length_constraints:number_words", "punctuation:no_comma"],
             [{}, {"relation": "at least", "num_words": 10}, {}]), "yes, " + LONG, False),  # a comma
    (hub_row(1002, "Mention banana and honey.", ["keywords:existence"], [{"keywords": ["banana", "honey"]}]),
     LONG, True),
    (hub_row(1003, "Repeat the request first.", ["combination:repeat_prompt"],
             [{"prompt_to_repeat": "Say hi."}]), "Say hi. Hi!", True),
    # a pandas export writes integers as floats (2.0): the paragraph index still works
    ({**hub_row(1004, "Two paragraphs, the second starts with 'then'.", ["length_constraints:nth_paragraph_first_word"],
                [{}]), "kwargs": [{"num_paragraphs": 2.0, "nth_paragraph": 2.0, "first_word": "then"}]},
     "first part\n\nthen the second part", True),
]


@pytest.mark.parametrize("row, completion, expected", PUBLIC_CASES)
def test_ifeval_grades_records_in_the_public_schema(row, completion, expected):
    assert grade("ifeval", row, completion) is expected
    assert grade_detailed("ifeval", row, completion).status == ("correct" if expected else "wrong")


@pytest.mark.parametrize("field", ["prompt", "instruction_id_list", "kwargs"])
def test_ifeval_record_missing_a_field_is_one_line_naming_it(field):
    row = hub_row(7, "p", ["punctuation:no_comma"], [{}])
    del row[field]
    with pytest.raises(ValueError) as info:
        grade("ifeval", row, "no commas")
    assert f"'{field}'" in str(info.value) and "\n" not in str(info.value)
    mismatch = hub_row(7, "p", ["punctuation:no_comma"] * 2, [{}])
    with pytest.raises(ValueError, match="'kwargs' must be a list of 2 dicts"):
        grade("ifeval", mismatch, "no commas")


def test_ifeval_catches_only_nltk_missing_data(monkeypatch):
    """A LookupError from NLTK (data missing) is status error; a KeyError (also a LookupError) is a bug: raised."""
    import if_verifiable.common

    row = hub_row(8, "p", ["punctuation:no_comma"], [{}])

    def raises(error):
        def evaluate(**kwargs):
            raise error
        return evaluate

    monkeypatch.setattr(if_verifiable.common, "evaluate_instructions", raises(LookupError("Resource punkt_tab not found")))
    assert grade_detailed("ifeval", row, "x").status == "error"
    for bug in (KeyError("problem"), IndexError("list index out of range")):
        monkeypatch.setattr(if_verifiable.common, "evaluate_instructions", raises(bug))
        with pytest.raises(type(bug)):
            grade("ifeval", row, "x")


def test_ifeval_loader_reads_the_public_schema(tmp_path):
    rows = [row for row, _, _ in PUBLIC_CASES[2:4]]
    path = tmp_path / "ifeval_input_data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = load_ood_benchmark("IFEval", path)
    assert [r["problem_id"] for r in loaded] == ["1002", "1003"]
    assert loaded[0]["kwargs"] == [{"keywords": ["banana", "honey"]}]  # the None fields are dropped
    assert grade("ifeval", loaded[0], LONG) and grade("ifeval", loaded[1], "Say hi. Hi!")
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "train.parquet")  # the hub's file format
    assert load_ood_benchmark("ifeval", tmp_path / "train.parquet") == loaded
    path.write_text(json.dumps({k: v for k, v in rows[0].items() if k != "kwargs"}) + "\n")
    with pytest.raises(ValueError, match="row 1: ifeval record has no field 'kwargs'"):
        load_ood_benchmark("ifeval", path)


def test_nltk_instructions_are_exactly_the_checks_that_need_nltk_data(monkeypatch):
    """Run every registered IFEval check with NLTK's data made unavailable: the ones that fail are the list."""
    import nltk
    from if_verifiable.ifeval import instructions_util

    from fgrpo_sim.llm.evaluation.grading import NLTK_INSTRUCTIONS, ifeval_registry

    def missing(*args, **kwargs):
        raise LookupError("Resource not found (test)")

    monkeypatch.setattr(nltk.data, "find", missing)
    monkeypatch.setattr(nltk.data, "load", missing)
    caches = [instructions_util._get_sentence_tokenizer, nltk.tokenize._get_punkt_tokenizer]
    for cache in caches:  # a tokenizer loaded earlier in this process would hide the need
        cache.cache_clear()
    needs = set()
    text = "Hello World. This is A TEST of the checker! Is it fine? *yes* P.S. done\n\n***\n\nSECTION 1 more."
    for instruction, checker_class in ifeval_registry().items():
        checker = checker_class(instruction)
        checker.build_description(**({"prompt_to_repeat": "Hello"} if instruction == "combination:repeat_prompt" else {}))
        try:
            checker.check_following(text)
        except LookupError:
            needs.add(instruction)
    for cache in caches:
        cache.cache_clear()
    assert needs == set(NLTK_INSTRUCTIONS)


def test_ifeval_needs_punkt_only_for_files_that_count_sentences(monkeypatch):
    import nltk

    from fgrpo_sim.llm.evaluation.grading import BenchmarkGrader

    def missing(*args, **kwargs):
        raise LookupError("no punkt_tab")

    monkeypatch.setattr(nltk.data, "find", missing)
    offline = [hub_row(1, "p", ["punctuation:no_comma"], [{}]),
               hub_row(2, "p", ["keywords:existence"], [{"keywords": ["a"]}])]
    BenchmarkGrader("ifeval", problems=offline)  # no NLTK data needed: starts
    for instruction in ("length_constraints:number_sentences", "change_case:capital_word_frequency"):
        with pytest.raises(ValueError) as info:
            BenchmarkGrader("IFEval", problems=offline + [hub_row(3, "p", [instruction], [{}])])
        assert "python -m nltk.downloader punkt_tab" in str(info.value) and "\n" not in str(info.value)


ROWS = [  # google/IFEval rows: every kwargs field present, None where the instruction does not use it
    hub_row(1000, "Write a haiku about rain in lowercase.", ["change_case:english_lowercase"], [{}]),
    hub_row(1001, "Describe a cat without commas, in at least 3 words.",
            ["punctuation:no_comma", "length_constraints:number_words"], [{}, {"relation": "at least", "num_words": 3}]),
]
SENTENCES = hub_row(1002, "Answer in exactly 2 sentences.", ["length_constraints:number_sentences"],
                    [{"relation": "at least", "num_sentences": 2}])


@pytest.fixture
def no_nltk_data(monkeypatch):
    """As on a fresh offline machine: NLTK finds none of its data."""
    import nltk

    def missing(*args, **kwargs):
        raise LookupError("Resource punkt_tab not found (test)")

    monkeypatch.setattr(nltk.data, "find", missing)
    monkeypatch.setattr(nltk.data, "load", missing)


def test_ifeval_public_schema_file_evaluates_offline_without_nltk_data(run_cli, tmp_path, no_nltk_data):
    require("trl")
    from fgrpo_sim.llm.tiny import build_tiny, save_tiny

    model_dir = save_tiny(*build_tiny(seed=0), tmp_path / "model")
    data = tmp_path / "ifeval_input_data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    out = tmp_path / "ifeval.jsonl"
    result = run_cli("llm", "eval", "--model", model_dir, "--data", data, "--benchmark", "IFEval", "--out", out,
                     "--samples", "2", "--max-new-tokens", "4", "--batch-size", "8", "--no-progress", "--json")
    assert result.exit_code == 0, result.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((r["problem_id"], r["sample_index"]) for r in records) == [("1000", 0), ("1000", 1),
                                                                             ("1001", 0), ("1001", 1)]
    assert all(r["status"] in ("correct", "wrong", "no_answer") for r in records)  # graded, never "error"
    assert json.loads(out.with_name(out.name + ".meta.json").read_text())["benchmark"] == "ifeval"

    data.write_text("".join(json.dumps(r) + "\n" for r in [*ROWS, SENTENCES]))
    refused = run_cli("llm", "eval", "--model", model_dir, "--data", data, "--benchmark", "ifeval",
                      "--out", tmp_path / "with_sentences.jsonl", "--samples", "1", "--no-progress")
    assert refused.exit_code == 2
    assert refused.stderr.strip().count("\n") == 0 and "python -m nltk.downloader punkt_tab" in refused.stderr
    assert not (tmp_path / "with_sentences.jsonl").exists()


def test_ood_loader_ends_like_the_math_loader(tmp_path):
    """One tail for every loader (data.finish_benchmark): duplicate ids name both rows, --limit keeps the first."""
    row = PUBLIC_CASES[2][0]
    path = tmp_path / "ifeval.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (row, PUBLIC_CASES[3][0], row)))
    with pytest.raises(ValueError, match=r"problem_id '1002' appears twice \(rows 1 and 3\)"):
        load_ood_benchmark("ifeval", path)
    path.write_text("".join(json.dumps(r) + "\n" for r in (row, PUBLIC_CASES[3][0])))
    assert [r["problem_id"] for r in load_ood_benchmark("ifeval", path, limit=1)] == ["1002"]
