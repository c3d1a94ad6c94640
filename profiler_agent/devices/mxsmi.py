"""Running MetaX's `mx-smi` and reading its text output, for hosts where pymxsml is not importable.

The parsers take the text a command printed and never raise: text they do not recognise (another
version's layout, an error message, nothing) gives None / empty results. They are tested on output
recorded on real C500/C550 hosts (tests/agent/fixtures/mx-smi/), mx-smi 2.1.6 to 2.2.12.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

# mx-smi ships with the driver; a service's PATH often lacks its folder
KNOWN_LOCATIONS = ("/opt/mxdriver/bin/mx-smi", "/opt/maca/bin/mx-smi")
TIMEOUT_S = 10.0  # a listing of 8 GPUs took about a second on the recorded hosts

_BUS_ID = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_NUMBER = r"\d+(?:\.\d+)?"


def executable() -> str | None:
    found = shutil.which("mx-smi")
    if found:
        return found
    return next((path for path in KNOWN_LOCATIONS if os.access(path, os.X_OK)), None)


def run(args: list[str], timeout_s: float | None = None) -> str | None:
    """mx-smi's standard output, or None when it is missing, fails, or runs past `timeout_s`
    (TIMEOUT_S when not given)."""
    program = executable()
    if program is None:
        return None
    try:
        completed = subprocess.run(
            [program, *args], capture_output=True, text=True, errors="replace", timeout=timeout_s or TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return completed.stdout if completed.returncode == 0 else None


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def parse_header(text: str | None) -> dict:
    """Driver and MACA versions from the banner of the plain `mx-smi` table."""
    text = text or ""
    driver = re.search(r"Kernel Mode Driver Version:\s*(\S+)", text)
    maca = re.search(r"MACA Version:\s*(\S+)", text)
    return {
        "driver": driver.group(1) if driver else None,
        "maca": maca.group(1) if maca and maca.group(1) != "unknown" else None,
    }


def _table_cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def parse_table(text: str | None) -> list[dict]:
    """One dict per GPU of the plain `mx-smi` table: index, name, bus_id, temperature_c, power_w,
    power_cap_w, memory_used_bytes, memory_total_bytes. Each GPU is two table rows; the columns moved
    between versions (2.2.12 puts power first and the GPU index in a cell of its own), so values are
    found by their units rather than by position."""
    rows = [line.rstrip() for line in (text or "").splitlines()]
    gpus = []
    for first, second in zip(rows, rows[1:]):
        if not (first.lstrip().startswith("|") and second.lstrip().startswith("|")):
            continue
        bus = re.search(_BUS_ID, first)
        head = re.match(r"^(\d+)\s+(.+?)(?:\s+(?:On|Off))?$", _table_cells(first)[0]) if bus else None
        if head is None:
            continue
        values = second
        temperature = re.search(rf"(?<![\w.])({_NUMBER})C\b", values)
        power = re.search(rf"(?<![\w.])({_NUMBER})W(?:\s*/\s*(?:({_NUMBER})W|NA))?", values)
        memory = re.search(r"(\d+)\s*/\s*(\d+)\s*MiB", values)
        gpus.append({
            "index": int(head.group(1)),
            "name": head.group(2).strip(),
            "bus_id": bus.group(0),
            "temperature_c": _float(temperature.group(1)) if temperature else None,
            "power_w": _float(power.group(1)) if power else None,
            "power_cap_w": _float(power.group(2)) if power else None,
            "memory_used_bytes": int(memory.group(1)) * 2**20 if memory else None,
            "memory_total_bytes": int(memory.group(2)) * 2**20 if memory else None,
        })
    return gpus


def parse_list(text: str | None) -> list[dict]:
    """`mx-smi -L`: one dict per GPU with index, chip name, bus_id, uuid, and the UUIDs of its sliced
    GPUs (sGPU), which is what torch reports inside a slice."""
    gpus: list[dict] = []
    for line in (text or "").splitlines():
        gpu = re.match(rf"^GPU#(\d+)\s+(\S+)\s+({_BUS_ID})\b", line)
        uuid = re.search(r"UUID:\s*(GPU-[0-9a-fA-F-]+)", line)
        if gpu:
            gpus.append({
                "index": int(gpu.group(1)), "name": gpu.group(2), "bus_id": gpu.group(3),
                "uuid": uuid.group(1) if uuid else None, "slice_uuids": [],
            })
        elif gpus and uuid and re.match(r"^\s+SGPU#\d+", line):
            gpus[-1]["slice_uuids"].append(uuid.group(1))
    return gpus


def _gpu_blocks(text: str | None) -> list[tuple[str | None, list[str]]]:
    """The per-GPU blocks of a `--summary` / `--show-*` report: (bus id, lines), split at "GPU#N ..."."""
    blocks: list[tuple[str | None, list[str]]] = []
    for line in (text or "").splitlines():
        header = re.match(rf"^GPU#\d+\s+\S+\s+({_BUS_ID})", line)
        if header:
            blocks.append((header.group(1), []))
        elif blocks:
            blocks[-1][1].append(line)
    return blocks


def _sections(lines: list[str]) -> dict[str, dict[str, str]]:
    """{section: {key: value}} of a block: a line without ":" opens a section (and, indented deeper,
    a subsection such as "XCORE" under "Clocks", whose keys stay in the enclosing section)."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    section_indent = None
    for line in lines:
        if not line.strip() or line.strip() == "End of Log":
            continue
        indent = len(line) - len(line.lstrip())
        if ":" not in line:
            if section_indent is None or indent <= section_indent:
                section_indent = indent
                current = sections.setdefault(line.strip().lower(), {})
            continue
        if current is not None:
            key, value = line.split(":", 1)
            current[key.strip().lower()] = value.strip()
    return sections


