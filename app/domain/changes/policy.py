"""Checks of a mode change that concern installs and flags beyond the sharing block."""

from __future__ import annotations

from app.domain.changes.models import ChangeRequest, PlanRefused, RefusalCode
from app.domain.dra_models import DraInstall
from app.domain.plugin.config import ALLOCATION_POLICIES
from app.domain.plugin.daemonset import Version

POLICY_SINCE: Version = (0, 20, 0)


def check_policy(request: ChangeRequest, version: Version | None) -> None:
    """sharedDevicesAllocationPolicy: a value v0.20 accepts, on a plugin that reads it."""
    policy = request.allocation_policy
    if policy is None:
        return
    if policy not in ALLOCATION_POLICIES:
        raise PlanRefused(
            RefusalCode.OUT_OF_RANGE,
            "policy-unknown",
            policies=", ".join(ALLOCATION_POLICIES),
            got=repr(policy),
        )
    if version is not None and version < POLICY_SINCE:
        raise PlanRefused(
            RefusalCode.OUT_OF_RANGE, "policy-too-old", version="{}.{}.{}".format(*version)
        )


def dra_only(install: DraInstall) -> PlanRefused:
    """The refusal of a cluster that runs the DRA driver and no device plugin; who owns the
    driver (`managed_by`: gpu-operator, helm, other) picks the sentence."""
    owner = install.managed_by if install.managed_by in ("gpu-operator", "helm") else "other"
    return PlanRefused(RefusalCode.DRA_ONLY, f"dra-only.{owner}", daemonset=install.daemonset)
