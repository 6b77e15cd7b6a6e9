"""`fgrpo llm prepare-data` output (JSONL: problem_id, problem, answer, prompt) -> verl's parquet files.

    python -m fgrpo_sim.verl.prepare_data data/deepscaler.jsonl --out-dir data/verl

writes data/verl/train.parquet (every row) and data/verl/val.parquet (the first --val-rows rows; verl
builds a validation set even when validation is off, which the recipes do: the paper evaluates the
saved checkpoints separately, see docs/evaluation.md). Each row has verl's RL dataset columns:
`data_source`, `prompt` (chat messages: the paper's system prompt, then the problem), `ability`,
`reward_model` = {"style": "rule", "ground_truth": answer} (what fgrpo_sim.verl.reward grades against)
and `extra_info` = {"index", "problem_id", "split"}.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

DATA_SOURCE = "deepscaler"


def verl_rows(path: str | Path, system_prompt: str | None = None, split: str = "train") -> list[dict[str, Any]]:
    """verl RL-dataset rows from a prepared JSONL (or any file with problem/answer columns)."""
    from fgrpo_sim.llm.training.config import PAPER_SYSTEM_PROMPT
    from fgrpo_sim.llm.evaluation.data import normalise_record, read_records
    from fgrpo_sim.llm.training.data import build_prompt

    system_prompt = PAPER_SYSTEM_PROMPT if system_prompt is None else system_prompt
    rows = []
    for row, record in read_records(path):
        item = normalise_record(record, row, str(path), f"row-{row}")
        prompt = record.get("prompt") if isinstance(record.get("prompt"), list) else build_prompt(item["problem"], system_prompt)
        rows.append({
            "data_source": DATA_SOURCE,
            "prompt": [{"role": str(m["role"]), "content": str(m["content"])} for m in prompt],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": item["answer"]},
            "extra_info": {"index": len(rows), "problem_id": item["problem_id"], "split": split},
        })
    if not rows:
        raise ValueError(f"{path}: no rows")
    return rows


def write_parquet(rows: list[dict[str, Any]], path: str | Path, folder=None) -> Path:
    """Write rows as one parquet file, atomically: through `folder` (an ownership.OutputFolder, which replaces
    only its own files) when given, else never over an existing file."""
    import pandas as pd

    from fgrpo_sim.atomic_io import atomic_path

    path = Path(path)
    with (folder.path(path.name) if folder is not None else atomic_path(path, is_ours=lambda p: False)) as tmp:
        pd.DataFrame(rows).to_parquet(tmp, index=False)
    return path


def prepare(source: str | Path, out_dir: str | Path, val_rows: int = 256, force: bool = False) -> dict[str, Any]:
    """Write train.parquet and val.parquet under out_dir; returns the paths and row counts. Either file there
    that this tool did not write is refused, before either is written, unless `force` (docs/reliability.md)."""
    from fgrpo_sim.ownership import OutputFolder
    from fgrpo_sim.validation import check_integer

    check_integer("val_rows", val_rows, 1)
    folder = OutputFolder(out_dir, "--out-dir", force=force)
    folder.check(["train.parquet", "val.parquet"])
    rows = verl_rows(source)
    val = [{**row, "extra_info": {**row["extra_info"], "split": "val"}} for row in rows[:val_rows]]
    train_path = write_parquet(rows, Path(out_dir) / "train.parquet", folder)
    val_path = write_parquet(val, Path(out_dir) / "val.parquet", folder)
    return {"train": str(train_path), "train_rows": len(rows), "val": str(val_path), "val_rows": len(val)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fgrpo_sim.verl.prepare_data", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", help="JSONL written by `fgrpo llm prepare-data` (or any problem/answer file)")
    parser.add_argument("--out-dir", default="data/verl", help="folder for train.parquet and val.parquet")
    parser.add_argument("--val-rows", type=int, default=256, help="rows copied into val.parquet (first rows)")
    parser.add_argument("--force", action="store_true", help="replace a train.parquet / val.parquet in --out-dir "
                        "that this tool did not write (its hidden manifest .fgrpo-sim-outputs.json lists ours)")
    args = parser.parse_args(argv)
    try:
        result = prepare(args.source, args.out_dir, args.val_rows, args.force)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {result['train']} ({result['train_rows']} rows) and {result['val']} ({result['val_rows']} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
