"""One metric family of the Prometheus text format (0.0.4): name, type, help, samples."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["gauge", "counter"]
Labels = dict[str, str]


@dataclass
class Family:
    """One metric family, written together: HELP, TYPE, then every sample."""

    name: str
    kind: Kind
    help: str
    samples: list[tuple[Labels, float]] = field(default_factory=list)

    def add(self, labels: Labels, value: float | bool | None) -> None:
        """One sample; None (not known) writes nothing, booleans write 0 or 1."""
        if value is not None:
            self.samples.append((labels, float(value)))

    def lines(self) -> Iterable[str]:
        yield f"# HELP {self.name} {self.help}"
        yield f"# TYPE {self.name} {self.kind}"
        for labels, value in self.samples:
            yield _sample(self.name, labels, value)


def gauge(name: str, help_text: str) -> Family:
    return Family(name, "gauge", help_text)


def counter(name: str, help_text: str) -> Family:
    if not name.endswith("_total"):
        raise ValueError(f"counter {name} must end in _total")
    return Family(name, "counter", help_text)


def _sample(metric: str, labels: Labels, value: float) -> str:
    text = str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)
    if not labels:
        return f"{metric} {text}"
    body = ",".join(f'{key}="{_escape(val)}"' for key, val in labels.items())
    return f"{metric}{{{body}}} {text}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
