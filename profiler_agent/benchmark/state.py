"""Resuming a benchmark run: each sample's row is appended to a JSON-lines state file as soon as it is
judged; a run started again on the same dataset and device takes those rows and judges the rest.

Line 1 is the header (dataset checksum, device); each further line one sample's row. A line cut short
by an interruption is ignored (that sample is judged again)."""

from __future__ import annotations

import json
import os
from pathlib import Path

CACHE_ENV = "PROFILER_AGENT_CACHE"


def default_state_path(checksum: str, device: str, json_path: Path | None) -> Path:
    """Next to --json (`<file>.state.jsonl`), else ~/.cache/profiler_agent/bench/<checksum>-<device>.jsonl."""
    if json_path is not None:
        return json_path.with_name(json_path.name + ".state.jsonl")
    base = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "profiler_agent")
    return base / "bench" / f"{checksum}-{device}.jsonl"


class State:
    def __init__(self, path: Path, header: dict, restart: bool = False):
        self.path = Path(path)
        self.header = header
        self.rows: dict[str, dict] = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not restart and self.path.is_file():
            self._load()
        if not self.rows:
            self.path.write_text(json.dumps(header, sort_keys=True) + "\n")

    def _load(self) -> None:
        lines = self.path.read_text(encoding="utf-8").splitlines()
        try:
            header = json.loads(lines[0]) if lines else None
        except json.JSONDecodeError:
            header = None
        if header != self.header:
            return  # another dataset, device or option set: start over
        for line in lines[1:]:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # the line an interruption cut short
            if isinstance(row, dict) and isinstance(row.get("id"), str):
                self.rows[row["id"]] = row
        # rewrite it whole: a cut line must not sit before the rows appended next
        self.path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in [self.header, *self.rows.values()]))

    def add(self, row: dict) -> None:
        self.rows[row["id"]] = row
        with open(self.path, "a", encoding="utf-8") as sink:
            sink.write(json.dumps(row, sort_keys=True, allow_nan=False) + "\n")
            sink.flush()
            os.fsync(sink.fileno())
