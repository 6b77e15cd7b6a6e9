"""The import graph of fgrpo_sim: no circle between modules, no import from a lower floor to a higher one.

Every `import` / `from ... import` in every module counts, at module level or inside a function (a
function-level import is still a dependency; it only runs later), and so does a call `__import__("...")` or
`importlib.import_module("...")` of a literal name (the circle through the rehearsal hid behind one). Names
built at run time (the lazy names of `sim/__init__.py`) are not seen. Floors are listed in
FLOORS and in DEVELOPERS.md ("Floors").

Known violations would be listed in KNOWN_CIRCLES / KNOWN_UPWARD (the test fails if one of them no longer
exists, so the lists cannot go stale); since issue 23 item 3 there are none.
"""

from __future__ import annotations

import ast
from pathlib import Path

import fgrpo_sim

PACKAGE_DIR = Path(fgrpo_sim.__file__).resolve().parent

#: Floor of each top-level room (module prefix); a module may import its own floor or a lower one.
FLOORS = {
    # 0: foundations, importing nothing of the package above them
    "fgrpo_sim": 0,  # the package's __init__ (version, docstring)
    "fgrpo_sim.validation": 0,
    "fgrpo_sim.atomic_io": 0,
    "fgrpo_sim.jsonl": 0,
    "fgrpo_sim.csv_rows": 0,
    "fgrpo_sim.output_lock": 0,
    "fgrpo_sim.ownership": 0,
    "fgrpo_sim.recorded_times": 0,
    "fgrpo_sim.packaged": 0,
    "fgrpo_sim.extras": 0,
    "fgrpo_sim.theory": 0,
    "fgrpo_sim.core": 0,
    "fgrpo_sim.metrics": 0,
    # 1: engines and experiments
    "fgrpo_sim.sim": 1,
    "fgrpo_sim.llm": 1,
    "fgrpo_sim.maze": 1,
    "fgrpo_sim.verl": 1,
    "fgrpo_sim.planner": 1,
    # 2: figures (data from the floors below, drawn)
    "fgrpo_sim.figures": 2,
    # 3: the rehearsal, which drives the command line without importing it: its entry point is handed down
    # (`Rehearsal(run_cli=...)`, `probe.main(run_cli=...)`) or run by name (`python -m fgrpo_sim`)
    "fgrpo_sim.rehearsal": 3,
    # 4: the command line
    "fgrpo_sim.commands": 4,
    "fgrpo_sim.cli": 4,
    "fgrpo_sim.__main__": 4,
}

#: Circles (strongly connected sets of modules) allowed for now: none (issue 23 item 3 removed the LLM knot).
KNOWN_CIRCLES: set[frozenset[str]] = set()
#: Upward imports allowed for now: none (the report returns data and the command layer draws; the
#: rehearsal, which drives the command line, lives on its floor).
KNOWN_UPWARD: set[tuple[str, str]] = set()


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def imported_names(path: Path, name: str) -> set[str]:
    """Every dotted name `path` imports (absolute; relative imports resolved), at any depth of the file."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                parent = ".".join(base + ([node.module] if node.module else []))
            else:
                parent = node.module
            # `from pkg import x` names pkg.x: the submodule x where one exists, else (resolved later) pkg
            found.update(f"{parent}.{alias.name}" for alias in node.names)
        elif (isinstance(node, ast.Call) and _names_an_import(node.func) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.add(node.args[0].value)  # __import__("fgrpo_sim.x") / importlib.import_module("fgrpo_sim.x")
    return found


def _names_an_import(func: ast.expr) -> bool:
    """`__import__`, `import_module` or `importlib.import_module`: an import spelled as a call."""
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name in ("__import__", "import_module")


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (a name resolves to the longest module path it starts with)."""
    modules = all_modules()
    graph = {}
    for name, path in modules.items():
        targets = set()
        for imported in imported_names(path, name):
            if not (imported == "fgrpo_sim" or imported.startswith("fgrpo_sim.")):
                continue
            parts = imported.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            target = ".".join(parts)
            # a module's own packages are always imported before it, so naming one adds no dependency
            # (figures.registry finds its siblings through `import fgrpo_sim.figures`)
            if target and not (name == target or name.startswith(target + ".")):
                targets.add(target)
        graph[name] = targets
    return graph


