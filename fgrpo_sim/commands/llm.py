"""`fgrpo llm ...`: train F-GRPO / F-DAPO / F-CISPO with TRL, prepare data, evaluate with pass@k.

Heavy libraries (trl, transformers, datasets, math-verify) are imported inside the commands.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Optional, Sequence

import typer

from fgrpo_sim import jsonl as json  # standard JSON out: non-finite numbers as null, never bare NaN
from fgrpo_sim.commands.options import list_option, refuse_together
from fgrpo_sim.commands.passk import DEFAULT_TEST  # one default test for passk --compare and llm report

app = typer.Typer(
    help=(
        "Train and evaluate language models with focal-weighted GRPO / DAPO / CISPO on TRL "
        "(prepare-data -> train -> eval -> `fgrpo passk`)."
    ),
    no_args_is_help=True,
)

_PAPER_PROMPT_HELP = "the paper's: 'Please reason step by step, and put your final answer within \\boxed{}.'"


def _quiet_transformers_bars() -> None:
    """--no-progress also hides transformers' own bars (loading weights, writing shards)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


@app.command(
    "train",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    help=(
        "Train with FocalGRPOTrainer from a recipe. Any recipe key or FocalGRPOConfig/GRPOConfig field can be "
        "overridden after the options, e.g. `fgrpo llm train --config recipes/qwen2.5-7b/f-grpo.yaml "
        "--focal_gamma 1.0 --max_steps 10`. For several GPUs run it under `accelerate launch -m fgrpo_sim llm train ...` "
        "(see docs/llm.md): recipes with batch_prompts/mini_batch_prompts derive gradient_accumulation_steps from "
        "the launcher's WORLD_SIZE. The tiny CPU smoke test: `fgrpo llm train --config recipes/tiny/f-grpo.yaml`."
    ),
)
def train(
    ctx: typer.Context,
    config: Path = typer.Option(..., "--config", help="Recipe YAML: your own file, or a shipped recipe by name (qwen2.5-7b/f-grpo.yaml; `fgrpo llm recipes` lists them); keys documented in fgrpo_sim/llm/training/recipe.py."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Run every check the real run makes before loading the model "
                                 "(values, batch layout, output_dir, checkpoint, and the data file when it exists), print "
                                 "the run keys, the resolved TRL config and the launch arithmetic (--json: as JSON), and stop. "
                                 "Default: off."),
    num_processes: Optional[int] = typer.Option(None, "--num-processes", help="Number of training processes (GPUs) to "
                                                "plan for, >= 1. Default: WORLD_SIZE from accelerate/torchrun, else 1. "
                                                "Use it with --dry-run to check a launch on 8, 16 or 32 GPUs."),
    train_rows: Optional[int] = typer.Option(None, "--train-rows", help="With --dry-run: plan for this many training "
                                             "prompts instead of reading train_data (>= 1). Default: the file's rows "
                                             "when it exists, else the paper's 39,202."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show TRL's progress bar. Default: shown."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object. Default: "
                                 "readable key/value lines."),
) -> None:
    from fgrpo_sim.llm.training.run import prepare_training, resolved_trl_config, train_recipe

    if train_rows is not None and not dry_run:
        raise ValueError("--train-rows plans a --dry-run; a real run counts the rows of train_data")
    prepared = prepare_training(config, list(ctx.args), num_processes=num_processes, no_progress=not progress,
                                dry_run=dry_run, train_rows=train_rows)
    if dry_run:
        _print_result({"run": prepared["run"], "config": resolved_trl_config(prepared["args"], prepared["fields"]),
                       "world_size": prepared["world_size"], "train_rows": prepared["train_rows"],
                       "data_checked": prepared["data_checked"], "launch": prepared["launch"]}, as_json)
        if not prepared["data_checked"]:
            source = "--train-rows" if train_rows is not None else "the paper's, --train-rows N to change"
            print(f"note: train_data {prepared['run']['train_data']} was not read (data not checked); planned for "
                  f"{prepared['train_rows']} rows ({source})", file=sys.stderr)
        return
    if not progress:
        _quiet_transformers_bars()
    result = train_recipe(config, prepared=prepared)
    if result.summary:
        _print_result(result.summary, as_json)


