"""dNLL_rare (paper App. M.2): how much less likely a trained model finds rare correct trajectories.

Recipe of the paper: sample many rollouts of the base model on training prompts (256 prompts x 800),
keep the correct ones, take the top 1% by the base model's length-normalised NLL (the "rare" correct
trajectories, 1,263 in the paper), and report, for each trained model, the mean NLL of that fixed
set minus the base model's. Positive = the trained model moved probability away from rare solutions.

At that scale (about 200k trajectories of up to 8192 tokens, a 7B model) the scoring here:
* puts each model on the GPU in bf16 when one is present (float32 on CPU), one model at a time;
* scores only what the recipe needs: the base model the correct trajectories, each trained model the
  selected ones;
* sorts sequences by length and pads each batch only to its own longest sequence, longest first
  (an out-of-memory error shows in the first batch, not hours in);
* never materialises the logits of a whole batch over the vocabulary: the decoder's hidden states at
  the completion positions go through the output layer `logit_chunk` positions at a time, with the
  log-softmax in float32 (a 152k vocabulary x 8192 tokens x 8 sequences would be 40 GB of logits);
* shows a progress bar (stderr) per model.

Trajectory file (JSON lines): `completion` (str), `correct` (bool) and either `problem` (str) or a
`problem_id` looked up in a benchmark-schema data file (so `fgrpo llm eval --save-completions` output
works directly).
"""

from __future__ import annotations

import math
from typing import Any

from fgrpo_sim.validation import check_integer, check_range


def _completion_logprobs(model, ids, attention, target_mask, logit_chunk: int):
    """log p(token) at every target position, (number of targets,) in float32, in row-major order.

    Uses the decoder's last hidden state and the output layer in chunks of positions; models whose
    forward transforms the logits further (final softcapping) or that expose no decoder take the plain
    forward pass instead.
    """
    import torch

    targets = ids[:, 1:][target_mask[:, 1:]]
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    plain = decoder is None or head is None or getattr(model.config, "final_logit_softcapping", None) is not None
    if plain:
        logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1][target_mask[:, 1:]]
        return torch.log_softmax(logits.float(), dim=-1).gather(-1, targets[:, None]).squeeze(-1)
    hidden = decoder(input_ids=ids, attention_mask=attention).last_hidden_state[:, :-1][target_mask[:, 1:]]
    parts = []
    for start in range(0, hidden.shape[0], logit_chunk):
        logits = head(hidden[start : start + logit_chunk]).float()
        parts.append(torch.log_softmax(logits, dim=-1).gather(-1, targets[start : start + logit_chunk, None]).squeeze(-1))
    return torch.cat(parts) if parts else hidden.new_zeros(0, dtype=torch.float32)


