"""Sampling evaluation: n completions per problem, verified, one JSON line per sample, resumable.

Output (JSON lines, one per generated sample; `fgrpo passk` reads `problem_id` and `correct`):
    {"problem_id": str, "sample_index": int, "correct": bool, "status": str, "num_tokens": int,
     "finished": bool, ["completion": str]}
`status` is the grader's outcome (`fgrpo_sim.llm.evaluation.grading`: correct, wrong, no_answer, too_long, ...);
`finished` is False when generation hit `max_new_tokens`. GPQA-Diamond lines also carry `choice_order`,
`gold` and `extracted` (the shown option order, the correct and the chosen letter).

Request shape: the pending samples of each problem form one *chunk* (problem, missing sample
indices). vLLM gets one request per chunk with `SamplingParams(n=len(indices), seed=chunk seed)`,
and every pending chunk goes to the engine in a single `generate` call (vLLM batches and schedules
them; `problems_per_call` > 0 splits the run into calls of that many problems, each a resume point).
The transformers backend tokenises each chunk's prompt once and repeats it for its samples, in calls
of at most `batch_size` samples (a chunk may be split across calls), and stops on every end-of-sequence
id of the model's generation config (as TRL does), not only the tokenizer's.

Seeds: each chunk's seed is derived from `seed`, the problem id and the chunk's first sample index.
A resumed run asks only for missing indices, so its chunks start elsewhere and draw a fresh random
stream instead of repeating the first run's. vLLM seeds each request with its chunk's seed; a
transformers call seeds torch with its first chunk's seed (one generator per batched call). A
resumed run is statistically equivalent to, not bitwise identical with, an uninterrupted one.

Resuming: records are appended and flushed after every call. On restart the file is read, a torn
last line (from a kill mid-write) is cut off, and only the (problem_id, sample_index) pairs not yet
present are generated, so nothing is counted twice. A sidecar `<out>.meta.json` records the
decoding settings; resuming with different settings is an error (a larger `n` is allowed: it adds
samples).
"""

from __future__ import annotations

import os
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from fgrpo_sim.jsonl import dumps
from fgrpo_sim.validation import check_choice, check_integer, check_range

#: Smallest positive sampling temperature: below it logits / T overflow (inf/nan probabilities), and
#: sampling is greedy in all but name; 0 means greedy. Largest: beyond it sampling is uniform noise.
MIN_TEMPERATURE = 1e-3
MAX_TEMPERATURE = 1e3

BACKENDS = ("auto", "transformers", "vllm")
#: Settings that must match between a run and its resumption.
_RESUME_KEYS = ("model", "data", "benchmark", "temperature", "top_p", "max_new_tokens", "system_prompt",
                "fallback_last_number", "model_family", "chat_template_kwargs")


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
    problems_per_call: int = 0
    save_completions: bool = False
    fallback_last_number: bool = False
    #: Paper Table 9 prompt family (fgrpo_sim.llm.evaluation.prompts) and its chat-template keywords (Qwen3 thinking,
    #: Llama date); recorded in the meta file. synlogic_repo: SynLogic checkout for its verifiers.
    model_family: str = "generic"
    chat_template_kwargs: dict | None = None
    synlogic_repo: str | None = None

    def validate(self) -> None:
        check_integer("n", self.n, 1)
        check_range("temperature", self.temperature, 0.0, MAX_TEMPERATURE)
        if 0.0 < self.temperature < MIN_TEMPERATURE:
            raise ValueError(f"temperature must be 0 (greedy) or in [{MIN_TEMPERATURE:g}, {MAX_TEMPERATURE:g}], "
                             f"got {self.temperature:g}")
        check_range("top_p", self.top_p, 0.0, 1.0, low_open=True)
        check_integer("max_new_tokens", self.max_new_tokens, 1)
        check_integer("batch_size", self.batch_size, 1)
        check_integer("seed", self.seed, 0)
        check_choice("backend", self.backend, BACKENDS)
        check_integer("problems_per_call", self.problems_per_call, 0)


def read_existing(path: Path) -> list[dict[str, Any]]:
    """Records already written; a torn final line is removed from the file (it was never complete)."""
    return [record for _, record in read_existing_numbered(path)]


