"""`make check` leaves out exactly the tiers: by folder and by use, never by a hand-set marker."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any, cast

import pytest

# Not `from tests.kube_tools import kube_tools`: that name would mark this module a tier.
import tests.kube_tools as tools
from tests import conftest


class FakeItem:
    def __init__(
        self, path: str, *, module: ModuleType | None = None, fixtures: tuple[str, ...] = ()
    ):
        self.path = conftest.TESTS / path
        self.module = module
        self.fixturenames = fixtures
        self.marks: list[str] = []

    def add_marker(self, mark: pytest.MarkDecorator) -> None:
        self.marks.append(mark.name)


def _tier(item: FakeItem) -> bool:
    conftest.pytest_collection_modifyitems(cast(list[pytest.Item], [item]))
    return "tier" in item.marks


def _module(**names: Any) -> ModuleType:
    module = ModuleType("a_test_module")
    vars(module).update(names)
    return module


def test_a_new_unit_test_anywhere_outside_the_tier_folders_runs_in_make_check() -> None:
    assert not _tier(FakeItem("test_check_selection.py", module=sys.modules[__name__]))
    assert not _tier(FakeItem("domain/test_new_rule.py", module=_module()))
    assert not _tier(FakeItem("web/test_new_page.py", module=_module(), fixtures=("make_stack",)))
    assert not _tier(FakeItem("brand_new_folder/test_x.py", module=_module()))


def test_the_tier_folders_and_every_test_that_runs_kubectl_are_left_out() -> None:
    assert _tier(FakeItem("browser/test_pages_browser.py", module=_module()))
    assert _tier(FakeItem("real/test_rbac.py", module=_module()))
    assert _tier(FakeItem("web/test_remedies.py", module=_module(kube_tools=tools.kube_tools)))
    assert _tier(FakeItem("simulator/test_dra.py", module=_module(), fixtures=("kubectl",)))


def test_under_make_check_a_test_reaching_for_kubectl_fails_saying_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GPU_SLOTS_CHECK_ONLY", "1")
    tools.kube_tools.cache_clear()
    with pytest.raises(tools.ToolsUnavailable, match="make check runs no test that needs kubectl"):
        tools.kube_tools()
    tools.kube_tools.cache_clear()