def _quantity(value: str | None, unit: str) -> float | None:
    match = re.match(rf"^({_NUMBER})\s*{unit}\b", value or "")
    return _float(match.group(1)) if match else None


def parse_details(text: str | None) -> list[dict]:
    """Readings per GPU from `mx-smi --summary` or from `--show-temperature`, `--show-board-power`,
    `--show-clock`, `--show-clocks all`, `--show-memory`: bus_id, temperature_c (chip hotspot),
    power_w (board total), sm_clock_mhz (XCORE), mem_clock_mhz (memory controller), memory bytes."""
    gpus = []
    for bus_id, lines in _gpu_blocks(text):
        sections = _sections(lines)
        chip = sections.get("chip temperature", {})
        hotspot = next((v for k, v in chip.items() if k.startswith("hotspot")), None)
        board = sections.get("board power", {})
        power = _quantity(board.get("total"), "W")
        if power is None:
            ways = [_quantity(v, "W") for k, v in board.items() if k.startswith("way")]
            power = sum(ways) if ways and None not in ways else None
        clocks = {**sections.get("clock", {}), **sections.get("clocks", {})}
        sm_clock = _quantity(clocks.get("xcore_clk") or clocks.get("xcore"), "MHz")
        mem_clock = _quantity(clocks.get("mc0_dficlk") or clocks.get("mc"), "MHz")
        memory = sections.get("memory", {})
        total_kb, used_kb = _quantity(memory.get("vram total"), "KB"), _quantity(memory.get("vram used"), "KB")
        gpus.append({
            "bus_id": bus_id,
            "temperature_c": _quantity(hotspot, "C"),
            "power_w": power,
            "sm_clock_mhz": sm_clock,
            "mem_clock_mhz": mem_clock,
            "memory_total_bytes": int(total_kb * 1024) if total_kb is not None else None,
            "memory_used_bytes": int(used_kb * 1024) if used_kb is not None else None,
        })
    return gpus


def parse_throttle_reasons(text: str | None) -> list[str] | None:
    """Active reasons of `mx-smi --show-clk-tr` in snake case ("over_power"), [] when none is active,
    None when the output has no throttle-reason section."""
    for _bus_id, lines in _gpu_blocks(text):
        for name, values in _sections(lines).items():
            if "throttle reason" in name:
                return [_snake(key) for key, state in values.items() if state.lower() == "active"]
    return None


def _snake(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", name.lower()).strip("_")
