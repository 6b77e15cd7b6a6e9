"""The Maze experiment: per seed, SFT once; then RL for every (N, gamma) from that same checkpoint.

Layout of the results folder (every file written atomically; finished pieces are reused on resume):
  config.json                      the preset and grid (a resume with different settings is refused)
  seed{s}/sft/                     SFT checkpoint (model) and seed{s}/tokenizer/ (its own folder)
  seed{s}/sft.json                 SFT loss log and held-out evaluation of the SFT model
  seed{s}/rl_N{N}_gamma{g}.json    RL training curve and final held-out evaluation
  summary.json                     Table 4 analogue, Fig 6/7 data (`summarize`): results only
  timings.json                     seconds per (N, gamma) (`timings`), apart so summaries compare byte for byte
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from fgrpo_sim.atomic_io import write_text_atomic
from fgrpo_sim.maze.presets import MazePreset
from fgrpo_sim.validation import finite_number, shorten

# K values reported: Table 4 uses 1, 128, 256; Fig 6 uses 1, 128, 1024, 2048.
REPORT_KS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
TABLE_KS = (1, 128, 256)
FIG6_KS = (1, 128, 1024, 2048)


def _gamma_tag(gamma: float) -> str:
    """gamma as written in file names: short (`0p5`) unless that would merge two values (0.1234567 and
    0.1234568 both print as 0.123457), then every digit; -0 is 0."""
    gamma = float(gamma) + 0.0
    short = f"{gamma:g}"
    return (short if float(short) == gamma else repr(gamma)).replace(".", "p")


def run_file(out: Path, seed: int, n: int, gamma: float) -> Path:
    return out / f"seed{seed}" / f"rl_N{n}_gamma{_gamma_tag(gamma)}.json"


def _json_text(data) -> str:
    from fgrpo_sim.jsonl import dumps

    return dumps(data, indent=1, sort_keys=True) + "\n"


def _dump(path: Path, data) -> None:
    write_text_atomic(path, _json_text(data))


def evaluate_model(model, tokenizer, heldout, ks: Sequence[int], n_samples: int, seed: int) -> dict:
    """Held-out metrics: exact pass@K from target probabilities and the unbiased estimator from n samples."""
    from fgrpo_sim.maze.evaluate import (exact_pass_at_k, pass_at_k_from_counts, sampled_correct_counts,
                                         target_log_probs)

    log_p = target_log_probs(model, tokenizer, heldout)
    counts = sampled_correct_counts(log_p, n_samples, seed)
    ks = [k for k in ks if k <= n_samples]
    return {
        "n_samples": int(n_samples),
        "pass_at_k": {str(k): v for k, v in pass_at_k_from_counts(n_samples, counts, ks).items()},
        "exact_pass_at_k": {str(k): v for k, v in exact_pass_at_k(log_p, ks).items()},
        "log_p_target": [round(float(x), 5) for x in log_p],
        "correct_counts": [int(c) for c in counts],
    }


def _curve_point(model, tokenizer, heldout, preset: MazePreset, seed: int, step: int) -> dict:
    ev = evaluate_model(model, tokenizer, heldout, (1, 128, preset.eval_samples), preset.eval_samples,
                        seed=10_000 * seed + step)
    return {"heldout_pass_at_k": ev["pass_at_k"], "heldout_exact_pass_at_k": ev["exact_pass_at_k"]}


def same_settings(a: dict, b: dict) -> bool:
    """Whether two preset dicts describe the same experiment (the N / gamma / seed grid may differ)."""
    def strip(d):
        return json.loads(json.dumps({k: v for k, v in d.items() if k not in ("group_sizes", "gammas", "seeds")}))
    return strip(a) == strip(b)


SFT_FIELDS = ("size", "n_train", "n_heldout", "heldout_seed", "model", "sft_steps", "sft_batch", "sft_lr",
              "sft_warmup")


def check_sft_source(source: Path, config: dict, name: str = "sft_from") -> Path:
    """Raise ValueError unless `source` is a results folder whose SFT settings equal those of `config`.

    Called before any training, so a mistyped folder is an error rather than a silent retrain.
    """
    source = Path(source)
    if not source.is_dir():
        raise ValueError(f"{name} must be a results folder of `fgrpo maze run`; {source} does not exist"
                         if not source.exists() else f"{name} must be a results folder of `fgrpo maze run`; "
                         f"{source} is a file")
    src_cfg = source / "config.json"
    if not src_cfg.is_file():
        raise ValueError(f"{name} must be a results folder of `fgrpo maze run` (no config.json in {source})")
    try:
        theirs = read_json(src_cfg)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    differ = [k for k in SFT_FIELDS
              if json.dumps(theirs.get(k), sort_keys=True) != json.dumps(config.get(k), sort_keys=True)]
    if differ:
        raise ValueError(f"{name} folder {source} used different SFT settings ({', '.join(differ)}); "
                         "its checkpoints cannot be reused")
    return source


def check_summary_copy(summary_copy: Path, out: Path) -> None:
    """--summary-copy must not replace a file the run reads or resumes from (config.json, a piece)."""
    folder = os.path.realpath(out)
    target = os.path.realpath(summary_copy)
    inside = os.path.relpath(target, folder)
    if not inside.startswith("..") and inside != "summary.json":
        raise ValueError(f"--summary-copy {summary_copy} is inside the results folder {out} ({inside}), whose files "
                         "the run reads back; choose a path outside it")


def _copy_sft(source: Path, out: Path, seed: int, config: dict) -> bool:
    """Copy seed `seed`'s SFT checkpoint from another results folder (checked by `check_sft_source`)."""
    import shutil

    if not (source / f"seed{seed}" / "sft.json").exists():
        return False
    dst = out / f"seed{seed}"
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("sft", "tokenizer"):
        shutil.copytree(source / f"seed{seed}" / name, dst / name, dirs_exist_ok=True)
    shutil.copy2(source / f"seed{seed}" / "sft.json", dst / "sft.json")  # last: marks the copy complete
    return True


