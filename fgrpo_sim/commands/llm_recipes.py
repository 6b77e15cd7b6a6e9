"""`fgrpo llm recipes`: the index of the paper's training arms (paper table -> recipe -> command)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

_COLUMNS = ("paper", "what", "command", "est_gpu_h", "est_wall_h_on_16")


def recipes_command(
    ctx: typer.Context,
    root: Optional[Path] = typer.Option(None, "--root", help="Recipes folder laid out as MODEL/ARM.yaml. Default: the recipes "
                                        "shipped with fgrpo-sim (the repository's recipes/)."),
    model: Optional[str] = typer.Option(None, "--model", help="Only this model folder (qwen2.5-7b, qwen3-4b-base, "
                                        "llama-3.2-3b-instruct). Default: all."),
    as_json: bool = typer.Option(False, "--json", help="Print every field as JSON, one object per arm, instead of the text table."),
    markdown: bool = typer.Option(False, "--markdown", help="Print the docs/recipes.md table (markdown) instead of the text table."),
    response_fraction: float = typer.Option(1500 / 8192, "--response-fraction", help="Assumed mean response length as a "
                                            "fraction of max_completion_length, in (0, 1], for the GPU-hour estimate (default 1500/8192 = 0.183)."),
    mfu: float = typer.Option(0.40, "--mfu", help="Assumed training model-FLOP utilisation, in (0, 1]."),
    decode_rate: float = typer.Option(5000.0, "--decode-tokens-per-s", help="Assumed decoded tokens/s per H100 for a "
                                      "7.6B model (scaled by 7.6 / params for the others), > 0."),
) -> None:
    """List every training arm of the paper with the table it feeds, its recipe, the command that runs it and
    an estimated cost (H100 GPU-hours; our estimate from stated assumptions, see fgrpo_sim/llm/training/recipe_index.py)."""
    from fgrpo_sim.llm.training.recipe_index import arm_row, recipe_index
    from fgrpo_sim.commands.options import refuse_together
    from fgrpo_sim.packaged import recipes_root
    from fgrpo_sim.validation import check_range

    refuse_together(ctx, "as_json", "markdown")
    if root is None:
        root = recipes_root()
    check_range("--decode-tokens-per-s", decode_rate, 0.0, float("inf"), low_open=True, high_open=True)
    if not root.is_dir():
        raise ValueError(f"--root must be a recipes folder, got {root}")
    every = recipe_index(root)
    if not every:
        raise ValueError(f"--root {root} has no recipes (expected MODEL/ARM.yaml files, as in the repository's recipes/)")
    arms = [a for a in every if model is None or a.model == model]
    if not arms:
        import difflib

        models = sorted({a.model for a in every})
        close = difflib.get_close_matches(model, models, n=1)
        raise ValueError(f"--model {model!r} has no recipes under {root}; "
                         + (f"did you mean {close[0]}? " if close else "") + f"models: {', '.join(models)}")
    options = {"response_fraction": response_fraction, "mfu": mfu, "decode_tokens_per_s_at_7b6": decode_rate}
    rows = [arm_row(a, **options) for a in arms]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    if markdown:
        # the recipe path alone (it starts with the model; the command is the same for every row), no wall hours
        # (GPU-h / 16) and no disk (one value per model): --json has both, and the docs' table stays narrow
        print("| `--config` | paper | arm | est. H100 GPU-h |")
        print("|---|---|---|---|")
        for r in rows:
            print(f"| `{r['recipe'].removeprefix('recipes/')}` | {r['paper']} | {r['what']} | {r['est_gpu_h']} |")
        return
    current = None
    for r in rows:
        if r["model"] != current:
            current = r["model"]
            print(f"\n{current}")
        print(f"  {r['paper']:<28} {r['what']:<58} {r['command']}  (~{r['est_gpu_h']} GPU-h, {r['disk_gb']} GB disk)")
    print("\nGPU-hours: our estimate from stated assumptions (fgrpo_sim/llm/training/recipe_index.py), not measured.")
    print("Disk: checkpoints + final model = (S + 1) x P x b + 2 x P x b x R for S saved checkpoints of P parameters "
          "in b bytes, R of them with AdamW state (1 with save_optimizer_state last); see docs/recipes.md.")
