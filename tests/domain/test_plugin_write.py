"""config.yaml written through the shape it is read with: keys in any case fold as the plugin
folds them, so the plugin runs what was asked, and nothing it would read otherwise is lost."""

from __future__ import annotations

from app.domain.plugin.config import parse_plugin_config
from app.domain.plugin.replicated import Replicated, SharingResource
from app.domain.plugin.write import write_config
from app.domain.snapshot import Mode

MPS_ROOT = {"MPS_ROOT": "/run/nvidia/mps"}
V020 = (0, 20, 0)


def _time_slicing(replicas: int) -> Replicated:
    return Replicated(False, False, (SharingResource("nvidia.com/gpu", replicas),))


def test_a_new_config_is_written_as_a_person_writes_it() -> None:
    written = write_config(None, time_slicing=_time_slicing(4))
    assert written.text == (
        "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: false\n"
        "    failRequestsGreaterThanOne: false\n    resources:\n"
        "    - name: nvidia.com/gpu\n      replicas: 4\n"
    )
    assert written.notes == ()


def test_flags_given_in_two_cases_keep_what_the_plugin_merged_when_the_policy_is_set() -> None:
    text = "flags:\n  migStrategy: mixed\nFlags:\n  plugin:\n    deviceIDStrategy: index\n"
    assert parse_plugin_config(text, version=V020).mig_strategy == "mixed"

    written = write_config(text, time_slicing=_time_slicing(4), allocation_policy="packed")

    config = parse_plugin_config(written.text, version=V020)
    assert (config.mig_strategy, config.allocation_policy) == ("mixed", "packed")
    assert "Flags:" not in written.text
    assert "deviceIDStrategy: index" in written.text


def test_an_mps_block_under_a_folded_key_is_removed_so_time_slicing_runs() -> None:
    text = "\u017fharing:\n  mps:\n    resources:\n    - name: gpu\n      replicas: 2\n"
    assert parse_plugin_config(text, env=MPS_ROOT).mode is Mode.MPS  # U+017F folds to `s`

    written = write_config(text, time_slicing=_time_slicing(4))

    config = parse_plugin_config(written.text, env=MPS_ROOT)
    assert (config.mode, config.replicas) == (Mode.TIME_SLICING, 4)
    assert [note.code for note in written.notes] == ["mps-removed"]


def test_the_block_the_plugin_keeps_is_the_one_edited() -> None:
    text = (
        "sharing:\n  timeslicing:\n    resources:\n    - name: gpu\n      replicas: 2\n"
        "    - name: mig-1g.10gb\n      replicas: 3\n"
        "  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 2\n"
    )  # keys are read sorted: `timeslicing` comes after `timeSlicing`, and wins
    assert len(parse_plugin_config(text).sharing_resources) == 2

    written = write_config(text, time_slicing=_time_slicing(6))

    assert set(parse_plugin_config(written.text).sharing_resources) == {
        SharingResource("nvidia.com/gpu", 6),
        SharingResource("nvidia.com/mig-1g.10gb", 3),
    }


def test_a_later_entry_of_the_same_resource_is_merged_with_a_note() -> None:
    text = (
        "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n"
        "    - name: gpu\n      replicas: 8\n"
    )
    written = write_config(text, time_slicing=_time_slicing(3))

    assert parse_plugin_config(written.text).sharing_resources == (
        SharingResource("nvidia.com/gpu", 3),
    )
    assert [(n.code, n.params) for n in written.notes] == [
        ("time-slicing-entry-merged", {"name": "gpu", "replicas": "8"})
    ]
