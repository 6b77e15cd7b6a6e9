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
        _run(["passk", folder / "r.jsonl", "--compare", folder / "s.jsonl", "--k", "1", "--test", "app-q", "--iterations", "40",
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
                "--samples", "1", "--max-new-tokens", "2", "--no-progress"]
        _run(args)
        metas.append((folder / "o.jsonl.meta.json").read_bytes())
        _run([*args, "--samples", "2"])  # resumes (a single-value option keeps the last): the recorded relative path matches
    assert metas[0] == metas[1]
    assert json.loads(metas[0])["data"] == "d.jsonl"
    assert len((tmp_path / "b" / "o.jsonl").read_text().splitlines()) == 2


def _maze_folder(folder, seconds: float) -> None:
    """A hand-made `maze run` results folder whose one RL piece took `seconds`."""
    probs = {"1": 0.1, "128": 0.5, "256": 0.6}
    piece = {"seed": 0, "N": 4, "gamma": 0.0, "seconds": seconds,
             "curve": [{"step": 0, "train_reward": 0.1, "heldout_pass_at_k": probs, "heldout_exact_pass_at_k": probs}],
             "heldout": {"pass_at_k": probs, "exact_pass_at_k": probs}}
    (folder / "seed0").mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"name": "tiny", "size": 5}))
    (folder / "seed0" / "sft.json").write_text(json.dumps(
        {"seed": 0, "parameters": 10, "seconds": seconds, "heldout": {"pass_at_k": probs, "exact_pass_at_k": probs}}))
    (folder / "seed0" / "rl_N4_gamma0.json").write_text(json.dumps(piece))


def test_maze_summary_holds_results_only_and_timings_apart(tmp_path):
    from fgrpo_sim.jsonl import dumps
    from fgrpo_sim.maze.experiment import summarize, timings

    _maze_folder(tmp_path / "a", 12.5)
    _maze_folder(tmp_path / "b", 99.0)
    assert dumps(summarize(tmp_path / "a")) == dumps(summarize(tmp_path / "b"))  # same results, other speed
    assert timings(tmp_path / "a") == {"cells": [{"N": 4, "gamma": 0.0, "seconds_mean": 12.5}]}