def read_json(path: Path) -> dict:
    """A results file of this experiment; ValueError naming it when it is missing or damaged (resume, summarise)."""
    from fgrpo_sim.jsonl import read_json_file

    if not Path(path).exists():
        raise ValueError(f"{path} not found: not a (complete) results folder of `fgrpo maze run`")
    try:
        data = read_json_file(path, "results file")
    except ValueError as exc:
        raise ValueError(f"cannot read {exc}; delete it to redo that part") from None
    if not isinstance(data, dict):
        raise ValueError(f"cannot read {path}: expected a JSON object, got {type(data).__name__}; delete it to redo that part")
    return data


#: The files of a results folder that every run replaces (pieces are written once and reused, never replaced).
REWRITTEN = ("summary.json", "timings.json")


def is_summary(path: str | Path) -> bool:
    """A summary JSON of `fgrpo maze run` (summary.json, --summary-copy): the overwrite rule's recogniser."""
    from fgrpo_sim.jsonl import has_keys

    return has_keys(path, ("preset", "sft", "cells"))


def results_folder(out: str | Path, force: bool = False):
    """`out` as an output folder under the overwrite rule (fgrpo_sim.ownership); a folder written before the
    manifest existed has its summary.json and timings.json recognised by their keys."""
    from fgrpo_sim.jsonl import has_keys
    from fgrpo_sim.ownership import OutputFolder

    return OutputFolder(out, "--out", force=force, recognisers={
        "summary.json": is_summary, "timings.json": lambda path: has_keys(path, ("cells",))})


