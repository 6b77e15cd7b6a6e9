"""Table 3's entropy bonus and KL-to-start penalty as exact logit-space gradients (issue 48, round two).

The group-size study's policy is an explicit softmax per prompt, pi = softmax(z), so both controls of the paper's
Table 3 have closed-form gradients in z (no sampling, no estimator):

    d H(pi) / d z            = -pi * (log pi + H)
    d KL(pi || pi0) / d z    =  pi * (log pi - log pi0 - KL)

The study's loss is a token mean over the B x N one-token rollouts of a step; every rollout of prompt b sits at
the same distribution pi_b, so the token mean of H (or KL) is the mean over the B prompts. The loss the trainer
minimises becomes  L_pg - c_H * mean_b H(pi_b) + c_KL * mean_b KL(pi_b || pi0_b)  (verl's entropy_coeff and
kl_loss_coef on the same token-mean loss, with the KL exact instead of an estimator on the sampled token);
pi0 is each prompt's starting policy. With both coefficients zero the trainer never calls this (bit for bit the
study without controls).

DS-GRPO (differential smoothing, Eq. 6 of arXiv 2511.19942; ../shared/paper-digest.md sec. 9) changes each
rollout's advantage to A_i - gamma_p log pi_old(y_i) if it is correct, A_i + gamma_n log pi_old(y_i) if not. The
term depends on the sampled strategy, so it misses the study's advantage tables (indexed by the group's correct
count alone), but it fits the count form of the gradient: every rollout of strategy k carries the same term, so
`ds_gradient` weights it by the counts c_k like the policy-gradient term (at ratio 1, pi_old = pi, detached). A
one-token rollout has one log-prob, so the source's open choice (summed or length-normalised) does not arise. The
F-GRPO paper gives no coefficient for it: the study runs none unless asked (`ds_coefs`).
"""

from __future__ import annotations

import torch


def entropy_kl_gradient(logp: torch.Tensor, logp0: torch.Tensor, entropy_coef: torch.Tensor,
                        kl_coef: torch.Tensor) -> torch.Tensor:
    """d/dz of -c_H mean_b H(pi_b) + c_KL mean_b KL(pi_b || pi0_b): log-probs [rows, B, K] (pi and the start's),
    coefficients [rows] -> [rows, K], summed over the batch and divided by B like the policy-gradient term."""
    p = logp.exp()
    entropy = -(p * logp).sum(-1, keepdim=True)
    kl = (p * (logp - logp0)).sum(-1, keepdim=True)
    d_entropy = -p * (logp + entropy)
    d_kl = p * (logp - logp0 - kl)
    grad = -entropy_coef[:, None, None] * d_entropy + kl_coef[:, None, None] * d_kl
    return grad.sum(1) / logp.shape[1]


def ds_gradient(probs: torch.Tensor, counts: torch.Tensor, logp: torch.Tensor, correct: torch.Tensor,
                gamma_p: torch.Tensor, gamma_n: torch.Tensor, group_size: torch.Tensor) -> torch.Tensor:
    """DS-GRPO's extra term of d/dz -(1/(B N)) sum_k c_k A_k^DS log p_k: the advantage shift -gamma_p log p_k on a
    correct strategy, +gamma_n log p_k on a wrong one (detached), [rows, B, K] -> [rows, K] summed over B."""
    shift = torch.where(correct, -gamma_p[:, None, None] * logp, gamma_n[:, None, None] * logp)
    weighted = counts * shift
    grad = -(weighted - probs * weighted.sum(-1, keepdim=True))
    return grad.sum(1) / (probs.shape[1] * group_size.to(probs.dtype))[:, None]


__all__ = ["entropy_kl_gradient", "ds_gradient"]