def _print_result(payload: dict, as_json: bool) -> None:
    """`--json`: one indented JSON object (what a Path or date lacks in JSON as its text); else key/value lines."""
    from fgrpo_sim.commands.tables import echo_fields

    if as_json:
        print(json.dumps(payload, indent=2, default=str))
    else:
        import json as std_json

        echo_fields(std_json.loads(json.dumps(payload, default=str)))  # the same values --json prints


@app.command("prepare-data", short_help="Prepare DeepScaleR (dedup, conflicts, length filter, system prompt).", help=(
    "Prepare DeepScaleR as in the paper: drop rows without problem/answer (reported by row number), drop "
    "duplicate problems whose answers conflict (answers that math-verify finds equivalent, such as 1/2 and 0.5, "
    "agree; one copy of agreeing duplicates is kept), prepend the system prompt, drop prompts over "
    "--max-prompt-tokens tokens, and write JSON lines for `fgrpo llm train`. Prints a report (--json: as JSON): "
    "rows read, kept, and `dropped` with the count of each reason. Training builds prompts with the recipe's system_prompt."
))
def prepare_data(
    ctx: typer.Context,
    source: str = typer.Argument(..., help="Local .json/.jsonl/.parquet file, or a hub dataset id when online "
                                 "(e.g. agentica-org/DeepScaleR-Preview-Dataset)."),
    out: Path = typer.Option(..., "--out", help="Output JSONL (written atomically)."),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="Tokenizer (hub id, folder, or 'tiny') used to "
                                            "count prompt tokens. Default: none, and the length filter is skipped."),
    max_prompt_tokens: int = typer.Option(1024, "--max-prompt-tokens", help="Drop prompts longer than this many "
                                          "tokens (chat template included), >= 1."),
    system_prompt: str = typer.Option(None, "--system-prompt", help=f"System prompt. Default: {_PAPER_PROMPT_HELP}"),
    no_system_prompt: bool = typer.Option(False, "--no-system-prompt", help="Use no system prompt. Default: off."),
    force: bool = typer.Option(False, "--force", help="Replace an existing --out that is not a prepared data file."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object. Default: "
                                 "readable key/value lines."),
) -> None:
    from fgrpo_sim.atomic_io import check_not_input, check_replaceable, check_writable
    from fgrpo_sim.jsonl import has_keys
    from fgrpo_sim.llm.training.config import PAPER_SYSTEM_PROMPT
    from fgrpo_sim.llm.training.data import prepare_deepscaler, write_jsonl

    from fgrpo_sim.packaged import resolve_shipped

    refuse_together(ctx, "system_prompt", "no_system_prompt")
    shipped = resolve_shipped(source)  # tiny/arith.jsonl from any folder, as --config finds tiny/f-grpo.yaml
    source = str(shipped) if shipped != Path(source) else source  # a hub id stays as typed
    check_writable(out, "--out")
    check_not_input(out, "--out", source if Path(source).exists() else None)
    # ours: JSON lines whose rows carry the built "prompt" beside problem and answer (a benchmark file has none)
    check_replaceable(out, "--out", lambda path: has_keys(path, ("problem", "answer", "prompt"), lines=True), force=force)
    prompt = None if no_system_prompt else (system_prompt if system_prompt is not None else PAPER_SYSTEM_PROMPT)
    tok = None
    if tokenizer is not None:
        from fgrpo_sim.llm.tiny import build_char_tokenizer, load_tokenizer

        tok = build_char_tokenizer() if tokenizer == "tiny" else load_tokenizer(tokenizer)
    rows, report = prepare_deepscaler(source, tok, max_prompt_tokens=max_prompt_tokens, system_prompt=prompt)
    if not rows:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(report.dropped.items())) or "none"
        raise ValueError(f"no usable rows in {source} (read {report.rows_read}; dropped: {reasons})")
    write_jsonl(rows, out)
    summary = report.as_dict()
    summary["out"] = str(out)
    summary["length_filter"] = "skipped (no --tokenizer)" if tok is None else f"<= {max_prompt_tokens} tokens"
    _print_result(summary, as_json)


