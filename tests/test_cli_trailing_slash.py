"""A file output typed with a trailing "/" (`--out D/new/`) names a folder: refused in one line naming the option,
in every command that writes a file (issue 43). Path("D/new/") is Path("D/new"), so the slash is gone by the time
a command sees its option: the CLI's path type notes the spelling (`cli._guard_empty_paths` ->
`atomic_io.note_typed_path`) and `atomic_io.check_writable`, which every file output passes through, refuses it.
Folder outputs (`figures --out figs/`) keep accepting it."""

from __future__ import annotations

import json

import pytest

from fgrpo_sim import cli

RESULTS = "".join(json.dumps({"problem_id": f"p{i}", "n": 4, "c": i % 3}) + "\n" for i in range(3))
DATA = json.dumps({"problem": "1+1?", "answer": "2"}) + "\n"
OUT = "{tmp}/D/t.csv/"  # a table suffix: the table commands check it first

#: Every path option that names a file the command writes: (argv with OUT in the option's place, input files)
FILE_OUTPUTS = {
    "passk --out": (["passk", "{tmp}/r.jsonl", "--k", "1", "--out", OUT], {"r.jsonl": RESULTS}),
    "passk --plot": (["passk", "{tmp}/r.jsonl", "--k", "1", "--plot", OUT], {"r.jsonl": RESULTS}),
    "simulate categorical --out": (["simulate", "categorical", "--out", OUT, "--n", "4", "--gamma", "0", "--seeds",
                                    "0", "--steps", "2", "--stride", "1", "--num-actions", "20", "--num-correct",
                                    "4", "--no-progress"], {}),
    "simulate population --out": (["simulate", "population", "--out", OUT, "--prompts", "4", "--prompt-batch", "2",
                                   "--steps", "1", "--runs", "1", "--no-progress"], {}),
    "simulate group-size --out": (["simulate", "group-size", "--out", OUT, "--n", "2", "--runs", "1",
                                   "--populations", "2", "--steps", "1", "--no-progress"], {}),
    "simulate table2-depth --out": (["simulate", "table2-depth", "--out", OUT, "--n", "2", "--populations", "2",
                                     "--steps", "1", "--prompt-batch", "2", "--no-progress"], {}),
    "llm prepare-data --out": (["llm", "prepare-data", "{tmp}/s.jsonl", "--out", OUT], {"s.jsonl": DATA}),
    "llm eval --out": (["llm", "eval", "--model", "tiny", "--data", "{tmp}/d.jsonl", "--out", OUT, "--samples", "1",
                        "--no-progress"], {"d.jsonl": DATA}),
    "maze run --summary-copy": (["maze", "run", "--preset", "tiny", "--out", "{tmp}/m", "--summary-copy", OUT,
                                 "--no-progress"], {}),
}
#: Every other path parameter: a folder it writes, or an input it reads (a trailing "/" is no mistake there)
OTHER_PATHS = {"figures --out", "figures --data-dir", "figures --from", "passk RESULTS", "passk --compare", "plan SUCCESS_RATES",
               "llm train --config", "llm eval --data", "llm eval --synlogic-repo", "llm dnll-rare --trajectories",
               "llm dnll-rare --data", "llm report MANIFEST", "llm report --out-dir", "llm report --paper-csv",
               "llm recipes --root", "llm rehearse --out", "llm rehearse --verl-python", "llm export-verl CHECKPOINT",
               "llm export-verl OUT", "maze run --out", "maze run --sft-from", "maze table OUT", "maze compare A",
               "maze compare B"}


def _path_parameters() -> set[str]:
    found = set()

    def walk(command, prefix):
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*prefix, name])
        for param in getattr(command, "params", []):
            if cli._is_path_param(param):
                shown = param.opts[0] if param.param_type_name == "option" else param.name.upper()
                found.add(" ".join([*prefix, shown]))

    walk(cli._command(), [])
    return found


def test_every_path_parameter_is_a_file_output_or_not():
    """A new path option must be sorted here, so a file output cannot miss the trailing-slash case."""
    assert _path_parameters() == set(FILE_OUTPUTS) | OTHER_PATHS
    assert not set(FILE_OUTPUTS) & OTHER_PATHS


def _write(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)


@pytest.mark.parametrize("name", sorted(FILE_OUTPUTS))
def test_a_file_output_ending_in_a_slash_is_refused_naming_the_option(run_cli, tmp_path, name):
    argv, files = FILE_OUTPUTS[name]
    _write(tmp_path, files)
    result = run_cli(*[a.replace("{tmp}", str(tmp_path)) for a in argv])
    option = name.split()[-1]
    assert result.exit_code == 2, (name, result.stdout, result.stderr)
    assert result.stderr.strip() == (f"fgrpo: error: {option} {tmp_path}/D/t.csv/ ends in '/', which names a folder; "
                                     "give a file path"), name
    assert not (tmp_path / "D").exists(), f"{name}: wrote {list((tmp_path / 'D').rglob('*'))}"


def test_a_folder_output_ending_in_a_slash_is_still_a_folder(run_cli, tmp_path):
    result = run_cli("figures", "fig1a", "--out", f"{tmp_path}/figs/", "--no-progress")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "figs" / "fig1a.png").is_file()


def test_the_python_api_refuses_a_file_path_ending_in_a_slash(tmp_path):
    from fgrpo_sim.atomic_io import check_writable, check_writable_dir, write_text_atomic

    with pytest.raises(ValueError, match="out .*/new/ ends in '/', which names a folder; give a file path"):
        check_writable(f"{tmp_path}/new/", "out")
    with pytest.raises(ValueError, match="names a folder"):
        write_text_atomic(f"{tmp_path}/new/", "{}")
    assert check_writable_dir(f"{tmp_path}/new/", "out") is not None  # a folder may say so
    assert check_writable(tmp_path / "new", "out") == tmp_path / "new"  # a Path outside the CLI has no slash
    assert list(tmp_path.iterdir()) == []
