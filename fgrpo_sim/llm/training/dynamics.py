"""In-training dynamics (paper App. P, Fig. 7-style curves): held-out pass@1 and pass@k every K steps.

`HeldOutPassAtK` is a `transformers.TrainerCallback`. Every `every` optimizer steps (paper: 25; also at
step 0) it samples `n` completions (paper: 64) for each held-out problem (paper: AIME25), grades them
with the same sampler and verifier as `fgrpo llm eval` (`fgrpo_sim.llm.evaluation.evaluate.TransformersSampler`,
`fgrpo_sim.llm.rewards.MathVerifier`), and logs the unbiased pass@k of Chen et al. 2021
(`fgrpo_sim.metrics.pass_at_k`, averaged over problems). Each record goes to the trainer's
`log_history` (so `trainer_state.json` holds it) and, on the main process, to
`OUTPUT_DIR/dynamics.jsonl`; `fgrpo figures llm-dynamics` draws the curves with the paper's EMA 0.08.

Cost and placement: the sampling runs on every process (a sharded FSDP/ZeRO-3 model needs all ranks in
`generate`), with transformers generate, not vLLM; on a 7B model 30 problems x 64 samples x 8k tokens is
a large fraction of a training step, so raise `dynamics_every` or lower `dynamics_num_generations` when
that matters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from transformers import TrainerCallback

from fgrpo_sim.jsonl import dumps
from fgrpo_sim.metrics import pass_at_k

#: A sampler: (model, tokenizer, problems, n) -> number of correct samples per problem.
CountCorrect = Callable[[Any, Any, list[dict[str, str]], int], Sequence[int]]


def default_ks(n: int) -> list[int]:
    """1, 2, 4, ... up to n (n itself included): the k values logged by default."""
    ks, k = [], 1
    while k < n:
        ks.append(k)
        k *= 2
    return ks + [n]


def check_dynamics_fields(config: Any) -> None:
    """Validate the dynamics_* fields of FocalGRPOConfig (before any model is built)."""
    from fgrpo_sim.validation import check_integer

    if config.dynamics_eval_data is not None and not Path(config.dynamics_eval_data).is_file():
        # checked with the config, so a wrong path fails before any model is loaded (and in --dry-run)
        raise ValueError(f"dynamics_eval_data must be an existing benchmark file, got {config.dynamics_eval_data!r}")
    check_integer("dynamics_every", config.dynamics_every, 1)
    check_integer("dynamics_num_generations", config.dynamics_num_generations, 1)
    if config.dynamics_max_new_tokens is not None:
        check_integer("dynamics_max_new_tokens", config.dynamics_max_new_tokens, 1)
    if config.dynamics_k is not None:
        ks = config.dynamics_k if isinstance(config.dynamics_k, (list, tuple)) else [config.dynamics_k]
        for k in ks:
            check_integer("dynamics_k", k, 1, config.dynamics_num_generations)
        config.dynamics_k = [int(k) for k in ks]


def pass_at_k_record(n: int, correct: Sequence[int], ks: Sequence[int]) -> dict[str, float]:
    """Mean unbiased pass@k over problems for each k: {"dynamics/pass@k": value}."""
    c = np.asarray(list(correct), dtype=np.int64)
    if c.size == 0:
        raise ValueError("correct must hold one count per problem, got none")
    values = pass_at_k(np.full((c.size, 1), n), c[:, None], np.asarray(ks)[None, :]).mean(axis=0)
    return {f"dynamics/pass@{k}": float(v) for k, v in zip(ks, values)}


def transformers_count_correct(
    *, max_new_tokens: int, system_prompt: str | None, temperature: float = 1.0, top_p: float = 1.0,
    batch_size: int = 32, seed: int = 0, fallback_last_number: bool = False,
    chat_template_kwargs: dict | None = None,
) -> CountCorrect:
    """The default sampler: `fgrpo llm eval`'s transformers sampler and math-verify grading on the live model."""

    def count(model, tokenizer, problems, n):
        from fgrpo_sim.llm.evaluation.evaluate import EvalSettings, TransformersSampler
        from fgrpo_sim.llm.rewards import MathVerifier

        settings = EvalSettings(model="<in training>", data="<held-out>", benchmark="generic", n=n,
                                temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens,
                                system_prompt=system_prompt, batch_size=batch_size, seed=seed,
                                chat_template_kwargs=chat_template_kwargs)  # e.g. enable_thinking for Qwen3
        was_training = model.training
        padding_side = tokenizer.padding_side
        sampler = TransformersSampler(model, tokenizer, settings)
        verifier = MathVerifier(fallback_last_number=fallback_last_number)
        jobs = [(i, s) for i in range(len(problems)) for s in range(n)]
        correct = [0] * len(problems)
        try:
            for start in range(0, len(jobs), batch_size):
                chunk = jobs[start : start + batch_size]
                outputs = sampler.generate([problems[i]["problem"] for i, _ in chunk], seed + start)
                for (i, _), (text, _, _) in zip(chunk, outputs):
                    correct[i] += int(verifier.score(text, problems[i]["answer"]).correct)
        finally:
            tokenizer.padding_side = padding_side
            model.train(was_training)
        return correct

    return count


