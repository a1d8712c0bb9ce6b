"""A finding: one mismatch between accounting and reality, with its cause and remedy.

The engine's findings are part of the snapshot (app.domain.snapshot re-exports these names)
and, serialised as they are, the JSON API's finding shape.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import ConfigDict, Field, computed_field

from app.domain.described import Described

EvidenceValue = str | int | float | bool | None


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


SEVERITY_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}  # worst first


class Scope(StrEnum):
    CLUSTER = "cluster"
    NODE = "node"
    GPU = "gpu"
    POD = "pod"


class Frozen(Described):
    """The engine's output models: immutable once built."""

    model_config = ConfigDict(frozen=True)


class Finding(Frozen):
    """One mismatch between accounting and reality, with its cause and remedy."""

    code: str
    """Stable code, documented in docs/findings.md"""
    severity: Severity
    """error | warning | info"""
    scope: Scope
    """cluster | node | gpu | pod"""
    title: str = ""
    """One line saying what is wrong, in the language asked for (worded by the web layer from `code`
    and `params`)"""
    params: dict[str, EvidenceValue] = Field(default_factory=dict)
    """The values a page words the title with in each language: the evidence plus node, gpu_uuid and
    pod"""
    evidence: dict[str, EvidenceValue]
    """The numbers that disagree"""
    remedy: str
    """What fixes it, in the language asked for: the command with what to do as a `# ...` comment
    (or the words alone where nothing can be pasted)"""
    remedy_command: str = ""
    """The remedy's copyable shell command alone (names, flags, values), the same in every language;
    empty where nothing can be pasted"""
    remedy_code: str | None = None
    """What to do, as a stable code: the pages word it with remedy_params"""
    remedy_params: dict[str, EvidenceValue] = Field(default_factory=dict)
    """The values remedy_code is worded with"""
    node: str | None = None
    """The node it is about; null for a cluster-wide finding"""
    gpu_uuid: str | None = None
    """The GPU it is about, when one"""
    pod: str | None = None
    """namespace/name"""
    caused_by: str | None = None
    """The `id` of the finding on the same node this one follows from (its root cause); null for a
    root or a finding on its own. Pages fold it under that finding"""
    consequences: tuple[str, ...] = ()
    """The `id`s of the findings that follow from this one (each names this one in `caused_by`)"""

    @computed_field(  # type: ignore[prop-decorator]
        description="Stable identity within a snapshot: code|node|gpu_uuid|pod (empty parts "
        "where the finding names none)"
    )
    @property
    def id(self) -> str:
        return "|".join((self.code, self.node or "", self.gpu_uuid or "", self.pod or ""))
