"""Maze: perfect mazes, unique routes, tokenizer round trip, reward, evaluation, and the experiment end to end."""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path

import numpy as np
import pytest

from fgrpo_sim.maze.generator import (MOVES, OPEN, follow_route, generate_mazes, random_maze, shortest_route,
                                      split_mazes)
from fgrpo_sim.maze.reward import exact_match_reward, make_trl_reward, route_progress
from fgrpo_sim.maze.tokenizer import (STOP, VOCAB, build_tokenizer, load_tokenizer, parse_completion,
                                      prompt_length, prompt_text, target_text)


def _cell_graph(maze):
    cells = maze.cells_per_side
    edges = set()
    for r in range(cells):
        for c in range(cells):
            for dr, dc in ((0, 1), (1, 0)):
                if r + dr < cells and c + dc < cells and maze.grid[2 * r + 1 + dr, 2 * c + 1 + dc] == OPEN:
                    edges.add(((r, c), (r + dr, c + dc)))
    return cells, edges


def _count_simple_paths(maze, start, goal):
    cells, edges = _cell_graph(maze)
    adj = {}
    for a, b in edges:
        adj.setdefault(a, []).append(b)
        adj.setdefault(b, []).append(a)
    count, stack = 0, [(start, {start})]
    while stack:
        node, seen = stack.pop()
        if node == goal:
            count += 1
            continue
        for nxt in adj.get(node, []):
            if nxt not in seen:
                stack.append((nxt, seen | {nxt}))
    return count


@pytest.mark.parametrize("size", [5, 7, 9, 17])
def test_mazes_are_perfect_and_route_is_valid_and_unique(size):
    rng = np.random.default_rng(size)
    for _ in range(20):
        maze = random_maze(size, rng)
        cells, edges = _cell_graph(maze)
        assert len(edges) == cells * cells - 1  # a tree on cells^2 nodes has cells^2 - 1 edges ...
        seen, queue = {(0, 0)}, deque([(0, 0)])  # ... and is connected
        adj = {}
        for a, b in edges:
            adj.setdefault(a, []).append(b)
            adj.setdefault(b, []).append(a)
        while queue:
            for nxt in adj.get(queue.popleft(), []):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        assert len(seen) == cells * cells
        assert np.all(maze.grid[0] == 0) and np.all(maze.grid[:, -1] == 0)  # closed border
        reached, taken = follow_route(maze.grid, maze.start, maze.route)
        assert reached == maze.goal and taken == len(maze.route) and maze.start != maze.goal
        if size <= 9:
            assert _count_simple_paths(maze, maze.start, maze.goal) == 1


def test_walls_block_routes_and_bfs_agrees():
    maze = random_maze(9, np.random.default_rng(3))
    assert shortest_route(maze.grid, maze.start, maze.goal) == maze.route
    wrong_first = next(m for m in MOVES if m != maze.route[0])
    cell, taken = follow_route(maze.grid, maze.start, (wrong_first, *maze.route))
    assert cell != maze.goal or taken < len(maze.route) + 1


def test_generation_is_seeded_and_heldout_never_overlaps_training():
    a = generate_mazes(30, 7, seed=5)
    b = generate_mazes(30, 7, seed=5)
    assert [m.key() for m in a] == [m.key() for m in b]
    assert [m.key() for m in generate_mazes(30, 7, seed=6)] != [m.key() for m in a]
    train, held = split_mazes(7, 3000, 200, train_seed=0, heldout_seed=1)  # 7x7 has few tasks: collisions happen
    assert len(train) == 3000 and len(held) == 200
    assert not ({m.key() for m in train} & {m.key() for m in held})
    assert len({m.key() for m in train}) == 3000


def test_bad_sizes_are_rejected():
    for size in (4, 8, 3, 103):
        with pytest.raises(ValueError, match="size must be"):
            generate_mazes(1, size, seed=0)


def test_tokenizer_round_trip_and_layout(tmp_path):
    tok = build_tokenizer()
    assert tok.eos_token == STOP and tok.pad_token_id == VOCAB.index("<pad>")
    for maze in generate_mazes(10, 9, seed=2):
        p, t = prompt_text(maze), target_text(maze)
        ids = tok(p)["input_ids"]
        assert len(ids) == prompt_length(9) and tok.unk_token_id not in ids
        assert tok.decode(ids) == p
        assert tok.decode(tok(t)["input_ids"]) == t
        assert tok(t)["input_ids"][-1] == tok.eos_token_id
        assert p.split().count("S") == 1 and p.split().count("G") == 1
        assert parse_completion(t) == (maze.route, True)
    tok.save_pretrained(tmp_path / "tok")
    again = load_tokenizer(tmp_path / "tok")
    assert again("S . # <sep> U <stop>")["input_ids"] == tok("S . # <sep> U <stop>")["input_ids"]
    assert parse_completion("U D") == (("U", "D"), False)  # never stopped
    assert parse_completion("U # <stop>") == (("U",), False)  # grid token in the answer


