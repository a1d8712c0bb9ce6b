"""Process attribution: cgroup formats, /proc reading, host versus pod."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agent.attribution import (
    CgroupOwner,
    ProcessOwner,
    command_from_cmdline,
    owner_from_cgroup,
    read_process,
    uid_from_status,
    user_name,
)

FIXTURES = Path(__file__).parent / "fixtures"
POD_UID = "3f6c2a1e-8b4d-4c7a-9e21-5d0b7f8a6c13"
CONTAINER = "8a1f3e5c7b9d2f4a6c8e0b1d3f5a7c9e2b4d6f8a0c1e3b5d7f9a2c4e6b8d0f1a"
DOCKER = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("v1-cgroupfs-containerd-k3s", CgroupOwner(POD_UID, CONTAINER)),
        ("v2-cgroupfs-containerd-k3s", CgroupOwner(POD_UID, CONTAINER)),
        ("v2-systemd-containerd", CgroupOwner(POD_UID, CONTAINER)),
        ("v2-systemd-crio-guaranteed", CgroupOwner(POD_UID, CONTAINER)),
        ("v1-systemd-docker", CgroupOwner(POD_UID, CONTAINER)),
        ("v1-cgroupfs-crio", CgroupOwner(POD_UID, CONTAINER)),
        ("v2-kind-nested-kubelet-slice", CgroupOwner(POD_UID, CONTAINER)),
        ("v2-cgroup-namespace-relative", CgroupOwner(POD_UID, CONTAINER)),
        ("v2-cgroupfs-static-pod", CgroupOwner("0c1f2e3d4b5a69788796a5b4c3d2e1f0", CONTAINER)),
        ("v2-host-user-session", CgroupOwner()),
        ("v1-host-systemd-service", CgroupOwner()),
        ("v2-root", CgroupOwner()),
        ("v2-docker-standalone", CgroupOwner(None, DOCKER)),
        ("v1-docker-standalone", CgroupOwner(None, DOCKER)),
    ],
)
def test_owner_from_cgroup_formats_give_pod_and_container(
    fixture: str, expected: CgroupOwner
) -> None:
    text = (FIXTURES / "cgroup" / f"{fixture}.txt").read_text()

    assert owner_from_cgroup(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "garbage without colons\n", "0::\n", "3:memory:/kubepods/besteffort/podnot-a-uid/x\n"],
)
def test_owner_from_cgroup_unparseable_text_is_host(text: str) -> None:
    assert owner_from_cgroup(text) == CgroupOwner()


def test_owner_from_cgroup_pod_scope_without_container_keeps_pod() -> None:
    text = f"0::/kubepods/besteffort/pod{POD_UID}\n"

    assert owner_from_cgroup(text) == CgroupOwner(POD_UID, None)


def test_command_from_cmdline_nul_separated_becomes_spaces() -> None:
    assert command_from_cmdline(b"python\0train.py\0--lr\x000.1\0") == "python train.py --lr 0.1"
    assert command_from_cmdline(b"") is None
    assert len(command_from_cmdline(b"x" * 10_000) or "") == 4096


def test_uid_from_status_reads_real_uid() -> None:
    status = "Name:\tpython\nUid:\t1000\t0\t0\t0\nGid:\t0\t0\t0\t0\n"

    assert uid_from_status(status) == 1000
    assert uid_from_status("Name:\tpython\n") is None


def test_user_name_unknown_uid_falls_back_to_number() -> None:
    assert user_name(0) == "root"
    assert user_name(4_000_000_001) == "4000000001"


def test_read_process_host_process_has_command_and_user() -> None:
    owner = read_process(3121, proc_root=FIXTURES / "proc")

    assert owner == ProcessOwner(
        visible=True,
        command="/home/alice/miniconda3/envs/train/bin/python train.py --epochs 10",
        user="root",
    )


def test_read_process_pod_process_has_pod_uid_and_container() -> None:
    owner = read_process(48213, proc_root=FIXTURES / "proc")

    assert (owner.visible, owner.pod_uid, owner.container_id) == (True, POD_UID, CONTAINER)
    assert owner.command == (
        "/usr/local/bin/python -m vllm.entrypoints.openai.api_server --model /models/llama"
    )
    assert owner.user == user_name(4242)


def test_read_process_unseen_pid_is_not_visible() -> None:
    assert read_process(99999, proc_root=FIXTURES / "proc") == ProcessOwner(visible=False)


def test_read_process_own_pid_on_real_proc_is_visible() -> None:
    import os

    owner = read_process(os.getpid(), proc_root=Path("/proc"))

    assert owner.visible
    assert owner.command is not None and "python" in owner.command
