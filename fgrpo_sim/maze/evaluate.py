"""Held-out evaluation: exact target probabilities, sampled pass@K with the unbiased estimator.

Every maze has exactly one correct completion. Under temperature-1 sampling of the full distribution
(as in training), the chance that one sample equals it is the teacher-forced sequence probability p, so
  * pass@K = 1 - (1 - p)^K exactly (`exact_pass_at_k`), from one forward pass, and
  * the number c of correct samples among n independent samples is Binomial(n, p). Drawing n samples
    token by token and counting exact matches is the same process: all samples still on the target share
    one history, hence one next-token distribution, so each step keeps each of them with the same chance
    p_t (binomial thinning) and the survivors after the last token number Binomial(n, prod p_t).
    `sampled_correct_counts` draws c that way, which makes n = 2048 samples on hundreds of mazes free;
    `generated_correct_counts` does it the slow way with `model.generate` (used to cross-check in tests
    and available with `--sampler generate`).
The headline numbers (Table 4, Fig 6) are the paper's unbiased estimator pass@k(n, c, k) over those c.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from fgrpo_sim.maze.generator import Maze
from fgrpo_sim.maze.tokenizer import prompt_text, target_text
from fgrpo_sim.validation import check_integer


def target_log_probs(model, tokenizer, mazes: Sequence[Maze], batch_size: int = 256) -> np.ndarray:
    """log P(target completion | prompt) for each maze under temperature-1 sampling (one forward pass)."""
    import torch

    from fgrpo_sim.maze.sft import encode_examples

    ids, labels = encode_examples(mazes, tokenizer)
    device = next(model.parameters()).device
    ids, labels = ids.to(device), labels.to(device)
    attention = (ids != tokenizer.pad_token_id).long()
    out = np.empty(len(mazes))
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for lo in range(0, len(mazes), batch_size):
            logits = model(input_ids=ids[lo:lo + batch_size], attention_mask=attention[lo:lo + batch_size]).logits
            logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
            lab = labels[lo:lo + batch_size, 1:]
            mask = lab != -100
            tok = torch.gather(logp, 2, lab.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            out[lo:lo + batch_size] = (tok * mask).sum(dim=1).double().cpu().numpy()
    model.train(was_training)
    return out


def exact_pass_at_k(log_p: np.ndarray, ks: Sequence[int]) -> dict[int, float]:
    """Mean over mazes of the true pass@k = 1 - (1 - p)^k, computed stably from log p."""
    p = np.clip(np.exp(np.asarray(log_p, dtype=float)), 0.0, 1.0 - 1e-16)
    return {int(k): float(np.mean(-np.expm1(k * np.log1p(-p)))) for k in ks}


def sampled_correct_counts(log_p: np.ndarray, n_samples: int, seed: int) -> np.ndarray:
    """Correct-sample counts c ~ Binomial(n_samples, p) per maze (see the module docstring for why)."""
    n_samples = int(check_integer("n_samples", n_samples, 1, 10**9))
    rng = np.random.default_rng(int(seed))
    return rng.binomial(n_samples, np.clip(np.exp(np.asarray(log_p, dtype=float)), 0.0, 1.0))


def generated_correct_counts(model, tokenizer, mazes: Sequence[Maze], n_samples: int, *, seed: int,
                             chunk: int = 1024) -> np.ndarray:
    """Correct-sample counts by really generating `n_samples` completions per maze with `model.generate`."""
    import torch

    from fgrpo_sim.maze.reward import exact_match_reward

    n_samples = int(check_integer("n_samples", n_samples, 1, 10**7))
    targets = tokenizer([target_text(m) for m in mazes])["input_ids"]
    max_new = max(len(t) for t in targets) + 1
    torch.manual_seed(int(seed))
    counts = np.zeros(len(mazes), dtype=np.int64)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for i, maze in enumerate(mazes):
            prompt = torch.tensor([tokenizer(prompt_text(maze))["input_ids"]], device=model.device)
            for lo in range(0, n_samples, chunk):
                b = min(chunk, n_samples - lo)
                out = model.generate(
                    input_ids=prompt.expand(b, -1), attention_mask=torch.ones(b, prompt.shape[1], dtype=torch.long, device=model.device),
                    do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=max_new,
                    eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                )[:, prompt.shape[1]:].tolist()
                for seq in out:
                    if tokenizer.eos_token_id in seq:
                        seq = seq[: seq.index(tokenizer.eos_token_id) + 1]
                    counts[i] += int(exact_match_reward(seq, targets[i]))
    model.train(was_training)
    return counts


def pass_at_k_from_counts(n: int, counts: np.ndarray, ks: Sequence[int]) -> dict[int, float]:
    """Mean over mazes of the unbiased pass@k(n, c, k) (Chen et al. 2021)."""
    from fgrpo_sim.metrics import pass_at_k

    return {int(k): float(np.mean(pass_at_k(n, np.asarray(counts), k))) for k in ks}