def test_reward_on_right_wrong_and_malformed_outputs():
    tok = build_tokenizer()
    maze = generate_mazes(1, 9, seed=4)[0]
    target = tok(target_text(maze))["input_ids"]
    moves, stop = target[:-1], tok.eos_token_id
    other = next(tok.convert_tokens_to_ids(m) for m in MOVES if tok.convert_tokens_to_ids(m) != moves[0])
    assert exact_match_reward(target, target) == 1.0
    assert exact_match_reward([other, *moves[1:], stop], target) == 0.0  # wrong move
    assert exact_match_reward(moves, target) == 0.0  # no stop token (truncated)
    assert exact_match_reward([*moves, moves[-1], stop], target) == 0.0  # overshoots
    assert exact_match_reward([tok.convert_tokens_to_ids("#"), stop], target) == 0.0  # malformed
    assert exact_match_reward([], target) == 0.0
    assert route_progress(target, target) == 1.0
    assert route_progress([other, *moves[1:], stop], target) == 0.0
    if len(moves) >= 2:
        assert 0 < route_progress([moves[0], other, stop], target) < 1 or moves[1] == other
    reward = make_trl_reward(tok)
    got = reward(prompts=["p"] * 3, completions=["", "", ""], completion_ids=[target, moves, [stop]],
                 target=[target_text(maze)] * 3)
    assert got == [1.0, 0.0, 0.0]


def test_sampled_counts_match_real_generation_and_exact_pass_at_k():
    """Binomial counts from teacher-forced probabilities agree with really sampling via model.generate."""
    from fgrpo_sim.maze.evaluate import (exact_pass_at_k, generated_correct_counts, pass_at_k_from_counts,
                                         sampled_correct_counts, target_log_probs)
    from fgrpo_sim.maze.model import ModelSpec, build_model

    tok = build_tokenizer()
    model = build_model(ModelSpec(hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32), tok, seed=0)
    with __import__("torch").no_grad():  # make one move likely, so that some targets have sizeable probability
        model.lm_head.weight.mul_(0)
        model.model.norm.weight.fill_(1)
    mazes = [m for m in generate_mazes(40, 5, seed=0) if len(m.route) == 1][:3]
    log_p = target_log_probs(model, tok, mazes)
    n = 300
    real = generated_correct_counts(model, tok, mazes, n, seed=1)
    p = np.exp(log_p)
    assert np.all(np.abs(real - n * p) <= 5 * np.sqrt(n * p * (1 - p)) + 1)
    fake = sampled_correct_counts(log_p, n, seed=1)
    assert fake.shape == real.shape and np.all((fake >= 0) & (fake <= n))
    exact = exact_pass_at_k(log_p, [1, 4])
    assert exact[1] == pytest.approx(p.mean())
    assert exact[4] == pytest.approx(np.mean(1 - (1 - p) ** 4))
    est = pass_at_k_from_counts(n, real, [1])
    assert est[1] == pytest.approx(real.mean() / n)


