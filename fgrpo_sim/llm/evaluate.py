"""Sampling evaluation: n completions per problem, verified, one JSON line per sample, resumable.

Output (JSON lines, one per generated sample; `fgrpo passk` reads `problem_id` and `correct`):
    {"problem_id": str, "sample_index": int, "correct": bool, "status": str, "num_tokens": int,
     "finished": bool, ["completion": str]}
`status` is the math_reward outcome (correct, wrong, no_answer, too_long, ...); `finished` is False
when generation hit `max_new_tokens`.

Resuming: records are appended and flushed after every batch. On restart the file is read, a torn
last line (from a kill mid-write) is cut off, and only the (problem_id, sample_index) pairs not yet
present are generated, so nothing is counted twice. A sidecar `<out>.meta.json` records the
decoding settings; resuming with different settings is an error (a larger `n` is allowed: it adds
samples). Sampling seeds are derived per batch from `seed` and the batch's first (problem, sample),
so a resumed run is statistically equivalent to, not bitwise identical with, an uninterrupted one.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from fgrpo_sim.validation import check_choice, check_integer, check_range

BACKENDS = ("auto", "transformers", "vllm")
#: Settings that must match between a run and its resumption.
_RESUME_KEYS = ("model", "data", "benchmark", "temperature", "top_p", "max_new_tokens", "system_prompt",
                "fallback_last_number")


@dataclass
class EvalSettings:
    model: str
    data: str
    benchmark: str
    n: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 8192
    system_prompt: str | None = None
    batch_size: int = 32
    seed: int = 0
    backend: str = "auto"
    save_completions: bool = False
    fallback_last_number: bool = False

    def validate(self) -> None:
        check_integer("n", self.n, 1)
        check_range("temperature", self.temperature, 0.0)
        check_range("top_p", self.top_p, 0.0, 1.0, low_open=True)
        check_integer("max_new_tokens", self.max_new_tokens, 1)
        check_integer("batch_size", self.batch_size, 1)
        check_integer("seed", self.seed, 0)
        check_choice("backend", self.backend, BACKENDS)


def read_existing(path: Path) -> list[dict[str, Any]]:
    """Records already written; a torn final line is removed from the file (it was never complete)."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    keep = raw if raw.endswith(b"\n") or not raw else raw[: raw.rfind(b"\n") + 1]
    records = []
    for number, line in enumerate(keep.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except (json.JSONDecodeError, RecursionError):
            raise ValueError(f"{path}: line {number} is not valid JSON; cannot resume from a corrupted file") from None
    if len(keep) != len(raw):
        with open(path, "r+b") as fh:
            fh.truncate(len(keep))
    return records


def _check_meta(out: Path, settings: EvalSettings) -> None:
    meta_path = out.with_name(out.name + ".meta.json")
    current = {k: getattr(settings, k) for k in _RESUME_KEYS}
    if out.exists() and out.stat().st_size > 0 and not meta_path.exists():
        raise ValueError(f"cannot resume {out}: it has no {meta_path.name}, so it was not written by "
                         "`fgrpo llm eval` (use a new --out file)")
    if meta_path.exists() and out.exists() and out.stat().st_size > 0:
        try:
            previous = json.loads(meta_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            previous = None
        if not isinstance(previous, dict):
            raise ValueError(f"cannot resume {out}: its settings file {meta_path} is not a JSON object (damaged?); "
                             "use a new --out file, or delete both to start afresh")
        changed = [k for k in _RESUME_KEYS if previous.get(k) != current[k]]
        if changed:
            k = changed[0]
            raise ValueError(
                f"cannot resume {out}: {k} was {previous.get(k)!r}, now {current[k]!r} (use a new --out file)"
            )


def _write_meta(out: Path, settings: EvalSettings) -> None:
    from fgrpo_sim.atomic_io import write_text_atomic

    write_text_atomic(out.with_name(out.name + ".meta.json"), json.dumps(asdict(settings), indent=2) + "\n")


def pending_jobs(problems: list[dict[str, str]], n: int, done: set[tuple[str, int]]) -> list[tuple[dict, int]]:
    """(problem, sample_index) pairs still to generate, problem by problem."""
    return [(p, i) for p in problems for i in range(n) if (p["problem_id"], i) not in done]


def _batch_seed(seed: int, problem_id: str, sample_index: int) -> int:
    return (seed * 1_000_003 + zlib.crc32(f"{problem_id}\x00{sample_index}".encode())) % (2**31)


def render_prompt(tokenizer, problem: str, system_prompt: str | None) -> str:
    """The prompt text the model sees: chat template with generation prompt (plain lines without one)."""
    from fgrpo_sim.llm.data import build_prompt

    messages = build_prompt(problem, system_prompt)
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return "\n".join(m["content"] for m in messages) + "\n"


class TransformersSampler:
    """Batched `model.generate` sampling (CPU or a single GPU)."""

    def __init__(self, model, tokenizer, settings: EvalSettings):
        import torch

        self.torch = torch
        self.model, self.tokenizer, self.settings = model.eval(), tokenizer, settings
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token

    def prompt_text(self, problem: str) -> str:
        return render_prompt(self.tokenizer, problem, self.settings.system_prompt)

    def generate(self, problems: list[str], seed: int) -> list[tuple[str, int, bool]]:
        """(completion text, completion tokens, finished with EOS) per prompt."""
        torch, s = self.torch, self.settings
        enc = self.tokenizer([self.prompt_text(p) for p in problems], return_tensors="pt", padding=True,
                             add_special_tokens=False).to(self.model.device)
        torch.manual_seed(seed)
        with torch.no_grad():
            out = self.model.generate(
                **enc, do_sample=s.temperature > 0, temperature=s.temperature if s.temperature > 0 else None,
                top_p=s.top_p, top_k=0, max_new_tokens=s.max_new_tokens,
                pad_token_id=self.tokenizer.pad_token_id, eos_token_id=self.tokenizer.eos_token_id,
            )
        completions = out[:, enc["input_ids"].shape[1]:]
        results = []
        for row in completions.tolist():
            eos = self.tokenizer.eos_token_id
            finished = eos in row
            tokens = row[: row.index(eos)] if finished else row
            tokens = [t for t in tokens if t != self.tokenizer.pad_token_id]
            results.append((self.tokenizer.decode(tokens, skip_special_tokens=True), len(tokens), finished))
        return results


class VLLMSampler:
    """vLLM sampling (GPU): each problem's missing samples in one request with SamplingParams(n=...)."""

    def __init__(self, settings: EvalSettings):
        from vllm import LLM

        self.settings = settings
        self.llm = LLM(model=settings.model, seed=settings.seed)
        self.tokenizer = self.llm.get_tokenizer()

    def generate(self, problems: list[str], seed: int) -> list[tuple[str, int, bool]]:
        from vllm import SamplingParams

        from fgrpo_sim.llm.data import build_prompt

        s = self.settings
        # No per-request seed: identical seeds would make the repeated prompts of a batch sample identically;
        # the engine was seeded once in __init__.
        params = SamplingParams(n=1, temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_new_tokens)
        prompts = [self.tokenizer.apply_chat_template(build_prompt(p, s.system_prompt), add_generation_prompt=True,
                                                      tokenize=False) for p in problems]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        return [(o.outputs[0].text, len(o.outputs[0].token_ids), o.outputs[0].finish_reason == "stop") for o in outputs]


def choose_backend(requested: str) -> str:
    if requested == "vllm":
        try:
            import vllm  # noqa: F401
        except ImportError:
            raise ValueError('--backend vllm needs vLLM, which is not installed here: pip install -e ".[vllm]" '
                             "(or use --backend transformers)") from None
    if requested != "auto":
        return requested
    try:
        import torch
        import vllm  # noqa: F401
    except ImportError:
        return "transformers"
    return "vllm" if torch.cuda.is_available() else "transformers"


def run_eval(
    settings: EvalSettings,
    problems: list[dict[str, str]],
    out: str | Path,
    *,
    sampler=None,
    verifier=None,
    progress: bool = True,
    on_batch: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Generate and verify every missing sample, appending records to `out`; returns a summary dict."""
    from tqdm import tqdm

    from fgrpo_sim.atomic_io import check_writable
    from fgrpo_sim.llm.rewards import MathVerifier

    settings.validate()
    out = check_writable(out, "--out")
    out.parent.mkdir(parents=True, exist_ok=True)
    _check_meta(out, settings)
    if sampler is None:
        choose_backend(settings.backend)  # a missing vLLM fails before anything is read or loaded
    existing = read_existing(out)
    done = {(str(r["problem_id"]), int(r["sample_index"])) for r in existing}
    jobs = pending_jobs(problems, settings.n, done)
    verifier = verifier if verifier is not None else MathVerifier(fallback_last_number=settings.fallback_last_number)
    if sampler is None and jobs:
        backend = choose_backend(settings.backend)
        if backend == "vllm":
            sampler = VLLMSampler(settings)
        else:
            import torch

            from fgrpo_sim.llm.tiny import load_model_and_tokenizer

            # On a GPU keep the checkpoint's own dtype (bf16 for Qwen) instead of upcasting to fp32.
            on_gpu = torch.cuda.is_available()
            model, tokenizer = load_model_and_tokenizer(settings.model, dtype="auto" if on_gpu else None,
                                                        device="cuda" if on_gpu else None)
            sampler = TransformersSampler(model, tokenizer, settings)
    _write_meta(out, settings)  # only once the model loaded: a failed start leaves nothing behind
    bar = tqdm(total=len(jobs), desc="eval samples", unit="sample", disable=not progress)
    batches = 0
    with open(out, "a", encoding="utf-8") as fh:
        for start in range(0, len(jobs), settings.batch_size):
            batch = jobs[start : start + settings.batch_size]
            first_problem, first_index = batch[0]
            results = sampler.generate([p["problem"] for p, _ in batch],
                                       _batch_seed(settings.seed, first_problem["problem_id"], first_index))
            lines = []
            for (problem, index), (text, num_tokens, finished) in zip(batch, results, strict=True):
                score = verifier.score(text, problem["answer"])
                record = {"problem_id": problem["problem_id"], "sample_index": index, "correct": bool(score.correct),
                          "status": score.status, "num_tokens": int(num_tokens), "finished": bool(finished)}
                if settings.save_completions:
                    record["completion"] = text
                lines.append(json.dumps(record, ensure_ascii=False) + "\n")
            fh.write("".join(lines))
            fh.flush()
            os.fsync(fh.fileno())
            bar.update(len(batch))
            batches += 1
            if on_batch is not None:
                on_batch(batches)
    bar.close()
    return summarise(out, problems, settings.n, generated=len(jobs))


def summarise(out: Path, problems: list[dict[str, str]], n: int, generated: int = 0) -> dict[str, Any]:
    """Per-file counts and pass@k (unbiased estimator) for k = 1, 2, 4, ... up to min(n, 256)."""
    import numpy as np

    from fgrpo_sim.metrics import pass_at_k

    wanted = {p["problem_id"] for p in problems}
    counts: dict[str, list[int]] = {pid: [0, 0] for pid in wanted}
    seen: set[tuple[str, int]] = set()
    statuses: dict[str, int] = {}
    for record in read_existing(out):
        key = (str(record["problem_id"]), int(record["sample_index"]))
        if key[0] not in wanted or key[1] >= n or key in seen:
            continue
        seen.add(key)
        counts[key[0]][0] += 1
        counts[key[0]][1] += bool(record["correct"])
        statuses[record.get("status", "?")] = statuses.get(record.get("status", "?"), 0) + 1
    n_arr = np.array([v[0] for v in counts.values()])
    c_arr = np.array([v[1] for v in counts.values()])
    summary: dict[str, Any] = {"file": str(out), "problems": len(counts), "samples": int(n_arr.sum()),
                               "generated_now": generated, "statuses": statuses}
    if n_arr.size and n_arr.min() >= 1:
        ks = [k for k in (1, 2, 4, 8, 16, 32, 64, 128, 256) if k <= n_arr.min()]
        summary["pass_at_k"] = {str(k): float(np.mean(pass_at_k(n_arr, c_arr, k))) for k in ks}
    return summary