def run_experiment(preset: MazePreset, out: Path, *, progress: bool = True, device: str = "cpu",
                   log=print, sft_from: Path | None = None, force: bool = False) -> dict:
    """Run (or resume) every seed x N x gamma of `preset` into `out`; returns the summary.

    `sft_from`: another results folder whose SFT checkpoints (same SFT settings) are reused instead of
    retraining, e.g. for a learning-rate control that only changes the RL settings. A summary.json or
    timings.json in `out` that this tool did not write is refused before any training (`force` replaces it).
    """
    out = Path(out)
    folder = results_folder(out, force)
    config = preset.to_dict()
    if sft_from is not None:
        sft_from = check_sft_source(sft_from, config)
    from fgrpo_sim.output_lock import output_lock

    cfg_path = out / "config.json"
    # one run per folder at a time: a second one would train the same pieces again
    with output_lock(cfg_path, name="out folder", wait_hint="", resumable=out):
        if cfg_path.exists():
            if not same_settings(read_json(cfg_path), config):
                raise ValueError(f"out folder {out} holds results of different settings; choose another --out")
            check_results_folder(out)
        folder.check(REWRITTEN)
        with _transformers_bars(progress):
            _dump(cfg_path, config)
            return _run_seeds(preset, folder, config, progress=progress, device=device, log=log, sft_from=sft_from)


def _is_number(v) -> bool:
    return finite_number(v) is not None  # 10**400 too: math.isfinite would raise OverflowError


def _is_probability_table(scores) -> bool:
    return isinstance(scores, dict) and bool(scores) and all(_is_number(v) and 0.0 <= v <= 1.0 for v in scores.values())


def _piece_problem(path: Path, data: dict) -> str | None:
    """What is wrong with a finished piece (`seed*/sft.json` or `seed*/rl_N*_gamma*.json`), or None: every
    field that resume, `maze table` and `maze compare` read, so none of them meets a missing key."""
    seed_text = path.parent.name[len("seed"):]
    if not (isinstance(data.get("seed"), int) and str(data["seed"]) == seed_text):
        return f"seed {data.get('seed')!r} does not match its folder {path.parent.name}"
    if path.name == "sft.json":
        if not (isinstance(data.get("parameters"), int) and not isinstance(data["parameters"], bool)):
            return "its 'parameters' is missing or not an integer"
    else:
        n, gamma = data.get("N"), data.get("gamma")
        if not isinstance(n, int) or isinstance(n, bool) or not _is_number(gamma) or \
                run_file(path.parent.parent, data["seed"], n, float(gamma)).name != path.name:
            return f"N {shorten(n)} / gamma {shorten(gamma)} do not match the file name"
        if not (_is_number(data.get("seconds")) and data["seconds"] >= 0):
            return f"its 'seconds' is missing or not a number >= 0 (got {shorten(data.get('seconds'))})"
        curve = data.get("curve")
        if not isinstance(curve, list):
            return "it has no training curve (a list under 'curve')"
        for i, point in enumerate(curve):
            step = point.get("step") if isinstance(point, dict) else None  # an int64 where curves are averaged
            if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step < 2**63:
                return f"curve[{i}] has no integer 'step' in [0, 2^63)"
            for key in ("heldout_pass_at_k", "heldout_exact_pass_at_k"):
                if key in point and not _is_probability_table(point[key]):
                    return f"curve[{i}].{key} is not a table of probabilities"
            if "train_reward" in point and not _is_number(point["train_reward"]):
                return f"curve[{i}].train_reward is not a finite number"
    heldout = data.get("heldout")
    for key in ("pass_at_k", "exact_pass_at_k"):
        scores = heldout.get(key) if isinstance(heldout, dict) else None
        if not _is_probability_table(scores):
            return f"its heldout.{key} is not a table of probabilities"
    missing = [k for k in TABLE_KS_STR if k not in heldout["pass_at_k"]]
    if missing:
        return f"its heldout.pass_at_k has no entry for k = {missing[0]}"
    if set(heldout["exact_pass_at_k"]) != set(heldout["pass_at_k"]):
        return "its heldout.exact_pass_at_k and pass_at_k list different k"
    return None


def read_piece(path: Path) -> dict:
    """A finished piece, checked field by field (`_piece_problem`); ValueError naming the file and field."""
    data = read_json(path)
    why = _piece_problem(Path(path), data)
    if why is not None:
        raise ValueError(f"{path}: {why}; delete it to redo that piece")
    return data


