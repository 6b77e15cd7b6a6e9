"""verl checkpoint -> Hugging Face folder that `fgrpo llm eval` loads, through verl's own model merger.

    python -m fgrpo_sim.verl.export CHECKPOINT OUT        (what `fgrpo llm export-verl` runs in .venv-verl)

CHECKPOINT is what verl's trainer writes under `trainer.default_local_dir`: a `global_step_N` folder, its
`actor/` subfolder, or the run folder itself (then the step named in `latest_checkpointed_iteration.txt`).
The actor folder holds one of
- an FSDP checkpoint (`fsdp_config.json`, `model_world_size_W_rank_R.pt`, `huggingface/` with config and
  tokenizer): merged with `verl.model_merger`'s `FSDPModelMerger` (verl's `python -m verl.model_merger merge
  --backend fsdp`), the shards concatenated by their DTensor placements, saved in bf16 as verl does;
- full Hugging Face weights in `huggingface/` (verl's `checkpoint.save_contents` with `hf_model`): copied.
Megatron checkpoints need verl's merger with Megatron installed (`--backend megatron`); not handled here.

The tokenizer files are the ones verl wrote at save time (`huggingface/`), copied verbatim: verl's merger
re-saves the tokenizer through AutoTokenizer, which changes some tokenizers (the tiny test model's
character vocabulary among them). OUT is written as a whole or not at all (temp folder, then rename).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin", "*.safetensors.index.json", "pytorch_model.bin.index.json")
#: Files of the saved `huggingface/` folder that describe the tokenizer (copied over the merger's output).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
                   "vocab.json", "merges.txt", "tokenizer.model", "added_tokens.json")


def actor_folder(checkpoint: str | Path) -> Path:
    """The folder holding the actor's files, from a run folder, a global_step_N folder or the actor folder."""
    path = Path(checkpoint)
    if not path.is_dir():
        raise ValueError(f"CHECKPOINT must be a verl checkpoint folder, got {path} (not a folder)")
    latest = path / "latest_checkpointed_iteration.txt"
    if latest.is_file():
        path = path / f"global_step_{latest.read_text().strip()}"
    if (path / "actor").is_dir():
        path = path / "actor"
    if not (path / "huggingface").is_dir():
        raise ValueError(f"CHECKPOINT {checkpoint}: no huggingface/ folder under {path}; expected verl's layout "
                         "(run folder, global_step_N or global_step_N/actor)")
    return path


def _has_weights(folder: Path) -> bool:
    return any(any(folder.glob(pattern)) for pattern in WEIGHT_PATTERNS)


def _merge_fsdp(actor: Path, target: Path) -> None:
    """verl's own FSDP merger (the class `python -m verl.model_merger merge --backend fsdp` builds)."""
    from verl.model_merger.base_model_merger import ModelMergerConfig
    from verl.model_merger.fsdp_model_merger import FSDPModelMerger

    config = ModelMergerConfig(operation="merge", backend="fsdp", local_dir=str(actor), target_dir=str(target),
                               hf_model_config_path=str(actor / "huggingface"))
    merger = FSDPModelMerger(config)
    merger.merge_and_save()
    merger.cleanup()


def check_export_paths(checkpoint: str | Path, out: str | Path) -> tuple[Path, Path]:
    """(actor folder, the folder really written) once CHECKPOINT is a verl checkpoint and OUT a new or empty
    folder outside it (the copy would otherwise hold a second copy of the weights); a link OUT is written
    through to an existing empty folder, a dangling one refused. Needs no verl: the CLI checks first."""
    from fgrpo_sim.atomic_io import check_writable_dir

    actor = actor_folder(checkpoint)
    given = Path(out)
    out = given
    if given.is_symlink():
        out = Path(os.path.realpath(given))
        if not out.is_dir():
            raise ValueError(f"OUT {given} is a link to {out}, which is not an existing folder; give a new folder")
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"OUT {given} exists and is not empty; give a new folder")
    check_writable_dir(out, "OUT")
    inside = Path(os.path.realpath(out))
    source = Path(os.path.realpath(checkpoint))
    if inside == source or source in inside.parents:
        raise ValueError(f"OUT {given} is inside CHECKPOINT {checkpoint}; give a folder outside it (the export would "
                         "copy the checkpoint into itself)")
    return actor, out


def export_checkpoint(checkpoint: str | Path, out: str | Path) -> dict:
    """Write a Hugging Face model folder at `out` from a verl checkpoint; returns what was done."""
    given = out
    actor, out = check_export_paths(checkpoint, out)
    hf = actor / "huggingface"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        if _has_weights(hf):
            method = "copied huggingface/ (full weights saved by verl)"
            shutil.copytree(hf, tmp, dirs_exist_ok=True)
        elif (actor / "fsdp_config.json").is_file():
            method = "merged FSDP shards with verl.model_merger (FSDPModelMerger)"
            _merge_fsdp(actor, tmp)
            for name in TOKENIZER_FILES:
                if (hf / name).is_file():
                    shutil.copy2(hf / name, tmp / name)
        elif (actor / "model" / "dist_ckpt").is_dir() or (actor / "dist_ckpt").is_dir():
            raise ValueError(f"{actor} is a Megatron checkpoint: merge it with `python -m verl.model_merger merge "
                             "--backend megatron` (needs Megatron), then evaluate the target folder")
        else:
            raise ValueError(f"{actor}: neither FSDP shards (fsdp_config.json) nor weights in huggingface/")
        if out.exists():
            out.rmdir()
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"checkpoint": str(actor), "out": str(given), "method": method}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fgrpo_sim.verl.export", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="verl run folder, global_step_N folder or its actor/ folder")
    parser.add_argument("out", help="new folder for the Hugging Face model (what `fgrpo llm eval --model` takes)")
    args = parser.parse_args(argv)
    try:
        result = export_checkpoint(args.checkpoint, args.out)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}".replace("\n", " "), file=sys.stderr)
        return 2
    print(f"wrote {result['out']} from {result['checkpoint']}: {result['method']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
