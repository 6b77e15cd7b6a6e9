"""How the population simulators' logits depend on the trained parameters: logits = M theta.

An LLM has no parameter per solution mode: every coordinate its optimizer normalises mixes many modes.
The population simulators used to give each strategy (action) its own logit parameter, so Adam's
per-coordinate second moment saw a rare strategy's own sparse gradients only (issue 28). Here the logits
are a fixed linear map M of a parameter vector theta, with three choices of M ([K, D], K logits):

* ``axis``: M = I (D = K), one parameter per logit, the simulators' original form.
* ``orthogonal``: a Haar-random orthogonal M (D = K). The function class, the initial policy and plain
  SGD's trajectory are those of ``axis`` (s' = M (theta - lr M^T g) = s - lr g, because M M^T = I); only
  an optimizer that is not rotation-invariant (Adam) sees a difference: each coordinate mixes every mode.
* ``dense``: a Gaussian M of shape [K, width * K], entries N(0, 1 / D), so E[M M^T] = I: a larger
  parameter space in which each logit is a sum over many coordinates and each coordinate touches every
  logit. SGD now follows s' = s - lr M M^T g (close to, not equal to, ``axis``).

theta0 is the least-norm solution of M theta0 = s0 (M has full row rank), so every parametrisation starts
from the same logits. The map is drawn from its own seed, so it is reproducible and independent of the
population's draw.
"""

from __future__ import annotations

import numpy as np
import torch

from fgrpo_sim.validation import check_choice, check_integer

PARAMETRISATIONS = ("axis", "orthogonal", "dense")
DENSE_WIDTH = 4  # dense: D = DENSE_WIDTH x K parameters
_MAP_SALT = 28  # keeps the map's stream apart from the population's, which uses the same seed


def logit_map(kind: str, num_logits: int, seed: int, width: int = DENSE_WIDTH) -> np.ndarray:
    """M [num_logits, D] (float64) of parametrisation `kind`, drawn from `seed`."""
    check_choice("parametrisation", kind, PARAMETRISATIONS)
    check_integer("num_logits", num_logits, 1, 100_000)
    check_integer("seed", seed, 0, 2**63 - 1)
    check_integer("width", width, 2, 1000)
    if kind == "axis":
        return np.eye(num_logits)
    rng = np.random.default_rng([int(seed), _MAP_SALT])
    if kind == "orthogonal":
        q, r = np.linalg.qr(rng.standard_normal((num_logits, num_logits)))
        return q * np.sign(np.diag(r))[None, :]  # sign fix: Haar-distributed (Mezzadri 2007)
    d = width * num_logits
    return rng.standard_normal((num_logits, d)) / np.sqrt(d)


def initial_parameters(m: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """theta0 [..., D] with theta0 @ M^T = logits [..., K]: the least-norm solution (M full row rank)."""
    return np.asarray(logits, dtype=float) @ np.linalg.pinv(m).T


class LinearLogits(torch.nn.Module):
    """A trainable theta [..., D] and fixed M [K, D]; `logits()` = theta @ M^T ([..., K]).

    With ``axis`` theta is the logits themselves (no product), so that path computes exactly what the
    simulators computed before the option existed.
    """

    def __init__(self, initial_logits: torch.Tensor, kind: str = "axis", seed: int = 0, width: int = DENSE_WIDTH):
        super().__init__()
        self.kind = kind
        k = initial_logits.shape[-1]
        m = logit_map(kind, k, seed, width)
        if kind == "axis":
            self.theta = torch.nn.Parameter(initial_logits.clone())
            self.register_buffer("m", None)
        else:
            theta0 = initial_parameters(m, initial_logits.detach().cpu().to(torch.float64).numpy())
            self.theta = torch.nn.Parameter(torch.as_tensor(theta0, dtype=initial_logits.dtype,
                                                            device=initial_logits.device))
            self.register_buffer("m", torch.as_tensor(m, dtype=initial_logits.dtype, device=initial_logits.device))

    def logits(self) -> torch.Tensor:
        return self.theta if self.m is None else self.theta @ self.m.T


__all__ = ["PARAMETRISATIONS", "DENSE_WIDTH", "logit_map", "initial_parameters", "LinearLogits"]
