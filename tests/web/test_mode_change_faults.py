"""A mode change meeting an outage or a failed write: old or new state, and the user told which."""

from __future__ import annotations

from tests.conftest import Stack
from tests.web.test_admin_api import NS, TO_TS4, admin, config, node_slots, put

__all__ = ["admin"]  # the fixture, re-used


def test_mode_change_during_outage_is_503_and_writes_nothing(admin: Stack) -> None:
    admin.simulator.set_unavailable(True)
    try:
        response = put(admin, TO_TS4)
    finally:
        admin.simulator.set_unavailable(False)
    assert response.status_code == 503
    assert "unable to handle the request" in response.json()["detail"]
    assert admin.simulator.get("ConfigMap", "nvidia-device-plugin-config", NS) is None
    assert config(admin)["mode"] == "basic"


def test_mode_change_outage_between_writes_restores_old_state_and_says_so(admin: Stack) -> None:
    admin.simulator.fail_next(verb="update", kind="DaemonSet", code=503)

    response = put(admin, TO_TS4)

    assert response.status_code in (502, 503)
    assert "as before" in response.json()["detail"]
    assert admin.simulator.get("ConfigMap", "nvidia-device-plugin-config", NS) is None
    assert config(admin)["mode"] == "basic"
    assert node_slots(admin) == (2, "nvidia.com/gpu")


def test_mode_change_outage_that_also_blocks_the_restore_names_the_half_state(
    admin: Stack,
) -> None:
    admin.simulator.fail_next(verb="update", kind="DaemonSet", code=503)
    admin.simulator.fail_next(verb="delete", kind="ConfigMap", code=503)

    response = put(admin, TO_TS4)

    assert response.status_code in (502, 503)
    detail = response.json()["detail"]
    assert "NEW config" in detail
    # The DaemonSet never changed, so the plugin still advertises the old slots.
    assert node_slots(admin) == (2, "nvidia.com/gpu")
