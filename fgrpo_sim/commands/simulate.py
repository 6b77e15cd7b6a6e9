"""`fgrpo simulate ...`: the simulators, one subcommand each (defined in their own modules)."""

import typer

from fgrpo_sim.commands import simulate_categorical, simulate_population, simulate_table2_depth

app = typer.Typer(help="Run the simulators and save tidy result tables.", no_args_is_help=True)
simulate_categorical.register(app)
simulate_population.register(app)
simulate_population.register_group_size(app)
simulate_table2_depth.register(app)