class HeldOutPassAtK(TrainerCallback):
    """Log held-out pass@1 / pass@k every `every` steps (and at step 0 when `at_start`)."""

    def __init__(self, problems: list[dict[str, str]], count_correct: CountCorrect, *, every: int = 25,
                 n: int = 64, ks: Sequence[int] | None = None, log_file: str | Path | None = None,
                 at_start: bool = True):
        from fgrpo_sim.validation import check_integer

        if not problems:
            raise ValueError("problems must hold at least one held-out problem")
        check_integer("every", every, 1)
        check_integer("n", n, 1)
        self.ks = sorted(set([1, *(ks if ks is not None else default_ks(n))]))
        for k in self.ks:
            check_integer("k", k, 1, n)
        self.problems, self.count_correct, self.every, self.n = problems, count_correct, every, n
        self.log_file = Path(log_file) if log_file is not None else None
        self.at_start = at_start
        self._last_step: int | None = None

    def evaluate(self, step: int, model, tokenizer, state=None) -> dict[str, float]:
        correct = list(self.count_correct(model, tokenizer, self.problems, self.n))
        if len(correct) != len(self.problems) or any(not 0 <= c <= self.n for c in correct):
            raise ValueError(f"the sampler must return one count in [0, {self.n}] per problem, got {correct}")
        record = {"step": int(step), **pass_at_k_record(self.n, correct, self.ks),
                  "dynamics/problems": len(self.problems), "dynamics/n": self.n}
        self._last_step = step
        if state is not None:
            state.log_history.append(record)
        if self.log_file is not None and (state is None or state.is_world_process_zero):
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_file, "a", encoding="utf-8") as fh:  # one line per evaluation, appended as it comes
                fh.write(dumps(record) + "\n")
        return record

    def _tokenizer(self, kwargs):
        return kwargs.get("processing_class") or kwargs.get("tokenizer")

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        if self.at_start and state.global_step == 0:
            self.evaluate(0, model, self._tokenizer(kwargs), state)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        step = state.global_step
        if step % self.every == 0 and step != self._last_step:
            self.evaluate(step, model, self._tokenizer(kwargs), state)


def callback_from_config(config: Any, system_prompt: str | None, *, fallback_last_number: bool = False) -> HeldOutPassAtK | None:
    """The callback a FocalGRPOConfig asks for (None when dynamics_eval_data is unset)."""
    if not config.dynamics_eval_data:
        return None
    from fgrpo_sim.llm.evaluation.data import load_benchmark

    problems = load_benchmark(config.dynamics_benchmark, config.dynamics_eval_data)
    count = transformers_count_correct(
        max_new_tokens=config.dynamics_max_new_tokens or config.max_completion_length, system_prompt=system_prompt,
        temperature=config.temperature, top_p=config.top_p if config.top_p is not None else 1.0,
        seed=config.seed, fallback_last_number=fallback_last_number,
        chat_template_kwargs=config.chat_template_kwargs if isinstance(config.chat_template_kwargs, dict) else None,
    )
    return HeldOutPassAtK(problems, count, every=config.dynamics_every, n=config.dynamics_num_generations,
                          ks=config.dynamics_k, log_file=Path(config.output_dir) / "dynamics.jsonl")
