"""The shape of config.yaml, known once: the plugin's structs, their fields, how keys fill them.

The plugin decodes config.yaml (turned into JSON by sigs.k8s.io/yaml, so its keys come sorted)
into the structs of its api/config/v1 package with encoding/json: a key fills the field it
names exactly, else one it names case-insensitively (Unicode folding: U+017F is `s`, U+212A is `k`);
a field given twice takes the later value, a struct field merges, and a null resets a
pointer. The sharing blocks are no such structs: their own decoders look keys up exactly
(`RESOURCES`, `RENAME_BY_DEFAULT`, ...). The reader (`config`, `flags`, `replicated`) and the
writer (`write`) both go by what is named here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

CONFIG_VERSION = "v1"
GPU_RESOURCE = "nvidia.com/gpu"
ALLOCATION_POLICY = "sharedDevicesAllocationPolicy"  # flags.plugin, read from v0.20.0

# The keys of a sharing block (timeSlicing, mps) and of one of its resources, matched exactly.
RESOURCES = "resources"
RENAME_BY_DEFAULT = "renameByDefault"
FAIL_REQUESTS = "failRequestsGreaterThanOne"
NAME, REPLICAS, RENAME, DEVICES = "name", "replicas", "rename", "devices"


def fold(name: str) -> str:
    """A key as encoding/json compares it with a field name when the case differs."""
    return name.replace("\u017f", "s").replace("\u212a", "k").lower()


@dataclass(frozen=True)
class Struct:
    """A Go struct of the config: its JSON field names, each a nested struct or a value."""

    go_type: str  # as the plugin's decoding errors name it
    fields: Mapping[str, Struct | None]
    pointer: bool = False  # a null given to it resets what earlier keys set

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.fields)

    def field_of(self, key: object) -> str | None:
        """The field a key fills: the one it names exactly, else case-insensitively."""
        if not isinstance(key, str):
            return None
        if key in self.fields:
            return key
        folded = fold(key)
        return next((name for name in self.fields if fold(name) == folded), None)

    def without(self, name: str) -> Struct:
        """The struct of a release that does not know field `name` yet."""
        fields = {field: value for field, value in self.fields.items() if field != name}
        return Struct(self.go_type, fields, self.pointer)


def _values(*names: str) -> dict[str, Struct | None]:
    return dict.fromkeys(names)


PLUGIN_FLAGS = Struct(
    "plugin",
    _values(
        "passDeviceSpecs",
        "deviceListStrategy",
        "deviceIDStrategy",
        "cdiAnnotationPrefix",
        "nvidiaCTKPath",
        "containerDriverRoot",
        ALLOCATION_POLICY,
    ),
    pointer=True,
)
GFD_FLAGS = Struct(
    "gfd",
    _values("oneshot", "noTimestamp", "sleepInterval", "outputFile", "machineTypeFile"),
    pointer=True,
)
FLAGS = Struct(
    "v1.Flags",
    {
        **_values(
            "migStrategy",
            "failOnInitError",
            "mpsRoot",
            "nvidiaDriverRoot",
            "nvidiaDevRoot",
            "gdrcopyEnabled",
            "gdsEnabled",
            "mofedEnabled",
            "useNodeFeatureAPI",
            "deviceDiscoveryStrategy",
        ),
        "plugin": PLUGIN_FLAGS,
        "gfd": GFD_FLAGS,
    },
)
# timeSlicing and mps are decoded whole by their own decoder (replicated.py); mps is a pointer.
SHARING = Struct("v1.Sharing", _values("timeSlicing", "mps"))
RESOURCE_LISTS = Struct("v1.Resources", _values("gpus", "mig"))
IMEX = Struct("v1.Imex", _values("channelIDs", "required"))
CONFIG = Struct(
    "v1.Config",
    {
        "version": None,
        "flags": FLAGS,
        "resources": RESOURCE_LISTS,
        "sharing": SHARING,
        "imex": IMEX,
    },
)