def check_results_folder(out: Path) -> None:
    """Refuse to resume `out` when a finished piece it would reuse is damaged or foreign (naming the file)."""
    out = Path(out)
    for path in sorted(out.glob("seed*/sft.json")) + sorted(out.glob("seed*/rl_N*_gamma*.json")):
        try:
            data = read_json(path)
        except ValueError as exc:  # damaged JSON: named in the same resume context as the checks below
            raise ValueError(f"cannot resume {out}: {path} is not readable JSON: {exc}") from None
        why = _piece_problem(path, data)
        if why is not None:
            raise ValueError(f"cannot resume {out}: {path}: {why}; delete it to redo that piece, "
                             "or choose another --out")


@contextlib.contextmanager
def _transformers_bars(enabled: bool):
    """progress=False also hides transformers' own bars ("Loading weights" of a reused checkpoint);
    the global setting is restored afterwards, so callers in the same process are unaffected."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    if not enabled:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled and not enabled:
            hf_logging.enable_progress_bar()


def _run_seeds(preset: MazePreset, folder, config: dict, *, progress: bool, device: str, log,
               sft_from: Path | None) -> dict:
    """The body of `run_experiment`, after its checks; `folder`: the results folder (ownership.OutputFolder)."""
    import torch

    from fgrpo_sim.maze.generator import split_mazes
    from fgrpo_sim.maze.model import build_model, count_parameters
    from fgrpo_sim.maze.rl import RLSettings, train_rl
    from fgrpo_sim.maze.sft import train_sft
    from fgrpo_sim.maze.tokenizer import build_tokenizer, load_tokenizer

    out = folder.folder
    max_completion = 2 * ((preset.size - 1) // 2) ** 2  # longest possible route is cells^2 - 1 moves, plus slack
    for seed in range(preset.seeds):
        seed_dir = out / f"seed{seed}"
        pending = [(n, g) for n in preset.group_sizes for g in preset.gammas
                   if not run_file(out, seed, n, g).exists()]
        sft_json = seed_dir / "sft.json"
        if not pending and sft_json.exists():
            continue
        if sft_from is not None and not sft_json.exists() and _copy_sft(Path(sft_from), out, seed, config):
            log(f"seed {seed}: SFT checkpoint copied from {sft_from}")
        t0 = time.time()
        train, heldout = split_mazes(preset.size, preset.n_train, preset.n_heldout,
                                     train_seed=seed, heldout_seed=preset.heldout_seed)
        if sft_json.exists() and (seed_dir / "sft" / "config.json").exists():
            from transformers import Qwen2ForCausalLM

            tokenizer = load_tokenizer(seed_dir / "tokenizer")
            sft_model = Qwen2ForCausalLM.from_pretrained(str(seed_dir / "sft"))
            log(f"seed {seed}: reusing SFT checkpoint {seed_dir / 'sft'}")
        else:
            tokenizer = build_tokenizer()
            sft_model = build_model(preset.model, tokenizer, seed)
            t_sft = time.time()
            losses = train_sft(sft_model, tokenizer, train, steps=preset.sft_steps, batch_size=preset.sft_batch,
                               lr=preset.sft_lr, warmup_steps=preset.sft_warmup, seed=seed, progress=progress)
            sft_seconds = time.time() - t_sft
            sft_model.save_pretrained(str(seed_dir / "sft"))
            tokenizer.save_pretrained(str(seed_dir / "tokenizer"))
            ev = evaluate_model(sft_model, tokenizer, heldout, REPORT_KS, preset.eval_samples, seed=10_000 * seed)
            _dump(sft_json, {"seed": seed, "parameters": count_parameters(sft_model), "seconds": sft_seconds,
                             "loss": [r["loss"] for r in losses], "heldout": ev})
            log(f"seed {seed}: SFT {preset.sft_steps} steps in {sft_seconds:.0f} s, held-out pass@1 "
                f"{ev['pass_at_k']['1']:.3f}, pass@128 {ev['pass_at_k']['128']:.3f}")
        sft_model.to(device)
        for n, gamma in pending:
            model = copy.deepcopy(sft_model)
            settings = RLSettings(steps=preset.rl_steps, prompts_per_step=preset.rl_prompts_per_step,
                                  group_size=n, gamma=gamma, lr=preset.rl_lr, warmup_steps=preset.rl_warmup,
                                  max_completion_length=max_completion, seed=seed,
                                  focal_smoothing=preset.focal_smoothing)
            t_rl = time.time()
            curve = train_rl(model, tokenizer, train, settings, eval_every=preset.eval_every, progress=progress,
                             on_step=lambda step, m: _curve_point(m, tokenizer, heldout, preset, seed, step),
                             device=device)
            seconds = time.time() - t_rl
            ev = evaluate_model(model, tokenizer, heldout, REPORT_KS, preset.eval_samples,
                                seed=10_000 * seed + 9_999)
            _dump(run_file(out, seed, n, gamma), {"seed": seed, "N": n, "gamma": gamma, "seconds": seconds,
                                                  "curve": curve, "heldout": ev})
            log(f"seed {seed} N={n} gamma={gamma:g}: {preset.rl_steps} RL steps in {seconds:.0f} s, held-out "
                f"pass@1 {ev['pass_at_k']['1']:.3f}, pass@128 {ev['pass_at_k']['128']:.3f}")
            del model
        log(f"seed {seed} done in {time.time() - t0:.0f} s")
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    summary = summarize(out)
    for name, data in (("summary.json", summary), ("timings.json", timings(out))):
        folder.write_text(name, _json_text(data))
    return summary


def timings(out: str | Path) -> dict:
    """Wall-clock seconds per (N, gamma), mean over seeds, from the pieces of `out`: kept apart from
    summary.json (results only), so that two runs of the same preset compare byte for byte there."""
    runs: dict[tuple[int, float], list[float]] = {}
    for path in sorted(Path(out).glob("seed*/rl_N*_gamma*.json")):
        r = read_piece(path)
        runs.setdefault((int(r["N"]), float(r["gamma"])), []).append(float(r["seconds"]))
    return {"cells": [{"N": n, "gamma": gamma, "seconds_mean": round(float(np.mean(s)), 3)}
                      for (n, gamma), s in sorted(runs.items())]}


def _rounded(obj, digits: int = 5):
    """Floats rounded to `digits` significant decimals, so that the committed summary stays small."""
    if isinstance(obj, float):
        return float(f"{obj:.{digits}g}")
    if isinstance(obj, dict):
        return {k: _rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rounded(v, digits) for v in obj]
    return obj


def _t_interval(values: Sequence[float], level: float = 0.95) -> dict:
    """Mean and a t-based confidence interval over seeds (None bounds with fewer than 2 values; equal values:
    both bounds the mean), through `metrics.t_interval` as the group-size report's."""
    from fgrpo_sim.metrics.t_interval import t_interval

    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return {"mean": float(v.mean()) if v.size else float("nan"), "lo": None, "hi": None, "n": int(v.size),
                "values": v.tolist()}
    mean, lo, hi = t_interval(v, confidence=level)
    return {"mean": float(mean), "lo": float(lo), "hi": float(hi), "n": int(v.size), "values": v.tolist()}


