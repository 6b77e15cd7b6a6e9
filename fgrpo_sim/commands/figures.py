"""`fgrpo figures`: regenerate figures from the registry (PNG at 150 dpi and PDF, written atomically)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer


#: Which figure draws which output (the figures registered with a `load`); `--help` and the error say it.
FROM_HELP = ("fig2 / fig2-full: `fgrpo simulate categorical --out`; fig2-sensitivity: its --study --out; "
             "population-frontier and population-rare-mass: `fgrpo simulate population --out`; population-shared: "
             "the same with --sharing shared; population-group-size and -grid: `fgrpo simulate group-size --out` or its --json "
             "record (.jsonl)")
#: The options that shape a computation, which --from replaces by reading a file.
COMPUTE_OPTIONS = ("full", "yes", "device", "seed", "data_dir")


def _check_from(ctx: typer.Context, names: list[str], registry: dict) -> None:
    """--from draws exactly one named figure that can read a file; options of a computation are refused."""
    from fgrpo_sim.commands.options import refuse_unused

    takes = sorted(n for n, spec in registry.items() if spec.load is not None)
    if len(names) != 1 or registry[names[0]].load is None:
        got = "no figure named" if not names else f"{', '.join(names)}"
        raise ValueError(f"--from draws one figure from a file: name one of {', '.join(takes)} (got {got}), "
                         "e.g. fgrpo figures fig2 --from my.csv")
    refuse_unused(ctx, COMPUTE_OPTIONS, "is not used with --from (the figure is drawn from the file, not computed)")


def register(app: typer.Typer) -> None:
    @app.command("figures", short_help="Regenerate the figures as PNG and PDF (see --list).")
    def figures_command(
        ctx: typer.Context,
        names: Optional[List[str]] = typer.Argument(
            None, help="Figures to build, each once (default: every figure in the default set). See --list."
        ),
        out: Path = typer.Option(Path("build/figures"), "--out", help="Output folder for NAME.png and NAME.pdf "
                                 "(default build/figures, outside git; `--out figures` replaces the committed copies)."),
        list_: bool = typer.Option(False, "--list", help="List the registered figures and exit."),
        full: bool = typer.Option(False, "--full", help="Use the paper's exact (slow) grids instead of quick presets. "
                                  "For fig6-maze / fig7-maze that is the paper-size Maze (App. K: days on a GPU): "
                                  "refused unless its results exist or you add --yes."),
        yes: bool = typer.Option(False, "--yes", help="Confirm a computation that takes days (fig6-maze / fig7-maze "
                                 "--full without finished results); without it such a figure stops with a one-line "
                                 "message naming the command that runs the experiment."),
        device: str = typer.Option("auto", "--device", help="Torch device for simulation figures: auto (CUDA when present), cpu, cuda."),
        seed: int = typer.Option(0, "--seed", help="Base random seed for simulation figures, in [0, 2^32 - 1]."),
        data_dir: Optional[Path] = typer.Option(
            None, "--data-dir", help="Folder for cached simulation results, reused by the next run (default: "
            "runs/figure-data, created in the working folder when a figure simulates; a notice on stderr says so)."
        ),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="Show progress bars."),
        force: bool = typer.Option(False, "--force", help="Replace a NAME.png / NAME.pdf in OUT that this tool did "
                                   "not write there (its hidden manifest .fgrpo-sim-outputs.json lists ours)."),
        from_file: Optional[Path] = typer.Option(
            None, "--from", metavar="FILE", help="Draw one figure from your own output file instead of computing it: "
            f"{FROM_HELP}. Name the figure, e.g. `fgrpo figures fig2 --from my.csv`."),
    ) -> None:
        """Regenerate figures (paper numbering: fig1a, fig2, fig3, ...) into OUT as PNG and PDF."""
        from fgrpo_sim.commands.deprecated import current_figure_names
        from fgrpo_sim.figures.registry import FigureOptions, figure_files, figure_folder, load_all, save_figure

        registry = load_all()
        if list_:
            width = max((len(n) for n in registry), default=4)
            for name, spec in sorted(registry.items()):
                flag = "" if spec.in_default_set else "  [not in default set]"
                typer.echo(f"{name:<{width}}  {spec.description}{flag}")
            return
        selected = current_figure_names(names) if names else [n for n, s in sorted(registry.items()) if s.in_default_set]
        unknown = [n for n in selected if n not in registry]
        if unknown:
            raise ValueError(
                f"unknown figure name(s) {', '.join(unknown)}; NAME must be one of {', '.join(sorted(registry))}"
            )
        if from_file is not None:
            _check_from(ctx, selected if names else [], registry)
        from fgrpo_sim.atomic_io import check_writable_dir
        from fgrpo_sim.validation import check_integer

        check_integer("--seed", seed, 0, 2**32 - 1)
        from fgrpo_sim.sim.categorical import resolve_device

        resolve_device(device)  # mps / meta / a missing GPU: one line now, not a traceback inside a figure
        check_writable_dir(out, "--out")  # before any figure is computed
        figure_folder(out, force).check([f for name in selected for f in figure_files(name)])
        if data_dir is not None:
            check_writable_dir(data_dir, "--data-dir")
        options = FigureOptions(full=full, device=device, seed=seed, progress=progress, yes=yes,
                                data_dir=data_dir if data_dir is not None else Path("runs/figure-data"))
        for name in selected:  # refuse days of work before any figure starts, not after the first ones
            if registry[name].preflight is not None:
                registry[name].preflight(options)

        from fgrpo_sim.atomic_io import remove_stale_temp_files

        for folder in (out, options.data_dir):  # hidden temp files of a killed run (never a live run's)
            remove_stale_temp_files(folder)
        import matplotlib.pyplot as plt

        cache_existed = options.data_dir.exists()
        for name in selected:
            spec = registry[name]
            fig = spec.draw(spec.load(from_file) if from_file is not None else spec.compute(options))
            paths = save_figure(fig, out, name, force=force)
            plt.close(fig)
            typer.echo(f"{name}: " + ", ".join(str(p) for p in paths))
        if not cache_existed and options.data_dir.exists():  # the one folder we leave beside OUT: say so once
            typer.echo(f"fgrpo: simulation results cached in {options.data_dir} (reused by the next run; delete it "
                       "to recompute, or pass --data-dir)", err=True)
