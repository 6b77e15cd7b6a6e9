"""Mutation testing of the numerical core with mutmut 3: how many planted errors the tests (or `fgrpo check --quick`)
catch, per module, printed as one JSON object.

A benchmark, not part of `make test` or CI: it takes minutes to hours. mutmut lives in a venv of its own that sees
the project's venv through a .pth file (`make mutation` builds it), so the project's pinned set stays untouched.

Each (mode, module) runs in its own scratch folder build/mutation/MODE-MODULE/ (a copy of fgrpo_sim/, tests/ and
pyproject.toml with a [tool.mutmut] section appended), so runs never share mutmut's state and the clone gets no
mutants/ folder. mutmut runs, per mutant, only the tests that called the mutated function (its stats pass), with
pytest -x, each in a process forked from one that has already imported torch and the package.

Modes:
* unit: the unit-test files that cover the module (MODULES below: the smallest set, so a run finishes).
* check: one test that runs `fgrpo check --quick --device cpu` in-process and asserts it passes.

Counts per run: killed (a test failed), survived (every selected test passed), timeout (counted as caught: the
mutant made the code hang; each of mutmut's timeouts is run again un-forked and takes that run's verdict, since a
forked child can also hang on a lock copied by the fork: recheck_timeouts), no_tests (no selected test calls the
function: counted as not caught), skipped, suspicious, segfault (counted as not caught), not_checked (left out by
--only).
score = (killed + timeout) / (killed + timeout + survived + no_tests + suspicious + segfault).

Usage: python benchmarks/mutation.py --modules core,metrics --modes unit [--max-children 1] [--keep]
       (or `make mutation MUTATION_MODULES=core,metrics MUTATION_MODES=unit`)
       --only PATTERNS limits a run to some mutants: `--modes check --modules core --only "fgrpo_sim.core.focal.*"`
       --sample K --seed S tests a uniform random sample of K of the module's mutants (drawn without replacement,
       seeded, after --only), for modules too large to run whole here (sim/ has about 15,000 mutants). The score
       is then an estimate of the module's, printed with its 95% Wilson interval ("score_ci"); the sampled names
       are listed in the output, so a sample can be re-run after new tests. A second sample with another seed,
       drawn after the tests written for the first, measures the module without the first sample's bias.
       --rejudge OUT.json re-judges the timeouts of a run made with --keep before recheck_timeouts existed.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# module -> (files mutmut mutates, unit-test files that cover them). Graders: the math-verify reward (training and
# evaluation) and the evaluation's grading rules.
MODULES = {
    "core": (["fgrpo_sim/core/*"],
             ["tests/test_core_groups.py", "tests/test_core_losses.py", "tests/test_core_focal_metrics.py",
              "tests/test_core_edges.py"]),
    "metrics": (["fgrpo_sim/metrics/*"],
                ["tests/test_metrics.py", "tests/test_bootstrap.py", "tests/test_paired_tests.py",
                 "tests/test_results_columns.py", "tests/test_metrics_edges.py",
                 "tests/test_metrics_mutation_kills.py"]),
    "theory": (["fgrpo_sim/theory/*"],
               ["tests/test_theory_tail_miss.py", "tests/test_theory_peak.py", "tests/test_theory_focal.py",
                "tests/test_theory_categorical.py", "tests/test_theory_derivations.py",
                "tests/test_theory_smoothing.py", "tests/test_theory_mutation_kills.py",
                "tests/test_theory_mutation_kills2.py",
                "tests/test_theory_mutation_kills3.py"]),
    "sim": (["fgrpo_sim/sim/*"],
            ["tests/test_sim_categorical.py", "tests/test_sim_streams.py", "tests/test_sim_torch_step.py",
             "tests/test_sim_counts_beyond_2_24.py", "tests/test_population.py", "tests/test_parametrisation.py",
             "tests/test_group_size_study.py", "tests/test_group_size_report.py",
             # checks.py, checks_exact.py and montecarlo.py (fgrpo check), the resume sidecars and result_table,
             # the categorical claims, group_size_resume: no file above calls them
             "tests/test_check.py", "tests/test_population_resume.py", "tests/test_categorical_claims.py",
             "tests/test_figure_records.py", "tests/test_sim_categorical_layout.py", "tests/test_blind_spots.py",
             # compiled.py's trust rule, the categorical study's claims, and the tests written for sim's mutants
             "tests/test_cache_trust.py", "tests/test_sim_categorical_figures.py", "tests/test_sim_mutation_kills.py",
             "tests/test_sim_mutation_kills2.py",
             "tests/test_sim_kills_rep.py",  # stratum simrep (issue 44): report, claims, result table, table2 depth
             "tests/test_sim_kills_chk.py",  # the simchk stratum (checks, checks_exact, montecarlo, executor, ...)
             "tests/test_sim_kills_pop.py",  # stratum simpop: population*.py against an independent numpy replay
             "tests/test_sim_kills_gs.py",  # the group-size stratum's (issue 44, n-simgs)
             "tests/test_sim_kills_cat.py",  # stratum simcat: sim/categorical/'s mutants (issue 44)
             "tests/test_sim_kills_round2.py",  # the survivors of the five strata's second fresh samples (seed 303)
             "tests/test_sim_kills_round3.py",  # the survivors of the strata's third fresh samples (seed 404)
             "tests/test_sim_kills_open.py",  # the mutants left open after round 3 (report, DrawPlan, native)
             "tests/test_sim_kills_round4a.py",  # the fourth fresh samples' survivors (seed 505), strata rep and chk
             "tests/test_sim_kills_round4b.py",  # the fourth fresh samples' survivors (seed 505), stratum pop
             "tests/test_sim_kills_round4c.py",  # the fourth fresh samples' survivors (seed 505), strata gs and cat
             "tests/test_sim_kills_round5a.py",  # the fifth fresh samples' survivors (seed 606), strata pop, rep, chk
             "tests/test_sim_kills_round5b.py",  # the fifth fresh samples' survivors (seed 606), strata gs and cat
             "tests/test_sim_kills_round6a.py",  # the sixth fresh samples' survivors (seed 707), strata pop, rep, chk
             "tests/test_sim_kills_round6b.py",  # the sixth fresh samples' survivors (seed 707), strata gs and cat
             # table2_depth.py and table2_depth_record.py (issue 48): sample C found no selected test calling them
             "tests/test_table2_depth.py"]),
    "graders": (["fgrpo_sim/llm/evaluation/grading.py", "fgrpo_sim/llm/rewards.py"],
                ["tests/test_llm_grading.py", "tests/test_llm_rewards.py", "tests/test_llm_ifeval_eval.py",
                 "tests/test_graders_mutation_kills.py", "tests/test_graders_mutation_kills2.py",
                 "tests/test_graders_mutation_kills3.py", "tests/test_grader_kills_open.py"]),
}
MODES = ("unit", "check")

CHECK_TEST = '''"""Written by benchmarks/mutation.py: a mutant is caught when `fgrpo check --quick` fails."""
from fgrpo_sim.cli import main


def test_check_quick_passes():
    try:
        main(["check", "--quick", "--device", "cpu", "--no-progress"])
        code = 0
    except SystemExit as exc:
        code = exc.code
    assert code in (0, None)
'''

# Appended to the scratch copy's tests/conftest.py. mutmut 3.8's fork runner runs the stats and clean passes in its
# own process and forks every mutant's test run from it, so a functools cache filled there (theory's sympy
# derivations, their lambdified functions, the graders' parses) hides a mutant of any function called only on a
# cache miss: the child returns the clean run's value. Emptied before each test, not once per run: mutmut picks a
# mutant's tests by what each test called in the stats pass, and with caches kept between tests only the first
# test to fill one would count as calling what lies behind it.
FRESH_CACHES = '''

def pytest_runtest_setup(item):  # written by benchmarks/mutation.py: every test starts with empty caches
    import sys

    for name, module in list(sys.modules.items()):
        if name.split(".")[0] != "fgrpo_sim" or module is None:
            continue
        for value in list(vars(module).values()):
            if callable(getattr(value, "cache_clear", None)) and getattr(value, "__module__", None) == name:
                value.cache_clear()
'''

# top-level files and folders the selected tests read (copied into the scratch folder and on into mutants/)
ALSO_COPY = ("docs", "README.md", "DEVELOPERS.md", "benchmarks", "notebooks", "recipes", "Makefile",
             "constraints.txt", "constraints-oldest.txt")

STATS_KEYS = ("killed", "survived", "timeout", "no_tests", "skipped", "suspicious", "segfault", "not_checked")


def _toml_list(items) -> str:
    return "[" + ", ".join(json.dumps(str(i)) for i in items) + "]"


def prepare(work: Path, module: str, mode: str) -> None:
    """A fresh scratch copy of the package and tests with mutmut's config for this (mode, module)."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    shutil.copytree(ROOT / "fgrpo_sim", work / "fgrpo_sim", ignore=ignore)
    shutil.copytree(ROOT / "tests", work / "tests", ignore=ignore)
    for name in ALSO_COPY:  # what some tests read beside the package (docs they check, benchmark records)
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, work / name, ignore=ignore, symlinks=True)
        elif src.exists():
            shutil.copy2(src, work / name)
    with open(work / "tests" / "conftest.py", "a") as conftest:
        conftest.write(FRESH_CACHES)
    globs, tests = MODULES[module]
    if mode == "check":
        (work / "tests" / "test_mutation_check_quick.py").write_text(CHECK_TEST)
        tests = ["tests/test_mutation_check_quick.py"]
    tests = [t for t in tests if (work / t).exists()]
    config = (
        "\n\n[tool.mutmut]\n"
        'source_paths = ["fgrpo_sim"]\n'
        f"also_copy = {_toml_list(n for n in ALSO_COPY if (ROOT / n).exists())}\n"
        f"only_mutate = {_toml_list(globs)}\n"
        f"pytest_add_cli_args = {_toml_list(['-x', '-q', '-p', 'no:cacheprovider', '-p', 'no:randomly'])}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(tests)}\n"
        # the covering tests' times vary on a shared machine: a generous multiplier keeps slow-but-right
        # mutants from being called timeouts
        "timeout_multiplier = 10.0\n"
        "timeout_constant = 5.0\n"
        "use_git_change_detection = false\n"
    )
    (work / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + config)


