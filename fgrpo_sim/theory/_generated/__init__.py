"""The closed forms of `theory.lambdified`, one module each, written by `python -m fgrpo_sim.theory.generate`."""
