"""Command groups of the `fgrpo` CLI, one module each (assembled in `fgrpo_sim.cli`)."""