# mutmut 3.8's exit-code verdicts (mutmut/stats.py, status_by_exit_code); any other code is "suspicious"
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no_tests", 33: "no_tests", 34: "skipped", 36: "timeout",
          -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", -11: "segfault", -9: "segfault",
          None: "not_checked"}


def verdicts(work: Path, only: list[str]) -> dict[str, str]:
    """mutant name -> verdict, read from mutmut's per-file .meta records (the mutants `only` matches, else all)."""
    out = {}
    exact = {p for p in only if not any(c in p for c in "*?[")}  # a sample's names: a set lookup, not fnmatch
    patterns = [p for p in only if p not in exact]
    for meta in sorted((work / "mutants").rglob("*.py.meta")):
        for name, code in json.loads(meta.read_text()).get("exit_code_by_key", {}).items():
            if not only or name in exact or any(fnmatch.fnmatch(name, pattern) for pattern in patterns):
                out[name] = STATUS.get(code, "suspicious")
    return out


# mutmut 3.8 has no "generate only" command: these are the first steps of its `run` (mutmut/__main__.py, _run),
# which write every mutant's name into mutants/**/*.py.meta without testing any
GENERATE = """
import os
from mutmut.__main__ import (copy_also_copy_files, copy_src_dir, create_mutants, set_mutant_under_test,
                             setup_source_paths, store_lines_covered_by_tests)
set_mutant_under_test("mutant_generation")
os.makedirs("mutants", exist_ok=True)
copy_src_dir(); copy_also_copy_files(); setup_source_paths(); store_lines_covered_by_tests(); create_mutants(1)
"""