@app.command("eval", short_help="Sample, verify and write per-sample JSON lines (resumable) + pass@k.", help=(
    "Sample --samples completions per problem, grade each (math-verify for math; GPQA letter, IFEval checks or SynLogic "
    "verifiers for --benchmark gpqa_diamond/ifeval/synlogic), and append one JSON line per sample to "
    "--out ({problem_id, sample_index, correct, status, num_tokens, finished}); `fgrpo passk OUT` reads it. "
    "Interrupted runs resume where they stopped (nothing is counted twice); a larger --samples adds samples. "
    "Uses vLLM when installed and a GPU is present (one request per problem with n samples, every problem "
    "submitted at once), else batched transformers generate."
))
def eval_command(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", help="Model folder or hub id ('tiny' = a fresh random tiny model)."),
    data: Path = typer.Option(..., "--data", help="Benchmark file (.json/.jsonl/.parquet) with problem + answer columns."),
    out: Path = typer.Option(..., "--out", help="Per-sample results (JSON lines); appended to when it exists."),
    benchmark: str = typer.Option("generic", "--benchmark", help="Column layout and grader: math500, aime24, aime25, "
                                  "amc23, minerva, olympiadbench or generic (any problem/answer file; math-verify), "
                                  "gpqa_diamond (shuffled options, letter graded), ifeval (instruction checks, "
                                  "prompt-level strict) or synlogic (needs --synlogic-repo). Schemas: docs/evaluation.md."),
    n: int = typer.Option(16, "--samples", help="Completions sampled per problem (paper: 1024), >= 1, e.g. --samples 256."),
    temperature: float = typer.Option(1.0, "--temperature", help="Sampling temperature: 0 = greedy, else in "
                                      "[0.001, 1000] (smaller ones overflow the logits) (paper: 1.0)."),
    top_p: float = typer.Option(1.0, "--top-p", help="Nucleus sampling mass in (0, 1] (paper: 1.0)."),
    max_new_tokens: Optional[int] = typer.Option(None, "--max-new-tokens", help="Completion length cap in tokens, >= 1. "
                                                 "Default: the family's (paper Table 8: 8192; 4096 for qwen3-base)."),
    batch_size: int = typer.Option(32, "--batch-size", help="transformers backend: samples per generate call, >= 1 "
                                   "(vLLM schedules its own batches and ignores it)."),
    problems_per_call: int = typer.Option(0, "--problems-per-call", help="vLLM backend: problems per generate call, "
                                          "each a resume point; 0 = every pending problem in one call (the engine "
                                          "schedules them). Each problem is one request with n samples. Default: 0."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed, >= 0."),
    backend: str = typer.Option("auto", "--backend", help="auto (vLLM when installed and a GPU is present, else transformers), transformers or vllm."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Only the first LIMIT problems, >= 1. Default: all."),
    system_prompt: Optional[str] = typer.Option(None, "--system-prompt", help="System prompt. Default: the paper's "
                                                "Table 9 prompt for --model-family and --benchmark (math/GPQA: "
                                                f"{_PAPER_PROMPT_HELP})."),
    no_system_prompt: bool = typer.Option(False, "--no-system-prompt", help="Use no system prompt. Default: off."),
    model_family: Optional[str] = typer.Option(None, "--model-family", help="Prompt family of paper Table 9: qwen2.5, "
                                               "qwen3-base (thinking on except IFEval), llama-3.2-instruct (dated "
                                               "system header) or generic. Default: detected from the model's "
                                               "config.json / name; written to the meta file."),
    synlogic_repo: Optional[Path] = typer.Option(None, "--synlogic-repo", help="Local checkout of "
                                                 "https://github.com/MiniMax-AI/SynLogic whose verifiers grade "
                                                 "--benchmark synlogic. Default: $SYNLOGIC_REPO."),
    save_completions: bool = typer.Option(False, "--save-completions", help="Also store each completion's text. Default: off."),
    fallback_last_number: bool = typer.Option(False, "--fallback-last-number", help="Score the last number of a completion "
                                              "without \\boxed{} (tiny smoke tests only; not the paper's metric). Default: off."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON. Default: a text table."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show the progress bar. Default: shown on stderr."),
    wait: bool = typer.Option(False, "--wait", help="When another run is writing OUT (it holds the hidden lock file "
                              ".OUT.lock next to it), wait for it to finish, then add only the samples still missing. "
                              "Default: exit 2 at once with a message naming the lock."),
    force: bool = typer.Option(False, "--force", help="Replace an OUT.meta.json that `fgrpo llm eval` did not write. "
                               "Default: refused, before any work."),
) -> None:
    from fgrpo_sim.llm.evaluation.evaluate import EvalSettings, run_eval
    from fgrpo_sim.llm.evaluation.ood_data import load_any_benchmark
    from fgrpo_sim.llm.evaluation.prompts import canonical_benchmark, detect_family, prompt_spec
    from fgrpo_sim.validation import check_integer

    from fgrpo_sim.packaged import resolve_shipped

    refuse_together(ctx, "system_prompt", "no_system_prompt")
    data = resolve_shipped(data)  # a shipped file by name from any folder (tiny/arith.jsonl), as --config
    check_integer("--samples", n, 1)  # EvalSettings names its field n, which is the group size elsewhere in the CLI
    if not progress:
        _quiet_transformers_bars()
    benchmark = canonical_benchmark(benchmark)  # IFEval -> ifeval: one spelling in the meta file, so resumes match
    spec = prompt_spec(model_family or detect_family(model), benchmark)
    prompt = None if no_system_prompt else (system_prompt if system_prompt is not None else spec.system_prompt)
    settings = EvalSettings(
        model=model, data=str(data), benchmark=benchmark, n=n, temperature=temperature, top_p=top_p,
        max_new_tokens=max_new_tokens if max_new_tokens is not None else spec.max_new_tokens, system_prompt=prompt,
        batch_size=batch_size, seed=seed, backend=backend, problems_per_call=problems_per_call,
        save_completions=save_completions, fallback_last_number=fallback_last_number, model_family=spec.family,
        chat_template_kwargs=spec.chat_template_kwargs or None,
        synlogic_repo=str(synlogic_repo) if synlogic_repo is not None else None,
    )
    settings.validate()
    if model_family is not None:  # '' would have meant "detect" above
        from fgrpo_sim.llm.evaluation.prompts import FAMILIES
        from fgrpo_sim.validation import check_choice

        check_choice("model_family", model_family, FAMILIES)
    if limit is not None:
        check_integer("limit", limit, 1)
    everything = load_any_benchmark(benchmark, data)  # read once: --limit slices it
    problems = everything[:limit] if limit is not None else everything
    # with --limit, lines of the file's later problems (from a run with a larger limit) are not foreign
    known = {p["problem_id"] for p in everything}
    summary = run_eval(settings, problems, out, progress=progress, wait_for_lock=wait, known_problem_ids=known,
                       force=force)
    # reported with the results (and in the meta file), not before them: an error stays the only stderr line
    summary["model_family"] = f"{spec.family} ({'given' if model_family else 'detected; override with --model-family'})"
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    print(f"{summary['file']}: {summary['problems']} problems, {summary['samples']} samples "
          f"({summary['generated_now']} generated now); model family {summary['model_family']}")
    print("statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["statuses"].items())))
    for k, value in summary.get("pass_at_k", {}).items():
        print(f"pass@{k:<4} {100 * value:6.2f}%")
    print(f"(full table and paired test: fgrpo passk {out} [--compare OTHER.jsonl])", file=sys.stderr)


@app.command("dnll-rare", short_help="Rare-correct NLL increase of trained models (paper App. M.2).", help=(
    "Rare-correct NLL diagnostic (paper App. M.2): from base-model trajectories, keep the correct ones, take the "
    "top --top-fraction by the base model's length-normalised NLL, and report each --model's mean NLL on that "
    "fixed set minus the base model's (positive = rare solutions became less likely)."
))
def dnll_rare_command(
    ctx: typer.Context,
    trajectories: Path = typer.Option(..., "--trajectories", help="JSON lines with completion, correct, and problem "
                                      "(or problem_id plus --data), e.g. `fgrpo llm eval --save-completions` output."),
    base: str = typer.Option(..., "--base", help="Base model (folder or hub id) that produced the trajectories."),
    model: list[str] = typer.Option(..., "--model", help="Trained model to score; repeat for several."),
    data: Optional[Path] = typer.Option(None, "--data", help="Problem file to look up problem_id (benchmark schema)."),
    top_fraction: float = typer.Option(0.01, "--top-fraction", help="Share of correct trajectories kept, in (0, 1]. "
                                       "The paper keeps the top 1%."),
    batch_size: int = typer.Option(8, "--batch-size", help="Trajectories per forward pass (sorted by length, padded "
                                   "to the batch's longest), >= 1."),
    device: str = typer.Option("auto", "--device", help="auto (a GPU in bf16 when present, else CPU in float32), "
                               "cpu, or cuda[:N]. Default: auto."),
    system_prompt: Optional[str] = typer.Option(None, "--system-prompt", help=f"System prompt. Default: {_PAPER_PROMPT_HELP}"),
    no_system_prompt: bool = typer.Option(False, "--no-system-prompt", help="Use no system prompt. Default: off."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show the progress bars. Default: shown on stderr."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object. Default: "
                                 "readable key/value lines."),
) -> None:
    from fgrpo_sim.llm.evaluation.data import load_benchmark, read_records
    from fgrpo_sim.llm.evaluation.diagnostics import check_dnll_options, dnll_rare
    from fgrpo_sim.llm.evaluation.prompts import MATH_INSTRUCTION as PAPER_SYSTEM_PROMPT  # no TRL import

    refuse_together(ctx, "system_prompt", "no_system_prompt")

    check_dnll_options(top_fraction, batch_size)
    if device not in ("auto", "cpu") and not re.fullmatch(r"cuda(:\d+)?", device):
        raise ValueError(f"--device must be auto, cpu, cuda or cuda:N, got {device!r}")
    prompt = None if no_system_prompt else (system_prompt if system_prompt is not None else PAPER_SYSTEM_PROMPT)
    from fgrpo_sim.packaged import resolve_shipped

    problems = {p["problem_id"]: p["problem"] for p in load_benchmark("generic", resolve_shipped(data))} if data else {}
    rows = []
    for number, record in read_records(trajectories):
        if "problem" not in record:
            pid = str(record.get("problem_id"))
            if pid not in problems:
                raise ValueError(f"{trajectories}: line {number} has no problem and its problem_id {pid!r} is not in --data")
            record = {**record, "problem": problems[pid]}
        if not isinstance(record.get("completion"), str):
            raise ValueError(f"{trajectories}: line {number} has no completion text (run eval with --save-completions)")
        if record.get("correct") not in (True, False) or isinstance(record.get("correct"), float):
            # "yes" and "false" are truthy strings: only true/false (or 0/1) say whether a sample was correct
            raise ValueError(f"{trajectories}: line {number}: field 'correct' must be true or false, "
                             f"got {record.get('correct')!r}")
        rows.append(record)
    if not progress:
        _quiet_transformers_bars()
    result = dnll_rare(rows, base, list(model), system_prompt=prompt, top_fraction=top_fraction, batch_size=batch_size,
                       device=device, progress=progress)
    _print_result(result, as_json)


@app.command("report", short_help="Select checkpoints (App. L.4) and write Table 1/2/3/6-shaped tables + figure.",
             help=(
    "Read a manifest of eval outputs (runs x checkpoints x benchmarks), select per comparison the baseline "
    "checkpoint with the best average math pass@1 and each focal run's best checkpoint at equal or lower compute "
    "(paper App. L.4), and write table.md, table.tex, selection.json, pass1_vs_passk.png and passk_curves.png "
    "(Fig 1b/1c style, the paper's Tables 12-14 curves dashed) to --out-dir. Significant per-benchmark differences "
    "from the row's own comparison baseline are marked '*' (--test; the table's note names the test and alpha; "
    "selection.json keeps each test's difference, interval and p-value). The benchmarks' problems are held fixed: "
    "a mark is about the sampled generations on these problems, not about problem sampling. Manifest "
    "columns and an example: docs/evaluation.md."
))
def report_command(
    ctx: typer.Context,
    manifest: Path = typer.Argument(..., help="CSV (or JSON lines) with comparison, role, method, run, epoch, step, "
                                    "compute, benchmark, file[, dnll_rare, paper_row]."),
    out_dir: Path = typer.Option(..., "--out-dir", help="Folder for table.md, table.tex, selection.json and the figure."),
    k: Sequence[int] = list_option("256", "--k", int, one="the tables' one large k", help="The large k of the tables, "
                                   ">= 1 (paper: 256; needs >= k samples per problem); one value here."),
    test_name: str = typer.Option(
        DEFAULT_TEST, "--test",
        help="The paired test of the marks, as `fgrpo passk --compare`: 'conditional' (default; exact conditional "
        "test, Monte Carlo p-value seeded by --seed, size alpha at any problem count, n and k <= n), 'u-statistic' "
        "(z-test with the unbiased variance of the pass@k estimator; size about alpha with many mixed problems; "
        "pass@k with k > n / 2 untested) or 'app-q' (the paper's m-out-of-n subsampling test, to reproduce its "
        "marks; measured size 0.06% at alpha = 0.05). Two-sided alpha = 0.05."),
    m: Optional[int] = typer.Option(None, "--m", help="--test app-q: subsample size per problem, in "
                                    "[1, n - 1] (paper: 256 of 1024). Default: min(256, n // 4), as `fgrpo passk "
                                    "--compare`; pass@k with k > m is untested (the table says so)."),
    iterations: int = typer.Option(50_000, "--iterations", help="--test app-q: subsampling rounds, >= 40 (2 / alpha at "
                                   "alpha = 0.05; paper: 50,000)."),
    seed: int = typer.Option(0, "--seed", help="--test conditional or app-q: seed of the Monte Carlo rounds or of the "
                             "subsampling, >= 0."),
    paper_csv: Optional[Path] = typer.Option(None, "--paper-csv", help="The paper's numbers for rows with a paper_row. "
                                             "Default: the CSV shipped in fgrpo_sim/llm/evaluation/paper_results.csv."),
    no_paper: bool = typer.Option(False, "--no-paper", help="Leave out the paper columns. Default: shown when "
                                  "the manifest has paper_row values."),
    no_figure: bool = typer.Option(False, "--no-figure", help="Skip the PNGs. Default: written."),
    title: Optional[str] = typer.Option(None, "--title", help="Title line of table.md and table.tex. Default: none."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show the significance-test progress bar on "
                                  "stderr (default) or not."),
    as_json: bool = typer.Option(False, "--json", help="Print what selection.json holds (selected checkpoints, "
                                 "scores, significance marks, curves) as JSON instead of the markdown table."),
    force: bool = typer.Option(False, "--force", help="Replace files in --out-dir that this tool did not write "
                               "there (its hidden manifest .fgrpo-sim-outputs.json lists ours). Default: refused "
                               "before any work, nothing written."),
) -> None:
    from fgrpo_sim.commands.options import refuse_unused
    from fgrpo_sim.llm.evaluation.report import PAPER_CSV, REPORT_FILES, build_report, report_folder, write_report
    from fgrpo_sim.metrics.paired_tests import check_test

    if check_test(test_name, "--test") != "app-q":
        refuse_unused(ctx, ("m", "iterations"), f"is used with --test app-q only (the {test_name} test draws "
                      "no subsamples)")
    if test_name == "u-statistic":
        refuse_unused(ctx, ("seed",), "is used with --test conditional or app-q only (the u-statistic test draws "
                      "nothing)")
    # before any work; write_report checks again, with the figures it got, before its first file
    report_folder(out_dir, force).check([*REPORT_FILES, *(() if no_figure else ("pass1_vs_passk.png",))])
    app_q = test_name == "app-q"
    report = build_report(manifest, k=k[0], test=test_name, m=m, iterations=iterations if app_q else None, seed=seed,
                          paper_csv=None if no_paper else (paper_csv or PAPER_CSV), progress=progress,
                          title=title)
    figures = {}
    if not no_figure:
        from fgrpo_sim.figures.evaluation import draw_report_figures

        figures = draw_report_figures(report)
    written = write_report(report, out_dir, figures=figures, force=force)
    if as_json:
        from fgrpo_sim.llm.evaluation.report import selection_data

        print(json.dumps(selection_data(report), indent=2))
    else:
        print(report["markdown"], end="")
    print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)


def _register_recipes() -> None:
    from fgrpo_sim.commands.llm_recipes import recipes_command

    app.command("recipes", short_help="Index of the paper's training arms: paper table -> recipe -> command.")(
        recipes_command)


_register_recipes()
__import__("fgrpo_sim.commands.llm_rehearse", fromlist=["register"]).register(app)  # `fgrpo llm rehearse`
__import__("fgrpo_sim.commands.llm_export", fromlist=["register"]).register(app)  # `fgrpo llm export-verl`
