"""Doc commands that claim to run do run, on a clone as written, and print what the doc shows.

Convention (DEVELOPERS.md, "Doc commands"): a fenced block right after a line `<!-- doc-test -->` holds
`$ fgrpo ...` commands, each followed by its verbatim output (a `fgrpo: error:` line: the command must
exit 2 with it); a line `... (WHAT is omitted)` stands for
any number of output lines and says so. `<!-- doc-test: slow -->` marks commands that take too long for
the suite: only their subcommand is checked to exist (`--help`). Commands run from the repository root.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!-- doc-test(: slow)? -->$")


def doc_commands() -> list[tuple[str, int, bool, str, list[str]]]:
    """(doc, line, slow, command, expected output lines) for every `$ ` line of a marked block."""
    found = []
    for doc in DOCS:
        lines = doc.read_text().splitlines()
        for i, line in enumerate(lines):
            match = MARKER.match(line.strip())
            if not match:
                continue
            assert lines[i + 1].startswith("```"), f"{doc.name}:{i + 1}: a doc-test marker must precede a fence"
            end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
            current = None
            for j in range(i + 2, end):
                if lines[j].startswith("$ "):
                    current = (doc.name, j + 1, bool(match.group(1)), lines[j][2:], [])
                    found.append(current)
                elif current is not None:
                    current[4].append(lines[j])
    return found


def _matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line (trailing blanks ignored); an `... (` line matches any run of lines."""
    def trim(rows):
        rows = [r.rstrip() for r in rows]
        while rows and not rows[-1]:
            rows.pop()
        return rows

    pattern = "\n".join(".*?" if e.startswith("... (") else re.escape(e) for e in trim(expected))
    return re.fullmatch(pattern, "\n".join(trim(actual)), flags=re.S) is not None


COMMANDS = doc_commands()


def test_marked_blocks_exist_and_elisions_say_so():
    docs = {c[0] for c in COMMANDS}
    assert {"README.md", "maze.md", "theory.md"} <= docs
    for doc, line, _, _, output in COMMANDS:
        for row in output:
            assert row.strip() != "...", f"{doc}:{line}: write '... (what is omitted)', not a bare '...'"


@pytest.mark.parametrize("doc, line, slow, command, expected", COMMANDS,
                         ids=[f"{c[0]}:{c[1]}" for c in COMMANDS])
def test_doc_command_runs_as_written(run_cli, monkeypatch, doc, line, slow, command, expected):
    argv = shlex.split(command)
    assert argv[0] == "fgrpo", f"{doc}:{line}: marked blocks hold fgrpo commands"
    monkeypatch.chdir(ROOT)
    if slow:
        path = [a for a in argv[1:][:2] if not a.startswith("-")]
        path = path[:next((k for k, a in enumerate(argv[1:3]) if a.startswith("-")), 2)]
        result = run_cli(*path, "--help")
        assert result.exit_code == 0 and "Usage" in result.stdout, f"{doc}:{line}: {path} is not a command"
        return
    result = run_cli(*argv[1:])
    refused = any(row.startswith("fgrpo: error:") for row in expected)  # a doc showing an error message
    assert result.exit_code == (2 if refused else 0), f"{doc}:{line}: {command}\n{result.stderr}"
    actual = (result.stdout + result.stderr).splitlines()
    assert _matches(expected, actual), f"{doc}:{line}: {command} printed\n" + "\n".join(actual)


def test_gpu_cost_in_the_docs_is_the_recipe_index_estimate(run_cli):
    """One number, one source: docs/llm.md quotes what `fgrpo llm recipes` estimates."""
    from fgrpo_sim.llm.training.recipe_index import estimate_gpu_hours

    n8, n32 = estimate_gpu_hours(7.6, 8, 8192), estimate_gpu_hours(7.6, 32, 8192)
    text = " ".join((ROOT / "docs" / "llm.md").read_text().split())
    assert f"about {n8['gpu_h']:.0f} H100-hours per N = 8" in text
    assert f"({n8['generation_gpu_h']:.0f} generating, {n8['training_gpu_h']:.0f} training)" in text
    assert f"about {n8['wall_h_on_16']:.0f} hours on 16 H100s" in text and f"(about {n32['gpu_h']:,.0f})" in text
    assert f"about {round(6 * n8['gpu_h'], -2):,.0f} H100-hours for the six runs" in text
    assert f"(~{n8['gpu_h']:.0f} GPU-h, " in run_cli("llm", "recipes").stdout


def test_readme_evaluates_the_folder_the_recipe_trains_into():
    import yaml

    readme = (ROOT / "README.md").read_text()
    train = re.search(r"fgrpo llm train --config (\S+)", readme).group(1)
    output_dir = yaml.safe_load((ROOT / train).read_text())["output_dir"]
    assert f"fgrpo llm eval --model {output_dir} " in readme
    llm = (ROOT / "docs" / "llm.md").read_text()
    train = re.search(r"fgrpo llm train --config (recipes/tiny/f-grpo.yaml)(.*)", llm)
    override = re.search(r"--output_dir (\S+)", train.group(2))
    trained = override.group(1) if override else yaml.safe_load((ROOT / train.group(1)).read_text())["output_dir"]
    assert f"fgrpo llm eval --model {trained} " in llm


def test_population_planner_table_is_the_command_output(run_cli):
    """docs/population.md shows `fgrpo plan --beta 1,1 --rho 0.05,0.2` as a compact table (too wide to show
    verbatim): every cell must still be what the command prints."""
    result = run_cli("plan", "--beta", "1,1", "--rho", "0.05,0.2")
    assert result.exit_code == 0
    printed = {}  # (rho, N) -> row of the command's table
    for line in result.stdout.splitlines():
        cells = line.split()
        if len(cells) == 10 and re.fullmatch(r"0\.\d{4}", cells[0]):
            printed[(cells[0], cells[1])] = cells
    doc = (ROOT / "docs" / "population.md").read_text()
    rows = re.findall(r"^\|(\d+)\|(0\.\d{4})\|([\d.]+)\|(0\.\d{4})\|(0\.\d{4})\|(0\.\d{4})\|(0\.\d{4})\|(0\.\d{4})\|$", doc, re.M)
    assert len(rows) == 8, "the Beta(1, 1) planner table of docs/population.md changed shape"
    for n, active, per_active, weight, tail05, given05, tail2, given2 in rows:
        for rho, tail, given in (("0.0500", tail05, given05), ("0.2000", tail2, given2)):
            row = printed[(rho, n)]
            assert [active, tail, given, per_active, weight] == [row[2], row[3], row[4], row[6], row[8]], (rho, n)
