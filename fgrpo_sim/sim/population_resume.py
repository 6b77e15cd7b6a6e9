"""What `simulate population` keeps of its earlier output when the same command runs again (issue 47).

The resume unit is a variant (one TrainSpec: method, variant name and N), the unit a local sweep loops over
and `--executor ray` runs as one task. A variant draws from its own spec's seed, so its rows do not depend on
which other variants run: a kept variant equals a retrained one bit for bit.

The table itself stays byte-identical to what the command wrote before resuming existed (no new column), so
the settings that rows do not show (--seed, --prompts, --prompt-batch, ...) are recorded beside it, in the
hidden sidecar `.OUT.fgrpo-population.json`: keyed by the SHA-256 of the table it describes, per saved variant a
fingerprint of everything that shapes its rows (the population spec, the TrainSpec, the sharing mode). A
variant is kept only when the sidecar names the table as it is now and the variant's fingerprint is this
run's; anything else (another program's table, other settings, no sidecar) is trained afresh and the table
rewritten with this run's variants only, as a run without resume would. A kept variant's rows are read
through `sim.result_table` (every row by column kind, no key twice) and must form the whole grid its spec
makes (every run at every evaluation step, in every bucket); a sidecar that vouches for rows that do not is
refused in one line, never silently retrained. The device is not in the fingerprint: a sweep begun on the CPU
and resumed on CUDA holds variants of both (each equal to its own device's run).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

from fgrpo_sim import jsonl
from fgrpo_sim.atomic_io import hidden_name, write_text_atomic
from fgrpo_sim.sim.population import TRAINING_METRICS, TrainSpec, _default_variant
from fgrpo_sim.sim.result_table import TableSchema, read_result_table

SIDECAR = ".fgrpo-population.json"
HINT = "delete it (and its sidecar) or choose another --out"
#: the columns each mode writes beside pass@k (NaN only in the interval metrics, which step 0 lacks)
MODE_METRICS = {
    "per-prompt": (("correct_mass", "rare_mass", "retained_correct_mass", "rare_mass_retained"), TRAINING_METRICS),
    "shared": (("correct_mass", "rare_correct_mass", "common_strategy_mass", "rare_mass_retained"),
               ("active_fraction", "tail_miss_observed", "focal_weight_mean")),
}


def sidecar_path(out: Path) -> Path:
    return out.parent / hidden_name(out.name, SIDECAR)


def variant_key(spec: TrainSpec) -> str:
    """The rows' own name of a variant: method, variant label and N (unique within one sweep)."""
    return f"{spec.method}|{spec.variant or _default_variant(spec)}|N={spec.group_size}"


def fingerprint(population_spec, spec: TrainSpec, sharing: str) -> str:
    """Everything that shapes a variant's rows (dataclass reprs: every field, floats to the last bit)."""
    return repr((sharing, population_spec, spec))


def table_schema(sharing: str, pass_k) -> TableSchema:
    finite, with_nan = MODE_METRICS[sharing]
    split = ("split",) if sharing == "shared" else ()
    return TableSchema(
        "population table", text=("method", "optimizer", "parametrisation", "variant", *split, "bucket"),
        integers=("N", "run", "step", "groups"), numbers=("gamma", "lr"),
        metrics=(*finite, *(f"pass@{k}" for k in pass_k), *with_nan), nan_metrics=with_nan,
        key=("method", "variant", "N", "gamma", "lr", "run", "step", *split, "bucket"),
        bounds=(("N", 1, None), ("run", 0, None), ("step", 0, None), ("groups", 0, None), ("lr", 0, None)))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _evaluation_steps(spec: TrainSpec) -> set[int]:
    return {0, spec.steps, *range(spec.eval_every, spec.steps + 1, spec.eval_every)}


def kept_variants(out: Path, population_spec, specs: list[TrainSpec], sharing: str) -> dict[int, pd.DataFrame]:
    """{index in `specs`: its rows read back from `out`} for every planned variant `out` holds whole with
    this run's settings (module doc); {} when there is nothing to resume from."""
    if sidecar_path(out).is_symlink():  # atomic writes follow links: ours would land on the link's target
        raise ValueError(f"--out {out}: its sidecar {sidecar_path(out)} is a symbolic link; remove it")
    variants = next(iter(_recorded(out).values()), {})
    keys = [variant_key(s) for s in specs]
    # two gammas that print alike (1.0000001 and 1.0000002 are both "gamma=1") share a label: retrain both
    wanted = {i: key for i, (key, s) in enumerate(zip(keys, specs))
              if keys.count(key) == 1 and variants.get(key) == fingerprint(population_spec, s, sharing)}
    if not wanted:
        return {}
    table = read_result_table(out, table_schema(sharing, specs[0].pass_k), HINT, label="--out")
    if table.empty:
        raise ValueError(f"cannot resume from {out}: its sidecar records variants but it has no rows; {HINT}")
    names = (table["method"] + "|" + table["variant"] + "|N=" + table["N"].astype(str)).to_numpy()
    values = _exact_values(out)  # the checked rows' values as written, to the last bit, in the same row order
    kept = {}
    for i, key in wanted.items():
        rows = values[names == key].reset_index(drop=True)
        _check_whole(rows, specs[i], key, out)
        kept[i] = rows
    return kept


