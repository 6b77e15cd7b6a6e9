"""Which optional extra (pyproject's [project.optional-dependencies]) brings which importable package.

A base install (`pip install fgrpo-sim`, or `make figures`' .venv) has the theory, simulators and figures; the LLM
commands and the Maze experiment need the `llm` extra, the verl plugin the `verl` one, `--executor ray` the
`cluster` one (ray; the verl extra brings it too). A command run without its
extra fails in one line that names the extra and the command installing it (`missing_extra_line`, used by
cli.main), not with a ModuleNotFoundError traceback. tests/extras.py uses the same table.
"""

from __future__ import annotations

#: top-level module -> the extra that installs it (its own distribution or one it depends on and we import)
EXTRA_OF = {
    "trl": "llm", "transformers": "llm", "accelerate": "llm", "datasets": "llm", "math_verify": "llm",
    "if_verifiable": "llm", "yaml": "llm", "huggingface_hub": "llm", "safetensors": "llm", "tokenizers": "llm",
    "verl": "verl", "ray": "cluster", "hydra": "verl", "omegaconf": "verl", "transfer_queue": "verl",
    "vllm": "vllm", "deepspeed": "deepspeed",
    "jupytext": "notebooks", "nbclient": "notebooks", "ipykernel": "notebooks", "nbconvert": "notebooks",
}
#: the clone's make target that builds the environment holding each extra (README, "Which environment")
MAKE_TARGET = {"verl": "make install-verl", "cluster": "make install-cluster"}


def install_line(extra: str) -> str:
    """The command that installs EXTRA: from the package index, and from a clone."""
    return f'pip install "fgrpo-sim[{extra}]" (in a clone: {MAKE_TARGET.get(extra, "make install")})'


def missing_extra_line(module: str | None) -> str | None:
    """One line for a ModuleNotFoundError of MODULE when an extra provides it; None for any other module
    (a genuine bug or a broken install then keeps its traceback)."""
    extra = EXTRA_OF.get((module or "").split(".")[0])
    if extra is None:
        return None
    return f"this command needs the {extra} extra ({module.split('.')[0]} is not installed): {install_line(extra)}"



def require(*modules: str) -> None:
    """Raise ModuleNotFoundError (one line through cli.main) for the first of MODULES not installed: for a
    command that would otherwise start work, and write files, before its first import of the extra."""
    import importlib.util

    missing = next((m for m in modules if importlib.util.find_spec(m) is None), None)
    if missing is not None:
        raise ModuleNotFoundError(f"No module named {missing!r}", name=missing)
