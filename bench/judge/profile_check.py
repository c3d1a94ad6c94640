"""One bundle's record of bench/judge/profile_report.sh: what the profile judging found, what it cost, and whether
the agent's reading of Nsight Compute holds on the real tool's output.

Reads FOLDER/NAME.result.json (the profile judging's JSON), NAME.ncu-details.csv (ncu's table, as the report was
read from it) and NAME.ncu-rep; reads the table again with profiler_agent.judge.profile_output and compares it
with the report; reads the .ncu-rep back with `ncu --import` (the details page, with NVTX stacks where this ncu
prints them, and the raw page), keeping both beside it, and parses the details the same way. Writes
FOLDER/NAME.json and prints a summary. Needs the agent alone (no torch, no site).

    python bench/judge/profile_check.py --name lb-mlp-gelu --folder bench/results/profile \\
        --test-cold-s 41.2 --test-warm-s 12.0 --profile-s 30.5
    python bench/judge/profile_check.py --name lb-mlp-gelu --folder bench/results/profile --reread ...
        (a report the judging could not read, filled from its kept table by a mended parser)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from profiler_agent.judge import profile_output  # noqa: E402
from profiler_agent.judge.ncu_output import NcuOutputError  # noqa: E402

IMPORT_TIMEOUT_S = 300


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True)
    parser.add_argument("--folder", type=Path, required=True)
    for which in ("test-cold", "test-warm", "profile"):
        parser.add_argument(f"--{which}-s", type=float, help=f"the {which} judging's wall seconds")
    parser.add_argument("--reread", action="store_true",
                        help="where the judging could not read ncu's table, fill its report's kernels from the kept "
                             "table with this checkout's parser (NAME.result.json is rewritten, the record says so)")
    return parser.parse_args(argv)


def fill_from_table(result: dict, result_path: Path, table_path: Path) -> str | None:
    """The report's kernels read from the kept table, where the judging's reading failed: what the
    judging's report said instead, or None where nothing was filled."""
    profile = result.get("profile") or {}
    if profile.get("available") or not table_path.is_file():
        return None
    records, models, _, error = reread(table_path.read_text(), profile.get("kernels_per_model"))
    if error is not None or not records:
        return None
    said = profile.get("reason") or "no reason"
    profile.update(kernels=records, models=models, available=True, reason=None)
    result_path.write_text(json.dumps(result, indent=1) + "\n")
    return said


def reread(table: str, cap: int | None):
    """The table read with the agent's parser: (records, per-model summary, has NVTX stacks, error)."""
    try:
        launches = profile_output.parse(table)
    except NcuOutputError as exc:
        return [], {}, False, str(exc)
    records, models = profile_output.kernels_per_model(launches, cap or profile_output.DEFAULT_KERNELS_PER_MODEL)
    return records, models, bool(launches) and all(launch.model is not None for launch in launches), None


def imported(executable: str | None, report: Path, page: str, nvtx: bool, out: Path) -> dict:
    """`ncu --import` of the report's `page`, kept in `out`: its exit status and how long it took."""
    if executable is None or not report.is_file():
        return {"ran": False, "why": "no ncu on PATH" if executable is None else "no .ncu-rep"}
    command = [executable, "--import", str(report), *(["--nvtx"] if nvtx else []), "--csv", "--page", page,
               "--print-units", "base"]
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"ran": True, "command": command, "exit_code": None, "why": f"timed out after {IMPORT_TIMEOUT_S} s"}
    out.write_text(completed.stdout + ("\n# stderr:\n" + completed.stderr if completed.stderr.strip() else ""))
    return {"ran": True, "command": command, "exit_code": completed.returncode, "bytes": len(completed.stdout)}


def same_kernels(a: list[dict], b: list[dict]) -> bool:
    keys = ("model", "name", "duration_ms", "grid", "block", "registers", "sm_pct", "dram_pct", "l2_pct")
    return [[r[k] for k in keys] for r in a] == [[r[k] for k in keys] for r in b]


def summary_rows(kernels: list[dict]) -> list[list]:
    return [[k["model"], k["name"][:80], round(k["duration_ms"] * 1e3, 2) if k["duration_ms"] is not None else None,
             k["grid"], k["block"], k["registers"], k["achieved_occupancy_pct"], k["sm_pct"], k["dram_pct"], k["l2_pct"],
             [f"{s['reason']} {s['share_pct']:.0f}%" for s in k["stalls"]],
             round(k["flop_per_s"] / 1e9, 1) if k["flop_per_s"] is not None else None, k["arithmetic_intensity"]]
            for k in kernels]