def _exact_values(out: Path) -> pd.DataFrame:
    """The table's values exactly as written (kept rows are written out again): pandas' default CSV float
    parser (and pd.to_numeric, which the checked reader uses) may miss the last bit, and pandas 2.1.1 (our
    floor) reads '0.005000000000000003' as 0.005; every float column is parsed again by Python's float(),
    which is exact (pandas 3 deprecates its own round_trip option). Booleans come back as booleans and empty
    fields as NaN, as the sweep made them."""
    if out.suffix.lower() != ".csv":
        return pd.read_parquet(out)
    typed, text = pd.read_csv(out), pd.read_csv(out, dtype=str, keep_default_na=False)
    for col in typed.columns:
        if typed[col].dtype.kind == "f":
            typed[col] = text[col].map(lambda t: float(t) if t.strip() else float("nan")).astype("float64")
    return typed


def _check_whole(rows: pd.DataFrame, spec: TrainSpec, key: str, out: Path) -> None:
    """A kept variant's rows are its spec's whole grid: its settings, every run at every evaluation step in
    every bucket it has."""
    where = f"cannot resume from {out}: variant {key!r}"
    if rows.empty:
        raise ValueError(f"{where} is recorded in its sidecar but has no rows; {HINT}")
    for col, value in (("gamma", spec.gamma), ("lr", spec.lr), ("optimizer", spec.optimizer),
                       ("parametrisation", spec.parametrisation)):
        if (rows[col].astype(type(value)) != value).any():
            raise ValueError(f"{where} has {col} {rows[col][rows[col] != value].iloc[0]}, its settings {value}; {HINT}")
    grid = {(r, s) for r in range(spec.runs) for s in _evaluation_steps(spec)}
    for bucket, part in rows.groupby([c for c in ("split", "bucket") if c in rows.columns]):
        if set(zip(part["run"], part["step"])) != grid or len(part) != len(grid):
            raise ValueError(f"{where}, bucket {bucket}: its runs and evaluation steps are not the {spec.runs} runs "
                             f"x {len(grid) // spec.runs} evaluations its settings make; {HINT}")


def save(out: Path, frames: dict[int, pd.DataFrame], population_spec, specs: list[TrainSpec], sharing: str,
         write_frame) -> pd.DataFrame:
    """Write the finished variants in the sweep's order (whatever order they finished in), atomically with
    write_frame(frame, temp path). The sidecar is replaced before the table is, and names both the table on
    disk and the new one: whenever an interrupt lands, the table there is one the sidecar describes."""
    from fgrpo_sim.atomic_io import atomic_path

    frame = pd.concat([frames[i] for i in sorted(frames)], ignore_index=True)
    keys = [variant_key(s) for s in specs]
    done = {keys[i]: fingerprint(population_spec, specs[i], sharing) for i in sorted(frames) if keys.count(keys[i]) == 1}
    previous = _recorded(out)
    with atomic_path(out) as tmp:
        write_frame(frame, tmp)
        tables = {**previous, _sha256(tmp): done}
        write_text_atomic(sidecar_path(out), jsonl.dumps({"tables": tables}) + "\n")
    return frame


def _recorded(out: Path) -> dict:
    """{sha of the table on disk: its variants} when the sidecar describes it, else {}."""
    record = sidecar_path(out)
    if not out.exists() or not record.exists():
        return {}
    try:
        tables = dict(jsonl.read_json_file(record, "sidecar")["tables"])
    except (ValueError, KeyError, TypeError):  # a damaged sidecar vouches for nothing: train afresh
        return {}
    sha = _sha256(out)
    return {sha: dict(tables[sha])} if isinstance(tables.get(sha), dict) else {}


__all__ = ["SIDECAR", "fingerprint", "kept_variants", "save", "sidecar_path", "table_schema", "variant_key"]
