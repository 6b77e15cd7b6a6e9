"""dNLL_rare (paper App. M.2): how much less likely a trained model finds rare correct trajectories.

Recipe of the paper: sample many rollouts of the base model on training prompts (256 prompts x 800),
keep the correct ones, take the top 1% by the base model's length-normalised NLL (the "rare" correct
trajectories, 1,263 in the paper), and report, for each trained model, the mean NLL of that fixed
set minus the base model's. Positive = the trained model moved probability away from rare solutions.

Trajectory file (JSON lines): `completion` (str), `correct` (bool) and either `problem` (str) or a
`problem_id` looked up in a benchmark-schema data file (so `fgrpo llm eval --save-completions` output
works directly).
"""

from __future__ import annotations

import math
from typing import Any

from fgrpo_sim.validation import check_integer, check_range


def length_normalised_nll(model, tokenizer, prompts: list[str], completions: list[str], batch_size: int = 8) -> list[float]:
    """Mean -log p(token) over each completion's tokens, given its prompt text (teacher forcing)."""
    import torch

    check_integer("batch_size", batch_size, 1)
    model.eval()
    out: list[float] = []
    for start in range(0, len(prompts), batch_size):
        rows, lengths = [], []
        for prompt, completion in zip(prompts[start : start + batch_size], completions[start : start + batch_size]):
            p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            c_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
            rows.append((p_ids, c_ids))
            lengths.append(len(p_ids) + len(c_ids))
        width = max(lengths)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        target_mask = torch.zeros((len(rows), width), dtype=torch.bool)
        for i, (p_ids, c_ids) in enumerate(rows):  # right padding; completion tokens are the targets
            seq = p_ids + c_ids
            ids[i, : len(seq)] = torch.tensor(seq)
            attention[i, : len(seq)] = 1
            target_mask[i, len(p_ids) : len(seq)] = True
        ids, attention, target_mask = (t.to(model.device) for t in (ids, attention, target_mask))
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
        logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        mask = target_mask[:, 1:]
        nll = -(logp * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
        for value, n_tokens in zip(nll.tolist(), mask.sum(dim=1).tolist()):
            out.append(value if n_tokens > 0 else math.nan)
    return out


def select_rare_correct(records: list[dict[str, Any]], base_nll: list[float], top_fraction: float = 0.01) -> list[int]:
    """Indices of the correct trajectories with the highest base NLL (top `top_fraction`, at least one)."""
    check_range("top_fraction", top_fraction, 0.0, 1.0, low_open=True)
    correct = [i for i, r in enumerate(records) if r.get("correct") and not math.isnan(base_nll[i])]
    if not correct:
        raise ValueError("the trajectory file has no correct trajectory to select from")
    keep = max(1, round(top_fraction * len(correct)))
    return sorted(correct, key=lambda i: base_nll[i], reverse=True)[:keep]


def check_dnll_options(top_fraction: float, batch_size: int) -> None:
    """The numeric options of `dnll_rare`, checked before any file is read or model loaded."""
    check_range("top_fraction", top_fraction, 0.0, 1.0, low_open=True)
    check_integer("batch_size", batch_size, 1)


def dnll_rare(
    trajectories: list[dict[str, Any]],
    base: str,
    models: list[str],
    *,
    system_prompt: str | None,
    top_fraction: float = 0.01,
    batch_size: int = 8,
) -> dict[str, Any]:
    """{selected, base_nll, per model: nll and dnll} on the rare-correct subset chosen by the base model."""
    from fgrpo_sim.llm.evaluate import render_prompt
    from fgrpo_sim.llm.tiny import load_model_and_tokenizer

    check_dnll_options(top_fraction, batch_size)
    if not any(r.get("correct") for r in trajectories):  # fail before loading any model
        raise ValueError(f"the trajectory file has no correct trajectory to select from ({len(trajectories)} lines)")
    base_model, tokenizer = load_model_and_tokenizer(base)
    prompts = [render_prompt(tokenizer, r["problem"], system_prompt) for r in trajectories]
    completions = [r["completion"] for r in trajectories]
    base_all = length_normalised_nll(base_model, tokenizer, prompts, completions, batch_size)
    chosen = select_rare_correct(trajectories, base_all, top_fraction)
    base_mean = sum(base_all[i] for i in chosen) / len(chosen)
    result: dict[str, Any] = {"trajectories": len(trajectories), "correct": sum(bool(r.get("correct")) for r in trajectories),
                              "selected": len(chosen), "base": base, "base_nll": base_mean, "models": {}}
    for name in models:
        model, model_tokenizer = load_model_and_tokenizer(name)
        sel_prompts = [render_prompt(model_tokenizer, trajectories[i]["problem"], system_prompt) for i in chosen]
        nll = length_normalised_nll(model, model_tokenizer, sel_prompts, [completions[i] for i in chosen], batch_size)
        mean = sum(nll) / len(nll)
        result["models"][name] = {"nll": mean, "dnll_rare": mean - base_mean}
    return result
