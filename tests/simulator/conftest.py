"""Fixtures for the simulator tests: a simulator per module and the real clients against it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from app.simulator.world.cluster import SimulatedCluster
from tests.kube_tools import kube_tools


def api_client(url: str) -> client.ApiClient:
    config = client.Configuration()
    config.host = url
    config.retries = False
    return client.ApiClient(config)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatedCluster]:
    """The host-split scenario, shared by a module."""
    simulator = SimulatedCluster("host-split")
    simulator.start()
    yield simulator
    simulator.stop()


@pytest.fixture(scope="module")
def api(sim: SimulatedCluster) -> Iterator[client.ApiClient]:
    assert sim.url is not None
    with api_client(sim.url) as api_client_:
        yield api_client_


@pytest.fixture(scope="module")
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture(scope="module")
def apps(api: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api)


@pytest.fixture
def kubectl() -> Callable[..., subprocess.CompletedProcess[str]]:
    """The real kubectl v1.35 (tests/kube_tools.py) against a simulator URL."""
    binary = str(kube_tools().kubectl)

    def run(url: str, *args: str, input_text: str | None = None, check: bool = True) -> Any:
        result = subprocess.run(
            [binary, f"--server={url}", *args],
            input=input_text,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
        return result

    return run