def read_existing_numbered(path: Path) -> list[tuple[int, Any]]:
    """(line number, record) pairs already written; a torn final line is removed from the file."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    keep = raw if raw.endswith(b"\n") or not raw else raw[: raw.rfind(b"\n") + 1]
    from fgrpo_sim.jsonl import decode_utf8, loads, split_lines

    records = []
    try:  # split on "\n" only: a completion may hold U+2028 or U+0085, which splitlines would cut at
        for number, line in enumerate(split_lines(decode_utf8(keep, path, "JSON lines")), start=1):
            if line.strip():
                records.append((number, loads(line, f"{path}: line {number}")))
    except ValueError as exc:
        raise ValueError(f"cannot resume from a damaged file: {exc}") from None
    if len(keep) != len(raw):
        with open(path, "r+b") as fh:
            fh.truncate(len(keep))
    return records


#: Settings that may name a file or folder: the meta file records them relative to `out`'s folder.
_PATH_KEYS = ("model", "data", "synlogic_repo")


def _recorded_paths(settings: EvalSettings, out: Path) -> dict[str, Any]:
    """model / data / synlogic_repo as the meta file records them (relative to out's folder when they are
    paths; a hub id stays), so identical runs in two folders write the same meta file."""
    from fgrpo_sim.atomic_io import recorded_path

    return {k: recorded_path(getattr(settings, k), out) for k in _PATH_KEYS if getattr(settings, k) is not None}


def _meta_path(out: Path) -> Path:
    return out.with_name(out.name + ".meta.json")


def _is_meta(path: Path) -> bool:
    """An earlier meta file of `fgrpo llm eval` (the overwrite rule's recogniser: its settings' keys)."""
    from fgrpo_sim.jsonl import has_keys

    return has_keys(path, ("model", "data", "benchmark"))  # the settings a resume compares


def _check_meta(out: Path, settings: EvalSettings, force: bool = False) -> int:
    """Refuse to resume `out` under other decoding settings; return the largest --samples of earlier runs on it
    (from its meta file; 0 when `out` is new). When `out` is new or empty, a meta file there that this command
    did not write is refused (the overwrite rule; `force` replaces it), before any work; a resume refuses
    any meta file whose settings differ."""
    from fgrpo_sim.atomic_io import check_replaceable

    meta_path = _meta_path(out)
    current = {k: getattr(settings, k) for k in _RESUME_KEYS}
    if not (out.exists() and out.stat().st_size > 0):  # a fresh start: the meta file there must be ours
        check_replaceable(meta_path, "--out's settings file", _is_meta, force=force)
        return 0
    if not meta_path.exists():
        raise ValueError(f"cannot resume {out}: it has no {meta_path.name}, so it was not written by "
                         "`fgrpo llm eval` (use a new --out file)")
    from fgrpo_sim.jsonl import read_json_file

    try:
        previous, why = read_json_file(meta_path, "settings file"), ""
    except ValueError as exc:  # damaged: the reader's reason names the line, key or bytes
        previous, why = None, f" ({exc})"
    if not isinstance(previous, dict):
        raise ValueError(f"cannot resume {out}: its settings file {meta_path} is not a JSON object{why}; "
                         "use a new --out file, or delete both to start afresh")
    recorded = _recorded_paths(settings, out)  # a meta file written before paths were recorded relative: as given
    changed = [k for k in _RESUME_KEYS if previous.get(k) != current[k] and previous.get(k) != recorded.get(k, current[k])]
    if changed:
        k = changed[0]
        raise ValueError(
            f"cannot resume {out}: {k} was {previous.get(k)!r}, now {current[k]!r} (use a new --out file)"
        )
    values = [previous.get("n_max"), previous.get("n")]
    return max([int(v) for v in values if isinstance(v, int) and not isinstance(v, bool)] or [0])


def _write_meta(out: Path, settings: EvalSettings, n_max: int | None = None, force: bool = False) -> None:
    from fgrpo_sim.atomic_io import write_text_atomic

    meta = {**asdict(settings), **_recorded_paths(settings, out)}
    meta["n_max"] = max(settings.n, n_max or 0)  # the largest --samples any run on this file used (resume bound)
    write_text_atomic(_meta_path(out), dumps(meta, indent=2) + "\n", is_ours=_is_meta, force=force,
                      name="--out's settings file")


def check_resumable(numbered: list[tuple[int, Any]], out: Path, problem_ids: set[str], n_bound: int
                    ) -> list[dict[str, Any]]:
    """The records of `out` if every line is one this evaluation could have written; else ValueError naming
    the file and the first bad line (a foreign problem, sample_index outside [0, n_bound), a repeated
    sample, a missing or mistyped field). Nothing of a bad file is carried forward."""
    seen: dict[tuple[str, int], int] = {}
    for line, record in numbered:
        why = None
        if not isinstance(record, dict):
            why = f"a JSON {type(record).__name__}, not an object"
        elif "problem_id" not in record or isinstance(record["problem_id"], (dict, list, bool)) \
                or record["problem_id"] is None:
            why = "no problem_id (a string)"
        elif str(record["problem_id"]) not in problem_ids:
            why = f"problem_id {record['problem_id']!r} is not a problem of this benchmark file"
        elif not isinstance(record.get("sample_index"), int) or isinstance(record.get("sample_index"), bool):
            why = f"sample_index {record.get('sample_index')!r} is not an integer"
        elif not 0 <= record["sample_index"] < n_bound:
            why = f"sample_index {record['sample_index']} is outside [0, n) with n = {n_bound} (the largest --samples used on it)"
        elif not isinstance(record.get("correct"), bool):
            why = f"correct {record.get('correct')!r} is not true/false"
        else:
            key = (str(record["problem_id"]), record["sample_index"])
            if key in seen:
                why = f"it repeats problem {key[0]!r} sample {key[1]} of line {seen[key]}"
            seen[key] = line
        if why is not None:
            raise ValueError(f"cannot resume {out}: line {line}: {why}; fix or delete that line, "
                             "or use a new --out file")
    return [record for _, record in numbered]


def pending_jobs(problems: list[dict[str, str]], n: int, done: set[tuple[str, int]]) -> list[tuple[dict, int]]:
    """(problem, sample_index) pairs still to generate, problem by problem."""
    return [(p, i) for p in problems for i in range(n) if (p["problem_id"], i) not in done]


@dataclass
class Chunk:
    """Samples of one problem requested together: one vLLM request with n = len(indices)."""

    problem: dict
    indices: list[int]

    def seed(self, base_seed: int) -> int:
        return _batch_seed(base_seed, self.problem["problem_id"], self.indices[0])


def chunk_jobs(jobs: list[tuple[dict, int]]) -> list[Chunk]:
    """Consecutive jobs of one problem merged into a chunk (jobs come problem by problem)."""
    chunks: list[Chunk] = []
    for problem, index in jobs:
        if chunks and chunks[-1].problem is problem:
            chunks[-1].indices.append(index)
        else:
            chunks.append(Chunk(problem, [index]))
    return chunks


def plan_calls(jobs: list[tuple[dict, int]], sampler, settings: EvalSettings) -> list[list[Chunk]]:
    """The chunks of each generate call: an engine that schedules itself (vLLM) gets every problem at once
    (or `problems_per_call` problems); batched generate gets `batch_size` samples per call."""
    if getattr(sampler, "schedules_itself", False):
        chunks = chunk_jobs(jobs)
        size = settings.problems_per_call or max(1, len(chunks))
        return [chunks[i : i + size] for i in range(0, len(chunks), size)]
    return [chunk_jobs(jobs[i : i + settings.batch_size]) for i in range(0, len(jobs), settings.batch_size)]


def _batch_seed(seed: int, problem_id: str, sample_index: int) -> int:
    return (seed * 1_000_003 + zlib.crc32(f"{problem_id}\x00{sample_index}".encode())) % (2**31)


def stop_token_ids(model, tokenizer) -> list[int]:
    """Every end-of-sequence id: the generation config's (an int or a list, e.g. Qwen's <|im_end|> and
    <|endoftext|>) and the tokenizer's, in that order, without repeats."""
    ids: list[int] = []
    config_ids = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for value in (config_ids if isinstance(config_ids, (list, tuple)) else [config_ids]) + [tokenizer.eos_token_id]:
        if value is not None and int(value) not in ids:
            ids.append(int(value))
    return ids


