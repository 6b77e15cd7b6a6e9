"""Stand-ins for the population builders and sweeps that fgrpo_sim/sim/population_claims.py calls: no population is
built and nothing trains; every sweep a claims script asks for is recorded. Shared by tests/test_sim_kills_rep.py
and tests/test_sim_mutation_kills.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class Captured(Exception):
    """Raised by a stand-in sweep when no `frame` is set: the script's population and variants are recorded."""


@dataclass(frozen=True)
class Sweep:
    """One sweep a claims script asked for."""

    kind: str  # which builder made its population: "per-prompt" (make_population) or "shared"
    pop: object  # the population spec the builder was given
    specs: list  # the training specs, in the script's order
    device: str


@dataclass
class StandInSweeps:
    """What the stand-ins saw: `calls`, every sweep in order. A sweep returns `frame` (the script's result table),
    or raises Captured while `frame` is None."""

    calls: list = field(default_factory=list)
    frame: object = None

    @property
    def last(self) -> Sweep:
        return self.calls[-1]


def stand_in_sweeps(monkeypatch) -> StandInSweeps:
    """Replace both population builders and both sweeps (population.py's and population_shared.py's)."""
    import fgrpo_sim.sim.population as population
    import fgrpo_sim.sim.population_shared as shared

    seen = StandInSweeps()
    # a built population is its builder's kind beside its spec, so a sweep can record which builder made it
    monkeypatch.setattr(population, "make_population", lambda spec: ("per-prompt", spec))
    monkeypatch.setattr(shared, "make_shared_population", lambda spec: ("shared", spec))

    def sweep(pop, specs, device="auto"):
        seen.calls.append(Sweep(kind=pop[0], pop=pop[1], specs=list(specs), device=device))
        if seen.frame is None:
            raise Captured
        return seen.frame

    monkeypatch.setattr(population, "run_sweep", sweep)
    monkeypatch.setattr(shared, "run_shared_sweep", sweep)
    return seen
