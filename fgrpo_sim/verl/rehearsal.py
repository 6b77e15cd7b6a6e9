"""Rehearse the verl half of the paper's protocol on CPU: every verl stage that runs without a GPU.

    .venv-verl/bin/python -m fgrpo_sim.verl.rehearsal --out DIR [--model TINY_MODEL_DIR] [--data JSONL]
                                                      [--samples 4] [--no-ray]

Stable interface (called by `fgrpo llm rehearse`): the options above; exit 0 when every stage is ok or
skipped, 1 when a stage failed, 2 for bad options; one line per stage on stdout,
`[verl] STAGE  STATUS  SECONDS s  DETAIL`; and DIR/manifest.json (written last, atomically):

    {"verl_version": ..., "ok": bool, "stages": [{"name", "status": "ok"|"skipped"|"failed", "seconds",
     "detail", "files": [paths under DIR]}], "files": [every file the rehearsal wrote, sorted],
     "exported_model": DIR/exported (a Hugging Face folder for `fgrpo llm eval`, or null)}

Stages, in order (each uses the code a real run uses):
 1. model        --model, or the tiny Qwen2-shaped model of fgrpo_sim.llm.tiny saved to DIR/tiny
 2. prepare-data problems JSONL (--data, else 16 built-in arithmetic problems) -> DIR/verl-data/{train,val}.parquet
                 with `fgrpo_sim.verl.prepare_data`, then read back by verl's own RLHFDataset
 3. config       `recipes/verl/f-grpo.sh --cfg job` through the real launcher (Hydra composition), then the
                 launch checks and `trainer.save_freq=epoch` -> rows // batch; `grpo.sh algorithm.focal_gamma=0.5`
                 must be refused (exit 2, one line)
 4. reward       --samples completions per prompt sampled from the model (transformers generate), plus one
                 reference completion per prompt (\\boxed{answer}, so groups are mixed), graded by verl's
                 custom reward function `fgrpo_sim.verl.reward.compute_score`
 5. estimator    a local CPU Ray cluster starts the launcher's TaskRunner actor (as verl's run_ppo does); in
                 that process `focal_grpo` on the stage-4 rewards equals verl GRPO x (1 - mu_hat)^gamma
                 computed here from fgrpo_sim.core; skipped with --no-ray
 6. checkpoint   one policy update with verl's own policy loss (`get_policy_loss_fn("vanilla")`, token-mean,
                 clip 0.2) on the stage-5 focal advantages of the graded rollouts, on the model wrapped in
                 FSDP2 (gloo, world size 1), AdamW of fgrpo_sim.verl.optim; then a real verl FSDP checkpoint
                 (verl's FSDPCheckpointManager) -> DIR/verl-ckpt/global_step_1/actor. This is verl's loss
                 function, not verl's trainer or actor worker (those need a GPU, stage 8)
 7. export       `fgrpo_sim.verl.export` (what `fgrpo llm export-verl` runs): verl's model merger ->
                 DIR/exported, loaded back and compared with the checkpointed weights
 8. train        skipped: verl 0.9.1 cannot train on CPU (docs/verl.md, "Training on CPU"): no CPU platform
                 (GPU bundles, NCCL) and its only rollouts are vLLM / SGLang / TensorRT-LLM servers

It is a test of the pipeline, not a result.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
GAMMA = 0.5
TRAIN_SKIP_REASON = ("verl 0.9.1 cannot train on CPU: it has no CPU platform (it falls back to CUDA: GPU bundles, "
                     "NCCL process groups, torch.cuda.set_device) and its only rollout engines are vLLM / SGLang / "
                     "TensorRT-LLM servers (docs/verl.md, 'Training on CPU'). Needs a GPU node.")


def builtin_problems(n: int = 16) -> list[dict[str, str]]:
    return [{"problem_id": f"add-{i}", "problem": f"What is {i} + {i + 1}?", "answer": str(2 * i + 1)} for i in range(n)]


class Rehearsal:
    def __init__(self, out: Path):
        self.out = out
        self.stages: list[dict[str, Any]] = []
        self.state: dict[str, Any] = {}

    def run(self, name: str, fn: Callable[[], tuple[str, list[Path]]] | None, skip: str | None = None) -> None:
        start = time.perf_counter()
        files: list[Path] = []
        if skip is not None:
            status, detail = "skipped", skip
        else:
            try:
                with contextlib.redirect_stdout(sys.stderr):  # verl / transformers print; stdout keeps the stage lines
                    detail, files = fn()
                status = "ok"
            except Exception as exc:  # one failed stage is reported, the others still run
                status, detail = "failed", f"{type(exc).__name__}: {exc}".replace("\n", " ")[:500]
        seconds = time.perf_counter() - start
        self.stages.append({"name": name, "status": status, "seconds": round(seconds, 2), "detail": detail,
                            "files": [str(Path(p).resolve()) for p in files]})
        print(f"[verl] {name:<13} {status:<8} {seconds:6.1f} s  {detail}", flush=True)

    def done(self, name: str) -> bool:
        return any(s["name"] == name and s["status"] == "ok" for s in self.stages)


def stage_model(r: Rehearsal, model: Path | None) -> tuple[str, list[Path]]:
    from fgrpo_sim.llm.tiny import build_tiny, save_tiny

    if model is not None:
        if not (model / "config.json").is_file():
            raise ValueError(f"--model {model} has no config.json")
        r.state["model"] = model
        return f"given: {model}", []
    target = r.out / "tiny"
    net, tokenizer = build_tiny(seed=0)
    save_tiny(net, tokenizer, target)
    r.state["model"] = target
    return f"tiny Qwen2-shaped model ({sum(p.numel() for p in net.parameters()):,} parameters)", sorted(target.iterdir())


def stage_prepare(r: Rehearsal, data: Path | None) -> tuple[str, list[Path]]:
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from fgrpo_sim.atomic_io import write_text_atomic
    from fgrpo_sim.llm.tiny import load_tokenizer
    from fgrpo_sim.verl.main_ppo import compose_config
    from fgrpo_sim.verl.prepare_data import prepare

    made = []
    if data is None:
        data = r.out / "problems.jsonl"
        write_text_atomic(data, "".join(json.dumps(p) + "\n" for p in builtin_problems()))
        made.append(data)
    result = prepare(data, r.out / "verl-data", val_rows=4)
    cfg = compose_config([f"data.train_files={result['train']}", "data.max_prompt_length=1024",
                          "data.dataloader_num_workers=0"]).data
    dataset = RLHFDataset(data_files=[result["train"]], tokenizer=load_tokenizer(r.state["model"]), config=cfg)
    if len(dataset) != result["train_rows"]:
        raise ValueError(f"verl's RLHFDataset read {len(dataset)} rows of {result['train_rows']}")
    r.state.update(train=Path(result["train"]), val=Path(result["val"]), rows=result["train_rows"])
    return (f"{result['train_rows']} train / {result['val_rows']} val rows; verl's RLHFDataset reads them",
            made + [Path(result["train"]), Path(result["val"])])


def _launcher_env() -> dict[str, str]:
    pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": pythonpath}


def stage_config(r: Rehearsal) -> tuple[str, list[Path]]:
    import yaml
    from omegaconf import OmegaConf
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    from fgrpo_sim.atomic_io import write_text_atomic
    from fgrpo_sim.packaged import recipes_root
    from fgrpo_sim.verl.checks import check_launch, resolve_save_freq

    batch = max(1, min(4, r.state["rows"]))
    small = [f"actor_rollout_ref.model.path={r.state['model']}", f"data.train_files={r.state['train']}",
             f"data.val_files={r.state['val']}", f"data.train_batch_size={batch}",
             f"actor_rollout_ref.actor.ppo_mini_batch_size={batch}", "trainer.nnodes=1", "trainer.n_gpus_per_node=1"]
    script = recipes_root() / "verl" / "f-grpo.sh"
    proc = subprocess.run(["bash", str(script), *small, "--cfg", "job"], env=_launcher_env(), cwd=r.out,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{script.name} --cfg job exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    composed = r.out / "verl-config" / "f-grpo.yaml"
    composed.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(composed, proc.stdout)
    cfg = OmegaConf.create(yaml.safe_load(proc.stdout))
    check_launch(cfg)
    steps = resolve_save_freq(cfg)
    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    refused = subprocess.run(["bash", str(recipes_root() / "verl" / "grpo.sh"), *small, "algorithm.focal_gamma=0.5"],
                             env=_launcher_env(), cwd=r.out, capture_output=True, text=True, timeout=600)
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    if refused.returncode != 2 or len(errors) != 1 or "adv_estimator=focal_grpo" not in errors[0]:
        raise RuntimeError(f"grpo.sh algorithm.focal_gamma=0.5 was not refused (exit {refused.returncode})")
    r.state["gamma"] = float(cfg.algorithm.focal_gamma)
    return (f"f-grpo.sh composes (gamma {cfg.algorithm.focal_gamma}, {cfg.algorithm.adv_estimator}), passes the "
            f"launch checks and verl's validate_config; save_freq=epoch -> {steps} steps "
            f"({r.state['rows']} rows // {batch}); grpo.sh + focal_gamma refused (exit 2)", [composed])


def stage_reward(r: Rehearsal, samples: int) -> tuple[str, list[Path]]:
    import pandas as pd
    import torch

    from fgrpo_sim.atomic_io import write_text_atomic
    from fgrpo_sim.llm.tiny import load_model_and_tokenizer
    from fgrpo_sim.verl.reward import compute_score

    model, tokenizer = load_model_and_tokenizer(r.state["model"])
    table = pd.read_parquet(r.state["train"]).head(4)
    torch.manual_seed(0)
    records, rewards, uids, sequences = [], [], [], []
    for _, row in table.iterrows():
        truth = row["reward_model"]["ground_truth"]
        messages = [{"role": m["role"], "content": m["content"]} for m in row["prompt"]]
        try:
            text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        except (ValueError, AttributeError):  # a tokenizer without a chat template: plain concatenation
            text = "\n".join(m["content"] for m in messages)
        ids = tokenizer(text, return_tensors="pt").input_ids
        with torch.no_grad():
            out = model.generate(ids, do_sample=True, max_new_tokens=24, num_return_sequences=samples,
                                 pad_token_id=tokenizer.pad_token_id or 0)
        completions = tokenizer.batch_decode(out[:, ids.shape[1]:], skip_special_tokens=True)
        completions.append(f"The answer is \\boxed{{{truth}}}.")  # reference completion: a known-correct one
        completion_ids = [row_ids.tolist() for row_ids in out[:, ids.shape[1]:]]
        completion_ids.append(tokenizer(completions[-1], add_special_tokens=False).input_ids)
        pad = tokenizer.pad_token_id
        sequences.extend((ids[0].tolist(), [t for t in c if t != pad] or c[:1]) for c in completion_ids)
        for k, completion in enumerate(completions):
            score = compute_score("deepscaler", completion, truth, {})
            records.append({"uid": str(row["extra_info"]["index"]), "sampled": k < samples, "completion": completion,
                            "ground_truth": truth, **score})
            rewards.append(score["score"])
            uids.append(str(row["extra_info"]["index"]))
    path = r.out / "verl-reward" / "graded.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, "".join(json.dumps(x) + "\n" for x in records))
    r.state.update(rewards=rewards, uids=uids, sequences=sequences)
    sampled = [x for x in records if x["sampled"]]
    refs = [x for x in records if not x["sampled"]]
    return (f"{len(sampled)} sampled completions graded ({sum(x['acc'] for x in sampled):.0f} correct, "
            f"{sum(x['no_answer'] for x in sampled):.0f} without an answer) + {len(refs)} reference completions "
            f"({sum(x['acc'] for x in refs):.0f} correct)", [path])


#: seconds a Ray call to the TaskRunner actor may take before the estimator stage fails
ACTOR_TIMEOUT_S = 900


def stage_estimator(r: Rehearsal) -> tuple[str, list[Path]]:
    import ray
    import torch
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    from fgrpo_sim.core import focal_weight, group_success_rate
    from fgrpo_sim.verl.main_ppo import FocalTaskRunnerV1

    rewards, uids, gamma = r.state["rewards"], r.state["uids"], r.state.get("gamma", GAMMA)
    started = not ray.is_initialized()
    if started:
        pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        ray.init(num_cpus=1, num_gpus=0, include_dashboard=False, object_store_memory=80 * 1024**2,
                 log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": pythonpath}})
    try:
        runner = FocalTaskRunnerV1.remote()
        # The first get waits for Ray to start a worker that imports verl and torch: about 50 s on 2 idle cores,
        # over 300 s once when five other CPU-bound jobs shared them. A hang still ends, after 15 minutes.
        names = ray.get(runner.registered_estimators.remote(), timeout=ACTOR_TIMEOUT_S)

        def in_actor(self, rewards, uids, gamma):
            import os

            import torch
            from verl.trainer.ppo.core_algos import get_adv_estimator_fn

            adv, _ = get_adv_estimator_fn("focal_grpo")(
                token_level_rewards=torch.tensor(rewards)[:, None], response_mask=torch.ones(len(rewards), 1),
                index=uids, config={"focal_gamma": gamma})
            return os.getpid(), adv.flatten().tolist()

        pid, adv = ray.get(runner.__ray_call__.remote(in_actor, rewards, uids, gamma), timeout=ACTOR_TIMEOUT_S)
        ray.kill(runner)
    finally:
        if started:
            ray.shutdown()
    if pid == os.getpid() or not {"focal_grpo", "focal_rloo", "ds_grpo"} <= set(names):
        raise RuntimeError(f"the actor (pid {pid}) lacks the estimators: {names}")
    scores = torch.tensor(rewards)
    base, _ = compute_grpo_outcome_advantage(scores[:, None], torch.ones(len(rewards), 1), uids)
    expected = base.flatten().clone()
    for uid in sorted(set(uids)):
        rows = [i for i, u in enumerate(uids) if u == uid]
        mu = group_success_rate(scores[rows][None, :])
        expected[rows] *= focal_weight(mu, gamma).to(expected.dtype)[0]
    r.state["advantages"] = adv
    err = float((torch.tensor(adv) - expected).abs().max())
    if err > 1e-6:
        raise RuntimeError(f"focal_grpo in the actor differs from verl GRPO x g by {err:.3g}")
    return (f"TaskRunner actor (pid {pid}) registered {', '.join(n for n in names if n in ('focal_grpo', 'focal_rloo', 'ds_grpo'))}; "
            f"focal_grpo (gamma {gamma}) on {len(rewards)} graded rollouts = verl GRPO x (1 - mu_hat)^gamma "
            f"(max diff {err:.1e})", [])


def policy_loss_fn(r: Rehearsal):
    """verl's own policy loss (vanilla PPO-clip, token-mean, clip 0.2) on the graded rollouts' focal advantages.

    One on-policy step: old log-probs = the current ones, detached (ratio 1), as verl's first PPO epoch.
    """
    import torch
    from omegaconf import OmegaConf
    from verl.trainer.ppo.core_algos import get_policy_loss_fn

    sequences, advantages = r.state["sequences"], torch.tensor(r.state["advantages"])
    prompt_len = max(len(p) for p, _ in sequences)
    response_len = max(len(c) for _, c in sequences)
    ids = torch.zeros(len(sequences), prompt_len + response_len, dtype=torch.long)
    attention = torch.zeros_like(ids)
    response_mask = torch.zeros(len(sequences), response_len)
    for i, (prompt, completion) in enumerate(sequences):  # prompts left-padded, responses right-padded, as verl
        ids[i, prompt_len - len(prompt):prompt_len] = torch.tensor(prompt)
        ids[i, prompt_len:prompt_len + len(completion)] = torch.tensor(completion)
        attention[i, prompt_len - len(prompt):prompt_len + len(completion)] = 1
        response_mask[i, :len(completion)] = 1
    config = OmegaConf.create({"clip_ratio": 0.2, "clip_ratio_low": 0.2, "clip_ratio_high": 0.2, "clip_ratio_c": 3.0,
                               "global_batch_info": {"dp_size": 1, "batch_num_tokens": int(response_mask.sum()),
                                                     "global_batch_size": len(sequences)}})
    loss_fn = get_policy_loss_fn("vanilla")
    r.state["policy_loss"] = []

    def loss(model):
        logits = model(input_ids=ids, attention_mask=attention).logits[:, prompt_len - 1:-1].float()
        log_prob = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, prompt_len:, None])[..., 0]
        pg_loss, _ = loss_fn(old_log_prob=log_prob.detach(), log_prob=log_prob,
                             advantages=advantages[:, None] * response_mask, response_mask=response_mask,
                             loss_agg_mode="token-mean", config=config)
        r.state["policy_loss"].append(float(pg_loss))
        return pg_loss

    return loss


def stage_checkpoint(r: Rehearsal) -> tuple[str, list[Path]]:
    from fgrpo_sim.atomic_io import write_text_atomic
    from fgrpo_sim.verl.fsdp_checkpoint import write_fsdp_checkpoint

    run = r.out / "verl-ckpt"
    actor = run / "global_step_1" / "actor"
    with_loss = "advantages" in r.state
    r.state["trained"] = write_fsdp_checkpoint(r.state["model"], actor, steps=1, lr=1e-3,
                                               loss_fn=policy_loss_fn(r) if with_loss else None)
    write_text_atomic(run / "latest_checkpointed_iteration.txt", "1")
    files = sorted(p for p in run.rglob("*") if p.is_file())
    step = (f"1 AdamW step of verl's vanilla policy loss (token-mean) on the {len(r.state['advantages'])} focal_grpo "
            f"advantages (loss {r.state['policy_loss'][0]:+.4f})" if with_loss else
            "1 AdamW step of next-token loss on random tokens (no advantages: estimator stage skipped)")
    return (f"{step}, FSDP2 on gloo, world size 1; verl FSDPCheckpointManager: {len(files)} files under {run.name}/",
            files)


def stage_export(r: Rehearsal) -> tuple[str, list[Path]]:
    import torch

    from fgrpo_sim.llm.tiny import load_model_and_tokenizer
    from fgrpo_sim.verl.export import export_checkpoint

    target = r.out / "exported"
    result = export_checkpoint(r.out / "verl-ckpt", target)
    model, _ = load_model_and_tokenizer(target)
    state = model.state_dict()
    trained = r.state["trained"]
    same = all(torch.equal(state[k].float(), v.to(torch.bfloat16).float()) for k, v in trained.items() if k in state)
    if not same:
        raise RuntimeError("the exported weights differ from the checkpointed ones (in bf16)")
    r.state["exported"] = target
    return f"{result['method']}; loads with fgrpo_sim.llm.tiny.load_model_and_tokenizer, weights = checkpoint (bf16)", \
        sorted(p for p in target.rglob("*") if p.is_file())


def rehearse(out: Path, model: Path | None = None, data: Path | None = None, samples: int = 4, ray_stage: bool = True) -> dict:
    import verl

    from fgrpo_sim.atomic_io import write_text_atomic

    out.mkdir(parents=True, exist_ok=True)
    r = Rehearsal(out)
    r.run("model", lambda: stage_model(r, model))
    r.run("prepare-data", lambda: stage_prepare(r, data), skip=None if r.done("model") else "no model")
    r.run("config", lambda: stage_config(r), skip=None if r.done("prepare-data") else "no data")
    r.run("reward", lambda: stage_reward(r, samples), skip=None if r.done("prepare-data") else "no data")
    skip_ray = "--no-ray" if not ray_stage else (None if r.done("reward") else "no graded rollouts")
    r.run("estimator", lambda: stage_estimator(r), skip=skip_ray)
    r.run("checkpoint", lambda: stage_checkpoint(r), skip=None if r.done("model") else "no model")
    r.run("export", lambda: stage_export(r), skip=None if r.done("checkpoint") else "no checkpoint")
    r.run("train", None, skip=TRAIN_SKIP_REASON)
    manifest = {
        "verl_version": getattr(verl, "__version__", None),
        "ok": all(s["status"] != "failed" for s in r.stages),
        "stages": r.stages,
        "files": sorted({f for s in r.stages for f in s["files"]}),
        # paths are absolute: the caller may read them from another working directory (a relative --out broke it)
        "exported_model": str(Path(r.state["exported"]).resolve()) if "exported" in r.state else None,
    }
    write_text_atomic(out / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fgrpo_sim.verl.rehearsal", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path, help="folder for every file and manifest.json")
    parser.add_argument("--model", type=Path, default=None, help="small Hugging Face model folder (default: build the tiny one)")
    parser.add_argument("--data", type=Path, default=None, help="problems JSONL (problem_id, problem, answer; "
                        "e.g. from `fgrpo llm prepare-data`); default: 16 built-in arithmetic problems")
    parser.add_argument("--samples", type=int, default=4, help="completions sampled per prompt in the reward stage, >= 1")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray actor stage")
    args = parser.parse_args(argv)
    try:
        from fgrpo_sim.atomic_io import check_writable_dir
        from fgrpo_sim.validation import check_integer

        check_integer("--samples", args.samples, 1)
        check_writable_dir(args.out, "--out")
        if args.data is not None and not args.data.is_file():
            raise ValueError(f"--data {args.data} not found")
        if args.model is not None and not args.model.is_dir():
            raise ValueError(f"--model {args.model} is not a folder")
        import verl  # noqa: F401
    except ImportError:
        print("error: verl is not importable here: run this with .venv-verl/bin/python (`make install-verl`)", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    manifest = rehearse(args.out, args.model, args.data, args.samples, ray_stage=not args.no_ray)
    print(f"[verl] total         {'ok' if manifest['ok'] else 'FAILED':<8} {time.perf_counter() - start:6.1f} s  "
          f"manifest: {args.out / 'manifest.json'}")
    return 0 if manifest["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
