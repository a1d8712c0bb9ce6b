"""The dashboard's settings as its pod reads them: the chart's ConfigMap through envFrom."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from app.settings import SECRETS, Settings


@pytest.fixture
def pod_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Callable[[dict[str, str]], Settings]:
    """`Settings` from a rendered ConfigMap's data, each variable as envFrom gives it. The
    secrets' files live on the pod's Secret volumes, which a test process has not: each
    `*_FILE` of a secret is pointed at a stand-in file of the same name (where those
    volumes are mounted is `test_dashboard_token_files_are_mounted_where_the_settings_point`)."""

    def read(data: dict[str, str]) -> Settings:
        secret_files = {f"GEO_MLOPS_{name.upper()}_FILE" for name in SECRETS}
        for name, value in data.items():
            if name in secret_files:
                value = str(tmp_path / name / Path(value).name)
                Path(value).parent.mkdir()
                Path(value).write_text("stand-in\n")
            monkeypatch.setenv(name, value)
        return Settings()

    return read
