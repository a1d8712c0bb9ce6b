"""Numbers read from tenants' objects are bounded; a failing object is set aside (issue 33)."""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.bounds import OutOfBounds, SetAside, cut, number_text, set_aside
from app.domain.dra.inventory import read_dra
from app.domain.findings.set_aside import MAX_NAMED, set_aside_findings
from tests import factories as f
from tests.domain.worlds import snap, ts_world, world


def test_cut_keeps_short_values_and_cuts_long_ones_with_their_length() -> None:
    assert cut("2000") == "2000"
    assert cut("9" * 5000) == "9" * 40 + "… (5000 characters)"


@pytest.mark.parametrize("value", ["9" * 65, "²", True, None, ["1"]])
def test_number_text_refuses_what_cannot_be_a_count(value: Any) -> None:
    with pytest.raises(OutOfBounds) as refused:
        number_text(value, field="f")
    assert refused.value.field == "f"


def test_set_aside_of_any_parser_error_names_its_type() -> None:
    item = set_aside("Pod", "ns/p", OverflowError("int too large to convert to float"))
    assert item == SetAside(
        "Pod", "ns/p", "?", "int too large to convert to float", "OverflowError"
    )


@pytest.mark.parametrize(
    ("annotations", "field"),
    [
        ({"gpu-memory": "9" * 5000}, "metadata.annotations.gpu-memory"),
        ({"gpu-memory": "²"}, "metadata.annotations.gpu-memory"),
        ({"gpu-memory": str(2**25)}, "metadata.annotations.gpu-memory"),
        (
            {"gpu-fraction": "0.5", "gpu-fraction-num-devices": "9" * 5000},
            "metadata.annotations.gpu-fraction-num-devices",
        ),
        (
            {"gpu-fraction": "0.5", "gpu-fraction-num-devices": "20000000"},
            "metadata.annotations.gpu-fraction-num-devices",
        ),
    ],
)
def test_hostile_fraction_annotations_set_the_pod_aside_and_the_rest_is_counted(
    annotations: dict[str, str], field: str
) -> None:
    pods = [f.fraction_pod("odd", annotations=annotations), f.pod("job", gpus=1)]
    result = snap(world(pods=pods))
    [item] = [x for x in result.findings if x.code == "object-set-aside"]
    assert item.evidence["object"] == "Pod ml/odd"
    assert item.evidence["field"] == field
    assert result.totals.requested == 1  # the ordinary pod still counts


def test_a_request_of_400_digits_sets_the_pod_aside() -> None:
    pod = f.pod("huge", gpus=1)
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "9" * 400}}
    result = snap(world(pods=[pod, f.pod("job", gpus=1)]))
    [item] = [x for x in result.findings if x.code == "object-set-aside"]
    assert (item.evidence["field"], item.evidence["reason"]) == (
        "resources.limits.nvidia.com/gpu",
        "not-a-quantity",
    )
    assert result.totals.requested == 1


def _claim(consumed: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "c", "namespace": "ml"},
        "spec": {},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "r",
                            "driver": "d",
                            "pool": "p",
                            "device": "x",
                            "consumedCapacity": {"shares": consumed},
                        }
                    ]
                }
            }
        },
    }


@pytest.mark.parametrize("consumed", ["²", "9" * 5000, str(10**7)])
def test_a_claim_consuming_hostile_shares_is_set_aside(consumed: str) -> None:
    view = read_dra(
        [], [], [_claim(consumed), _claim("2") | {"metadata": {"name": "ok", "namespace": "ml"}}]
    )
    assert view is not None
    assert [c.name for c in view.claims] == ["ok"]
    [item] = view.set_aside
    assert (item.kind, item.key) == ("ResourceClaim", "ml/c")


def test_set_aside_findings_name_at_most_max_named_and_count_the_rest() -> None:
    items = [SetAside("Pod", f"ns/p{i:04}", "f", "v", "out-of-bounds") for i in range(250)]
    found = set_aside_findings(items)
    assert len(found) == MAX_NAMED
    assert found[-1].evidence["more_objects"] == 50


def test_a_plugin_config_whose_parser_fails_is_config_invalid_not_a_failed_build() -> None:
    deep = "a: " + "[" * 1500 + "]" * 1500  # yaml's composer recurses past Python's limit
    state = ts_world(4, configmaps=[f.configmap({"config.yaml": deep})])
    result = snap(state)
    assert "plugin-config-rejected" in {x.code for x in result.findings}


def test_a_config_text_is_parsed_once_not_on_every_build() -> None:
    """A 1 MiB ConfigMap parsed on every build put each pod change 8-12 s behind.

    (Texts past the YAML reader's 64 KiB are refused outright; this one is just under.)
    """
    from app.domain.plugin.config import _parse_cached

    big = f.time_slicing_yaml(4) + "# padding\n" * 6_000  # about 60 KiB of config text
    state = ts_world(4, configmaps=[f.configmap({"config.yaml": big})])
    snap(state)
    before = _parse_cached.cache_info()
    for _ in range(3):
        assert snap(state).nodes[0].expected_slots == 16
    after = _parse_cached.cache_info()
    assert after.misses == before.misses  # no parse again
    assert after.hits >= before.hits + 3
