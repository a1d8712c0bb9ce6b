"""How the pages write figures: memory, durations, ages (one place for every unit shown)."""

from __future__ import annotations


def mib(value: int | None) -> str:
    """Memory in GiB with one decimal, the one unit the pages use (tables and cards alike)."""
    return "?" if value is None else f"{value / 1024:.1f}"


def seconds(value_s: float | None) -> str:
    """A duration for people: whole seconds, or one decimal under ten seconds."""
    if value_s is None:
        return "?"
    return f"{value_s:.1f}".rstrip("0").rstrip(".") if value_s < 10 else str(round(value_s))


def age(value_s: float | None) -> str:
    """An age in whole seconds."""
    return "?" if value_s is None else str(round(value_s))