def summarize(out: Path) -> dict:
    """Aggregate the per-run files of `out` into the Table 4 / Fig 6 / Fig 7 data (mean and 95% t-CI over seeds)."""
    out = Path(out)
    config = read_json(out / "config.json")
    runs: dict[tuple[int, float], list[dict]] = {}
    for path in sorted(out.glob("seed*/rl_N*_gamma*.json")):
        r = read_piece(path)
        runs.setdefault((int(r["N"]), float(r["gamma"])), []).append(r)
    sft = [read_piece(p) for p in sorted(out.glob("seed*/sft.json"))]
    cells = []
    for (n, gamma), rs in sorted(runs.items()):
        rs = sorted(rs, key=lambda r: r["seed"])
        cell = {"N": n, "gamma": gamma, "seeds": [r["seed"] for r in rs],
                "pass_at_k": {k: _t_interval([r["heldout"]["pass_at_k"][k] for r in rs])
                              for k in rs[0]["heldout"]["pass_at_k"]},
                "exact_pass_at_k": {k: _t_interval([r["heldout"]["exact_pass_at_k"][k] for r in rs])
                                    for k in rs[0]["heldout"]["exact_pass_at_k"]}}
        base = runs.get((n, 0.0))
        if gamma != 0.0 and base:
            by_seed = {r["seed"]: r for r in base}
            paired = [(r, by_seed[r["seed"]]) for r in rs if r["seed"] in by_seed]
            cell["minus_grpo"] = {k: _t_interval([a["heldout"]["pass_at_k"][k] - b["heldout"]["pass_at_k"][k]
                                                  for a, b in paired]) for k in TABLE_KS_STR}
        cell["curve"] = _mean_curve(rs)
        cells.append(cell)
    return _rounded({
        "preset": config,
        "sft": {"seeds": [s["seed"] for s in sft], "parameters": sft[0]["parameters"] if sft else None,
                "pass_at_k": {k: _t_interval([s["heldout"]["pass_at_k"][k] for s in sft])
                              for k in (sft[0]["heldout"]["pass_at_k"] if sft else {})}},
        "cells": cells,
    })


