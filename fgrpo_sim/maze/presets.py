"""Experiment presets: `paper` documents App. K's setup, `cpu` is what a 2-core laptop can afford, `tiny` is for tests."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from fgrpo_sim.maze.model import ModelSpec
from fgrpo_sim.validation import check_choice


@dataclass(frozen=True)
class MazePreset:
    name: str
    size: int  # grid squares per side, border included (paper: 17, i.e. 8 x 8 cells)
    n_train: int  # training mazes (SFT and RL draw from the same pool)
    n_heldout: int  # held-out mazes, never in the training pool
    model: ModelSpec
    sft_steps: int
    sft_batch: int
    sft_lr: float
    sft_warmup: int
    rl_steps: int
    rl_prompts_per_step: int  # prompts per RL step; each gets N rollouts
    rl_lr: float
    rl_warmup: int
    eval_every: int  # RL steps between held-out evaluations (training curves)
    eval_samples: int = 2048  # samples per held-out maze for the unbiased pass@K estimator
    group_sizes: tuple[int, ...] = (4, 8, 16)
    gammas: tuple[float, ...] = (0.0, 0.5, 1.0)
    seeds: int = 3
    heldout_seed: int = 1_000_003  # fixed: every seed is evaluated on the same held-out mazes
    notes: str = ""
    focal_smoothing: float = 0.0  # alpha of F-GRPO's smoothed success estimate (0: the paper's c / N)

    def with_grid(self, group_sizes=None, gammas=None, seeds=None) -> "MazePreset":
        return replace(
            self,
            group_sizes=tuple(group_sizes) if group_sizes is not None else self.group_sizes,
            gammas=tuple(gammas) if gammas is not None else self.gammas,
            seeds=seeds if seeds is not None else self.seeds,
        )

    def to_dict(self) -> dict:
        """The preset as config.json records it; alpha 0 (the paper's estimate) is left out, so folders written
        before `focal_smoothing` existed still describe the same experiment and resume."""
        d = asdict(self)
        if d["focal_smoothing"] == 0.0:
            del d["focal_smoothing"]
        return d


PRESETS: dict[str, MazePreset] = {
    # App. K of the paper (after Tajwar et al. 2026): for a GPU; generating 1M mazes alone takes minutes.
    "paper": MazePreset(
        name="paper", size=17, n_train=1_000_000, n_heldout=256,
        model=ModelSpec(hidden_size=256, num_layers=3, num_heads=8, intermediate_size=1024),  # ~3.2M params
        sft_steps=1500, sft_batch=32, sft_lr=5e-4, sft_warmup=0,
        rl_steps=20_000, rl_prompts_per_step=256, rl_lr=1e-4, rl_warmup=0, eval_every=500,
        group_sizes=(4, 8, 16, 32, 64, 128), seeds=3,
        notes="Paper setup (App. K). Model width/depth are not given in the paper beyond ~3M parameters.",
    ),
    # Budgeted from per-step timings on a shared 2-core CPU; see docs/maze.md.
    "cpu": MazePreset(
        name="cpu", size=7, n_train=4000, n_heldout=256,
        model=ModelSpec(hidden_size=64, num_layers=3, num_heads=4, intermediate_size=256),  # ~0.2M params
        sft_steps=1000, sft_batch=32, sft_lr=3e-3, sft_warmup=50,
        rl_steps=200, rl_prompts_per_step=8, rl_lr=5e-4, rl_warmup=5, eval_every=10,
        notes="7x7 grid (3x3 cells; 88 distinct depth-first layouts, 6336 distinct tasks, so held-out tasks are "
              "unseen (layout, start, goal) triples on layouts that training also uses). 9x9 needed far more SFT "
              "than 2 cores allow (pass@1 ~8% after 800 steps). Short SFT and RL so that 3 seeds x 3 N x 3 gamma "
              "fit in about 30 min of 2 idle cores.",
    ),
    # For tests: seconds, not meaningful.
    "tiny": MazePreset(
        name="tiny", size=7, n_train=200, n_heldout=16,
        model=ModelSpec(hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32, max_positions=64),
        sft_steps=5, sft_batch=8, sft_lr=3e-3, sft_warmup=0,
        rl_steps=2, rl_prompts_per_step=2, rl_lr=1e-3, rl_warmup=0, eval_every=1,
        eval_samples=256, group_sizes=(4,), gammas=(0.0, 1.0), seeds=1,
    ),
}


def get_preset(name: str) -> MazePreset:
    return PRESETS[check_choice("preset", name, tuple(PRESETS))]
