"""`fgrpo llm rehearse` in parts (the whole of it runs as `make rehearsal`, its own CI step): tiny recipes shaped
like the paper's, the inputs it writes, the resume comparison, and the report-vs-eval-files check."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from fgrpo_sim.llm.training.recipe import load_recipe
from fgrpo_sim.rehearsal.driver import RECIPES, RUNS, RehearsalFailed, compare_resumed
from fgrpo_sim.rehearsal.checks import ReportMismatch, check_report

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("recipe", sorted(r[0] for r in RUNS.values()))
def test_tiny_recipes_have_the_keys_of_their_qwen_counterparts(recipe):
    tiny, qwen = load_recipe(RECIPES / recipe), load_recipe(ROOT / "recipes" / "qwen2.5-7b" / recipe)
    assert set(tiny) == set(qwen), f"only tiny: {set(tiny) - set(qwen)}, only Qwen2.5-7B: {set(qwen) - set(tiny)}"
    for key in ("method", "focal_gamma", "num_train_epochs", "save_strategy"):
        assert (tiny[key] == qwen[key]) or key == "num_train_epochs", key
    assert tiny["num_train_epochs"] >= 2 and tiny["save_strategy"] == "epoch"


def test_low_lr_control_scales_like_the_papers():
    from fgrpo_sim.theory import lr_multiplier

    base = load_recipe(RECIPES / "grpo.yaml")["learning_rate"]
    assert load_recipe(RECIPES / "grpo-low-lr.yaml")["learning_rate"] == pytest.approx(base * float(lr_multiplier(0.5)),
                                                                                      rel=2e-3)


def test_inputs_prepare_as_expected_and_grade_through_the_real_loaders(tmp_path):
    from fgrpo_sim.llm.training.config import PAPER_SYSTEM_PROMPT
    from fgrpo_sim.llm.training.data import prepare_deepscaler
    from fgrpo_sim.llm.evaluation.grading import grade
    from fgrpo_sim.llm.evaluation.ood_data import load_ood_benchmark
    from fgrpo_sim.rehearsal.inputs import MAX_PROMPT_TOKENS, PREPARE_EXPECTED, write_inputs
    from fgrpo_sim.llm.tiny import build_char_tokenizer

    paths = write_inputs(tmp_path)
    rows, report = prepare_deepscaler(paths["deepscaler"], build_char_tokenizer(), max_prompt_tokens=MAX_PROMPT_TOKENS,
                                      system_prompt=PAPER_SYSTEM_PROMPT)
    assert {k: report.as_dict()[k] for k in PREPARE_EXPECTED} == PREPARE_EXPECTED
    assert len(rows) == 16 and len(rows) % 4 == 0  # whole generation batches of batch_prompts = 4
    # the stand-in SynLogic checkout is imported and called as the real one: task2verifier.verifier_classes
    synlogic = load_ood_benchmark("synlogic", paths["synlogic"])
    repo = str(paths["synlogic_repo"])
    assert grade("synlogic", synlogic[0], "<answer>even</answer>", synlogic_repo=repo)
    assert not grade("synlogic", synlogic[0], "<answer>odd</answer>", synlogic_repo=repo)
    assert not grade("synlogic", synlogic[0], "even", synlogic_repo=repo)
    # a record in IFEval's public schema (key, prompt, instruction_id_list, null-padded kwargs) grades as loaded
    from fgrpo_sim.rehearsal.inputs import ifeval_rows

    public = ifeval_rows()[0]
    assert grade("ifeval", public, "hi there") and not grade("ifeval", public, "hi, there")
    ifeval = load_ood_benchmark("ifeval", paths["ifeval"])
    assert [r["problem_id"] for r in ifeval] == ["1001", "1002", "1003", "1004"]
    assert grade("ifeval", ifeval[0], "hi there") and not grade("ifeval", ifeval[0], "hi, there")
    gpqa = load_ood_benchmark("gpqa_diamond", paths["gpqa_diamond"])
    assert grade("gpqa_diamond", gpqa[0], f"Answer: {gpqa[0]['answer']}")


def _logs(folder: Path, name: str, lines: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.prompts.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def _model(folder: Path, value: float) -> Path:
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file({"w": torch.full((3,), value)}, str(folder / "model.safetensors"))
    return folder


def test_resume_comparison_fails_loudly_on_a_replayed_epoch_or_other_weights(tmp_path):
    logs = tmp_path / "logs"
    batches = [{"step": s, "problem_ids": [f"p{(s * 3 + i) % 16}" for i in range(4)]} for s in range(0, 16, 2)]
    _logs(logs, "ref", batches)
    _logs(logs, "run", batches[:5])  # killed during epoch 2 (a batch at step 8 was generated, then SIGKILL)
    _logs(logs, "run.resumed", batches[4:])
    ref, run = _model(tmp_path / "ref", 1.0), _model(tmp_path / "run", 1.0 + 1e-7)
    assert compare_resumed(run, ref, logs, first=8) == (8, pytest.approx(1e-7, rel=0.2))
    _logs(logs, "run.resumed", [{**b, "step": b["step"] + 8} for b in batches[:4]])  # epoch 1's order again
    with pytest.raises(RehearsalFailed, match="RESUME IS NOT THE SAME RUN: generation batch 4 differs"):
        compare_resumed(run, ref, logs, first=8)
    _logs(logs, "run.resumed", batches)  # restarted from step 0 instead of resuming
    with pytest.raises(RehearsalFailed, match="generation batch 4 differs: resumed step 0"):
        compare_resumed(run, ref, logs, first=8)
    _logs(logs, "run.resumed", [])
    with pytest.raises(RehearsalFailed, match="generated nothing"):
        compare_resumed(run, ref, logs, first=8)
    _logs(logs, "run.resumed", batches[4:])
    for folder, losses in ((ref, [0.5, 0.25]), (run, [0.5, 0.25])):
        (folder / "metrics.jsonl").write_text("".join(json.dumps({"step": i + 1, "loss": x}) + "\n"
                                                      for i, x in enumerate(losses)))
    assert compare_resumed(run, ref, logs, first=8)[0] == 8
    (run / "metrics.jsonl").write_text(json.dumps({"step": 1, "loss": 0.5}) + "\n" + json.dumps({"step": 2, "loss": 0.3}))
    with pytest.raises(RehearsalFailed, match="metrics.jsonl steps/losses"):
        compare_resumed(run, ref, logs, first=8)
    (run / "metrics.jsonl").unlink()
    (ref / "metrics.jsonl").unlink()
    _model(run, 1.01)
    with pytest.raises(RehearsalFailed, match="final parameters differ by up to 0.01"):
        compare_resumed(run, ref, logs, first=8)


def _eval_file(path: Path, correct: list[list[bool]]) -> str:
    path.write_text("".join(json.dumps({"problem_id": f"q{p}", "sample_index": i, "correct": ok, "status": "x"}) + "\n"
                            for p, samples in enumerate(correct) for i, ok in enumerate(samples)))
    return path.name


@pytest.fixture
def report_dir(tmp_path, run_cli):
    rows = []
    pattern = {"grpo": [2, 5, 0], "f-grpo": [4, 1, 8]}  # correct samples of 16 per problem, shifted per step
    for run, role in (("grpo", "baseline"), ("f-grpo", "focal")):
        for step in (8, 16):
            for bench in ("math500", "ifeval"):
                counts = [(c + step // 8 + (bench == "ifeval")) % 17 for c in pattern[run]]
                name = _eval_file(tmp_path / f"{run}-{step}-{bench}.jsonl", [[i < c for i in range(16)] for c in counts])
                rows.append({"comparison": "c", "role": role, "method": run.upper(), "run": run, "epoch": step // 8,
                             "step": step, "compute": step, "benchmark": bench, "file": name,
                             "dnll_rare": 0.1234 * step, "paper_row": f"table1:qwen2.5-7b:{run.upper()}"})
    manifest = tmp_path / "manifest.csv"
    with open(manifest, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    out = tmp_path / "report"
    result = run_cli("llm", "report", manifest, "--out-dir", out, "--k", "4",
                     "--no-progress", "--title", "pipeline test")
    assert result.exit_code == 0, result.stderr
    return out, manifest


def test_report_numbers_equal_the_eval_files(report_dir):
    out, manifest = report_dir
    # 4 checkpoints x (2 benchmarks + 2 averages) x (pass@1, pass@4); 2 selected x 2 curves x k = 1..16;
    # 2 table rows x (comparison, run, 2 benchmarks x 2 + 2 averages x 2 + dNLL); the focal row's 2 benchmarks x 2 marks
    assert check_report(out, manifest) == 4 * 8 + 2 * 2 * 5 + 2 * 11 + 2 * 2


@pytest.mark.parametrize("target", ["table.md", "selection.json"])
def test_report_check_catches_a_changed_number(report_dir, target):
    out, manifest = report_dir
    path = out / target
    text = path.read_text()
    if target == "table.md":
        line = next(x for x in text.splitlines() if x.startswith("| ") and x.split(" | ")[1] == "GRPO")
        cells = line.split(" | ")
        cells[5] = "99.9 / 99.9"  # the first benchmark's cell (after comparison, method, run, epoch, step)
        text = text.replace(line, " | ".join(cells))
    else:
        data = json.loads(text)
        data["all_checkpoints"][0]["per_benchmark"]["math500"]["pass1"] += 0.01
        text = json.dumps(data)
    path.write_text(text)
    with pytest.raises(ReportMismatch):
        check_report(out, manifest)


def test_report_check_catches_a_mark_of_another_test_or_comparison(report_dir):
    """Issue 37: each focal cell's stars must be its own comparison's test results, made by the default test."""
    out, manifest = report_dir
    path = out / "selection.json"
    original = path.read_text()
    data = json.loads(original)
    mark = data["significance"][0]
    mark["pass1"]["significant"] = not mark["pass1"]["significant"]
    path.write_text(json.dumps(data))
    with pytest.raises(ReportMismatch, match="its comparison's tests say"):
        check_report(out, manifest)
    data = json.loads(original)
    data["significance"][0]["test"] = "app-q"
    path.write_text(json.dumps(data))
    with pytest.raises(ReportMismatch, match="not the default conditional test"):
        check_report(out, manifest)


def test_rehearse_refuses_a_used_folder_in_one_line(run_cli, tmp_path):
    (tmp_path / "old.txt").write_text("x")
    result = run_cli("llm", "rehearse", "--out", tmp_path)
    assert result.exit_code == 2 and "exists and is not an empty folder" in result.stderr
    assert result.stderr.strip().count("\n") == 0
    bad_jobs = run_cli("llm", "rehearse", "--out", tmp_path / "new", "--jobs", "0")
    assert bad_jobs.exit_code == 2 and "--jobs" in bad_jobs.stderr and not (tmp_path / "new").exists()


def test_make_rehearsal_is_a_ci_step_the_readme_names():
    makefile = (ROOT / "Makefile").read_text()
    assert "\nrehearsal: $(STAMP) $(VERL_STAMP)\n" in makefile and "llm rehearse --out" in makefile
    assert "make rehearsal" in (ROOT / ".ci" / "run").read_text()
    assert "make rehearsal" in (ROOT / "README.md").read_text()
    assert (ROOT / "docs" / "llm.md").read_text().split("\n## ", 2)[1].lower().startswith("rehearse")


def test_the_driver_runs_commands_without_importing_the_cli(tmp_path):
    """The driver imports nothing of the command line (issue 32: cli -> commands -> rehearsal -> cli was a
    circle): alone it runs `python -m fgrpo_sim`, and `fgrpo llm rehearse` hands it the in-process entry point."""
    from fgrpo_sim.cli import main
    from fgrpo_sim.rehearsal.driver import Rehearsal, RehearsalFailed

    alone = Rehearsal(tmp_path)
    assert alone.run_cli.__name__ == "run_in_subprocess"
    peak = ("theory", "peak", "--mu", "0.3", "--rho", "0.01")
    assert alone._fgrpo(*peak).startswith("N* = 14 ")
    assert Rehearsal(tmp_path, run_cli=main)._fgrpo(*peak) == alone._fgrpo(*peak)
    with pytest.raises(RehearsalFailed, match="exited 2"):
        alone._fgrpo("theory", "peak", "--mu", "2")


def test_the_probe_runs_the_entry_point_it_is_handed(tmp_path, monkeypatch, capsys):
    """The probe (training runs the rehearsal kills and resumes) imports nothing of the command line either
    (issue 39): it installs its batch log, then runs the entry point it is handed, by default the package's
    own `__main__` (`python -m fgrpo_sim`) in its process, exit codes passed through."""
    from fgrpo_sim.rehearsal import probe

    log = str(tmp_path / "batches.jsonl")
    seen = []
    monkeypatch.setattr(probe, "install", lambda path: seen.append(("install", path)))
    probe.main([log, "theory", "peak"], run_cli=lambda argv: seen.append(("run", argv)))
    assert seen == [("install", log), ("run", ["theory", "peak"])]
    for args, code, printed in ((["--mu", "0.3", "--rho", "0.01"], 0, "N* = 14 "), (["--mu", "2"], 2, "fgrpo: error: ")):
        capsys.readouterr()
        with pytest.raises(SystemExit) as exc:  # fgrpo_sim.cli.main exits with the command's code
            probe.main([log, "theory", "peak", *args])
        assert (exc.value.code or 0) == code
        out = capsys.readouterr()
        assert (out.out if code == 0 else out.err).startswith(printed)
