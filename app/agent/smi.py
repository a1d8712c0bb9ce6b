"""The nvidia-smi reader, used when NVML cannot be loaded.

Each pass runs `--query-gpu` and `--query-compute-apps` as CSV (cheap, every driver), then
`-q -x` for each GPU's health (temperature, power, clocks-event reasons, ECC, retired pages,
remapped rows: app/agent/smi_health.py). On a node with a MIG-enabled GPU it also runs `-L`
(MIG UUIDs and profiles); the XML gives MIG memory and the GPU / compute instance of each
process, which the CSV cannot give.

Parsing is pure (`parse_csv`, `gpus_from_csv`, `with_mig_devices`, smi_list, smi_xml):
columns are matched by header name or by the order requested, `[N/A]`, `[Not Supported]`
and friends become None, extra columns are ignored and a field this nvidia-smi does not
know is dropped from the query.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from app.agent.readings import (
    RawGpu,
    RawProcess,
    RawReadings,
    ReaderUnavailableError,
    mig_mode,
    percent,
)
from app.agent.smi_list import (
    ListedMig,
    listed_mig_devices,
    mig_devices_from_list,
    unmeasured,
)
from app.agent.smi_xml import SmiXmlError, XmlLog, parse_xml, readings_from_xml

__all__ = [
    "APP_COLUMNS",
    "GPU_COLUMNS",
    "CommandResult",
    "SmiReader",
    "gpus_from_csv",
    "mig_devices_from_list",
    "parse_csv",
    "with_mig_devices",
]

GPU_COLUMNS: tuple[str, ...] = (
    "index",
    "uuid",
    "name",
    "memory.total",
    "memory.used",
    "utilization.gpu",
    "mig.mode.current",
    "driver_version",
)
APP_COLUMNS: tuple[str, ...] = ("gpu_uuid", "pid", "used_memory", "process_name")
_NOT_AVAILABLE = {"", "n/a", "not supported", "unknown", "unknown error"}
_NUMBER = re.compile(r"^\d+(?:\.\d+)?")
_INVALID_FIELD = re.compile(r'Field "([^"]+)" is not a valid field to query')
_TIMEOUT_S = 15.0
_UNIT_SUFFIX = re.compile(r"\s*\[[^\]]*\]$")
# Names nvidia-smi accepts for the same column (the header prints the one asked for).
_COLUMN_ALIASES = {"used_gpu_memory": "used_memory"}


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a finished command printed and returned."""

    returncode: int
    stdout: str
    stderr: str = ""


Runner = Callable[[Sequence[str]], CommandResult]