def floor(module: str) -> int:
    room = max((prefix for prefix in FLOORS if module == prefix or module.startswith(prefix + ".")), key=len)
    return FLOORS[room]


def room_of(module: str) -> str:
    return max((prefix for prefix in FLOORS if module == prefix or module.startswith(prefix + ".")), key=len)


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(module, room it imports) for every import from a lower floor to a higher one."""
    return {(module, room_of(target)) for module, targets in graph.items() for target in targets
            if floor(target) > floor(module)}


def test_every_module_has_a_floor():
    unplaced = [m for m in all_modules() if not any(m == p or m.startswith(p + ".") for p in FLOORS)]
    assert not unplaced, f"add these modules' room to FLOORS (and DEVELOPERS.md): {unplaced}"


def test_the_parser_sees_function_level_and_relative_imports(tmp_path):
    pkg = tmp_path / "fgrpo_sim" / "sub"
    pkg.mkdir(parents=True)
    source = pkg / "mod.py"
    source.write_text("import os\nimport importlib\nfrom . import sibling\n\n\ndef f():\n    from fgrpo_sim.core import focal_weight\n"
                      "    __import__('fgrpo_sim.cli', fromlist=['main'])\n    importlib.import_module('fgrpo_sim.metrics')\n")
    names = imported_names(source, "fgrpo_sim.sub.mod")
    assert names == {"os", "importlib", "fgrpo_sim.sub.sibling", "fgrpo_sim.core.focal_weight", "fgrpo_sim.cli",
                     "fgrpo_sim.metrics"}


def test_no_import_circle_between_modules():
    found = set(circles(import_graph()))
    new = found - KNOWN_CIRCLES
    assert not new, "import circles: " + "; ".join(" <-> ".join(sorted(c)) for c in new)
    gone = KNOWN_CIRCLES - found
    assert not gone, f"these known circles are gone, remove them from KNOWN_CIRCLES: {[sorted(c) for c in gone]}"


def test_no_import_from_a_lower_floor_to_a_higher_one():
    found = upward_imports(import_graph())
    new = found - KNOWN_UPWARD
    assert not new, "imports that go up a floor (see FLOORS): " + "; ".join(f"{a} -> {b}" for a, b in sorted(new))
    gone = KNOWN_UPWARD - found
    assert not gone, f"these known upward imports are gone, remove them from KNOWN_UPWARD: {sorted(gone)}"


def test_the_categorical_engine_imports_point_down_its_stages():
    """config -> run -> engine -> kernel (-> compiled): each stage imports only stages below it (and config, which every
    stage reads); the kernel imports nothing of the engine's package."""
    graph = import_graph()
    pkg = "fgrpo_sim.sim.categorical"

    def inside(module):
        return {t.removeprefix(pkg + ".") for t in graph[f"{pkg}.{module}"] if t.startswith(pkg + ".")}

    assert inside("compiled") == set()  # the kernel build and its trust rule
    assert inside("sampling") == {"compiled"}
    assert inside("native") == {"sampling"}
    assert inside("torch_step") == {"sampling"}
    assert inside("config") == {"sampling"}  # backend(): whether this machine runs it natively
    assert inside("engine") == {"config", "native", "sampling", "torch_step"}
    assert inside("run") == {"config", "engine"}
    assert inside("study") == {"config", "run"}


def test_llm_rooms_shared_below_evaluation_below_training():
    """llm/: rewards, hub and tiny import neither room; evaluation never imports training."""
    graph = import_graph()
    llm = "fgrpo_sim.llm"
    shared = {f"{llm}.rewards", f"{llm}.hub", f"{llm}.tiny"}
    rooms = {f"{llm}.training", f"{llm}.evaluation"}
    assert set(all_modules()) >= shared | rooms
    for module in shared:
        assert not {t for t in graph[module] if any(t.startswith(r) for r in rooms)}, module
    for module, targets in graph.items():
        if module.startswith(f"{llm}.evaluation"):
            assert not {t for t in targets if t.startswith(f"{llm}.training")}, module
    # the one bridge: training's held-out pass@k callback evaluates
    assert any(t.startswith(f"{llm}.evaluation") for t in graph[f"{llm}.training.dynamics"])