def length_normalised_nll(
    model, tokenizer, prompts: list[str], completions: list[str], batch_size: int = 8, *,
    logit_chunk: int = 1024, progress: bool = False, desc: str = "scoring",
) -> list[float]:
    """Mean -log p(token) over each completion's tokens, given its prompt text (teacher forcing), in input order.

    Prompt and completion are tokenised separately (the completion's tokens are exactly the scored ones).
    Batches of `batch_size` sequences of similar length (sorted, longest first), right-padded. NaN for an
    empty completion.
    """
    import torch
    from fgrpo_sim.progress import bar as progress_bar

    check_integer("batch_size", batch_size, 1)
    check_integer("logit_chunk", logit_chunk, 1)
    model.eval()
    rows = [(tokenizer(p, add_special_tokens=False)["input_ids"], tokenizer(c, add_special_tokens=False)["input_ids"])
            for p, c in zip(prompts, completions, strict=True)]
    order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]) + len(rows[i][1]), reverse=True)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    out = [math.nan] * len(rows)
    bar = progress_bar(total=len(rows), progress=progress, desc=desc, unit="seq")
    for start in range(0, len(order), batch_size):
        batch = order[start : start + batch_size]
        width = max(len(rows[i][0]) + len(rows[i][1]) for i in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        target_mask = torch.zeros((len(batch), width), dtype=torch.bool)
        for row, i in enumerate(batch):  # right padding; completion tokens are the targets
            p_ids, c_ids = rows[i]
            seq = p_ids + c_ids
            ids[row, : len(seq)] = torch.tensor(seq)
            attention[row, : len(seq)] = 1
            target_mask[row, len(p_ids) : len(seq)] = True
        ids, attention, target_mask = (t.to(model.device) for t in (ids, attention, target_mask))
        with torch.no_grad():
            logp = _completion_logprobs(model, ids, attention, target_mask, logit_chunk)
        counts = target_mask[:, 1:].sum(dim=1).tolist()
        sums = torch.zeros(len(batch), dtype=torch.float64, device=logp.device)
        row_of_target = torch.repeat_interleave(torch.arange(len(batch), device=logp.device),
                                                target_mask[:, 1:].sum(dim=1))
        sums.index_add_(0, row_of_target, -logp.double())
        for row, i in enumerate(batch):
            out[i] = sums[row].item() / counts[row] if counts[row] > 0 else math.nan
        bar.update(len(batch))
    bar.close()
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


def _load_for_scoring(name: str, device: str):
    """(model, tokenizer): bf16 on a GPU, the checkpoint's float32 on CPU."""
    import torch

    from fgrpo_sim.llm.tiny import load_model_and_tokenizer

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    on_gpu = device.startswith("cuda")
    return load_model_and_tokenizer(name, dtype=torch.bfloat16 if on_gpu else None, device=device if on_gpu else None)


def _release_memory() -> None:
    """Return freed GPU memory; the caller must have dropped its own reference to the model first."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def dnll_rare(
    trajectories: list[dict[str, Any]],
    base: str,
    models: list[str],
    *,
    system_prompt: str | None,
    top_fraction: float = 0.01,
    batch_size: int = 8,
    device: str = "auto",
    progress: bool = False,
) -> dict[str, Any]:
    """{selected, selected_indices (0-based positions in `trajectories`), base_nll, per model: nll and dnll}
    on the rare-correct subset chosen by the base model.

    The base model scores only the correct trajectories; each trained model only the selected ones.
    `device`: "auto" (a GPU in bf16 when present, else CPU in float32), "cpu" or a CUDA device.
    """
    from fgrpo_sim.llm.evaluation.evaluate import render_prompt

    check_dnll_options(top_fraction, batch_size)
    correct = [i for i, r in enumerate(trajectories) if r.get("correct")]
    if not correct:  # fail before loading any model
        raise ValueError(f"the trajectory file has no correct trajectory to select from ({len(trajectories)} lines)")
    completions = [r["completion"] for r in trajectories]
    base_model, tokenizer = _load_for_scoring(base, device)
    scored = length_normalised_nll(
        base_model, tokenizer, [render_prompt(tokenizer, trajectories[i]["problem"], system_prompt) for i in correct],
        [completions[i] for i in correct], batch_size, progress=progress, desc="base model, correct trajectories")
    base_all = [math.nan] * len(trajectories)
    for i, value in zip(correct, scored):
        base_all[i] = value
    del base_model  # one model in memory at a time: the caller's name is what keeps it alive
    _release_memory()
    chosen = select_rare_correct(trajectories, base_all, top_fraction)
    base_mean = sum(base_all[i] for i in chosen) / len(chosen)
    result: dict[str, Any] = {"trajectories": len(trajectories), "correct": len(correct), "base_scored": len(correct),
                              "selected": len(chosen), "selected_indices": sorted(chosen), "base": base,
                              "base_nll": base_mean, "models": {}}
    for name in models:
        model, model_tokenizer = _load_for_scoring(name, device)
        sel_prompts = [render_prompt(model_tokenizer, trajectories[i]["problem"], system_prompt) for i in chosen]
        nll = length_normalised_nll(model, model_tokenizer, sel_prompts, [completions[i] for i in chosen], batch_size,
                                    progress=progress, desc=f"{name}, selected")
        del model
        _release_memory()
        mean = sum(nll) / len(nll)
        result["models"][name] = {"nll": mean, "dnll_rare": mean - base_mean}
    return result