def test_tiny_experiment_runs_sft_and_rl_through_focal_trainer_and_resumes(tmp_path, monkeypatch, run_cli, capsys):
    """A few SFT and RL steps (FocalGRPOTrainer, gamma 0 and 1) on the tiny preset, then resume and figures."""
    import fgrpo_sim.llm.training.trainer as trainer_mod
    from fgrpo_sim.figures.maze import draw_fig6, draw_fig7, format_table
    from fgrpo_sim.maze.experiment import run_experiment, run_file
    from fgrpo_sim.maze.presets import get_preset

    calls = []
    original = trainer_mod.FocalGRPOTrainer._generate_and_score_completions

    def spy(self, inputs):
        calls.append(self.args.focal_gamma)
        return original(self, inputs)

    monkeypatch.setattr(trainer_mod.FocalGRPOTrainer, "_generate_and_score_completions", spy)
    preset = get_preset("tiny")
    out = tmp_path / "maze"
    summary = run_experiment(preset, out, progress=False, log=lambda m: None)
    assert sorted(set(calls)) == [0.0, 1.0] and len(calls) == 2 * preset.rl_steps
    for gamma in preset.gammas:
        run = json.loads(run_file(out, 0, 4, gamma).read_text())
        assert [p["step"] for p in run["curve"] if "heldout_pass_at_k" in p] == [0, 1, 2]
        assert all("train_reward" in p for p in run["curve"] if p["step"] > 0)
        assert 0.0 <= run["heldout"]["pass_at_k"]["256"] <= 1.0
        assert len(run["heldout"]["correct_counts"]) == preset.n_heldout
    assert {(c["N"], c["gamma"]) for c in summary["cells"]} == {(4, 0.0), (4, 1.0)}
    assert "| 4 |" in format_table(summary)
    sft = json.loads((out / "seed0" / "sft.json").read_text())
    assert len(sft["loss"]) == preset.sft_steps and sft["parameters"] > 0

    stamp = run_file(out, 0, 4, 0.0).stat().st_mtime_ns
    calls.clear()
    run_experiment(preset, out, progress=False, log=lambda m: None)  # everything done: nothing reruns
    assert calls == [] and run_file(out, 0, 4, 0.0).stat().st_mtime_ns == stamp
    with pytest.raises(ValueError, match="different settings"):
        run_experiment(get_preset("cpu"), out, progress=False, log=lambda m: None)

    # A learning-rate control reuses the SFT checkpoint of `out` instead of retraining it.
    from dataclasses import replace

    control = replace(preset, rl_lr=preset.rl_lr / 2, gammas=(0.0,))
    calls.clear()
    capsys.readouterr()
    run_experiment(control, tmp_path / "control", progress=False, log=lambda m: None, sft_from=out)
    assert calls == [0.0] * preset.rl_steps
    # progress=False also silences transformers' bars (loading the copied checkpoint), then restores them
    from transformers.utils import logging as hf_logging

    assert "Loading weights" not in capsys.readouterr().err and hf_logging.is_progress_bar_enabled()
    assert (tmp_path / "control" / "seed0" / "sft.json").read_text() == (out / "seed0" / "sft.json").read_text()
    res = run_cli("maze", "compare", out, tmp_path / "control", "--n", "4", "--gamma-a", "1")
    assert res.exit_code == 0 and "| pass@128 |" in res.stdout, res.stderr
    res = run_cli("maze", "compare", out, tmp_path / "control", "--n", "8", "--gamma-a", "1")
    assert res.exit_code == 2 and "no seed has both runs" in res.stderr
    with pytest.raises(ValueError, match="different SFT settings"):  # refused before any training
        run_experiment(replace(preset, sft_steps=preset.sft_steps + 1), tmp_path / "other", progress=False,
                       log=lambda m: None, sft_from=out)
    assert not (tmp_path / "other").exists()

    fig6, fig7 = draw_fig6(summary), draw_fig7(summary)
    assert "-log pass@K" in fig6.axes[0].get_ylabel()
    assert [ax.get_xlabel() for ax in fig7.axes] == ["RL step"] * 3


def test_cli_show_and_errors(run_cli):
    res = run_cli("maze", "show", "--size", "7", "--seed", "3", "--tokens")
    assert res.exit_code == 0, res.stderr
    assert "route:" in res.stdout and "<sep>" in res.stdout and "S" in res.stdout
    bad = run_cli("maze", "show", "--size", "8")
    assert bad.exit_code == 2 and bad.stderr.count("\n") == 1 and "size must be" in bad.stderr
    bad = run_cli("maze", "run", "--preset", "nope")
    assert bad.exit_code == 2 and "preset must be one of" in bad.stderr
    bad = run_cli("maze", "run", "--preset", "tiny", "--n", "4,x")
    assert bad.exit_code == 2 and "n must be" in bad.stderr
    bad = run_cli("maze", "run", "--preset", "tiny", "--n", "4.5")
    assert bad.exit_code == 2 and "n must be a comma-separated list of integers" in bad.stderr


