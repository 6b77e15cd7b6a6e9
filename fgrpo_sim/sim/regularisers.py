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

DS-GRPO (differential smoothing, ../shared/paper-digest.md sec. 9) is not here. Its advantage A_i -/+ gamma *
log pi_old(y_i) depends on the sampled strategy, so it misses the study's advantage tables (indexed by the group's
correct count alone); it does fit the count form of the gradient (a per-strategy term weighted by the counts), so it
is cheap to add, but the F-GRPO paper gives no coefficient for it and none was pre-registered.
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


__all__ = ["entropy_kl_gradient"]