def render_prompt(tokenizer, problem: str, system_prompt: str | None, chat_template_kwargs: dict | None = None) -> str:
    """The prompt text the model sees: chat template with generation prompt (plain lines without one)."""
    from fgrpo_sim.llm.evaluation.prompts import render_text

    return render_text(tokenizer, problem, system_prompt, chat_template_kwargs)


class TransformersSampler:
    """Batched `model.generate` sampling (CPU or a single GPU)."""

    def __init__(self, model, tokenizer, settings: EvalSettings):
        import torch

        self.torch = torch
        self.model, self.tokenizer, self.settings = model.eval(), tokenizer, settings
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.stop_ids = stop_token_ids(self.model, self.tokenizer)

    def prompt_text(self, problem: str) -> str:
        return render_prompt(self.tokenizer, problem, self.settings.system_prompt, self.settings.chat_template_kwargs)

    def sample(self, requests: list[tuple[str, int, int]]) -> list[list[tuple[str, int, bool]]]:
        """For each (problem, count, seed): `count` (completion text, completion tokens, finished) tuples.

        One generate call: each prompt is tokenised once and repeated `count` times; torch is seeded with
        the first request's seed.
        """
        torch, s = self.torch, self.settings
        enc = self.tokenizer([self.prompt_text(p) for p, _, _ in requests], return_tensors="pt", padding=True,
                             add_special_tokens=False)
        counts = torch.tensor([c for _, c, _ in requests])
        inputs = {k: v.repeat_interleave(counts, dim=0).to(self.model.device) for k, v in enc.items()}
        torch.manual_seed(requests[0][2])
        with torch.no_grad():
            out = self.model.generate(
                **inputs, do_sample=s.temperature > 0, temperature=s.temperature if s.temperature > 0 else None,
                top_p=s.top_p, top_k=0, max_new_tokens=s.max_new_tokens,
                pad_token_id=self.tokenizer.pad_token_id, eos_token_id=self.stop_ids,
            )
        rows = [self._decode(row) for row in out[:, inputs["input_ids"].shape[1]:].tolist()]
        results, start = [], 0
        for _, count, _ in requests:
            results.append(rows[start : start + count])
            start += count
        return results

    def _decode(self, row: list[int]) -> tuple[str, int, bool]:
        stops = [i for i, t in enumerate(row) if t in self.stop_ids]
        finished = bool(stops)
        tokens = row[: stops[0]] if finished else row
        tokens = [t for t in tokens if t != self.tokenizer.pad_token_id]
        return self.tokenizer.decode(tokens, skip_special_tokens=True), len(tokens), finished

    def generate(self, problems: list[str], seed: int) -> list[tuple[str, int, bool]]:
        """One sample per listed prompt (the request shape before chunks; kept for callers and benchmarks)."""
        return [rows[0] for rows in self.sample([(p, 1, seed) for p in problems])]


