"""The accounting engine: one cluster view plus agent reports -> the snapshot the pages show.

Pure: no I/O, no clock (`now` is an argument). Linear in nodes + pods: pods are indexed by
node and by UID once.
"""

from __future__ import annotations

from datetime import datetime

from app.domain.accounting.facts import ClusterFacts
from app.domain.accounting.nodes import readable
from app.domain.accounting.pod_index import PodIndex, PodIndexMemo, index_pods
from app.domain.accounting.pods import read_pod
from app.domain.accounting.states import plugin_state
from app.domain.bounds import SetAside
from app.domain.cluster import AccountingOptions, ClusterState
from app.domain.dra.install import read_dra_install
from app.domain.dra.inventory import DraView, read_dra
from app.domain.dra.ledger import dra_summary
from app.domain.dra_models import DraInstall
from app.domain.engine.memo import EngineMemo
from app.domain.engine.nodes import all_node_facts
from app.domain.engine.pods import cluster_pod_findings, demand_of, pending_pods
from app.domain.engine.results import node_results, with_pod_findings
from app.domain.findings.catalogue import sort_key
from app.domain.findings.causes import link_causes
from app.domain.findings.cluster import cluster_findings
from app.domain.findings.dra_cluster import dra_cluster_findings
from app.domain.findings.resources import demand_findings
from app.domain.findings.set_aside import set_aside_findings
from app.domain.plugin.daemonset import PluginSpec, is_plugin_daemonset, read_plugin_spec
from app.domain.plugin.effective import resolve_config
from app.domain.snapshot import Finding, Snapshot


def build_snapshot(
    state: ClusterState,
    *,
    options: AccountingOptions,
    now: datetime,
    memo: EngineMemo | None = None,
    ages_at: datetime | None = None,
) -> Snapshot:
    """Compute every figure and finding of the dashboard from one consistent cluster view.

    `memo` (kept by the caller from one snapshot to the next) saves re-reading pods and
    recomputing nodes that did not change (see EngineMemo); the result is the same with or
    without it. Agents' ages and freshness are reckoned at `ages_at` (`now` when None; a
    caller may keep an earlier moment so that a build for a change does not renew every
    node's agent: see app.web.services.snapshots.service).
    """
    index = _index_pods(state, plugin_specs(state), memo)
    dra = read_dra(state.device_classes, state.resource_slices, state.resource_claims)
    facts = _cluster_facts(state, index, options=options, now=now, ages_at=ages_at or now)
    built = all_node_facts(facts, index, memo, dra)
    facts.nodes = built.nodes
    own, node_states, sums = node_results(facts, built, dra, memo)
    findings = list(cluster_findings(facts, sums))
    findings += cluster_pod_findings(facts, index, memo, configs=built.configs)
    findings += dra_cluster_findings(dra, facts)
    findings += own
    pending = pending_pods(facts, index, memo)
    demand = demand_of(facts, pending)
    findings += demand_findings(demand)
    findings += _set_aside(index, dra, memo)
    node_states = with_pod_findings(node_states, findings)
    findings.sort(key=sort_key)
    findings, node_states = link_causes(findings, node_states)
    plugin = plugin_state(facts.spec, facts.default_config, options)
    return Snapshot(
        generated_at=now,
        plugin=plugin,
        totals=sums.totals(demand),
        nodes=node_states,
        findings=findings,
        dra=dra_summary(dra, state.nodes, install=_dra_install(state, index.specs)),
        mode=sums.mode(default=plugin.mode),
        resources=sums.resource_states(),
        pending_demand=demand,
        pending_pods=pending.listed,
    )


def _cluster_facts(
    state: ClusterState,
    index: PodIndex,
    *,
    options: AccountingOptions,
    now: datetime,
    ages_at: datetime,
) -> ClusterFacts:
    """The facts every node reads, before any node's own (the engine fills `nodes` in)."""
    specs = index.specs  # the index's own objects: a node's owner is one of them
    spec = specs[0] if specs else None
    return ClusterFacts(
        spec=spec,
        default_config=resolve_config(spec, state.configmaps, readable=readable(options)),
        state=state,
        options=options,
        now=now,
        ages_at=ages_at,
        slots_by_uid=index.slots_by_uid,
        pods_by_uid=index.pods_by_uid,
        plugin_pods=index.plugin_pods,
        pod_facts=index.facts_by_uid,
    )


def _set_aside(index: PodIndex, dra: DraView | None, memo: EngineMemo | None) -> list[Finding]:
    """The objects left out of the figures because a number they hold was refused."""
    pods = _pods_set_aside(index, memo)
    return set_aside_findings([*pods.values(), *(dra.set_aside if dra is not None else ())])


def _pods_set_aside(index: PodIndex, memo: EngineMemo | None) -> dict[str, SetAside]:
    """The pods set aside, by UID: looked at again only where the index says pods changed
    (every pod of a 300,000-pod cluster on every build was a tenth of a build)."""
    kept = memo.set_aside if memo is not None else None
    if kept is None or index.changed is None:
        found = {
            uid: f.set_aside for uid, f in index.facts_by_uid.items() if f.set_aside is not None
        }
    elif index.changed:
        found = dict(kept)
        for uid in index.changed:
            facts = index.facts_by_uid.get(uid)
            if facts is not None and facts.set_aside is not None:
                found[uid] = facts.set_aside
            else:
                found.pop(uid, None)
    else:
        found = kept
    if memo is not None:
        memo.set_aside = found
    return found


def _dra_install(state: ClusterState, specs: list[PluginSpec]) -> DraInstall | None:
    return read_dra_install(state.daemonsets, state.device_classes, device_plugin=bool(specs))


def plugin_specs(state: ClusterState) -> list[PluginSpec]:
    """Every plugin DaemonSet, the configured one first (or the first found without it)."""
    specs = [read_plugin_spec(state.daemonset)] if state.daemonset is not None else []
    seen = {s.ref for s in specs}
    for daemonset in state.daemonsets:
        if not is_plugin_daemonset(daemonset):
            continue
        found = read_plugin_spec(daemonset)
        if found.ref not in seen:
            seen.add(found.ref)
            specs.append(found)
    return specs


def _index_pods(state: ClusterState, specs: list[PluginSpec], memo: EngineMemo | None) -> PodIndex:
    if memo is None:
        return index_pods(state.pods, specs, [read_pod(p) for p in state.pods])
    if memo.pod_index is None:
        memo.pod_index = PodIndexMemo(memo.pods)
    return memo.pod_index.index(state.pods, specs)