def main(argv=None) -> int:
    args = parse_args(argv)
    folder, name = args.folder, args.name
    result_path = folder / f"{name}.result.json"
    record: dict = {"bundle": name, "result": str(result_path)}
    if not result_path.is_file():
        record["why"] = "the profile judging wrote no result"
        (folder / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
        print(f"{name}: no result (see {name}.log)")
        return 1
    result = json.loads(result_path.read_text())
    # None, or what the judging's own report said before its kernels were read from the kept table
    record["filled_from_table_instead_of"] = (
        fill_from_table(result, result_path, folder / f"{name}.ncu-details.csv") if args.reread else None)
    profile = result.get("profile") or {}
    durations = [args.test_cold_s, args.test_warm_s, args.profile_s]
    record.update({
        "status": result["status"], "reason": result.get("reason"), "device": result["device"].get("name"),
        "available": profile.get("available"), "profile_reason": profile.get("reason"),
        "tool_version": profile.get("version"), "metrics": profile.get("metrics"),
        "table_source": profile.get("table_source"), "models": profile.get("models"),
        "report_file_bytes": (profile.get("report_file") or {}).get("bytes"),
        "kernels": summary_rows(profile.get("kernels") or []),
        "cost_s": {
            "test_cold_wall": durations[0], "test_warm_wall": durations[1], "profile_wall": durations[2],
            # what the profile adds to a judging of the same bundle, builds warm
            "profile_over_test": round(durations[2] - durations[1], 2) if None not in durations[1:] else None,
            "ncu_run": profile.get("duration_s"),
            "compile_in_profile_judging": (result.get("durations_s") or {}).get("compile"),
        },
    })
    checks = {}
    table_path = folder / f"{name}.ncu-details.csv"
    if table_path.is_file():
        records, models, nvtx, error = reread(table_path.read_text(), profile.get("kernels_per_model"))
        checks["table_rereads_as_reported"] = error is None and same_kernels(records, profile.get("kernels") or [])
        checks["table_has_nvtx_stacks"] = nvtx
        checks["table_error"] = error
    executable = shutil.which("ncu")
    report = folder / f"{name}.ncu-rep"
    details = folder / f"{name}.import-details.csv"
    earlier = folder / f"{name}.json"
    earlier_checks = json.loads(earlier.read_text()).get("checks", {}) if earlier.is_file() else {}
    if executable is None and earlier_checks.get("import_details", {}).get("ran"):
        # read again where there is no ncu: the imports stand as the GPU host's run made them
        checks.update({key: value for key, value in earlier_checks.items() if key.startswith("import_")
                       and isinstance(value, dict)})
    else:
        checks["import_details"] = imported(executable, report, "details", True, details)
        if checks["import_details"].get("exit_code") not in (0, None):
            checks["import_details_without_nvtx"] = imported(executable, report, "details", False, details)
        checks["import_raw"] = imported(executable, report, "raw", False, folder / f"{name}.import-raw.csv")
    if details.is_file():
        records, models, nvtx, error = reread(details.read_text(), profile.get("kernels_per_model"))
        checks["import_rereads_as_reported"] = error is None and same_kernels(records, profile.get("kernels") or [])
        checks["import_has_nvtx_stacks"] = nvtx
        checks["import_error"] = error
    record["checks"] = checks
    (folder / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    models = record["models"] or {}
    print(f"{name}: {record['status']}, profile available {record['available']} ({record['metrics']}, from the "
          f"{record['table_source']}); kernels: " + ", ".join(f"{m} {s.get('kernels')}" for m, s in models.items())
          + f"; profile {record['cost_s']['profile_wall']} s vs test {record['cost_s']['test_warm_wall']} s "
          f"(ncu run {record['cost_s']['ncu_run']} s); checks {json.dumps({k: v for k, v in checks.items() if isinstance(v, bool)})}")
    if record["profile_reason"]:
        print(f"  the report says: {record['profile_reason']}")
    return 0 if record["available"] else 1


if __name__ == "__main__":
    sys.exit(main())
