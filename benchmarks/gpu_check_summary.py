"""The JSON summary of benchmarks/gpu_check.sh: each stage's status and seconds, and the result its log printed.

Usage: python benchmarks/gpu_check_summary.py OUT START_EPOCH_SECONDS   (writes OUT/summary.json, prints it)
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path


def _json_results(text: str) -> list:
    """Every line of `text` that is a JSON object or list; failing that, a pretty-printed document from its
    first line that opens one (fgrpo check --json)."""
    found = []
    for raw in text.splitlines():
        raw = raw.strip()
        if raw.startswith(("{", "[")):
            try:
                found.append(json.loads(raw))
            except ValueError:
                pass
    if not found:
        start = re.search(r"^[\[{]", text, re.M)
        try:
            found = [json.loads(text[start.start():])] if start else []
        except ValueError:
            found = []
    return found


def summarize(out: Path, seconds: float) -> dict:
    """The summary of the stages listed in OUT/stages.tsv (name, status, seconds, note; tab-separated)."""
    summary: dict = {"seconds": round(seconds), "stages": {}}
    for line in (out / "stages.tsv").read_text().splitlines():
        name, status, secs, note = (line.split("\t") + [""] * 4)[:4]
        entry: dict = {"status": status, "seconds": int(secs or 0)}
        if note:
            entry["note"] = note
        log = out / f"{name}.log"
        if log.exists():
            text = log.read_text(errors="replace")
            found = _json_results(text)
            if found:  # the population stage prints one object per device
                entry["result"] = found if len(found) > 1 else found[-1]
            passed = re.findall(r"^=*\s*(\d+ (?:passed|failed).*?)\s*=*$", text, re.M)
            if passed:
                entry["pytest"] = passed[-1]
            if status != "ok" and "result" not in entry:
                entry["log_tail"] = text.strip().splitlines()[-5:]
        if name == "check" and isinstance(entry.get("result"), list):
            checks = entry["result"]
            entry["result"] = {"checks": len(checks), "passed": sum(1 for c in checks if c.get("passed"))}
        summary["stages"][name] = entry
    summary["ok"] = all(s["status"] in ("ok", "skipped") for s in summary["stages"].values())
    return summary


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0])
    summary = summarize(out, time.time() - int(argv[1]))
    text = json.dumps(summary, indent=1)
    (out / "summary.json").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
