"""prepare-data JSONL -> verl parquet that verl's own RLHFDataset reads; the math-verify reward for verl."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from extras import require

require("verl")

from fgrpo_sim.llm.training.config import PAPER_SYSTEM_PROMPT  # noqa: E402
from fgrpo_sim.verl import prepare_data  # noqa: E402
from fgrpo_sim.verl.reward import compute_score  # noqa: E402

ROWS = [
    {"problem_id": "a", "problem": "What is 1+1?", "answer": "2"},
    {"problem_id": "b", "problem": "Half of 3?", "answer": "\\frac{3}{2}",
     "prompt": [{"role": "system", "content": "custom"}, {"role": "user", "content": "Half of 3?"}]},
    {"problem_id": "c", "problem": "2*5?", "answer": "10"},
]


def test_prepare_writes_verls_columns_and_verl_reads_them(tmp_path):
    src = tmp_path / "deepscaler.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    result = prepare_data.prepare(src, tmp_path / "verl", val_rows=2)
    assert (result["train_rows"], result["val_rows"]) == (3, 2)
    train = pd.read_parquet(result["train"])
    assert list(train.columns) == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    first = train.iloc[0]
    assert [m["content"] for m in first["prompt"]] == [PAPER_SYSTEM_PROMPT, "What is 1+1?"]
    assert first["reward_model"]["ground_truth"] == "2"
    assert train.iloc[1]["prompt"][0]["content"] == "custom"  # prepare-data's own prompt is kept
    assert pd.read_parquet(result["val"]).iloc[0]["extra_info"]["split"] == "val"

    from fgrpo_sim.llm.tiny import build_char_tokenizer
    from fgrpo_sim.verl.main_ppo import compose_config
    from verl.utils.dataset.rl_dataset import RLHFDataset

    data_cfg = compose_config([f"data.train_files={result['train']}", "data.max_prompt_length=1024",
                               "data.dataloader_num_workers=0"]).data
    dataset = RLHFDataset(data_files=[result["train"]], tokenizer=build_char_tokenizer(), config=data_cfg)
    assert len(dataset) == 3
    item = dataset[2]
    assert item["reward_model"]["ground_truth"] == "10"


def test_prepare_cli_reports_bad_input_in_one_line(tmp_path, capsys):
    assert prepare_data.main([str(tmp_path / "missing.jsonl"), "--out-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1


@pytest.mark.parametrize(("text", "truth", "score"), [
    ("so the answer is \\boxed{\\frac{3}{2}}", "1.5", 1.0),
    ("the answer is \\boxed{7}", "10", 0.0),
    ("no box at all: 10", "10", 0.0),
])
def test_compute_score_uses_the_projects_verifier(text, truth, score):
    out = compute_score(data_source="deepscaler", solution_str=text, ground_truth=truth, extra_info={})
    assert out["score"] == score and out["acc"] == score
    assert compute_score("deepscaler", text, truth, {}, reward_correct=2.0, reward_wrong=-1.0)["score"] == (
        2.0 if score else -1.0)
