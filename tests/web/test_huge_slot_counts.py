"""Work that does not grow with a hostile value: 100,000 replicas draw counts, not cells.

`replicas: 100000` in a plugin config gave 131 MB pages and +888 MB (issue 33): every slot was
one cell. Past GRID_MAX_CELLS a GPU's slots are counted runs.
"""

from __future__ import annotations

import re
from datetime import datetime

from fastapi.testclient import TestClient

from app.web.app import create_app
from app.web.views.slot_runs import GRID_MAX_CELLS, SlotRun, slot_runs
from tests import factories as f
from tests.conftest import AGENT_TOKEN, runtime_of, stack_settings
from tests.domain.worlds import snap, ts_world
from tests.web.fakes import FakeSource


def _rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20


def test_slot_runs_count_held_over_free_and_unavailable_without_a_cell_each() -> None:
    state = ts_world(100_000, pods=[f.pod("job", gpus=3)])
    gpu = snap(state).nodes[0].gpus[0]
    runs = slot_runs(gpu, unavailable=10)
    assert sum(r.count for r in runs) == gpu.slots == 100_000
    assert runs[-1] == SlotRun("unavailable", None, 10)
    assert len(runs) <= 4


def test_a_page_of_100000_replicas_stays_small_and_memory_flat() -> None:
    state = ts_world(100_000, pods=[f.pod("job", gpus=1)])
    source = FakeSource(
        nodes=list(state.nodes),
        pods=list(state.pods),
        daemonsets=[state.daemonset],
        configmaps=list(state.configmaps.values()),
    )

    def clock() -> datetime:
        return f.NOW

    app = create_app(stack_settings(), source=source, clock=clock)
    client = TestClient(app)
    body = f.report("gpu-1", [f.gpu(i) for i in range(4)]).report.model_dump(
        mode="json", by_alias=True
    )
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}
    assert client.post("/api/v1/agent/reports", json=body, headers=headers).status_code == 202
    rss = _rss_mib()
    runtime_of(app).snapshots.rebuild()
    for path in ("/", "/nodes/gpu-1"):
        page = client.get(path)
        assert page.status_code == 200, path
        assert len(page.content) < 2_000_000, path  # 131 MB before
        assert page.text.count('data-testid="slot-cell"') <= 4 * GRID_MAX_CELLS
        counts = [
            int(c)
            for c in re.findall(r'data-testid="slot-count" [^>]*data-count="(\d+)"', page.text)
        ]
        assert sum(counts) >= 100_000
    assert _rss_mib() - rss < 200  # +888 MB before