class VLLMSampler:
    """vLLM sampling (GPU): one request per chunk with SamplingParams(n=count, seed=chunk seed), all at once."""

    schedules_itself = True

    def __init__(self, settings: EvalSettings):
        from vllm import LLM

        self.settings = settings
        self.llm = LLM(model=settings.model, seed=settings.seed)
        self.tokenizer = self.llm.get_tokenizer()
        from fgrpo_sim.progress import on_terminal

        self.progress = on_terminal()  # vLLM's bar: on a terminal only

    def sample(self, requests: list[tuple[str, int, int]]) -> list[list[tuple[str, int, bool]]]:
        from vllm import SamplingParams

        s = self.settings
        # A seed per request: its n samples come from that request's own generator, so the stream depends
        # only on (seed, problem, first sample index), not on the other requests of the call.
        params = [SamplingParams(n=count, seed=seed, temperature=s.temperature, top_p=s.top_p,
                                 max_tokens=s.max_new_tokens) for _, count, seed in requests]
        prompts = [render_prompt(self.tokenizer, p, s.system_prompt, s.chat_template_kwargs) for p, _, _ in requests]
        outputs = self.llm.generate(prompts, params, use_tqdm=self.progress)
        return [[(o.text, len(o.token_ids), o.finish_reason == "stop") for o in request.outputs]
                for request in outputs]


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
    wait_for_lock: bool = False,
    known_problem_ids: set[str] | None = None,
    force: bool = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """Generate and verify every missing sample, appending records to `out`; returns a summary dict.

    The run holds `out`'s lock (fgrpo_sim.output_lock) from reading what is there to its last line: a
    second run on the same file fails at once with a ValueError naming the lock, or with
    `wait_for_lock` waits and then resumes (so no sample is written twice). Lines already in `out` are
    checked first (`check_resumable`): problem ids must be among `known_problem_ids` (default: those of
    `problems`; the CLI passes the whole benchmark file's ids when --limit is given). `force` replaces an
    `OUT.meta.json` that this command did not write (else refused, before any work).
    Keyword arguments `sampler`, `verifier`, `progress`, `on_batch` are passed on.
    """
    from fgrpo_sim.atomic_io import check_writable
    from fgrpo_sim.output_lock import output_lock

    settings.validate()
    out = check_writable(out, "--out")
    known = set(known_problem_ids) if known_problem_ids is not None else set()
    known |= {str(p["problem_id"]) for p in problems}
    with output_lock(out, wait=wait_for_lock):
        return _run_eval_locked(settings, problems, out, known_problem_ids=known, force=force, **kwargs)


