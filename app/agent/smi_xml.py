"""`nvidia-smi -q -x` parsing (pure): GPUs, their MIG devices and the processes on each.

The CSV queries cannot say which MIG device a process runs on (their gpu_uuid is the
parent's); the XML gives each process its GPU and compute instance IDs, and each MIG device
its own, with its memory. The XML names neither a MIG device's UUID nor its profile: those
come from `nvidia-smi -L`, joined on the MIG device index. Every process stays on its
parent GPU as well (it carries the parent's UUID, as NVML's parent handle reports it).

The text comes from the local nvidia-smi binary; ElementTree fetches no external entity.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass

from app.agent.readings import (
    MigMode,
    RawGpu,
    RawMig,
    RawProcess,
    RawReadings,
    mig_mode,
    percent,
)
from app.agent.smi_health import health_from_xml, xml_text
from app.agent.smi_list import ListedMig
from app.domain.health import GpuHealthReading

_NUMBER = re.compile(r"^\s*(\d+)")


class SmiXmlError(ValueError):
    """The text is not an `nvidia-smi -q -x` log."""


@dataclass(frozen=True, slots=True)
class XmlProcess:
    """One `<process_info>`; the instance IDs are None off MIG (`N/A`)."""

    pid: int
    used_memory_mib: int | None
    name: str | None
    gpu_instance: int | None
    compute_instance: int | None


@dataclass(frozen=True, slots=True)
class XmlMig:
    """One `<mig_device>`: its index (the `Device n` of `-L`), instance IDs and memory."""

    index: int
    gpu_instance: int | None
    compute_instance: int | None
    memory_total_mib: int | None
    memory_used_mib: int | None


@dataclass(frozen=True, slots=True)
class XmlGpu:
    """One `<gpu>` element; a value the XML marks N/A is None."""

    uuid: str | None
    name: str
    memory_total_mib: int | None
    memory_used_mib: int | None
    utilization_pct: int | None
    mig_mode: MigMode | None
    mig_devices: tuple[XmlMig, ...]
    processes: tuple[XmlProcess, ...]
    health: GpuHealthReading | None = None


@dataclass(frozen=True, slots=True)
class XmlLog:
    """The whole `<nvidia_smi_log>`: driver version and GPUs in index order."""

    driver_version: str | None
    gpus: tuple[XmlGpu, ...]


def parse_xml(text: str) -> XmlLog:
    """The log's GPUs; raises SmiXmlError when the text is not nvidia-smi XML."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise SmiXmlError(f"nvidia-smi -q -x printed no XML: {exc}") from exc
    if root.tag != "nvidia_smi_log":
        raise SmiXmlError(f"nvidia-smi -q -x printed <{root.tag}>, not <nvidia_smi_log>")
    return XmlLog(
        driver_version=xml_text(root, "driver_version"),
        gpus=tuple(_gpu(element) for element in root.findall("gpu")),
    )


def readings_from_xml(
    log: XmlLog, listing: Mapping[str, tuple[ListedMig, ...]] | None = None
) -> RawReadings:
    """Readings from a parsed log, MIG devices named by the `-L` listing (parent UUID -> list).

    A MIG device the listing does not name has no UUID to report: it is left out, and the
    readings' problems say so.
    """
    gpus: list[RawGpu] = []
    problems: list[str] = []
    for position, gpu in enumerate(log.gpus):
        if gpu.uuid is None:
            problems.append(f"GPU {position} has no UUID")
            continue
        listed = (listing or {}).get(gpu.uuid, ())
        devices = _mig_devices_named(gpu, listed)
        if len(devices) < len(gpu.mig_devices):
            problems.append(
                f"{len(gpu.mig_devices) - len(devices)} MIG devices of {gpu.uuid} left out: "
                "nvidia-smi -L did not name them"
            )
        gpus.append(
            RawGpu(
                index=position,
                uuid=gpu.uuid,
                name=gpu.name,
                memory_total_mib=gpu.memory_total_mib,
                memory_used_mib=gpu.memory_used_mib,
                utilization_pct=gpu.utilization_pct,
                mig_mode=gpu.mig_mode,
                processes=tuple(_raw(process) for process in gpu.processes),
                mig_devices=devices,
                health=gpu.health,
            )
        )
    return RawReadings("nvidia-smi", log.driver_version, tuple(gpus), tuple(problems))


def _mig_devices_named(gpu: XmlGpu, listed: tuple[ListedMig, ...]) -> tuple[RawMig, ...]:
    """The listed MIG devices of one GPU with the XML's memory, instance IDs and processes.

    A listed device the XML lacks keeps None for what only the XML knows.
    """
    by_index = {device.index: device for device in gpu.mig_devices}
    named: list[RawMig] = []
    for entry in listed:
        device = by_index.get(entry.index)
        named.append(
            RawMig(
                uuid=entry.uuid,
                profile=entry.profile,
                gpu_instance=device.gpu_instance if device else None,
                compute_instance=device.compute_instance if device else None,
                memory_total_mib=device.memory_total_mib if device else None,
                memory_used_mib=device.memory_used_mib if device else None,
                processes=_processes_on(device, gpu.processes) if device else (),
            )
        )
    return tuple(named)


def _processes_on(device: XmlMig, processes: tuple[XmlProcess, ...]) -> tuple[RawProcess, ...]:
    """Processes in the device's GPU instance, and in its compute instance where both say."""
    if device.gpu_instance is None:
        return ()
    return tuple(
        _raw(process)
        for process in processes
        if process.gpu_instance == device.gpu_instance
        and (
            process.compute_instance is None
            or device.compute_instance is None
            or process.compute_instance == device.compute_instance
        )
    )


def _gpu(element: ET.Element) -> XmlGpu:
    return XmlGpu(
        uuid=xml_text(element, "uuid"),
        name=xml_text(element, "product_name") or "",
        memory_total_mib=_number(element, "fb_memory_usage/total"),
        memory_used_mib=_number(element, "fb_memory_usage/used"),
        utilization_pct=percent(_number(element, "utilization/gpu_util")),
        mig_mode=mig_mode(xml_text(element, "mig_mode/current_mig")),
        mig_devices=tuple(
            _mig(position, mig)
            for position, mig in enumerate(element.findall("mig_devices/mig_device"))
        ),
        processes=tuple(
            process
            for info in element.findall("processes/process_info")
            if (process := _process(info)) is not None
        ),
        health=health_from_xml(element),
    )


def _mig(position: int, element: ET.Element) -> XmlMig:
    index = _number(element, "index")
    return XmlMig(
        index=position if index is None else index,
        gpu_instance=_number(element, "gpu_instance_id"),
        compute_instance=_number(element, "compute_instance_id"),
        memory_total_mib=_number(element, "fb_memory_usage/total"),
        memory_used_mib=_number(element, "fb_memory_usage/used"),
    )


def _process(element: ET.Element) -> XmlProcess | None:
    pid = _number(element, "pid")
    if pid is None:
        return None
    return XmlProcess(
        pid=pid,
        used_memory_mib=_number(element, "used_memory"),
        name=xml_text(element, "process_name"),
        gpu_instance=_number(element, "gpu_instance_id"),
        compute_instance=_number(element, "compute_instance_id"),
    )


def _raw(process: XmlProcess) -> RawProcess:
    return RawProcess(pid=process.pid, used_memory_mib=process.used_memory_mib, name=process.name)


def _number(element: ET.Element, path: str) -> int | None:
    """The leading integer of `22430 MiB`, `0 %`, `3`; None where there is none."""
    text = xml_text(element, path)
    match = _NUMBER.match(text) if text else None
    return int(match.group(1)) if match else None