TABLE_KS_STR = tuple(str(k) for k in TABLE_KS)


def _mean_curve(rs: list[dict]) -> list[dict]:
    """Training curve averaged over seeds at the steps every seed recorded."""
    steps = sorted(set.intersection(*[{p["step"] for p in r["curve"]} for r in rs]))
    out = []
    for step in steps:
        points = [next(p for p in r["curve"] if p["step"] == step) for r in rs]
        row = {"step": step}
        rewards = [p["train_reward"] for p in points if "train_reward" in p]
        if len(rewards) == len(points):
            row["train_reward"] = float(np.mean(rewards))
            row["train_reward_seeds"] = [float(v) for v in rewards]  # per seed, for the seed spread of Fig 7
        if all("heldout_pass_at_k" in p for p in points):
            for k in points[0]["heldout_pass_at_k"]:
                row[f"pass@{k}"] = float(np.mean([p["heldout_pass_at_k"][k] for p in points]))
                row[f"exact_pass@{k}"] = float(np.mean([p["heldout_exact_pass_at_k"][k] for p in points]))
            for k in ("1", "2048"):  # the two pass@K of Fig 7, per seed
                if k in points[0]["heldout_pass_at_k"]:
                    row[f"pass@{k}_seeds"] = [float(p["heldout_pass_at_k"][k]) for p in points]
        out.append(row)
    return out


def paired_difference(out_a: Path, gamma_a: float, out_b: Path, gamma_b: float, n: int,
                      ks: Sequence[str] = TABLE_KS_STR) -> dict:
    """Per-seed differences A - B of held-out pass@K between two runs with the same N (e.g. F-GRPO vs a
    learning-rate-matched GRPO control in another results folder), with means and 95% t-intervals over
    the seeds both have. Seeds share their SFT checkpoint, so the comparison is paired."""
    runs = {}
    for tag, out, gamma in (("a", Path(out_a), gamma_a), ("b", Path(out_b), gamma_b)):
        if not out.is_dir():  # say so, rather than "no seed has both runs"
            raise ValueError(f"{tag} must be a results folder of `fgrpo maze run`; {out} "
                             f"{'is a file' if out.exists() else 'does not exist'}")
        runs[tag] = {}
        for path in sorted(out.glob(f"seed*/rl_N{n}_gamma{_gamma_tag(gamma)}.json")):
            r = read_piece(path)
            runs[tag][r["seed"]] = r["heldout"]["pass_at_k"]
    seeds = sorted(set(runs["a"]) & set(runs["b"]))
    if not seeds:
        raise ValueError(f"no seed has both runs (N={n}, gamma {gamma_a:g} in {out_a}, gamma {gamma_b:g} in {out_b})")
    return {"seeds": seeds,
            "a": {k: _t_interval([runs["a"][s][k] for s in seeds]) for k in ks},
            "b": {k: _t_interval([runs["b"][s][k] for s in seeds]) for k in ks},
            "a_minus_b": {k: _t_interval([runs["a"][s][k] - runs["b"][s][k] for s in seeds]) for k in ks}}
