"""fgrpo-sim: reference toolkit for F-GRPO (arXiv 2602.06717).

Subpackages:
  theory   sympy derivations, lambdified into vectorised numeric functions
  core     the algorithm in pure torch (group statistics, advantages, focal weight, losses)
  metrics  unbiased pass@k and the paper's paired subsampling test
  sim      categorical and multi-prompt simulators, Monte Carlo checks
  llm      F-GRPO / F-DAPO / F-CISPO on TRL (training/, evaluation/)
  verl     the same estimators as a verl plugin
  maze     the single-solution Maze task
  figures  one function per figure (data in, matplotlib Figure out)
  rehearsal, commands, cli   the command line, and the LLM protocol rehearsed through it
"""

__version__ = "0.1.0"

#: Ctrl-C's one line when no output is locked: cli.main prints it, and so does the entry point (__main__.run)
#: when Ctrl-C comes while the command line is still importing, before cli.main can catch anything.
INTERRUPTED_LINE = ("fgrpo: interrupted; outputs are replaced only when complete, so none is half-written: "
                    "run the command again")


def exit_130():
    """sys.exit(130) after a caught Ctrl-C: exit status 130, wherever the KeyboardInterrupt was raised.

    CPython (seen on 3.11.7) sets a process-wide flag when a KeyboardInterrupt leaves code run by exec() or eval()
    of a string, and a later catch does not clear it; under `python -m` the interpreter then ends by re-raising
    SIGINT on itself (status -2) instead of exiting with the SystemExit's 130. namedtuple evals and dataclasses
    exec strings, so Ctrl-C landing on a lazy import that builds one printed the one line and died by the signal
    (a CI flake; tests/test_cli_signals.py makes it happen). Evaluating a string clears the flag first.
    """
    import sys

    eval("None")  # a constant of our own; the call is for its reset of CPython's unhandled-Ctrl-C flag
    sys.exit(130)
