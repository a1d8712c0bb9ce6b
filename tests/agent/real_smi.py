"""Where the real nvidia-smi captures live (../shared/fixtures/real/nvidia-smi), for tests.

They are read at test time, never copied into the project; a test module skips when the
folder is absent (a checkout without the shared fixtures).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from app.agent.smi import CommandResult
from tests.real_fixtures import REAL_FIXTURES

REAL_SMI = REAL_FIXTURES / "nvidia-smi"
EXTRACTED = REAL_SMI / "extracted"
TELEGRAF_XML = REAL_SMI / "telegraf-xml"

needs_real_smi = pytest.mark.skipif(
    not REAL_SMI.is_dir(), reason=f"real nvidia-smi captures not found at {REAL_SMI}"
)


def real_text(path: Path) -> str:
    """A capture's text; skips the test when this one file is missing."""
    if not path.is_file():
        pytest.skip(f"real capture not found: {path}")
    return path.read_text(encoding="utf-8")


@dataclass
class CapturedSmi:
    """Answers the agent's nvidia-smi calls with captured outputs, whatever columns they hold."""

    gpu_csv: str
    apps_csv: str
    listing: str | None = None
    xml: str | None = None
    calls: list[list[str]] = field(default_factory=list)

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        self.calls.append(list(argv))
        flag = argv[1]
        if flag.startswith("--query-gpu="):
            return CommandResult(0, self.gpu_csv)
        if flag.startswith("--query-compute-apps="):
            return CommandResult(0, self.apps_csv)
        answer = {"-L": self.listing, "-q": self.xml}.get(flag)
        return CommandResult(9, "") if answer is None else CommandResult(0, answer)