def _run_eval_locked(
    settings: EvalSettings,
    problems: list[dict[str, str]],
    out: Path,
    *,
    known_problem_ids: set[str],
    force: bool = False,
    sampler=None,
    verifier=None,
    progress: bool = True,
    on_batch: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Generate and verify every missing sample, appending records to `out`; returns a summary dict."""
    from fgrpo_sim.progress import bar as progress_bar, show_progress

    from fgrpo_sim.llm.evaluation.grading import BenchmarkGrader

    out.parent.mkdir(parents=True, exist_ok=True)  # run_eval validated settings and resolved `out`
    n_max = _check_meta(out, settings, force)
    # chosen before anything is read or loaded, so a missing vLLM fails at once
    backend = choose_backend(settings.backend) if sampler is None else None
    existing = check_resumable(read_existing_numbered(out), out, known_problem_ids, max(settings.n, n_max))
    done = {(str(r["problem_id"]), int(r["sample_index"])) for r in existing}
    jobs = pending_jobs(problems, settings.n, done)
    # The benchmark's grader (fgrpo_sim.llm.evaluation.grading) unless a test passes its own `verifier.score(text, answer)`.
    grader = None if verifier is not None else BenchmarkGrader(
        settings.benchmark, synlogic_repo=settings.synlogic_repo, fallback_last_number=settings.fallback_last_number,
        problems=problems)  # IFEval needs NLTK data only when one of these problems counts sentences
    if sampler is None and jobs:
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
    _write_meta(out, settings, n_max, force)  # only once the model loaded: a failed start leaves nothing behind
    if hasattr(sampler, "progress"):
        sampler.progress = show_progress(progress)
    bar = progress_bar(total=len(jobs), progress=progress, desc="eval samples", unit="sample")
    calls = 0
    with open(out, "a", encoding="utf-8") as fh:
        for call in plan_calls(jobs, sampler, settings) if jobs else []:
            if hasattr(sampler, "sample"):
                results = sampler.sample([(c.problem["problem"], len(c.indices), c.seed(settings.seed)) for c in call])
            else:  # a sampler with only the per-sample interface (one prompt per sample)
                flat = sampler.generate([c.problem["problem"] for c in call for _ in c.indices], call[0].seed(settings.seed))
                results, start = [], 0
                for c in call:
                    results.append(flat[start : start + len(c.indices)])
                    start += len(c.indices)
            lines = []
            for chunk, samples in zip(call, results, strict=True):
                if len(samples) != len(chunk.indices):
                    raise RuntimeError(f"sampler returned {len(samples)} samples for {len(chunk.indices)} requested")
                for index, (text, num_tokens, finished) in zip(chunk.indices, samples):
                    problem = chunk.problem
                    score = grader.score_record(problem, text) if grader else verifier.score(text, problem["answer"])
                    record = {"problem_id": problem["problem_id"], "sample_index": index, "correct": bool(score.correct),
                              "status": score.status, "num_tokens": int(num_tokens), "finished": bool(finished)}
                    if "choice_order" in problem:  # GPQA: the recorded option order, the right and the chosen letter
                        record.update(choice_order=problem["choice_order"], gold=problem["answer"],
                                      extracted=score.extracted)
                    if settings.save_completions:
                        record["completion"] = text
                    lines.append(dumps(record, ensure_ascii=False) + "\n")
            try:
                fh.write("".join(lines))
                fh.flush()
                os.fsync(fh.fileno())
            except OSError as exc:  # e.g. a full disk: name the file (earlier batches are kept, whole)
                raise ValueError(f"cannot write {out}: {exc.strerror or exc}; the samples written so far "
                                 "are kept and a rerun resumes after them") from None
            bar.update(len(lines))
            calls += 1
            if on_batch is not None:
                on_batch(calls)
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
