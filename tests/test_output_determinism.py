"""Identical runs in two folders write the same bytes (issue 31): outputs record input paths relative to
the output's folder, never as the absolute paths a user typed."""

from __future__ import annotations

import json

from fgrpo_sim.cli import main

ROWS = "".join(json.dumps({"problem_id": f"p{i}", "n": 4, "c": i % 5}) + "\n" for i in range(4))


def _run(args) -> None:
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        assert exc.code in (0, None)


def test_passk_json_and_out_are_the_same_in_two_folders(tmp_path, capsys):
    outputs = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "r.jsonl").write_text(ROWS)
        (folder / "s.jsonl").write_text(ROWS)
        capsys.readouterr()
        _run(["passk", folder / "r.jsonl", "--compare", folder / "s.jsonl", "--k", "1", "--iterations", "10",
              "--bootstrap", "10", "--json", "--out", folder / "p.json", "--no-progress"])
        outputs.append((capsys.readouterr().out, (folder / "p.json").read_bytes()))
    assert outputs[0] == outputs[1]
    report = json.loads(outputs[0][1])
    assert (report["results"]["file"], report["compare"]["other"]["file"]) == ("r.jsonl", "s.jsonl")


def test_eval_meta_file_is_the_same_in_two_folders_and_still_resumes(tmp_path, capsys):
    metas = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "d.jsonl").write_text(json.dumps({"problem": "1+1?", "answer": "2"}) + "\n")
        args = ["llm", "eval", "--model", "tiny", "--data", folder / "d.jsonl", "--out", folder / "o.jsonl",
                "--n", "1", "--max-new-tokens", "2", "--no-progress"]
        _run(args)
        metas.append((folder / "o.jsonl.meta.json").read_bytes())
        _run([*args, "--n", "2"])  # resumes (a single-value option keeps the last): the recorded relative path matches
    assert metas[0] == metas[1]
    assert json.loads(metas[0])["data"] == "d.jsonl"
    assert len((tmp_path / "b" / "o.jsonl").read_text().splitlines()) == 2
