"""docs/categorical.md: CategoricalConfig's defaults, Fig 2's grids, the committed sensitivity study
(fgrpo_sim/results/categorical-study.csv), `fgrpo check`'s level and the samplers' constants."""

from __future__ import annotations

import csv
import re
from functools import cache

from doc_census import ROOT, Claim, Given
from doc_claims.formats import sci

WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def _config():
    from fgrpo_sim.sim.categorical.config import CategoricalConfig

    return CategoricalConfig()


def _setup() -> str:
    c = _config()
    return (f"A softmax over {c.num_actions:,} actions ({c.num_correct:,} correct, reward {c.reward_correct:+g}; "
            f"{c.num_actions - c.num_correct:,} incorrect, {c.reward_wrong:g}; logits {c.anchor_logit:.1f} for one "
            f"anchor correct action, {c.correct_logit:.1f} other correct, {c.incorrect_logit:.1f} incorrect)")


def _quick() -> str:
    from fgrpo_sim.figures.categorical import fig2_config

    c = fig2_config(full=False, device="cpu")
    return (f"quick: {WORDS[len(c.group_sizes)]} N from {min(c.group_sizes)} to {max(c.group_sizes)}, gamma "
            f"{' and '.join(f'{g:g}' for g in c.gammas)}, {WORDS[len(c.seeds)]} seed")


def _full() -> str:
    from fgrpo_sim.figures.categorical import fig2_config

    c = fig2_config(full=True, device="cpu")
    return f"the paper's grid: {len(c.group_sizes)} N x {len(c.gammas)} gamma x {len(c.seeds)} seeds"


def _claims_seeds() -> int:
    """`python -m fgrpo_sim.sim.categorical.claims`'s default --seeds (seeds 0..S-1)."""
    from fgrpo_sim.sim.categorical.claims import DEFAULT_SEEDS

    return DEFAULT_SEEDS


def _record() -> str:
    return f"the record: that grid with seeds 0-{_claims_seeds() - 1}, bootstrap intervals per N"


def _lr() -> str:
    return f"lr {sci(_config().lr)} (the paper's)"


def _optimizer() -> str:
    c = _config()
    decay = "no weight decay" if c.weight_decay == 0 else f"weight decay {c.weight_decay:g}"
    return f"eps {sci(c.eps)}, {decay}, {c.steps} steps"


@cache
def _claims_record() -> dict[str, str]:
    """The printed report of `python -m fgrpo_sim.sim.categorical.claims` recorded in benchmarks/RESULTS.md
    ("Categorical claims with 10 seeds"): its verdict line per claim, and its seed count."""
    text = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    section = text.split("## Categorical claims with 10 seeds", 1)[1].split("\n## ", 1)[0]
    lines = {m.group(1): m.group(2) for m in re.finditer(r"^claim (\d), (.*)$", section, re.M)}
    seeds = int(re.search(r"^(\d+) seeds; 95% percentile bootstrap", section, re.M).group(1))
    assert seeds == _claims_seeds() and len(lines) == 3, "RESULTS.md should hold the report of a default run"
    return lines


def _all_claims_hold() -> str:
    """Claims 1 and 2 print their verdict; claim 3 holds where no interval is below 0 and some above it."""
    record = _claims_record()
    first_two = all(re.search(r": yes\b", record[k]) for k in ("1", "2"))
    above, below, _ = _claim3_lists()
    return "All three claims hold" if first_two and above and not below else "Not all three claims hold"


def _claim3_lists() -> tuple[list[int], list[int], list[int]]:
    """Claim 3's N whose interval lies above 0, below 0, and includes 0."""
    import ast

    found = re.findall(r"at N = (\[[^\]]*\]|none)", _claims_record()["3"])
    above, below, zero = (ast.literal_eval(m) if m != "none" else [] for m in found)
    return above, below, zero


def _claim3() -> str:
    """Claim 3's intervals (M_ret at gamma 1 minus gamma 0, per N): above 0 from some N on, 0 inside below it."""
    from fgrpo_sim.sim.categorical.config import PAPER_GROUP_SIZES

    line = _claims_record()["3"]
    above, below, zero = _claim3_lists()
    assert not below and above == [n for n in PAPER_GROUP_SIZES if n >= min(above)], line
    assert zero == [n for n in PAPER_GROUP_SIZES if n < min(above)], line
    return (f"gamma 1 keeps more retained mass at every N >= {min(above)}; at N = {' and '.join(map(str, zero))} "
            f"the interval{'s include' if len(zero) > 1 else ' includes'} 0")