def sample_names(work: Path, mutmut: Path, env: dict, only: list[str], k: int, seed: int) -> tuple[list[str], int]:
    """A seeded uniform sample of k mutant names (of those `only` matches) and how many there were to draw from."""
    subprocess.run([str(mutmut.parent / "python"), "-c", GENERATE], cwd=work, env=env, check=True,
                   capture_output=True)
    names = sorted(verdicts(work, only))  # sorted: the sample depends on the seed, not on the files' walk order
    return sorted(random.Random(seed).sample(names, min(k, len(names)))), len(names)


def _covering_tests(work: Path) -> dict[str, list[str]]:
    """function key (a mutant's name before "__mutmut_") -> the tests mutmut's stats pass saw calling it."""
    stats = json.loads((work / "mutants" / "mutmut-stats.json").read_text())
    return {key: sorted(tests) for key, tests in stats["tests_by_mangled_function_name"].items()}


def recheck_timeouts(work: Path, python: Path, env: dict, found: dict[str, str], limit_s: float = 900.0,
                     run=subprocess.run) -> dict[str, str]:
    """Run each "timeout" mutant's tests again, un-forked (MUTANT_UNDER_TEST set, plain pytest), and return its
    verdict there: "killed" (a test failed), "survived" (all passed) or "timeout" (still over limit_s).

    Why: mutmut forks every mutant's test run from a process that has imported torch, and a lock held by another
    thread at the fork can leave the child waiting forever (one thread on a futex, no CPU). mutmut's wall limit then
    ends it with SIGXCPU and records a timeout, which counts as caught, whatever the mutant does. Seen on a
    mutant whose tests all pass un-forked (sim's seed-505 sample), so every timeout is re-judged here."""
    tests_of = _covering_tests(work)
    out = {}
    for name in sorted(n for n, v in found.items() if v == "timeout"):
        # test functions, not parametrised ids: a mutant can change the parameters a test is collected with (without
        # the native kernel, `[...-native]` cases are not collected), and an id pytest cannot find ends the run with
        # exit 4 before any test runs, a "suspicious" verdict for a mutant a listed test kills (seed 606, _load_native)
        tests = sorted({test.split("[", 1)[0] for test in tests_of.get(name.rsplit("__mutmut_", 1)[0], [])})
        if not tests:  # no test calls it: pytest without test ids would run the whole folder instead
            out[name] = "no_tests"
            continue
        try:
            proc = run([str(python), "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                        *tests], cwd=work / "mutants", env={**env, "MUTANT_UNDER_TEST": name},
                       capture_output=True, text=True, timeout=limit_s)
        except subprocess.TimeoutExpired:
            out[name] = "timeout"
            continue
        out[name] = {0: "survived", 1: "killed"}.get(proc.returncode, "suspicious")
    return out


def wilson(caught: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95% Wilson score interval of a proportion (a sampled score's uncertainty; exact enough at these sizes)."""
    p = caught / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def run_one(module: str, mode: str, mutmut: Path, max_children: int, keep: bool, only: list[str],
            sample: int = 0, seed: int = 0) -> dict:
    work = _work_dir(mode, module)
    prepare(work, module, mode)
    env = _mutant_env()
    start = time.perf_counter()
    names, population = only, None
    if sample:
        names, population = sample_names(work, mutmut, env, only, sample, seed)
    proc = subprocess.run([str(mutmut), "run", "--max-children", str(max_children), *names], cwd=work, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        return {"module": module, "mode": mode, "error": (proc.stdout + proc.stderr)[-2000:], "wall_s": round(wall, 1)}
    row = {"module": module, "mode": mode, "only": only or None}
    if sample:
        row["sample"] = {"k": len(names), "seed": seed, "of": population, "names": names}
    row = _judged(row, work, mutmut, env, names)
    row["wall_s"] = round(wall, 1)
    if not keep:
        shutil.rmtree(work)
    return row


def _work_dir(mode: str, module: str) -> Path:
    """The scratch folder of one (mode, module) run: its copy of the package, mutmut's state and verdicts."""
    return ROOT / "build" / "mutation" / f"{mode}-{module}"


def _mutant_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the mutants, not the clone, are imported
    # one thread per forked worker: OpenMP's pool does not survive fork, and the machine is shared
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", FGRPO_CACHE_DIR=str(ROOT / "build" / "mutation" / "cache"),
               CI="true", MPLBACKEND="Agg")
    return env


def _judged(row: dict, work: Path, mutmut: Path, env: dict, names: list[str]) -> dict:
    """row with mutmut's verdicts for `names` (read from `work`), its timeouts judged again un-forked
    (recheck_timeouts), counted: the verdict counts, the score (and its interval for a sample), the names not caught."""
    found = verdicts(work, names)
    rechecked = recheck_timeouts(work, mutmut.parent / "python", env, found)
    found.update(rechecked)
    row = {**row, "mutants": len(found), **{k: sum(v == k for v in found.values()) for k in STATS_KEYS}}
    caught = row["killed"] + row["timeout"]
    judged = caught + row["survived"] + row["no_tests"] + row["suspicious"] + row["segfault"]
    row["score"] = round(caught / judged, 4) if judged else None
    if "sample" in row:
        row["score_ci"] = [round(b, 4) for b in wilson(caught, judged)] if judged else None
    row["timeouts_rechecked"] = rechecked  # mutmut's timeouts, judged again un-forked (recheck_timeouts)
    row["not_caught"] = sorted(name for name, v in found.items() if v in ("survived", "no_tests", "suspicious"))
    return row


def rejudge(output: dict, mutmut: Path) -> dict:
    """An earlier run's printed JSON with its timeouts judged again un-forked, read from its kept scratch folders
    (`--keep`): for runs made before recheck_timeouts existed."""
    runs = []
    for row in output["runs"]:
        names = row["sample"]["names"] if "sample" in row else (row["only"] or [])
        kept = {k: row[k] for k in ("module", "mode", "only", "sample") if k in row}
        judged = _judged(kept, _work_dir(row["mode"], row["module"]), mutmut, _mutant_env(), names)
        runs.append({**judged, "wall_s": row["wall_s"]})
    return {**output, "runs": runs}


def _version(mutmut: Path) -> str:
    code = "import importlib.metadata as m; print(m.version('mutmut'))"
    return subprocess.run([str(mutmut.parent / "python"), "-c", code], capture_output=True, text=True).stdout.strip()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modules", default="core,metrics", help=f"comma-separated, from {','.join(MODULES)}")
    parser.add_argument("--modes", default="unit", help="comma-separated, from unit,check")
    parser.add_argument("--max-children", type=int, default=1, help="mutants tested at once (the machine is shared)")
    parser.add_argument("--mutmut", default=str(ROOT / ".venv-mut" / "bin" / "mutmut"), help="the mutmut executable")
    parser.add_argument("--keep", action="store_true", help="keep build/mutation/MODE-MODULE (for `mutmut show`)")
    parser.add_argument("--only", default="", help="comma-separated mutant name patterns (fnmatch, e.g. "
                        "'fgrpo_sim.core.focal.*'): test and count only these (a check-mode run of a whole module "
                        "takes hours here)")
    parser.add_argument("--sample", type=int, default=0, help="test a seeded random sample of this many mutants "
                        "per module (0: all); the score then comes with its 95%% interval")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    parser.add_argument("--rejudge", metavar="JSON", help="instead of a run: re-judge the timeouts of an earlier "
                        "run's output, made with --keep in this clone, un-forked, and print it again")
    args = parser.parse_args(argv)
    if args.sample < 0:
        sys.exit(f"mutation.py: error: --sample must be >= 0 (0: every mutant), got {args.sample}")
    modules = [m for m in args.modules.split(",") if m]
    modes = [m for m in args.modes.split(",") if m]
    for name, allowed, given in (("--modules", MODULES, modules), ("--modes", MODES, modes)):
        bad = [g for g in given if g not in allowed]
        if bad or not given:
            sys.exit(f"mutation.py: error: {name} must be from {','.join(allowed)}, got {','.join(bad) or 'nothing'}")
    mutmut = Path(args.mutmut)
    if not mutmut.exists():
        sys.exit(f"mutation.py: error: no mutmut at {mutmut} (run `make mutation`, which installs it)")
    if args.rejudge:
        try:
            output = json.loads(Path(args.rejudge).read_text())
            runs = [(row["mode"], row["module"], row["wall_s"]) for row in output["runs"]]
        except (OSError, ValueError, KeyError, TypeError) as err:
            sys.exit(f"mutation.py: error: --rejudge must name a mutation.py output (JSON with runs), got "
                     f"{args.rejudge} ({err.__class__.__name__}: {err})")
        for mode, module, _ in runs:
            if not (_work_dir(mode, module) / "mutants" / "mutmut-stats.json").exists():
                sys.exit(f"mutation.py: error: --rejudge needs the run's kept folder {_work_dir(mode, module)} "
                         "(run with --keep, in this clone), which is missing")
        print(json.dumps(rejudge(output, mutmut), indent=1))
        return
    only = [p for p in args.only.split(",") if p]
    runs = [run_one(module, mode, mutmut, args.max_children, args.keep, only, args.sample, args.seed)
            for mode in modes for module in modules]
    print(json.dumps({"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                      "mutmut": _version(mutmut),
                      "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