def test_cli_run_checks_its_inputs_before_training(run_cli, tmp_path, monkeypatch):
    """Bad --device / --sft-from / --summary-copy / --out: one line, exit 2, and nothing trained or written."""
    import torch

    import fgrpo_sim.maze.experiment as experiment

    def no_training(*args, **kwargs):
        raise AssertionError("training started before the inputs were checked")

    monkeypatch.setattr(experiment, "_run_seeds", no_training)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the same on a GPU machine
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    out = tmp_path / "out"
    cases = [(["--device", "cuda"], "device must be auto or cpu"),
             (["--device", "tpu"], "device must be one of"),
             (["--sft-from", tmp_path / "missing"], "--sft-from must be a results folder"),
             (["--sft-from", tmp_path], "no config.json"),
             (["--summary-copy", a_file / "summary.json"], "--summary-copy"),
             (["--summary-copy", tmp_path], "--summary-copy"),
             (["--out", a_file], "--out")]
    for extra, message in cases:
        args = ["maze", "run", "--preset", "tiny", "--no-progress", "--out", out, *extra]
        res = run_cli(*args)
        assert res.exit_code == 2 and res.stderr.count("\n") == 1 and message in res.stderr, (extra, res.stderr)
        assert "Traceback" not in res.stderr and not out.exists()


def test_cli_compare_names_a_missing_folder_and_help_is_clean(run_cli, tmp_path):
    for args, message in [((tmp_path / "missing", tmp_path), "a must be a results folder"),
                          ((tmp_path, tmp_path / "missing"), "b must be a results folder")]:
        res = run_cli("maze", "compare", *args, "--gamma-a", "1")
        assert res.exit_code == 2 and message in res.stderr and "does not exist" in res.stderr, res.stderr
    res = run_cli("maze", "--help")
    commands = res.stdout.split("Commands:")[1].strip().splitlines()
    assert res.exit_code == 0 and [line.split()[0] for line in commands] == ["show", "run", "table", "compare"]
    assert not any(line.rstrip().endswith("...") for line in commands), commands


def test_table_prints_the_committed_summary_json(run_cli):
    import json

    from fgrpo_sim.figures.maze import COMMITTED, format_table

    result = run_cli("maze", "table", str(COMMITTED))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == format_table(json.loads(COMMITTED.read_text())).strip()
    assert "| 16 |" in result.stdout
    bad = run_cli("maze", "table", str(Path(__file__).resolve().parents[1] / "docs" / "maze.md"))
    assert bad.exit_code == 2 and "not readable JSON" in bad.stderr


def test_long_presets_say_the_time_and_need_yes(run_cli, tmp_path, monkeypatch):
    from fgrpo_sim.maze import experiment

    monkeypatch.setattr(experiment, "run_experiment", lambda *a, **k: pytest.fail("started without --yes"))
    for preset in ("cpu", "paper"):
        result = run_cli("maze", "run", "--preset", preset, "--device", "cpu", "--out", tmp_path / preset)
        assert result.exit_code == 2, result.stderr
        assert "expected" in result.stderr and "add --yes to start it" in result.stderr
    from fgrpo_sim.recorded_times import RECORDED_TIMES

    assert RECORDED_TIMES["maze-cpu"] in run_cli("maze", "run", "--preset", "cpu", "--out", tmp_path / "c").stderr
    def started(*args, **kwargs):
        raise ValueError("stub: training started")

    monkeypatch.setattr(experiment, "run_experiment", started)
    result = run_cli("maze", "run", "--preset", "cpu", "--yes", "--device", "cpu", "--out", tmp_path / "yes")
    assert "stub: training started" in result.stderr and "expected" not in result.stderr


def test_seed_interval_is_scipys_t_interval_with_its_nominal_coverage():
    """The Maze summary's interval over seeds is scipy's one-sample t interval (issue 39: no hand-written
    formula); measured, not assumed: 95% intervals from 4 normal seeds cover the true mean about 95% of the
    time (4000 seeded draws: within 3 binomial standard errors), and equal seeds give a zero-width interval."""
    import warnings

    from fgrpo_sim.maze.experiment import _t_interval

    rng = np.random.default_rng(0)
    draws = rng.normal(0.3, 0.1, size=(4000, 4))
    covered = np.mean([(c := _t_interval(row))["lo"] <= 0.3 <= c["hi"] for row in draws])
    assert abs(covered - 0.95) < 3 * np.sqrt(0.95 * 0.05 / len(draws))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy's precision-loss warning on equal values must not surface
        assert _t_interval([0.5, 0.5, 0.5]) == {"mean": 0.5, "lo": 0.5, "hi": 0.5, "n": 3, "values": [0.5] * 3}
    assert _t_interval([0.2])["lo"] is None
