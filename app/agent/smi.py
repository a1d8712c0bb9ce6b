"""The nvidia-smi reader, used when NVML cannot be loaded.

Parsing is pure (`parse_csv`, `gpus_from_csv`): columns are matched by the order they
were requested, `[N/A]`, `[Not Supported]` and friends become None, extra columns are
ignored and a field this nvidia-smi does not know is dropped from the query.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.agent.readings import (
    MigMode,
    RawGpu,
    RawMig,
    RawProcess,
    RawReadings,
    ReaderUnavailableError,
)

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
_LIST_GPU = re.compile(r"^GPU \d+: .*\(UUID: (GPU-[^)\s]+)\)")
_LIST_MIG = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[^)\s]+)\)")


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a finished command printed and returned."""

    returncode: int
    stdout: str
    stderr: str = ""


Runner = Callable[[Sequence[str]], CommandResult]


def parse_csv(text: str, columns: Sequence[str]) -> list[dict[str, str | None]]:
    """Rows of `--format=csv,noheader,nounits` output keyed by the requested columns.

    Not-available markers become None; a header line, blank lines and extra trailing
    columns are skipped; the last column keeps any commas (process names can have them).
    """
    rows: list[dict[str, str | None]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = [part.strip() for part in line.split(",", len(columns) - 1)]
        if fields[0].split(" ")[0] == columns[0]:
            continue  # a header line: nvidia-smi without noheader
        row: dict[str, str | None] = {}
        for position, column in enumerate(columns):
            row[column] = _value(fields[position]) if position < len(fields) else None
        rows.append(row)
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
                utilization_pct=_percent(_int(row.get("utilization.gpu"))),
                mig_mode=_mig_mode(row.get("mig.mode.current")),
                processes=tuple(processes.pop(uuid, ())),
            )
        )
    problems.extend(f"process on unknown GPU {uuid}" for uuid in processes)
    return RawReadings("nvidia-smi", driver, tuple(gpus), tuple(problems))


def mig_devices_from_list(text: str) -> dict[str, tuple[RawMig, ...]]:
    """MIG devices per parent GPU UUID from `nvidia-smi -L` (lines `  MIG <profile> Device n:`).

    The list gives no memory or processes per MIG device: those stay None / empty.
    """
    found: dict[str, list[RawMig]] = {}
    parent: str | None = None
    for line in text.splitlines():
        gpu = _LIST_GPU.match(line)
        if gpu is not None:
            parent = gpu.group(1)
            continue
        mig = _LIST_MIG.match(line)
        if mig is not None and parent is not None:
            found.setdefault(parent, []).append(
                RawMig(
                    uuid=mig.group(3),
                    profile=mig.group(1).lower(),
                    gpu_instance=None,
                    compute_instance=None,
                    memory_total_mib=None,
                    memory_used_mib=None,
                )
            )
    return {uuid: tuple(devices) for uuid, devices in found.items()}


class SmiReader:
    """Runs nvidia-smi twice per pass (GPUs, then compute processes)."""

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
        if not any(g.mig_mode == "enabled" for g in readings.gpus):
            return readings
        return self._with_mig(binary, readings)

    def _with_mig(self, binary: str, readings: RawReadings) -> RawReadings:
        """MIG devices of MIG-enabled GPUs from `nvidia-smi -L`; left out if it fails."""
        try:
            result = self._run([binary, "-L"])
        except (OSError, subprocess.SubprocessError):
            return readings
        if result.returncode != 0:
            return readings
        devices = mig_devices_from_list(result.stdout)
        gpus = tuple(
            dataclasses.replace(g, mig_devices=devices.get(g.uuid, ()))
            if g.mig_mode == "enabled"
            else g
            for g in readings.gpus
        )
        return dataclasses.replace(readings, gpus=gpus)

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


def _percent(value: int | None) -> int | None:
    return None if value is None else max(0, min(100, value))


def _mig_mode(value: str | None) -> MigMode | None:
    if value is None:
        return None
    lowered = value.lower()
    if lowered in ("enabled", "disabled"):
        return "enabled" if lowered == "enabled" else "disabled"
    return None