def parse_csv(text: str, columns: Sequence[str]) -> list[dict[str, str | None]]:
    """Rows of `--format=csv[,noheader][,nounits]` output keyed by the requested columns.

    With a header line, columns are found by name (units like ` [MiB]` dropped, so a capture
    of any field list parses); without one, by the order requested. Not-available markers
    become None, blank lines and extra trailing columns are skipped, and a process name keeps
    any commas.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and _is_header(lines[0], columns):
        return _rows_by_header(lines[1:], _header_names(lines[0]), columns)
    rows: list[dict[str, str | None]] = []
    for line in lines:
        fields = [part.strip() for part in line.split(",", len(columns) - 1)]
        row: dict[str, str | None] = {}
        for position, column in enumerate(columns):
            row[column] = _value(fields[position]) if position < len(fields) else None
        rows.append(row)
    return rows


def _header_names(line: str) -> list[str]:
    names = [_UNIT_SUFFIX.sub("", part.strip()) for part in line.split(",")]
    return [_COLUMN_ALIASES.get(name, name) for name in names]


def _is_header(line: str, columns: Sequence[str]) -> bool:
    """A header names the first requested column, or at least two of them."""
    names = set(_header_names(line))
    return columns[0] in names or len(names.intersection(columns)) >= min(2, len(columns))


def _rows_by_header(
    lines: Sequence[str], header: Sequence[str], columns: Sequence[str]
) -> list[dict[str, str | None]]:
    """Rows keyed by name; fields beyond the header are commas inside the process name."""
    name_at = header.index("process_name") if "process_name" in header else len(header) - 1
    rows: list[dict[str, str | None]] = []
    for line in lines:
        parts = line.split(",")
        extra = len(parts) - len(header)
        if extra > 0:
            joined = ",".join(parts[name_at : name_at + extra + 1])
            parts = [*parts[:name_at], joined, *parts[name_at + extra + 1 :]]
        by_name = dict(zip(header, (part.strip() for part in parts), strict=False))
        rows.append({column: _value(by_name.get(column, "")) for column in columns})
    return rows


def gpus_from_csv(
    gpu_text: str,
    apps_text: str,
    *,
    gpu_columns: Sequence[str] = GPU_COLUMNS,
    app_columns: Sequence[str] = APP_COLUMNS,
) -> RawReadings:
    """The readings from a `--query-gpu` and a `--query-compute-apps` output."""
    processes: dict[str, list[RawProcess]] = {}
    for row in parse_csv(apps_text, app_columns):
        pid = _int(row.get("pid"))
        uuid = row.get("gpu_uuid")
        if pid is None or uuid is None:
            continue
        processes.setdefault(uuid, []).append(
            RawProcess(
                pid=pid, used_memory_mib=_int(row.get("used_memory")), name=row.get("process_name")
            )
        )
    gpus: list[RawGpu] = []
    problems: list[str] = []
    driver: str | None = None
    for position, row in enumerate(parse_csv(gpu_text, gpu_columns)):
        uuid = row.get("uuid")
        index = _int(row.get("index"))
        if uuid is None:
            problems.append(f"GPU {index if index is not None else position} has no UUID")
            continue
        driver = driver or row.get("driver_version")
        gpus.append(
            RawGpu(
                index=index if index is not None else position,
                uuid=uuid,
                name=row.get("name") or "",
                memory_total_mib=_int(row.get("memory.total")),
                memory_used_mib=_int(row.get("memory.used")),
                utilization_pct=percent(_int(row.get("utilization.gpu"))),
                mig_mode=mig_mode(row.get("mig.mode.current")),
                processes=tuple(processes.pop(uuid, ())),
            )
        )
    problems.extend(f"process on unknown GPU {uuid}" for uuid in processes)
    return RawReadings("nvidia-smi", driver, tuple(gpus), tuple(problems))


def with_mig_devices(
    readings: RawReadings,
    listing: Mapping[str, tuple[ListedMig, ...]],
    log: XmlLog | None,
    *,
    problems: Sequence[str] = (),
) -> RawReadings:
    """The CSV readings with the MIG devices of each MIG-enabled GPU from `-L` and `-q -x`.

    Processes stay on the parent GPU as the CSV gave them (they carry the parent's UUID);
    each MIG device lists those the XML places in its GPU / compute instance.
    """
    measured = readings_from_xml(log, listing) if log is not None else None
    by_uuid = {gpu.uuid: gpu for gpu in measured.gpus} if measured else {}
    gpus = tuple(
        dataclasses.replace(
            gpu,
            mig_devices=by_uuid[gpu.uuid].mig_devices
            if gpu.uuid in by_uuid
            else unmeasured(listing.get(gpu.uuid, ())),
        )
        if gpu.mig_mode == "enabled"
        else gpu
        for gpu in readings.gpus
    )
    found = (*problems, *(measured.problems if measured else ()))
    return dataclasses.replace(readings, gpus=gpus, problems=(*readings.problems, *found))


def with_health(readings: RawReadings, log: XmlLog | None) -> RawReadings:
    """The readings with each GPU's health from the `-q -x` log, joined on the UUID."""
    if log is None:
        return readings
    by_uuid = {gpu.uuid: gpu.health for gpu in log.gpus if gpu.uuid is not None}
    gpus = tuple(dataclasses.replace(gpu, health=by_uuid.get(gpu.uuid)) for gpu in readings.gpus)
    return dataclasses.replace(readings, gpus=gpus)


class SmiReader:
    """Runs nvidia-smi three times per pass (GPUs, compute processes, `-q -x`), four on MIG."""

    label = "nvidia-smi"

    def __init__(
        self, *, run: Runner | None = None, which: Callable[[str], str | None] = shutil.which
    ) -> None:
        self._run = run or _run_command
        self._which = which
        self._gpu_columns = list(GPU_COLUMNS)
        self._app_columns = list(APP_COLUMNS)

    def read(self) -> RawReadings:
        """One pass; raises ReaderUnavailableError when nvidia-smi is missing or fails."""
        binary = self._which("nvidia-smi")
        if binary is None:
            raise ReaderUnavailableError("nvidia-smi not on PATH", driver_missing=True)
        gpu_text = self._query(binary, "--query-gpu", self._gpu_columns)
        apps_text = self._query(binary, "--query-compute-apps", self._app_columns)
        readings = gpus_from_csv(
            gpu_text, apps_text, gpu_columns=self._gpu_columns, app_columns=self._app_columns
        )
        mig = any(g.mig_mode == "enabled" for g in readings.gpus)
        problems: list[str] = []
        listing_text = self._output([binary, "-L"], problems) if mig else None
        log = self._xml(binary, problems)
        if mig:
            # The CSV cannot place a process on a MIG device: `-L` names the devices, the
            # XML adds memory and processes; when either fails the report keeps the other.
            listing = listed_mig_devices(listing_text or "")
            readings = with_mig_devices(readings, listing, log, problems=problems)
        else:
            readings = dataclasses.replace(readings, problems=(*readings.problems, *problems))
        return with_health(readings, log)

    def _xml(self, binary: str, problems: list[str]) -> XmlLog | None:
        """The parsed `-q -x` log; None (and a problem) when it cannot be had."""
        xml_text = self._output([binary, "-q", "-x"], problems)
        if xml_text is None:
            return None
        try:
            return parse_xml(xml_text)
        except SmiXmlError as exc:
            problems.append(str(exc)[:300])
            return None

    def _output(self, argv: list[str], problems: list[str]) -> str | None:
        """What an optional call printed; None (and a problem) when it could not run."""
        try:
            result = self._run(argv)
        except (OSError, subprocess.SubprocessError) as exc:
            problems.append(f"{' '.join(argv[1:])} could not run: {exc}"[:300])
            return None
        if result.returncode != 0:
            problems.append(f"nvidia-smi {' '.join(argv[1:])} failed (exit {result.returncode})")
            return None
        return result.stdout

    def _query(self, binary: str, flag: str, columns: list[str]) -> str:
        """Output of one query; drops a column this nvidia-smi does not know, then retries."""
        while True:
            argv = [binary, f"{flag}={','.join(columns)}", "--format=csv,noheader,nounits"]
            try:
                result = self._run(argv)
            except (OSError, subprocess.SubprocessError) as exc:
                raise ReaderUnavailableError(f"nvidia-smi could not run: {exc}") from exc
            if result.returncode == 0:
                return result.stdout
            output = f"{result.stdout}\n{result.stderr}"
            invalid = _INVALID_FIELD.search(output)
            if invalid and invalid.group(1) in columns[1:] and invalid.group(1) != "uuid":
                columns.remove(invalid.group(1))
                continue
            first = next((line.strip() for line in output.splitlines() if line.strip()), "")
            raise ReaderUnavailableError(
                f"nvidia-smi failed (exit {result.returncode}): {first[:300]}"
            )


def _run_command(argv: Sequence[str]) -> CommandResult:
    done = subprocess.run(
        list(argv), capture_output=True, text=True, timeout=_TIMEOUT_S, check=False
    )
    return CommandResult(done.returncode, done.stdout, done.stderr)


def _value(raw: str) -> str | None:
    text = raw.strip()
    if text.startswith("[") and text.endswith("]"):
        return None
    return None if text.lower() in _NOT_AVAILABLE else text


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    match = _NUMBER.match(value)
    return int(float(match.group(0))) if match else None
