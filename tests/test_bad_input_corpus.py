"""A bad-input corpus over every command (issue 22): each case must end in exit 2 with exactly one line
on stderr that names the file, option or field at fault, no traceback, and no output left behind.

Cases run in-process through `fgrpo_sim.cli.main` (the real entry point). A case is
(id, args, files, needle): `files` maps a path under the test's folder to its content (str or bytes,
a dict/list is written as JSON); `{tmp}` in args and contents is that folder. Inputs that must be
*accepted* (BOM, U+2028, -0, long names, repeated list options) are in VALID below.

Run as a script (`python tests/test_bad_input_corpus.py`) it prints, per failure class, how many cases
fail on the code at hand: tracebacks, wrong exit 0, and errors that do not name what is wrong.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

# ---------------------------------------------------------------- input files the cases share

PASSK_OK = "".join(json.dumps({"problem_id": f"p{i}", "n": 4, "c": i % 5}) + "\n" for i in range(4))
PROBS = {"1": 0.1, "128": 0.5, "256": 0.6}


def _piece(seed=0, n=4, gamma=0.0, **over):
    data = {"seed": seed, "N": n, "gamma": gamma, "seconds": 1.0,
            "curve": [{"step": 0, "train_reward": 0.1, "heldout_pass_at_k": PROBS, "heldout_exact_pass_at_k": PROBS}],
            "heldout": {"pass_at_k": PROBS, "exact_pass_at_k": PROBS}}
    for key, value in over.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


SFT = {"seed": 0, "parameters": 10, "heldout": {"pass_at_k": PROBS, "exact_pass_at_k": PROBS}}


def maze_folder(rl0=None, sft=None, rl1=None) -> dict:
    """A results folder of `maze run` (hand-made pieces, all fields resume and table read)."""
    return {"m/config.json": {"name": "tiny", "size": 5}, "m/seed0/sft.json": SFT if sft is None else sft,
            "m/seed0/rl_N4_gamma0.json": _piece() if rl0 is None else rl0,
            "m/seed0/rl_N4_gamma1.json": _piece(gamma=1.0) if rl1 is None else rl1}


EVAL_FILE = "".join(json.dumps({"problem_id": f"q{i}", "n": 2, "c": i % 3}) + "\n" for i in range(3))


def manifest(**row) -> dict:
    base = {"comparison": "G", "role": "baseline", "method": "GRPO", "run": "g", "epoch": "1", "step": "10",
            "compute": "10", "benchmark": "math500", "file": "e.jsonl"}
    focal = {**base, "role": "focal", "method": "F-GRPO", "run": "f", "file": "f.jsonl"}
    base.update(row)
    head = list(base)
    lines = [",".join(head)] + [",".join(str(r.get(h, "")) for h in head) for r in (base, focal)]
    return {"man.csv": "\n".join(lines) + "\n", "e.jsonl": EVAL_FILE, "f.jsonl": EVAL_FILE}


REPORT = ["llm", "report", "{tmp}/man.csv", "--out-dir", "{tmp}/rep", "--k", "1",
          "--no-figure", "--no-progress"]
DYN = ["figures", "llm-dynamics", "--out", "{tmp}/figs", "--data-dir", "{tmp}/runs", "--no-progress"]
EVAL = ["llm", "eval", "--model", "tiny", "--data", "{tmp}/d.jsonl", "--out", "{tmp}/out.jsonl", "--samples", "1",
        "--no-progress"]
DATA_OK = json.dumps({"problem": "1+1?", "answer": "2"}) + "\n"
DNLL = ["llm", "dnll-rare", "--trajectories", "{tmp}/t.jsonl", "--base", "tiny", "--model", "tiny", "--no-progress"]
CAT = ["simulate", "categorical", "--out", "{tmp}/out.csv", "--n", "4", "--gamma", "0", "--seeds", "0",
       "--steps", "2", "--stride", "1", "--num-actions", "20", "--num-correct", "4", "--no-progress"]
POP = ["simulate", "population", "--out", "{tmp}/out.csv", "--prompts", "4", "--prompt-batch", "2", "--steps", "1",
       "--runs", "1", "--no-progress"]
LONG = "x" * 300
# a PNG that this tool did not draw (no Software=fgrpo-sim tag): signature, header, end
FOREIGN_PNG = (b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dIHDR" + bytes(13) + bytes(4)
               + b"\x00\x00\x00\x00IEND\xaeB`\x82")
# the layout `llm export-verl` recognises (run folder -> global_step_N/actor/huggingface), no weights needed
VERL_CHECKPOINT = {"ck/latest_checkpointed_iteration.txt": "3", "ck/global_step_3/actor/huggingface/config.json": "{}"}

CASES = [
    # --- passk: files, lines, keys, integers, its own input as output
    ("passk-non-utf8", ["passk", "{tmp}/r.jsonl"], {"r.jsonl": b'{"problem_id": "a", "n": 2, "c": 1}\n\xff\xfe\n'},
     "r.jsonl line 2: not UTF-8"),
    ("passk-duplicate-key", ["passk", "{tmp}/r.jsonl"], {"r.jsonl": '{"problem_id": "a", "n": 2, "n": 3, "c": 1}\n'},
     "key 'n' appears twice"),
    ("passk-huge-int", ["passk", "{tmp}/r.jsonl"], {"r.jsonl": '{"problem_id": "a", "n": ' + "9" * 5000 + ', "c": 1}\n'},
     "r.jsonl line 1: number out of range"),
    ("passk-k-huge", ["passk", "{tmp}/r.jsonl", "--k", "9" * 5000], {"r.jsonl": PASSK_OK}, "--k values must be integers of at most 4300 digits"),
    ("passk-k-empty-element", ["passk", "{tmp}/r.jsonl", "--k", "1,,2"], {"r.jsonl": PASSK_OK}, "--k has an empty element"),
    ("passk-out-is-input", ["passk", "{tmp}/r.jsonl", "--out", "{tmp}/r.jsonl"], {"r.jsonl": PASSK_OK},
     "--out {tmp}/r.jsonl is the input file"),
    ("passk-out-is-compare", ["passk", "{tmp}/r.jsonl", "--compare", "{tmp}/s.jsonl", "--out", "{tmp}/s.jsonl"],
     {"r.jsonl": PASSK_OK, "s.jsonl": PASSK_OK}, "is the input file"),
    ("passk-out-long-name", ["passk", "{tmp}/r.jsonl", "--out", "{tmp}/" + LONG], {"r.jsonl": PASSK_OK}, "file names are limited to 255"),
    ("passk-out-empty", ["passk", "{tmp}/r.jsonl", "--out", ""], {"r.jsonl": PASSK_OK}, "--out is empty"),
    # issue 50: a results file given twice (its table would print twice), in one spelling or two
    ("passk-results-twice", ["passk", "{tmp}/r.jsonl", "{tmp}/r.jsonl"], {"r.jsonl": PASSK_OK},
     "RESULTS lists {tmp}/r.jsonl twice; give each results file once"),
    ("passk-results-twice-spelled-apart", ["passk", "{tmp}/r.jsonl", "{tmp}/s.jsonl", "{tmp}/d/../r.jsonl", "--k", "1"],
     {"r.jsonl": PASSK_OK, "s.jsonl": PASSK_OK, "d/x": ""},
     "RESULTS lists {tmp}/r.jsonl twice (as {tmp}/r.jsonl and {tmp}/d/../r.jsonl)"),
    # n-verify: a file compared with itself (difference 0, p = 1 at every k), in one spelling or two
    ("passk-compare-itself", ["passk", "{tmp}/r.jsonl", "--compare", "{tmp}/r.jsonl"], {"r.jsonl": PASSK_OK},
     "--compare {tmp}/r.jsonl is the RESULTS file {tmp}/r.jsonl"),
    ("passk-compare-itself-spelled-apart", ["passk", "{tmp}/r.jsonl", "--compare", "{tmp}/d/../r.jsonl"],
     {"r.jsonl": PASSK_OK, "d/x": ""}, "--compare {tmp}/d/../r.jsonl is the RESULTS file"),
    # --- plan
    ("plan-n-empty-element", ["plan", "--beta", "1,1", "--n", "4,,16"], {}, "--n has an empty element"),
    ("plan-n-repeat-across-options", ["plan", "--beta", "1,1", "--n", "4", "--n", "4"], {}, "--n lists 4 twice"),
    ("plan-beta-tiny", ["plan", "--beta", "1e-300,1e-300"], {}, "--beta A must be in [1e-15, 1e+15]"),
    ("plan-beta-subnormal", ["plan", "--beta", "1e-320,1"], {}, "--beta A must be in"),
    ("plan-n-huge", ["plan", "--beta", "1,1", "--n", "9" * 5000], {}, "--n values must be integers of at most 4300 digits"),
    ("plan-csv-non-utf8", ["plan", "{tmp}/p.csv"], {"p.csv": b"success_rate\n0.5\n\xff\n"}, "p.csv line 3: not UTF-8"),
    ("plan-jsonl-duplicate-key", ["plan", "{tmp}/p.jsonl"], {"p.jsonl": '{"success_rate": 0.5, "success_rate": 0.7}\n'},
     "key 'success_rate' appears twice"),
    ("plan-jsonl-huge-int", ["plan", "{tmp}/p.jsonl"], {"p.jsonl": '{"success_rate": ' + "1" * 5000 + "}\n"},
     "p.jsonl line 1: number out of range"),
    ("plan-csv-text-rate", ["plan", "{tmp}/p.csv"], {"p.csv": "success_rate\nhalf\n"}, "p.csv line 2: success_rate must be a number"),
    # --- theory
    ("theory-tail-miss-empty-element", ["theory", "tail-miss", "--n", "4,,8"], {}, "--n has an empty element"),
    ("theory-tail-miss-huge-n", ["theory", "tail-miss", "--n", "9" * 5000], {}, "--n values must be integers of at most"),
    ("theory-peak-empty-element", ["theory", "peak", "--mu", "0.5,,0.6"], {}, "--mu has an empty element"),
    # issue 43: tau derived from --rho (or from a --mu so small that mu x rho underflows) is named by what the
    # user typed, with its range, not as tau, which they never gave
    ("theory-peak-rho-zero", ["theory", "peak", "--rho", "0"], {}, "--rho must be in (0, 1] for theory peak, got 0"),
    ("theory-peak-mu-zero", ["theory", "peak", "--mu", "0", "--rho", "0.5"], {}, "--mu must be in (0, 1], got 0"),
    ("theory-peak-mu-underflows", ["theory", "peak", "--mu", "5e-324"], {},
     "--mu 5e-324 is too small for the default --rho 0.1"),
    ("theory-peak-mu-underflows-with-rho", ["theory", "peak", "--mu", "1e-320", "--rho", "1e-5"], {},
     "--mu 1e-320 is too small for --rho 1e-05"),
    ("theory-lr-multiplier-bad", ["theory", "lr-multiplier", "--gamma", "-1"], {}, "gamma"),
    ("theory-derive-unknown", ["theory", "derive", "--name", "nope"], {}, "nope"),
    # --- simulate
    ("categorical-empty-element", [*CAT, "--seeds", "0,,1"], {}, "seeds has an empty element"),
    ("categorical-huge-seed", [*CAT, "--seeds", "9" * 5000], {}, "seeds values must be integers of at most"),
    ("categorical-out-long-name", [*CAT, "--out", "{tmp}/" + "y" * 300 + ".csv"], {}, "file names are limited to 255"),
    ("categorical-resume-inf-metric", CAT, {"out.csv": "INF_TABLE"}, "is not a finite number"),
    ("population-empty-element", [*POP, "--n", "4,,8"], {}, "--n has an empty element"),
    ("population-k-empty", [*POP, "--k", "1,"], {}, "--k has an empty element"),
    ("population-out-empty", [*POP, "--out", ""], {}, "--out is empty"),
    # --- figures and check
    ("figures-out-empty", ["figures", "fig4", "--out", ""], {}, "--out is empty"),
    ("figures-unknown", ["figures", "nope", "--out", "{tmp}/figs"], {}, "unknown figure name(s) nope"),
    ("dynamics-no-step", DYN, {"runs/a/dynamics.jsonl": '{"dynamics/pass@1": 0.5}\n'}, "line 1: field 'step' must be an integer"),
    ("dynamics-step-1e400", DYN, {"runs/a/dynamics.jsonl": '{"step": 1e400, "dynamics/pass@1": 0.5}\n'}, "field 'step'"),
    ("dynamics-pass-at-0", DYN, {"runs/a/dynamics.jsonl": '{"step": 1, "dynamics/pass@0": 0.5}\n'}, "'dynamics/pass@0': k must be"),
    ("dynamics-pass-at-text", DYN, {"runs/a/dynamics.jsonl": '{"step": 1, "dynamics/pass@x": 0.5}\n'}, "'dynamics/pass@x'"),
    ("dynamics-value-text", DYN, {"runs/a/dynamics.jsonl": '{"step": 1, "dynamics/pass@1": "high"}\n'}, "must be a probability"),
    ("dynamics-state-list", DYN, {"runs/a/trainer_state.json": "[1, 2]"}, "trainer_state.json: expected a JSON object"),
    ("dynamics-history-number", DYN, {"runs/a/trainer_state.json": '{"log_history": 5}'}, "whose log_history is a list"),
    ("dynamics-duplicate-key", DYN, {"runs/a/dynamics.jsonl": '{"step": 1, "step": 2, "dynamics/pass@1": 0.5}\n'},
     "key 'step' appears twice"),
    ("dynamics-non-utf8", DYN, {"runs/a/dynamics.jsonl": b'{"step": 1, "dynamics/pass@1": 0.5}\n\xc3\x28\n'},
     "dynamics.jsonl line 2: not UTF-8"),
    ("fig2-sensitivity-foreign-cache", ["figures", "fig2-sensitivity", "--out", "{tmp}/figs", "--data-dir", "{tmp}/fd",
                                        "--no-progress"], {"fd/categorical-study.parquet": "PARQUET_FOREIGN"},
     "categorical-study.parquet"),
    ("check-seed", ["check", "--quick", "--seed", "-1"], {}, "seed"),
    # --- maze
    ("maze-table-no-N", ["maze", "table", "{tmp}/m"], maze_folder(rl0=_piece(N=None)), "rl_N4_gamma0.json: N None"),
    ("maze-table-no-seconds", ["maze", "table", "{tmp}/m"], maze_folder(rl0=_piece(seconds=None)), "'seconds'"),
    ("maze-table-no-heldout", ["maze", "table", "{tmp}/m"], maze_folder(rl0=_piece(heldout=None)), "heldout.pass_at_k"),
    ("maze-table-no-pass128", ["maze", "table", "{tmp}/m"],
     maze_folder(rl0=_piece(heldout={"pass_at_k": {"1": 0.1, "256": 0.2}, "exact_pass_at_k": {"1": 0.1, "256": 0.2}})),
     "no entry for k = 128"),
    ("maze-table-curve-no-step", ["maze", "table", "{tmp}/m"], maze_folder(rl0=_piece(curve=[{"train_reward": 0.1}])),
     "curve[0] has no integer 'step'"),
    ("maze-table-sft-no-parameters", ["maze", "table", "{tmp}/m"], maze_folder(sft={**SFT, "parameters": None}),
     "sft.json: its 'parameters'"),
    ("maze-table-nan-pass", ["maze", "table", "{tmp}/m"],
     maze_folder(rl0=_piece(heldout={"pass_at_k": {**PROBS, "1": float("nan")}, "exact_pass_at_k": PROBS})), "heldout.pass_at_k"),
    ("maze-table-duplicate-key", ["maze", "table", "{tmp}/m"], {**maze_folder(), "m/seed0/sft.json": '{"seed": 0, "seed": 0}'},
     "key 'seed' appears twice"),
    ("maze-table-non-utf8", ["maze", "table", "{tmp}/m"], {**maze_folder(), "m/seed0/sft.json": b"\xff{}"}, "sft.json line 1: not UTF-8"),
    ("maze-compare-no-heldout", ["maze", "compare", "{tmp}/m", "{tmp}/m", "--n", "4", "--gamma-a", "1"],
     maze_folder(rl1=_piece(gamma=1.0, heldout=None)), "rl_N4_gamma1.json: its heldout.pass_at_k"),
    ("maze-run-summary-copy-config", ["maze", "run", "--preset", "tiny", "--out", "{tmp}/m", "--summary-copy",
                                      "{tmp}/m/config.json", "--no-progress"], {}, "--summary-copy {tmp}/m/config.json is inside"),
    ("maze-run-summary-copy-long", ["maze", "run", "--preset", "tiny", "--out", "{tmp}/m", "--summary-copy",
                                    "{tmp}/" + LONG, "--no-progress"], {}, "file names are limited to 255"),
    ("maze-run-gamma-empty", ["maze", "run", "--preset", "tiny", "--out", "{tmp}/m", "--gamma", "0,,1"], {}, "gamma has an empty element"),
    ("maze-show-count", ["maze", "show", "--count", "0"], {}, "count must be in [1, 100]"),
    # --- llm report
    ("report-step-inf", REPORT, manifest(step="inf"), "man.csv row 2: step must be a finite number"),
    ("report-step-1e400", REPORT, manifest(step="1e400"), "man.csv row 2: step must be a finite number"),
    ("report-step-nan", REPORT, manifest(step="nan"), "step must be a finite number"),
    ("report-compute-nan", REPORT, manifest(compute="nan"), "compute must be a finite number"),
    ("report-compute-inf", REPORT, manifest(compute="inf"), "compute must be a finite number"),
    ("report-dnll-nan", REPORT, manifest(dnll_rare="nan"), "dnll_rare must be a finite number"),
    ("report-step-text", REPORT, manifest(step="ten"), "man.csv row 2: step must be a number"),
    ("report-jsonl-step-1e400", [*REPORT[:2], "{tmp}/man.jsonl", *REPORT[3:]],
     {"man.jsonl": '{"comparison": "G", "role": "baseline", "method": "GRPO", "step": 1e400, "benchmark": "math500", '
                   '"file": "e.jsonl"}\n', "e.jsonl": EVAL_FILE}, "man.jsonl row 1: step must be a finite number"),
    ("report-jsonl-duplicate-key", [*REPORT[:2], "{tmp}/man.jsonl", *REPORT[3:]],
     {"man.jsonl": '{"comparison": "G", "comparison": "H"}\n'}, "key 'comparison' appears twice"),
    ("report-manifest-non-utf8", REPORT, {**manifest(), "man.csv": b"comparison,role\n\xff\n"}, "man.csv line 2: not UTF-8"),
    ("report-manifest-duplicate-column", REPORT, {**manifest(), "man.csv": "step,step\n1,2\n"}, "column 'step' appears twice"),
    ("report-paper-csv-columns", [*REPORT, "--paper-csv", "{tmp}/paper.csv"], {**manifest(paper_row="r1"), "paper.csv": "a,b\n1,2\n"},
     "paper.csv: the paper CSV needs the columns"),
    ("report-paper-csv-number", [*REPORT, "--paper-csv", "{tmp}/paper.csv"],
     {**manifest(paper_row="r1"), "paper.csv": "row_id,group_size,gamma,math_pass1,math_pass256,ood_pass1,ood_pass256,dnll_rare\n"
                                               "r1,8,0.5,high,1,1,1,1\n"}, "paper.csv line 2: math_pass1 must be a number"),
    ("report-paper-csv-non-utf8", [*REPORT, "--paper-csv", "{tmp}/paper.csv"], {**manifest(paper_row="r1"), "paper.csv": b"\xff"},
     "paper.csv line 1: not UTF-8"),
    ("report-out-dir-empty", [*REPORT[:3], "--out-dir", ""], manifest(), "--out-dir is empty"),
    # --- llm eval, dnll-rare, prepare-data, train, recipes
    ("eval-temperature-underflow", [*EVAL, "--temperature", "1e-320"], {"d.jsonl": DATA_OK}, "temperature must be 0 (greedy) or in"),
    ("eval-temperature-inf", [*EVAL, "--temperature", "inf"], {"d.jsonl": DATA_OK}, "temperature must be in [0, 1000]"),
    ("eval-model-family-empty", [*EVAL, "--model-family", ""], {"d.jsonl": DATA_OK}, "model_family must be one of"),
    ("eval-data-duplicate-key", EVAL, {"d.jsonl": '{"problem": "a", "problem": "b", "answer": "2"}\n'}, "key 'problem' appears twice"),
    ("eval-data-huge-int", EVAL, {"d.jsonl": '{"problem": "a", "answer": ' + "7" * 5000 + "}\n"}, "d.jsonl line 1: number out of range"),
    ("eval-data-non-utf8", EVAL, {"d.jsonl": b'{"problem": "a", "answer": "2"}\n\xff\n'}, "d.jsonl line 2: not UTF-8"),
    ("dnll-correct-string", DNLL, {"t.jsonl": '{"problem": "a", "completion": "b", "correct": "yes"}\n'},
     "t.jsonl: line 1: field 'correct' must be true or false"),
    ("dnll-correct-false-string", DNLL, {"t.jsonl": '{"problem": "a", "completion": "b", "correct": "false"}\n'},
     "field 'correct' must be true or false"),
    ("prepare-data-out-is-source", ["llm", "prepare-data", "{tmp}/s.jsonl", "--out", "{tmp}/s.jsonl"], {"s.jsonl": DATA_OK},
     "--out {tmp}/s.jsonl is the input file"),
    ("prepare-data-non-utf8", ["llm", "prepare-data", "{tmp}/s.jsonl", "--out", "{tmp}/o.jsonl"], {"s.jsonl": b"\xff"},
     "s.jsonl line 1: not UTF-8"),
    ("train-missing-recipe", ["llm", "train", "--config", "{tmp}/none.yaml", "--dry-run"], {}, "none.yaml"),
    ("recipes-bad-format", ["llm", "recipes", "--format", "xml"], {}, "format"),
    # --- more of each class, across commands
    ("passk-compare-non-utf8", ["passk", "{tmp}/r.jsonl", "--compare", "{tmp}/s.jsonl"], {"r.jsonl": PASSK_OK, "s.jsonl": b"\xff"},
     "s.jsonl line 1: not UTF-8"),
    ("plan-csv-duplicate-column", ["plan", "{tmp}/p.csv"], {"p.csv": "success_rate,success_rate\n0.5,0.7\n"},
     "p.csv line 1: column 'success_rate' appears twice"),
    ("categorical-resume-non-utf8", CAT, {"out.csv": b"a,b\n\xff\xfe\n"}, "out.csv line 2: not UTF-8"),
    ("population-actions-empty-element", [*POP, "--actions", "1,,2"], {}, "--actions has an empty element"),
    ("maze-table-config-list", ["maze", "table", "{tmp}/m"], {**maze_folder(), "m/config.json": "[1]"},
     "config.json: expected a JSON object"),
    ("maze-table-piece-list", ["maze", "table", "{tmp}/m"], {**maze_folder(), "m/seed0/rl_N4_gamma0.json": "[]"},
     "rl_N4_gamma0.json: expected a JSON object"),
    ("maze-run-config-list", ["maze", "run", "--preset", "tiny", "--out", "{tmp}/m", "--no-progress"], {"m/config.json": "[1]"},
     "m/config.json: expected a JSON object"),
    ("maze-run-sft-from-duplicate-key", ["maze", "run", "--preset", "tiny", "--out", "{tmp}/m", "--sft-from", "{tmp}/s"],
     {"s/config.json": '{"size": 1, "size": 2}'}, "s/config.json: key 'size' appears twice"),
    ("report-eval-file-non-utf8", REPORT, {**manifest(), "e.jsonl": b"\xff"}, "e.jsonl line 1: not UTF-8"),
    ("eval-data-json-duplicate-key", [*EVAL[:4], "--data", "{tmp}/d.json", *EVAL[6:]],
     {"d.json": '[{"problem": "a", "answer": "1", "answer": "2"}]'}, "d.json: key 'answer' appears twice"),
    ("eval-model-config-list", [*EVAL[:2], "--model", "{tmp}/mdl", *EVAL[4:]], {"d.jsonl": DATA_OK, "mdl/config.json": "[1]"},
     "mdl/config.json: expected a JSON object"),
    ("dnll-duplicate-key", DNLL, {"t.jsonl": '{"problem": "a", "problem": "b", "completion": "b", "correct": true}\n'},
     "t.jsonl line 1: key 'problem' appears twice"),
    ("prepare-data-duplicate-key", ["llm", "prepare-data", "{tmp}/s.jsonl", "--out", "{tmp}/o.jsonl"],
     {"s.jsonl": '{"problem": "a", "problem": "b", "answer": "1"}\n'}, "s.jsonl line 1: key 'problem' appears twice"),
    # commands added with the rehearsal, the verl export and the group-size study
    ("rehearse-out-not-empty", ["llm", "rehearse", "--out", "{tmp}/full"], {"full/a": "x"}, "--out {tmp}/full"),
    ("rehearse-jobs-zero", ["llm", "rehearse", "--out", "{tmp}/r", "--jobs", "0"], {}, "--jobs must be in"),
    ("rehearse-verl-python-missing", ["llm", "rehearse", "--out", "{tmp}/r", "--verl-python", "{tmp}/none/python"], {},
     "--verl-python {tmp}/none/python"),
    ("export-verl-no-checkpoint", ["llm", "export-verl", "{tmp}/ckpt", "{tmp}/hf"], {}, "{tmp}/ckpt"),
    ("group-size-empty-element", ["simulate", "group-size", "--out", "{tmp}/out.csv", "--n", "4,,8"], {},
     "--n has an empty element"),
    ("group-size-out-suffix", ["simulate", "group-size", "--out", "{tmp}/g.txt"], {}, "--out must end in"),
    # issue 31: a torn resume row (short, or cut mid-number without its line end), a foreign header-only
    # table, and the one CSV reader's limits (a field over csv's 131,072 characters, a short row) everywhere
    ("categorical-resume-torn-short-row", CAT, {"out.csv": "TORN_TABLE:-40"}, "out.csv line 4: 16 fields where the header has 21"),
    ("categorical-resume-torn-no-line-end", CAT, {"out.csv": "TORN_TABLE:-3"}, "out.csv line 4: the last row has no line end"),
    ("categorical-out-foreign-header-only", CAT, {"out.csv": "a,b\n"}, "is not a categorical result table"),
    ("plan-csv-field-over-limit", ["plan", "{tmp}/p.csv"], {"p.csv": "success_rate,note\n0.5," + "x" * 140_000 + "\n"},
     "p.csv line 2: not readable as CSV (field larger than field limit"),
    ("plan-csv-short-row", ["plan", "{tmp}/p.csv"], {"p.csv": "success_rate,note\n0.5,a\n0.7\n"},
     "p.csv line 3: 1 fields where the header has 2"),
    ("report-manifest-field-over-limit", REPORT, {**manifest(), "man.csv": "comparison,role\nG," + "y" * 140_000 + "\n"},
     "man.csv line 2: not readable as CSV"),
    ("report-manifest-short-row", REPORT, {**manifest(), "man.csv": manifest()["man.csv"] + "G,focal\n"},
     "man.csv line 4: 2 fields where the header has 9"),
    ("report-paper-csv-field-over-limit", [*REPORT, "--paper-csv", "{tmp}/paper.csv"],
     {**manifest(paper_row="r1"), "paper.csv": "row_id\n" + '"' + "z" * 140_000 + '"\n'}, "paper.csv line 2: not readable as CSV"),
    # issue 31: the overwrite rule; each writer replaces only its own earlier output (schema or keys), else
    # names --force, before any work (the file stays as it was: checked for every case below)
    ("passk-out-foreign-file", ["passk", "{tmp}/r.jsonl", "--out", "{tmp}/notes.txt"], {"r.jsonl": PASSK_OK, "notes.txt": "mine\n"},
     "--out {tmp}/notes.txt exists and was not written by this command; pass --force"),
    ("population-out-categorical-table", POP, {"out.csv": "CAT_TABLE"}, "--out {tmp}/out.csv exists and was not written by"),
    ("population-out-foreign-csv", POP, {"out.csv": "a,b\n1,2\n"}, "pass --force"),
    ("group-size-out-foreign-csv", ["simulate", "group-size", "--out", "{tmp}/g.csv", "--runs", "2", "--n", "2"],
     {"g.csv": "a,b\n1,2\n"}, "--out {tmp}/g.csv exists and was not written by this command"),
    ("prepare-data-out-other-data-file", ["llm", "prepare-data", "{tmp}/s.jsonl", "--out", "{tmp}/bench.jsonl"],
     {"s.jsonl": DATA_OK, "bench.jsonl": DATA_OK}, "--out {tmp}/bench.jsonl exists and was not written by"),
    ("maze-run-summary-copy-foreign", ["maze", "run", "--preset", "tiny", "--out", "{tmp}/m", "--summary-copy",
                                       "{tmp}/notes.json", "--no-progress"], {"notes.json": '{"a": 1}'},
     "--summary-copy {tmp}/notes.json exists and was not written by this command; pass --force"),
    # issue 38: every file a command writes, alone or inside an output folder, is replaced only if this tool
    # made it (folder outputs: their hidden manifest); all files of a multi-file output are judged first
    ("passk-plot-foreign-text", ["passk", "{tmp}/r.jsonl", "--k", "1", "--plot", "{tmp}/curve.png"],
     {"r.jsonl": PASSK_OK, "curve.png": "my notes, not a picture\n"},
     "--plot {tmp}/curve.png exists and was not written by this command; pass --force"),
    ("passk-plot-foreign-png", ["passk", "{tmp}/r.jsonl", "--k", "1", "--plot", "{tmp}/photo.png", "--out", "{tmp}/p.json"],
     {"r.jsonl": PASSK_OK, "photo.png": FOREIGN_PNG}, "--plot {tmp}/photo.png exists and was not written by"),
    ("eval-meta-foreign-new-out", EVAL, {"d.jsonl": DATA_OK, "out.jsonl.meta.json": '{"mine": true}\n'},
     "out.jsonl.meta.json exists and was not written by this command; pass --force"),
    ("eval-meta-foreign-empty-out", EVAL, {"d.jsonl": DATA_OK, "out.jsonl": "", "out.jsonl.meta.json": "plain text\n"},
     "out.jsonl.meta.json exists and was not written by this command"),
    ("report-out-dir-foreign-latex", REPORT, {**manifest(), "rep/table.tex": "\\section{mine}\n"},
     "--out-dir {tmp}/rep/table.tex exists and was not written by this command; pass --force"),
    ("report-out-dir-foreign-png", REPORT[:-2] + ["--no-progress"], {**manifest(), "rep/passk_curves.png": FOREIGN_PNG},
     "{tmp}/rep/passk_curves.png exists and was not written"),
    ("report-out-dir-selection-is-folder", REPORT, {**manifest(), "rep/selection.json/keep.txt": "x"},
     "--out-dir {tmp}/rep/selection.json is a folder"),
    ("report-out-dir-foreign-manifest", REPORT, {**manifest(), "rep/.fgrpo-sim-outputs.json": "[1, 2]"},
     ".fgrpo-sim-outputs.json there was not written by this tool; pass --force"),
    ("figures-out-foreign-pdf", ["figures", "fig4", "--out", "{tmp}/figs"], {"figs/fig4.pdf": "%PDF-1.4 mine\n"},
     "--out {tmp}/figs/fig4.pdf exists and was not written by this command; pass --force"),
    ("maze-run-out-foreign-summary", ["maze", "run", "--preset", "tiny", "--out", "{tmp}/m", "--no-progress"],
     {"m/summary.json": '{"title": "my summary"}'}, "--out {tmp}/m/summary.json exists and was not written"),
    ("maze-run-out-foreign-timings", ["maze", "run", "--preset", "tiny", "--out", "{tmp}/m", "--no-progress"],
     {"m/timings.json": "12 s\n"}, "--out {tmp}/m/timings.json exists and was not written"),
    ("export-verl-out-inside-checkpoint", ["llm", "export-verl", "{tmp}/ck", "{tmp}/ck/global_step_3/merged"],
     VERL_CHECKPOINT, "OUT {tmp}/ck/global_step_3/merged is inside CHECKPOINT {tmp}/ck"),
    # issue 31: a JSON string escape that is a lone UTF-16 surrogate is not text: named when read, before work
    ("eval-data-lone-surrogate", EVAL, {"d.jsonl": '{"problem_id": "\\udc00x", "problem": "a", "answer": "2"}\n'},
     "d.jsonl line 1: the string '\\udc00x' holds a lone surrogate"),
    ("prepare-data-lone-surrogate", ["llm", "prepare-data", "{tmp}/s.jsonl", "--out", "{tmp}/o.jsonl"],
     {"s.jsonl": '{"problem": "a\\ud800", "answer": "1"}\n'}, "s.jsonl line 1: the string 'a\\ud800' holds a lone surrogate"),
    ("passk-lone-surrogate-in-a-key", ["passk", "{tmp}/r.jsonl"], {"r.jsonl": '{"problem_id": "a", "n": 2, "c": 1, "\\udfff": 0}\n'},
     "r.jsonl line 1: the string '\\udfff' holds a lone surrogate"),
    # issue 31: options that conflict, or that a mode ignores, are refused by name (commands/options.py)
    ("prepare-data-system-prompt-conflict", ["llm", "prepare-data", "{tmp}/s.jsonl", "--out", "{tmp}/o.jsonl",
                                             "--system-prompt", "x", "--no-system-prompt"], {"s.jsonl": DATA_OK},
     "--system-prompt and --no-system-prompt conflict"),
    ("eval-system-prompt-conflict", [*EVAL, "--no-system-prompt", "--system-prompt", "x"], {"d.jsonl": DATA_OK},
     "--system-prompt and --no-system-prompt conflict"),
    ("dnll-system-prompt-conflict", [*DNLL, "--system-prompt", "x", "--no-system-prompt"],
     {"t.jsonl": '{"problem": "a", "completion": "b", "correct": true}\n'}, "--system-prompt and --no-system-prompt conflict"),
    ("categorical-study-ignores-group-sizes", ["simulate", "categorical", "--study", "--out", "{tmp}/out.csv",
                                               "--n", "4"], {}, "--n is not used with --study"),
    ("categorical-study-ignores-no-resume", ["simulate", "categorical", "--study", "--out", "{tmp}/out.csv", "--no-resume"],
     {}, "--resume/--no-resume is not used with --study"),
    # issue 31: an empty path or model name (positional too) is named as the user wrote it, not as "." or
    # huggingface_hub's repo-id rules
    ("plan-positional-empty", ["plan", ""], {}, "SUCCESS_RATES is empty"),
    ("passk-positional-empty", ["passk", "", "--k", "1"], {}, "RESULTS is empty"),
    ("prepare-data-source-empty", ["llm", "prepare-data", "", "--out", "{tmp}/o.jsonl"], {}, "SOURCE is empty"),
    ("eval-model-empty", [*EVAL[:2], "--model", "", *EVAL[4:]], {"d.jsonl": DATA_OK}, "--model is empty"),
    ("prepare-data-tokenizer-empty", ["llm", "prepare-data", "{tmp}/s.jsonl", "--out", "{tmp}/o.jsonl", "--tokenizer", ""],
     {"s.jsonl": DATA_OK}, "--tokenizer is empty"),
    ("dnll-model-empty", [*DNLL[:-3], "--model", "", "--no-progress"],
     {"t.jsonl": '{"problem": "a", "completion": "b", "correct": true}\n'}, "model name is empty"),
    ("group-size-rare-mass-range", ["simulate", "group-size", "--out", "{tmp}/out.csv", "--rare-mass", "0.5"], {},
     "--rare-mass must be in (0, 0.4)"),  # the option, not the spec's field rare_masses (issue 31)
    # issue 31: refused before the run, naming the user's option (the one check, renamed by options_named)
    # issue 38: an old spelling and its new one in one call are refused naming both, before any work (joined or
    # overridden, one would be dropped or doubled in silence); a figure named twice, in any spellings, is refused
    ("mixed-categorical-n", [*CAT, "--group-sizes", "8"], {}, "--group-sizes is the old spelling of --n"),
    ("mixed-group-size-runs", ["simulate", "group-size", "--out", "{tmp}/out.csv", "--runs", "1", "--seeds", "2",
                               "--populations", "1"], {}, "--seeds is the old spelling of --runs"),
    ("mixed-group-size-optimizer-eq", ["simulate", "group-size", "--out", "{tmp}/out.csv", "--optimizer=sgd",
                                       "--optimizers=adam", "--populations", "1"], {},
     "--optimizers is the old spelling of --optimizer"),
    ("mixed-maze-runs", ["maze", "run", "--preset", "tiny", "--out", "{tmp}/m", "--runs", "2", "--seeds=1",
                         "--rl-steps", "0"], {}, "--seeds is the old spelling of --runs"),
    ("mixed-eval-samples", [*EVAL, "--n", "2"], {}, "--n is the old spelling of --samples"),
    ("mixed-recipes-markdown", ["llm", "recipes", "--markdown", "--format", "text"], {},
     "--format is the old spelling of --markdown"),
    ("mixed-population-k", [*POP, "--k", "1", "--pass-k", "1"], {}, "--pass-k is the old spelling of --k"),
    ("figures-old-and-new-name", ["figures", "fig6_maze", "fig6-maze", "--out", "{tmp}/figs", "--no-progress"], {},
     "NAME lists figure fig6-maze twice (as fig6_maze and fig6-maze)"),
    ("figures-name-twice", ["figures", "fig1a", "fig1a", "--out", "{tmp}/figs", "--no-progress"], {},
     "NAME lists figure fig1a twice"),
    # theory --mu: repeats judged as numbers, like every other list (the digits typed still give 1 - mu)
    ("theory-mu-same-number", ["theory", "tail-miss", "--mu", "0.50,.5"], {}, "--mu lists 0.5 twice"),
    ("theory-mu-repeated-option", ["theory", "tail-miss", "--mu", "0.2", "--mu", "2e-1", "--json"], {},
     "--mu lists 0.2 twice"),
    ("group-size-one-population", ["simulate", "group-size", "--out", "{tmp}/out.csv", "--populations", "1"], {},
     "--populations must be in [2, 10000]"),  # its intervals resample population draws: one has none
    ("population-strategy-mass-sum", [*POP, "--sharing", "shared", "--strategy-mass", "0.6,0.5"], {},
     "--strategy-mass COMMON,RARE must be > 0 with a sum < 1"),
    ("population-strategy-mass-negative", [*POP, "--sharing", "shared", "--strategy-mass", "0.6,-0.1"], {},
     "--strategy-mass RARE must be in (0, 0.4)"),
    ("population-heldout-negative", [*POP, "--sharing", "shared", "--heldout-prompts", "-1"], {},
     "--heldout-prompts must be in"),
]

# issue 38: the group-size resume checks every row and every chunk it keeps (the categorical resume's checks,
# one shared reader), naming file and line; damaged copies of one sound table (GS_TABLE: its damage)
GS = ["simulate", "group-size", "--out", "{tmp}/g.csv", "--n", "2", "--runs", "1", "--populations", "2", "--steps", "1",
      "--eval-every", "1", "--optimizer", "adam", "--parametrisation", "axis", "--rare-mass", "0.1", "--gamma", "1",
      "--adam-lr", "0.01", "--no-progress"]
GS_PARQUET = [*GS[:2], "--out", "{tmp}/g.parquet", *GS[4:]]
HUGE = 10**400  # an integer JSON holds and float() cannot: OverflowError
CASES += [
    # lines 2-7 are step 0 of the six trained rows, lines 8-13 step 1
    ("group-size-resume-torn-last-number", GS, {"g.csv": "GS_TABLE:torn"}, "g.csv line 13: the last row has no line end"),
    ("group-size-resume-repeated-row", GS, {"g.csv": "GS_TABLE:repeat"}, "g.csv line 14: it repeats line 4"),
    ("group-size-resume-nan-metric", GS, {"g.csv": "GS_TABLE:nan"},
     "g.csv line 6: heldout_pass@256 = NaN is not a finite number"),
    ("group-size-resume-empty-metric", GS, {"g.csv": "GS_TABLE:empty-metric"}, "g.csv line 10: train_dnll_rare = '' is not"),
    ("group-size-resume-empty-chunk", GS, {"g.csv": "GS_TABLE:empty-chunk"}, "g.csv line 3: chunk is empty"),
    ("group-size-resume-text-n", GS, {"g.csv": "GS_TABLE:text-n"}, "g.csv line 5: N = 'two' is not an integer"),
    ("group-size-resume-fractional-seed", GS, {"g.csv": "GS_TABLE:half-seed"}, "g.csv line 8: seed = 0.5 is not an integer"),
    ("group-size-resume-infinite-lr", GS, {"g.csv": "GS_TABLE:inf-lr"}, "g.csv line 9: lr = -inf is not a finite number"),
    ("group-size-resume-short-row", GS, {"g.csv": "GS_TABLE:short"}, "g.csv line 4: 24 fields where the header has 25"),
    ("group-size-resume-bad-byte", GS, {"g.csv": "GS_TABLE:byte"}, "g.csv line 7: not UTF-8"),
    ("group-size-resume-chunk-lacks-a-row", GS, {"g.csv": "GS_TABLE:drop"}, "lacks 1 of its 12 rows"),
    ("group-size-resume-other-setting-lacks-a-row", [*GS, "--rare-correct-prob", "0.3"], {"g.csv": "GS_TABLE:drop"},
     "chunk 'rare_correct_prob=1/adam/axis#"),
    ("group-size-resume-parquet-cut-short", GS_PARQUET, {"g.parquet": "GS_TABLE:cut"}, "--out {tmp}/g.parquet exists but"),
    ("group-size-resume-parquet-lacks-a-row", GS_PARQUET, {"g.parquet": "GS_TABLE:drop"},
     "cannot resume from {tmp}/g.parquet: chunk"),
    ("group-size-resume-parquet-nan-metric", GS_PARQUET, {"g.parquet": "GS_TABLE:nan"},
     "g.parquet row 5: heldout_pass@256 = nan is not a finite number"),
    # issue 38: a JSON integer beyond a float's range, in every reader that takes numbers (validation.file_number)
    ("plan-jsonl-rate-beyond-float", ["plan", "{tmp}/p.jsonl"], {"p.jsonl": '{"success_rate": 0.5}\n'
                                                                            f'{{"success_rate": {-HUGE}}}\n'},
     "p.jsonl line 2: success_rate must be a number in [0, 1], got -1000"),
    ("maze-table-seconds-beyond-float", ["maze", "table", "{tmp}/m"], maze_folder(rl0=_piece(seconds=HUGE)),
     "rl_N4_gamma0.json: its 'seconds' is missing or not a number >= 0"),
    ("maze-table-gamma-beyond-float", ["maze", "table", "{tmp}/m"], maze_folder(rl0=_piece(gamma=HUGE)),
     "rl_N4_gamma0.json: N 4 / gamma 1000"),
    ("maze-table-reward-beyond-float", ["maze", "table", "{tmp}/m"],
     maze_folder(rl0=_piece(curve=[{"step": 0, "train_reward": -HUGE}])), "curve[0].train_reward is not a finite number"),
    ("maze-table-sft-pass-beyond-float", ["maze", "table", "{tmp}/m"],
     maze_folder(sft={**SFT, "heldout": {"pass_at_k": PROBS, "exact_pass_at_k": {**PROBS, "128": HUGE}}}),
     "sft.json: its heldout.exact_pass_at_k is not a table of probabilities"),
    ("maze-compare-pass-beyond-float", ["maze", "compare", "{tmp}/m", "{tmp}/m", "--n", "4", "--gamma-a", "1"],
     maze_folder(rl1=_piece(gamma=1.0, heldout={"pass_at_k": {**PROBS, "256": HUGE}, "exact_pass_at_k": PROBS})),
     "rl_N4_gamma1.json: its heldout.pass_at_k is not a table of probabilities"),
    ("dynamics-step-beyond-float", DYN, {"runs/a/dynamics.jsonl": f'{{"step": {HUGE}, "dynamics/pass@1": 0.5}}\n'},
     "dynamics.jsonl line 1: field 'step' must be an integer in [0, 2^63 - 1]"),
    ("dynamics-pass-beyond-float", DYN,
     {"runs/a/dynamics.jsonl": '{"step": 0, "dynamics/pass@8": 0.5}\n' + f'{{"step": 1, "dynamics/pass@8": {HUGE}}}\n'},
     "dynamics.jsonl line 2: field 'dynamics/pass@8' must be a probability in [0, 1]"),
    ("dynamics-state-pass-beyond-float", DYN,
     {"runs/a/trainer_state.json": json.dumps({"log_history": [{"step": 3, "dynamics/pass@1": -HUGE}]})},
     "trainer_state.json log_history[0]: field 'dynamics/pass@1' must be a probability"),
    # n-verify (issues 43/50 leftovers): an error names the option the user typed, never an internal parameter
    ("plan-rho-named-as-typed", ["plan", "--beta", "1,1", "--rho", "1.5"], {}, "--rho must be in (0, 1), got 1.5"),
    ("plan-n-named-as-typed", ["plan", "--beta", "1,1", "--n", "0"], {}, "--n must be in [1, 16384], got 0"),
    ("plan-max-tail-miss-named-as-typed", ["plan", "--beta", "1,1", "--max-tail-miss", "2"], {},
     "--max-tail-miss must be in [0, 1], got 2"),
    ("population-n-named-as-typed", [*POP, "--n", "0"], {}, "--n must be in [1, 1000000], got 0"),
    ("population-rho-named-as-typed", [*POP, "--rho", "1"], {}, "--rho must be in (0, 1), got 1"),
    ("population-actions-named-as-typed", [*POP, "--actions", "0,1,1"], {}, "--actions COMMON must be in [1, 10000]"),
    ("maze-run-n-named-as-typed", ["maze", "run", "--preset", "tiny", "--n", "1", "--out", "{tmp}/m"], {},
     "--n must be in [2, 4096], got 1"),
    ("maze-compare-n-named-as-typed", ["maze", "compare", "{tmp}/m", "{tmp}/m", "--n", "1", "--gamma-a", "1"],
     maze_folder(), "--n must be in [2, 4096], got 1"),
    ("theory-peak-tiny-mu-names-rho", ["theory", "peak", "--mu", "1e-300"], {},
     "--mu 1e-300 is too small for the default --rho 0.1: Pr(B) peaks near N = "),
    ("theory-peak-tiny-mu-and-tau-named", ["theory", "peak", "--mu", "1e-300", "--tau", "1e-302"], {},
     "--mu and --tau too small"),
]



def gs_record(field: str, raw: str) -> str:
    """The committed group-size record's first report (one JSON line) with `field` (a dotted path, list
    indices as numbers: "argmin_share.0") replaced by the JSON text `raw` (NaN, 1e400: what json.dumps never
    writes), as a careless editor or another tool would leave it."""
    from fgrpo_sim.packaged import committed_result

    report = json.loads(committed_result("population-group-size.jsonl").read_text().splitlines()[0])
    *path, last = [int(k) if k.isdigit() else k for k in field.split(".")]
    node = report
    for key in path:
        node = node[key]
    node[last] = "@@"
    return json.dumps(report).replace('"@@"', raw) + "\n"


FROM = ["simulate", "group-size", "--from", "{tmp}/r.jsonl"]
# issue 43: --from (and every reader of a saved report: the figure, the docs) checks each field by kind
CASES += [(f"group-size-from-{case}", FROM, {"r.jsonl": gs_record(field, raw)}, f"r.jsonl line 1: {needle}")
          for case, field, raw, needle in [
    ("nan-pass256", "pass256.3", "NaN", "field 'pass256[3]' must be a probability in [0, 1], got nan"),
    ("infinity-share", "lowest_share", "Infinity", "field 'lowest_share' must be a probability in [0, 1], got inf"),
    ("float-beyond-range", "rare_share_median", "1e400", "field 'rare_share_median' must be a probability"),
    ("fractional-predicted-n", "predicted_N", "16.5", "field 'predicted_N' must be an integer in [1, 2^63 - 1], got 16.5"),
    ("minus-infinity-share", "argmin_share.0", "-Infinity", "field 'argmin_share[0]' must be a probability"),
    ("lr-beyond-float", "lr", str(HUGE), "field 'lr' must be a number >= 0, got 1000"),
    ("lowest-n-null", "observed_lowest_N", "null", "field 'observed_lowest_N' must be an integer in [1, 2^63 - 1], got None"),
    ("short-interval", "first_minus_lowest", "[0.01, 0.0]",
     "field 'first_minus_lowest' must be an interval [estimate, low, high], got [0.01, 0.0]"),
    ("fgrpo-a-dict", "fgrpo_at_lowest", '{"gamma": 0.5}', "field 'fgrpo_at_lowest' must be a list, got {'gamma': 0.5}"),
    ("text-lr", "lr", '"0.01"', "field 'lr' must be a number >= 0, got '0.01'"),
    ("text-rare-mass", "rare_mass", '"0.02"', "field 'rare_mass' must be a probability mass in [0, 1], got '0.02'"),
    # of our own: the record's consistency, and nested fields
    ("lowest-n-not-run", "observed_lowest_N", "3", "field 'observed_lowest_N' = 3 is not one of the report's N"),
    ("pass256-one-short", "pass256", "[0.5, 0.5]", "field 'pass256' must be a list of 10 values (one per N)"),
    ("n-unsorted", "N", "[4, 2, 8, 16, 32, 64, 128, 256, 512, 1024]", "field 'N' must list group sizes in increasing"),
    ("bool-dip", "dip", "1", "field 'dip' must be true or false, got 1"),
    ("nested-nan", "fgrpo_at_lowest.0.minus_grpo.0", "NaN", "field 'fgrpo_at_lowest[0].minus_grpo[0]' must be a number"),
    ("best-checkpoint-lowest-n", "best_checkpoint.observed_lowest_N", "5",
     "field 'best_checkpoint.observed_lowest_N' = 5 is not one of the report's N"),
    ("curve-pass1-text", "curves.0.pass1.0", '"x"', "field 'curves[0].pass1[0]' must be a probability"),
]]
# n-verify: one setting's report twice (a line pasted twice, two records joined) printed twice, exit 0
CASES += [("group-size-from-setting-twice", FROM, {"r.jsonl": gs_record("lr", "0.01") * 2},
           "r.jsonl line 2 repeats the setting of line 1")]

CAT_PARQUET = [*CAT[:2], "--out", "{tmp}/out.parquet", *CAT[4:]]
# issue 43: a resume checks what it keeps against the run: no NaN in a policy metric, steps within the run,
# settings that agree with their config_id, parquet number columns stored as numbers
CASES += [
    ("categorical-resume-nan-qpos", CAT, {"out.csv": "CAT_TABLE:nan-qpos"}, "out.csv line 3: q_pos = NaN is not a finite"),
    ("categorical-resume-parquet-nan-qpos", CAT_PARQUET, {"out.parquet": "CAT_TABLE:nan-qpos"},
     "out.parquet row 2: q_pos = nan is not a finite number"),
    ("categorical-resume-step-negative", CAT, {"out.csv": "CAT_TABLE:step-negative"}, "out.csv line 3: step = -1 is not >= 0"),
    ("categorical-resume-step-beyond-the-run", CAT, {"out.csv": "CAT_TABLE:step-beyond"},
     "out.csv line 4: step 99 is not one this run of config_id"),
    ("categorical-resume-surrogate-of-another-setting", CAT, {"out.csv": "CAT_TABLE:surrogate-all"},
     "out.csv line 2: surrogate = 'prob' contradicts config_id"),
    ("categorical-resume-surrogate-differs-within-its-id", CAT, {"out.csv": "CAT_TABLE:surrogate-one"},
     "out.csv line 3: surrogate = 'prob' contradicts config_id"),
    ("categorical-resume-lr-differs-within-its-id", CAT, {"out.csv": "CAT_TABLE:lr-one"},
     "out.csv line 3: lr = 0.5 contradicts config_id"),
    ("categorical-resume-parquet-text-seed", CAT_PARQUET, {"out.parquet": "CAT_TABLE:text-seed"},
     "out.parquet row 1: seed = '0' is stored as text, not as numbers"),
    ("group-size-resume-parquet-text-seed", GS_PARQUET, {"g.parquet": "GS_TABLE:text-seed"},
     "g.parquet row 1: seed = '0' is stored as text, not as numbers"),
    ("group-size-resume-step-beyond-the-row", GS, {"g.csv": "GS_TABLE:step-beyond"},
     "g.csv line 9: step 99 is beyond its row's 1 steps"),
    ("group-size-resume-step-negative", GS, {"g.csv": "GS_TABLE:step-negative"}, "g.csv line 9: step = -1 is not >= 0"),
    ("group-size-resume-optimizer-of-another-chunk", GS, {"g.csv": "GS_TABLE:other-optimizer"},
     "g.csv line 3: rare_correct_prob, optimizer and parametrisation (rare_correct_prob=1/sgd/axis) contradict its chunk"),
    ("group-size-resume-gamma-the-study-never-gives", GS, {"g.csv": "GS_TABLE:other-gamma"},
     "g.csv line 3: gamma = 2 contradicts its chunk 'rare_correct_prob=1/adam/axis#"),
]

# Outputs a failing case must not leave: any of these names under the test folder.
OUTPUTS = ("out.csv", "out.jsonl", "out.jsonl.meta.json", "out.jsonl.tmp", "figs", "rep", "o.jsonl", "m/summary.json")


def _write_files(tmp: Path, files: dict) -> None:
    for name, content in files.items():
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content == "INF_TABLE":
            _categorical_table_with_inf(path)
        elif content == "CAT_TABLE":  # a finished categorical table (someone else's file to other writers)
            _categorical_table_with_inf(path, cut=None)
        elif isinstance(content, str) and content.startswith("TORN_TABLE:"):  # a sound table cut N bytes short
            _categorical_table_with_inf(path, cut=int(content.split(":")[1]))
        elif isinstance(content, str) and content.startswith("GS_TABLE:"):
            _damaged_group_size_table(path, content.split(":", 1)[1])
        elif isinstance(content, str) and content.startswith("CAT_TABLE:"):
            _damaged_categorical_table(path, content.split(":", 1)[1])
        elif content == "PARQUET_FOREIGN":
            import pandas as pd

            pd.DataFrame({"a": [1, 2]}).to_parquet(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, (dict, list)):
            path.write_text(json.dumps(content))
        else:
            path.write_text(content.replace("{tmp}", str(tmp)))


def _categorical_table_with_inf(path: Path, cut: int | None = 0) -> None:
    """A sound result table of the CAT setting with one metric set to inf (resume must refuse it), or with
    its last `-cut` bytes cut off instead (a torn last row), or as it is (`cut=None`)."""
    from fgrpo_sim.cli import main

    try:
        main([a.replace("{tmp}", str(path.parent)) for a in CAT])
    except SystemExit as exc:
        assert exc.code in (0, None)
    if cut is None:
        return
    if cut:
        path.write_bytes(path.read_bytes()[:cut])
        return
    text = path.read_text().splitlines()
    head = text[0].split(",")
    row = text[1].split(",")
    row[head.index("m_ret")] = "inf"
    path.write_text("\n".join([text[0], ",".join(row), *text[2:]]) + "\n")


_GS_SOUND: dict[str, bytes] = {}  # suffix -> a sound group-size table, made once per session


def _damaged_group_size_table(path: Path, damage: str) -> None:
    """A sound group-size table of the GS setting (written by the command) with one `damage`."""
    from fgrpo_sim.cli import main

    suffix = path.suffix
    if suffix not in _GS_SOUND:
        sound = path.parent / f"gs-sound{suffix}"
        try:
            main([a.replace("{tmp}/g.csv", str(sound)) for a in GS])
        except SystemExit as exc:
            assert exc.code in (0, None)
        _GS_SOUND[suffix] = sound.read_bytes()
        sound.unlink()
    data = _GS_SOUND[suffix]
    if suffix == ".parquet":
        import io

        import numpy as np
        import pandas as pd

        if damage == "cut":
            path.write_bytes(data[:len(data) // 2])
            return
        table = pd.read_parquet(io.BytesIO(data))
        if damage == "drop":
            table = table.drop(index=8)
        elif damage == "nan":
            table.loc[4, "heldout_pass@256"] = np.nan
        elif damage == "text-seed":
            table["seed"] = table["seed"].astype(str)
        table.to_parquet(path, index=False)
        return
    lines = data.decode().splitlines()
    head = lines[0].split(",")

    def set_field(line: int, column: str, value: str) -> None:  # `line` counts from 1, the header included
        fields = lines[line - 1].split(",")
        fields[head.index(column)] = value
        lines[line - 1] = ",".join(fields)

    edits = {"nan": (6, "heldout_pass@256", "NaN"), "empty-metric": (10, "train_dnll_rare", ""),
             "empty-chunk": (3, "chunk", ""), "text-n": (5, "N", "two"), "half-seed": (8, "seed", "0.5"),
             "inf-lr": (9, "lr", "-inf"), "step-beyond": (9, "step", "99"), "step-negative": (9, "step", "-1"),
             "other-optimizer": (3, "optimizer", "sgd"), "other-gamma": (3, "gamma", "2.0")}
    if damage in edits:
        set_field(*edits[damage])
    elif damage == "repeat":
        lines.append(lines[3])
    elif damage == "short":
        lines[3] = lines[3].rsplit(",", 1)[0]
    elif damage == "drop":
        del lines[8]
    text = "\n".join(lines) + "\n"
    if damage == "torn":  # cut inside the last number: the field count stays right
        text = text[:-6]
    raw = text.encode()
    if damage == "byte":
        at = sum(len(line) + 1 for line in raw.split(b"\n")[:6]) + 5  # inside line 7
        raw = raw[:at] + b"\xff" + raw[at + 1:]
    path.write_bytes(raw)


def _damaged_categorical_table(path: Path, damage: str) -> None:
    """A finished categorical table of the CAT setting (steps 0, 1, 2 on lines 2-4; parquet rows 1-3), written
    by the command at `path` (.csv or .parquet), then given one `damage` (issue 43's resume cases)."""
    import numpy as np
    import pandas as pd

    from fgrpo_sim.cli import main

    try:
        main([a.replace("{tmp}/out.csv", str(path)).replace("{tmp}", str(path.parent)) for a in CAT])
    except SystemExit as exc:
        assert exc.code in (0, None)
    parquet = path.suffix == ".parquet"
    table = pd.read_parquet(path) if parquet else pd.read_csv(path, dtype=str, keep_default_na=False)
    if damage == "nan-qpos":
        table.loc[1, "q_pos"] = np.nan if parquet else "NaN"
    elif damage == "text-seed":
        table["seed"] = table["seed"].astype(str)
    else:
        row, column, value = {"step-negative": (1, "step", "-1"), "step-beyond": (2, "step", "99"),
                              "surrogate-one": (1, "surrogate", "prob"), "lr-one": (1, "lr", "0.5"),
                              "surrogate-all": (slice(None), "surrogate", "prob")}[damage]
        table.loc[row, column] = value
    table.to_parquet(path, index=False) if parquet else table.to_csv(path, index=False)


def run_case(tmp: Path, args, files, capsys) -> tuple[str, int, str]:
    """(outcome, exit code, stderr): outcome 'traceback' when an exception escaped main."""
    from fgrpo_sim.cli import main

    _write_files(tmp, files)
    capsys.readouterr()
    outcome, code = "exit", 0
    try:
        main([a.replace("{tmp}", str(tmp)) for a in args])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:  # noqa: BLE001 - the point is to classify what escaped
        outcome, code = "traceback", 1
        print(f"Traceback: {type(exc).__name__}: {exc}", file=sys.stderr)
    return outcome, code, capsys.readouterr().err


def classify(tmp: Path, outcome: str, code: int, err: str, needle: str) -> str | None:
    """None when the case behaves, else the failure class: traceback, exit0, unnamed, other."""
    needle = needle.replace("{tmp}", str(tmp))
    if outcome == "traceback" or "Traceback" in err:
        return "traceback"
    if code == 0:
        return "exit0"
    lines = err.strip().splitlines()
    if code != 2 or len(lines) != 1 or not lines[0].startswith("fgrpo: error: "):
        return "other"
    if needle not in lines[0]:
        return "unnamed"
    return None


@pytest.mark.parametrize("case_id, args, files, needle", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_named_line_exit_2_and_leaves_no_output(tmp_path, capsys, case_id, args, files, needle):
    _write_files(tmp_path, files)
    before = {name: (tmp_path / name).read_bytes() for name in files}
    outcome, code, err = run_case(tmp_path, args, {}, capsys)
    assert classify(tmp_path, outcome, code, err, needle) is None, (code, err)
    changed = [name for name, data in before.items() if (tmp_path / name).read_bytes() != data]
    assert not changed, f"a refused command changed its files: {changed}"
    left = [name for name in OUTPUTS if (tmp_path / name).exists()
            and not any(str(f).startswith(name) for f in files)]
    assert not left, f"output left behind: {left}"
    assert not list(tmp_path.rglob(".*.tmp*")), "a temp file was left behind"


# ---------------------------------------------------------------- inputs that must be accepted

VALID = [
    ("passk-bom", ["passk", "{tmp}/r.jsonl", "--k", "1"], {"r.jsonl": "\ufeff" + PASSK_OK}, "pass@k"),
    ("passk-u2028-u0085", ["passk", "{tmp}/r.jsonl", "--k", "1"],
     {"r.jsonl": PASSK_OK + json.dumps({"problem_id": "a\u2028b\x85c", "n": 4, "c": 1}, ensure_ascii=False) + "\n"}, "5 problems"),
    ("passk-out-long-name", ["passk", "{tmp}/r.jsonl", "--k", "1", "--out", "{tmp}/" + "z" * 250 + ".json"],
     {"r.jsonl": PASSK_OK}, "pass@k"),
    ("plan-csv-bom", ["plan", "{tmp}/p.csv", "--n", "4"], {"p.csv": "\ufeffsuccess_rate\n0.5\n0.2\n"}, "(2 prompts)"),
    ("plan-n-repeated-joins", ["plan", "--beta", "1,1", "--n", "4", "--n", "8", "--json"], {}, '"N": [\n      4,\n      8\n'),
    ("plan-json-no-infinity", ["plan", "--beta", "1,1", "--n", "1", "--json"], {}, '"rollouts_per_active_group": null'),
    ("categorical-group-sizes-repeated-join", [*CAT, "--n", "2"], {}, "(6 rows of setting"),
    ("population-n-repeated-join", [*POP, "--n", "4", "--n", "8"], {}, "wrote 36 rows"),
    ("theory-repeated-joins", ["theory", "tail-miss", "--n", "4", "--n", "8", "--mu", "0.5"], {}, "8"),
    ("maze-table-gamma-tags", ["maze", "table", "{tmp}/m"], maze_folder(), "| 4 |"),
    ("maze-compare-minus-zero", ["maze", "compare", "{tmp}/m", "{tmp}/m", "--n", "4", "--gamma-a", "1", "--gamma-b", "-0"],
     maze_folder(), "B = gamma 0 in"),
    ("categorical-out-upper-case-suffix", [*CAT, "--out", "{tmp}/out.CSV"], {}, "(3 rows of setting"),
    ("passk-out-replaces-its-own-result", ["passk", "{tmp}/r.jsonl", "--k", "1", "--out", "{tmp}/p.json"],
     {"r.jsonl": PASSK_OK, "p.json": {"results": {}, "k": [1], "pass_at_k": [0.5]}}, "pass@k"),
    ("passk-out-force-replaces-a-foreign-file", ["passk", "{tmp}/r.jsonl", "--k", "1", "--out", "{tmp}/n.txt", "--force"],
     {"r.jsonl": PASSK_OK, "n.txt": "mine\n"}, "pass@k"),
    ("population-out-force", [*POP, "--force"], {"out.csv": "a,b\n1,2\n"}, "wrote 54 rows"),
    ("passk-surrogate-pair-is-one-character", ["passk", "{tmp}/r.jsonl", "--k", "1"],
     {"r.jsonl": PASSK_OK + '{"problem_id": "\\ud83d\\ude00", "n": 4, "c": 1}\n'}, "5 problems"),
    # issue 31: a legal non-UTF-8 file name (surrogateescape in Python), and counts written as integral floats
    ("passk-out-non-utf8-name", ["passk", "{tmp}/r.jsonl", "--k", "1", "--out", "{tmp}/bad\udcff.json"],
     {"r.jsonl": PASSK_OK}, "pass@k"),
    ("categorical-out-non-utf8-name", [*CAT, "--out", "{tmp}/t\udcfe.csv"], {}, "(3 rows of setting"),
    ("passk-integral-float-counts", ["passk", "{tmp}/r.jsonl", "--k", "1"],
     {"r.jsonl": '{"problem_id": "a", "n": 4.0, "c": 1.0}\n{"problem_id": "b", "correct": true, "sample_index": 0.0}\n'},
     "2 problems"),
    ("report-bom-manifest", REPORT, {**manifest(), "man.csv": "\ufeff" + manifest()["man.csv"]}, "GRPO"),
]


@pytest.mark.parametrize("case_id, args, files, needle", VALID, ids=[c[0] for c in VALID])
def test_valid_input_is_accepted(tmp_path, capsys, case_id, args, files, needle):
    from fgrpo_sim.cli import main

    _write_files(tmp_path, files)
    capsys.readouterr()
    try:
        main([a.replace("{tmp}", str(tmp_path)) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out, err = capsys.readouterr()
    assert code == 0, err
    assert needle in out + err


def test_every_list_option_follows_the_join_rule():
    """The options that parse_list reads (declared with options.list_option) are the ones
    cli.merge_repeated_options joins; a flag is never one."""
    import typer.main

    from fgrpo_sim.cli import _is_list_option, app

    found = set()

    def walk(command, path):
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])
        for param in getattr(command, "params", []):
            if param.param_type_name == "option" and _is_list_option(param):
                assert not param.is_flag, (path, param.opts)  # e.g. --yes, whose help says "command"
                found.add((" ".join(path), param.opts[0]))

    walk(typer.main.get_command(app), [])
    assert found >= {("passk", "--k"), ("plan", "--rho"), ("plan", "--n"), ("plan", "--gamma"),
                     ("theory tail-miss", "--n"), ("theory peak", "--mu"), ("theory peak", "--tau"),
                     ("theory peak", "--rho"), ("simulate categorical", "--n"),
                     ("simulate categorical", "--gamma"), ("simulate categorical", "--seeds"),
                     ("simulate population", "--n"), ("simulate population", "--gamma"),
                     ("simulate population", "--method"), ("simulate population", "--k"),
                     ("maze run", "--n"), ("maze run", "--gamma")}


def test_report_selection_json_is_standard_json(tmp_path, capsys):
    """A valid manifest without OOD benchmarks has NaN OOD averages: written as null, never bare NaN."""
    from fgrpo_sim.cli import main

    _write_files(tmp_path, manifest())
    with pytest.raises(SystemExit) as exc:
        main([a.replace("{tmp}", str(tmp_path)) for a in REPORT] + ["--no-paper"])
        raise SystemExit(0)
    assert exc.value.code in (0, None)
    text = (tmp_path / "rep" / "selection.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text)["selected"][0]["ood_pass1"] is None


@pytest.mark.parametrize("content, needle", [
    (b'{"problem_id": "0"}\n\xff\n', "out.jsonl line 2: not UTF-8"),
    (b'{"problem_id": "0", "problem_id": "1"}\n', "key 'problem_id' appears twice"),
    (b'{"problem_id": "0", "sample_index": ' + b"1" * 5000 + b"}\n", "out.jsonl: line 1: number out of range"),
])
def test_eval_resume_lines_name_file_and_line(tmp_path, content, needle):
    from fgrpo_sim.llm.evaluation.evaluate import read_existing_numbered

    (tmp_path / "out.jsonl").write_bytes(content)
    with pytest.raises(ValueError, match="cannot resume from a damaged file") as exc:
        read_existing_numbered(tmp_path / "out.jsonl")
    assert needle in str(exc.value)


def test_eval_meta_file_with_a_duplicate_key_is_named(tmp_path):
    from fgrpo_sim.llm.evaluation.evaluate import EvalSettings, _check_meta

    out = tmp_path / "out.jsonl"
    out.write_text('{"problem_id": "0", "sample_index": 0, "correct": true}\n')
    (tmp_path / "out.jsonl.meta.json").write_text('{"n": 1, "n": 2}')
    with pytest.raises(ValueError, match="key 'n' appears twice"):
        _check_meta(out, EvalSettings(model="tiny", data="d.jsonl", benchmark="generic"))


def test_eval_lines_keep_u2028_and_u0085_inside_strings(tmp_path):
    """Split on "\\n" only: U+2028 / U+0085 in a completion or a problem are not line ends."""
    from fgrpo_sim.llm.evaluation.evaluate import read_existing_numbered
    from fgrpo_sim.llm.evaluation.ood_data import load_any_benchmark

    odd = "a\u2028b\x85c\rd"
    (tmp_path / "out.jsonl").write_text(json.dumps({"problem_id": "0", "completion": odd}, ensure_ascii=False) + "\n")
    assert read_existing_numbered(tmp_path / "out.jsonl") == [(1, {"problem_id": "0", "completion": odd})]
    (tmp_path / "d.jsonl").write_text(json.dumps({"problem": odd, "answer": "2"}, ensure_ascii=False) + "\n")
    assert [p["problem"] for p in load_any_benchmark("generic", tmp_path / "d.jsonl")] == [odd]


def test_maze_gamma_file_tags_are_unique():
    from fgrpo_sim.maze.experiment import run_file

    def name(gamma):
        return run_file(Path("o"), 0, 4, gamma).name

    assert name(0.1234567) != name(0.1234568)  # both printed as 0.123457 before: one result for two settings
    assert name(-0.0) == name(0.0) == "rl_N4_gamma0.json"  # -0 is 0
    assert run_file(Path("o"), 0, 4, 0.5).name == "rl_N4_gamma0p5.json"  # ordinary values keep their short tag


def test_ctrl_c_names_where_the_run_resumes(tmp_path, capsys, monkeypatch):
    """SIGINT (KeyboardInterrupt) exits 130 with one line; inside a locked output it names that output."""
    from fgrpo_sim import cli
    from fgrpo_sim.output_lock import output_lock

    def interrupted(*args, **kwargs):
        with output_lock(tmp_path / "t.csv"):
            raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_command", lambda: SimpleNamespace(main=interrupted))
    monkeypatch.setattr(cli, "merge_repeated_options", lambda argv: argv)
    with pytest.raises(SystemExit) as exc:
        cli.main(["plan"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 130 and len(err) == 1
    assert f"kept in {tmp_path / 't.csv'}: run the same command again to resume" in err[0]


def test_sigint_of_a_real_run_prints_where_it_resumes(tmp_path):
    """typer turns Ctrl-C into a silent Exit(130): a real process must still print the one line."""
    import os
    import signal
    import subprocess
    import time

    from children import ended, start  # SIGINT at its default in the child, even under `make test &`

    out = tmp_path / "t.csv"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = start([sys.executable, "-m", "fgrpo_sim", "simulate", "categorical", "--out", str(out),
                  "--n", "4,8", "--seeds", "0", "--steps", "10000000", "--num-actions", "2000",
                  "--num-correct", "10", "--chunk-runs", "1", "--no-progress"],
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    with ended(proc):  # killed and reaped if anything below fails: the run would go on for hours
        lock = tmp_path / ".t.csv.lock"
        deadline = time.time() + 120
        while not lock.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == [f"fgrpo: interrupted; the finished work is kept in {out}: run the same "
                                        "command again to resume from it"]


@pytest.mark.parametrize("value, expected", [(4, 4), (4.0, 4), (-0.0, 0), (4.5, None), (True, None),
                                             (float("nan"), None), (2.0**60, None), ("4", None)])
def test_integral_counts_accept_whole_floats_only(value, expected):
    from fgrpo_sim.validation import integral

    assert integral(value) == expected


def test_passk_refuses_a_fractional_count(tmp_path):
    from fgrpo_sim.metrics.results_io import read_results_jsonl

    (tmp_path / "r.jsonl").write_text('{"problem_id": "a", "n": 4.5, "c": 1}\n')
    with pytest.raises(ValueError, match="line 1: 'n' must be an integer in"):
        read_results_jsonl(tmp_path / "r.jsonl")


def test_non_utf8_names_keep_hidden_names_within_255_bytes(tmp_path):
    from fgrpo_sim.atomic_io import hidden_name

    name = "\udcff" * 250 + ".json"  # 255 bytes on disk, not encodable as UTF-8
    hidden = hidden_name(name, ".lock")
    assert len(os.fsencode(hidden)) <= 255 and hidden.endswith(".lock")


def test_require_loadable_refuses_an_empty_name():
    from fgrpo_sim.llm.hub import require_loadable

    with pytest.raises(ValueError, match="model name is empty"):
        require_loadable("", "model")


def test_full_disk_names_the_output(tmp_path, monkeypatch):
    import errno

    from fgrpo_sim.atomic_io import write_text_atomic

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(ValueError, match=f"cannot write {tmp_path / 'r.json'}: No space left on device"):
        write_text_atomic(tmp_path / "r.json", "{}")
    assert not list(tmp_path.iterdir())


def test_hidden_temp_and_lock_names_stay_within_255_bytes(tmp_path):
    from fgrpo_sim.atomic_io import atomic_path, remove_stale_temp_files
    from fgrpo_sim.output_lock import lock_path_for, output_lock

    for length in (245, 251, 255):
        out = tmp_path / ("é" * ((length - 5) // 2) + "a" * ((length - 5) % 2) + ".json")
        assert len(out.name.encode()) == length
        with output_lock(out):
            assert len(lock_path_for(out).name.encode()) <= 255
            with atomic_path(out) as tmp:
                assert len(tmp.name.encode()) <= 255
                tmp.write_text("{}")
        assert out.read_text() == "{}"
    assert remove_stale_temp_files(tmp_path) == []


if __name__ == "__main__":  # failure classes on the code at hand (used for the before/after counts)
    import collections
    import tempfile

    class _Capture:
        def readouterr(self):
            out, err = sys.stdout.getvalue(), sys.stderr.getvalue()
            sys.stdout.seek(0), sys.stdout.truncate(), sys.stderr.seek(0), sys.stderr.truncate()
            return type("R", (), {"out": out, "err": err})()

    import io

    counts: collections.Counter = collections.Counter()
    real_out, real_err = sys.stdout, sys.stderr
    for case_id, args, files, needle in CASES:
        with tempfile.TemporaryDirectory() as folder:
            sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
            try:
                outcome, code, err = run_case(Path(folder), args, files, _Capture())
            finally:
                sys.stdout, sys.stderr = real_out, real_err
            verdict = classify(Path(folder), outcome, code, err, needle)
            counts[verdict or "ok"] += 1
            if verdict:
                print(f"{verdict:10} {case_id}: {' '.join(err.split())[:160]}")
    print(f"{len(CASES)} cases:", dict(counts))