def _bootstrap() -> str:
    import inspect

    from fgrpo_sim.metrics.bootstrap import bootstrap_paired_difference_ci

    level = inspect.signature(bootstrap_paired_difference_ci).parameters["confidence"].default
    return f"a {100 * level:g}% percentile bootstrap over {_claims_seeds()} seeds"


def _no_focal_effect() -> str:
    """At the smallest N of Fig 2 an active group (not all draws alike) has one correct draw of two, so the focal
    weight at gamma 1 is the same constant in every active group."""
    from fgrpo_sim.sim.categorical.config import PAPER_GAMMAS, PAPER_GROUP_SIZES
    from fgrpo_sim.theory.focal import focal_weight

    n = min(PAPER_GROUP_SIZES)
    weights = {focal_weight(k / n, max(PAPER_GAMMAS)) for k in range(1, n)}
    (g,) = weights
    assert (1 / g).is_integer()
    return f"No focal effect at N = {n} under Adam:** g = 1/{int(1 / g)} in every active group"


@cache
def _study() -> list[dict]:
    with (ROOT / "fgrpo_sim" / "results" / "categorical-study.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def _study_size() -> str:
    from fgrpo_sim.sim.categorical.study import STUDY_SEEDS

    rows = _study()
    settings = {r["setting"] for r in rows}
    ns = {int(r["group_size"]) for r in rows}
    gammas = sorted({float(r["gamma"]) for r in rows})
    assert len(rows) == len(settings) * len(ns) * len(gammas), "one row per setting, N and gamma"
    return (f"{len(settings)} settings over {WORDS[len(ns)]} N, gamma {' and '.join(f'{g:g}' for g in gammas)}, "
            f"**{WORDS[len(STUDY_SEEDS)]} seed**")


def _study_sgd() -> str:
    """The study's SGD settings run at the default lr (study_settings only changes optimizer, eps, decay)."""
    from fgrpo_sim.sim.categorical.study import study_settings

    (lr,) = {c.lr for c in study_settings() if c.optimizer == "sgd"}
    assert any(r["setting"].endswith("/sgd") for r in _study())
    return f"SGD at lr {sci(lr)} barely moves"


def _check_level() -> str:
    from fgrpo_sim.sim.checks import FAMILY_FALSE_FAILURE

    return (f"Each interval's level is {FAMILY_FALSE_FAILURE:.1%} divided by the number of intervals (Bonferroni), "
            f"so a correct build fails a whole run with probability at most {FAMILY_FALSE_FAILURE:.1%}")


def _check_counts() -> str:
    from fgrpo_sim.sim.checks import CHECK_COUNTS, INTERVAL_COUNTS

    return (f"A run holds {CHECK_COUNTS['quick']} checks with `--quick` ({INTERVAL_COUNTS['quick']} of them sampling "
            f"intervals) and {CHECK_COUNTS['full']} without ({INTERVAL_COUNTS['full']})")








CLAIMS = [
    Claim(_setup, source="CategoricalConfig's defaults"),
    Claim(_quick, source="figures.categorical.fig2_config(full=False)"),
    Claim(_full, source="figures.categorical.fig2_config(full=True)"),
    Claim(_record, source="sim.categorical.claims: its --seeds default"),
    Claim(_lr, source="CategoricalConfig's default lr"),
    Claim(_optimizer, source="CategoricalConfig's defaults: eps, weight_decay, steps"),
    Claim(_bootstrap, source="metrics.bootstrap's default confidence; sim.categorical.claims' --seeds default"),
    Claim(_all_claims_hold, source="benchmarks/RESULTS.md: the recorded report of sim.categorical.claims"),
    Claim(_claim3, source="benchmarks/RESULTS.md: claim 3's line of the recorded report of sim.categorical.claims"),
    Claim(_no_focal_effect, source="theory.focal.focal_weight at Fig 2's smallest N and gamma 1"),
    Claim(_study_size, source="fgrpo_sim/results/categorical-study.csv; study.STUDY_SEEDS"),
    Claim(_study_sgd, source="study.study_settings(): the SGD settings' lr"),
    Claim(_check_level, source="sim.checks.FAMILY_FALSE_FAILURE"),
    Claim(_check_counts, source="sim.checks.CHECK_COUNTS, INTERVAL_COUNTS (tests/test_check.py counts the checks)"),
]

GIVEN: list[Given] = []
