"""A sample costs what changed: the memoised sampler and the store's kept keys give the very
answers of a plain sample and a full comparison, over a changing sequence of snapshots
(nodes replaced, removed and added back, owners relabelled, a gap in the samples)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from app.domain.cluster import Manifest
from app.domain.history.sample import NodePart, Sample, Sampler, sample_of
from app.domain.snapshot import NodeState, Snapshot
from app.web.services.history.store import HistoryStore
from tests.bench.history_bench import held_cluster

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def _manifest(pod: str, owner: str | None = None) -> Manifest:
    namespace, _, name = pod.partition("/")
    labels = {"owner": owner} if owner else {}
    return {"metadata": {"namespace": namespace, "name": name, "labels": labels}}


def _steps() -> list[tuple[Snapshot, list[Manifest]]]:
    """Snapshots as the engine publishes them: unchanged nodes keep their very objects."""
    base = held_cluster(6)
    nodes = list(base.nodes)
    pods = [_manifest(p.pod) for node in nodes for p in node.pods]
    steps = [(base, pods)]

    def step(new_nodes: list[NodeState], new_pods: list[Manifest]) -> None:
        steps.append((base.model_copy(update={"nodes": list(new_nodes)}), new_pods))

    step(nodes, pods)  # unchanged
    nodes[1] = nodes[1].model_copy(update={"pods": nodes[1].pods[:5]})  # pods ended
    step(nodes, pods)
    relabelled = list(pods)
    relabelled[0] = _manifest(nodes[0].pods[0].pod, "carol")  # a new owner, same node object
    step(nodes, relabelled)
    step(nodes[:3] + nodes[4:], relabelled)  # a node gone
    step(nodes, relabelled)  # and back, the same object
    nodes[2] = nodes[2].model_copy()  # a new, equal state
    step(nodes, [*relabelled[:10], _manifest(nodes[2].pods[0].pod, "dave")])  # pods gone
    return steps


def test_memoised_samples_equal_plain_ones_over_changing_snapshots() -> None:
    sampler = Sampler()
    for n, (snapshot, pods) in enumerate(_steps()):
        at = T0 + timedelta(seconds=15 * n)
        memoised = sampler.sample(snapshot, pods, at=at)
        plain = sample_of(snapshot, pods, at=at)
        assert memoised == plain, n
    assert {"ml/carol", "ml/dave"} <= {h.owner for h in plain.holdings}  # relabelled


def _renamed(sample: Sample) -> Sample:
    return replace(
        sample, holdings=tuple(replace(h, owner=f"{h.owner}-x") for h in sample.holdings)
    )


def _answers(store: HistoryStore, end_s: float) -> object:
    start_s = T0.timestamp()
    return (
        store.rows(),
        [store.held(start_s, end_s, by=by) for by in ("namespace", "owner", "node")],
        store.buckets(start_s, end_s, step_s=30),
        [store.holds_between(f"gpu-{n:03d}", start_s, end_s) for n in range(6)],
        store.holds_at("gpu-001", start_s + 40),
    )


def test_a_store_fed_memoised_samples_keeps_what_a_full_comparison_keeps(tmp_path: Path) -> None:
    """The reference store is opened anew for every sample: it compares every key it is
    shown with the open spans it reads back from its file."""
    sampler = Sampler()
    kept = HistoryStore(tmp_path / "memo.sqlite")
    moment = T0
    for n, (snapshot, pods) in enumerate(_steps() * 2):
        moment += timedelta(seconds=15 if n != 9 else 600)  # one gap: the spans close
        taken, reference = (
            sampler.sample(snapshot, pods, at=moment),
            sample_of(snapshot, pods, at=moment),
        )
        if n == 4:  # items no longer the nodes' parts: compared one by one
            taken, reference = _renamed(taken), _renamed(reference)
        kept.add(taken, span_s=15, retention_days=35)
        plain = HistoryStore(tmp_path / "plain.sqlite")
        plain.add(reference, span_s=15, retention_days=35)
        end_s = moment.timestamp() + 15
        assert _answers(kept, end_s) == _answers(plain, end_s), n
        plain.close()
    assert kept.rows()["holds"] > 6 * 28  # spans closed and opened again
    kept.close()


def test_items_two_parts_share_stay_open_while_one_part_shows_them(tmp_path: Path) -> None:
    """Two nodes' parts holding the very same items (a key shown twice): when one part goes,
    the spans the other still shows stay open, as a store comparing every key keeps them."""
    first = Sampler().sample(held_cluster(3), [], at=T0)
    part = first.nodes[0]
    twin = replace(part)  # another part object, the same items
    steps = [(*first.nodes, twin), first.nodes, (*first.nodes, twin), first.nodes]
    kept = HistoryStore(tmp_path / "kept.sqlite")
    for n, parts in enumerate(steps):
        sample = Sample.of_parts(T0 + timedelta(seconds=15 * n), tuple(parts))
        kept.add(sample, span_s=15, retention_days=35)
        plain = HistoryStore(tmp_path / "plain.sqlite")
        plain.add(sample, span_s=15, retention_days=35)
        end_s = sample.at.timestamp() + 15
        assert _answers(kept, end_s) == _answers(plain, end_s), n
        plain.close()
    assert kept.rows()["holds"] == 3 * 28  # every hold one span, open since the first sample
    kept.close()


def _changed_part(part: NodePart, rng: random.Random, serial: int) -> NodePart:
    """The node's part after one change: processes start and stop (the rates change), pods
    end, a pod starts, the plugin's mode changes, a key is shown twice, or an equal copy."""
    holdings, holds, gpus = list(part.holdings), list(part.holds), list(part.gpus)
    kind = rng.randrange(6) if holdings and holds else 5
    if kind == 0:
        for i, h in enumerate(holdings):
            used = rng.random() < 0.5
            holdings[i] = replace(h, used_share=h.share * used, idle_share=h.share * (not used))
    elif kind == 1:
        holdings, holds = holdings[2:], holds[2:]
    elif kind == 2:
        holdings.append(replace(holdings[0], owner=f"ml/new-{serial}", share=0.25))
        holds.append(replace(holds[0], pod=f"ml/new-{serial}"))
    elif kind == 3:
        gpus = [replace(g, mode="mps", replicas=4) for g in gpus]
        holds = [replace(h, mode="mps", replicas=4) for h in holds]
    elif kind == 4:
        holdings.append(replace(holdings[0], used_share=0.0, idle_share=holdings[0].share))
    return replace(part, holdings=tuple(holdings), holds=tuple(holds), gpus=tuple(gpus))


def test_random_changes_keep_what_a_full_comparison_keeps(tmp_path: Path) -> None:
    """Seeded samples made of parts: nodes changed, gone and back (a node's old part beside
    its new one too), a part shown twice, copies not made of parts, late and early samples,
    gaps and restarts. The kept store answers as one comparing every key with its file."""
    rng = random.Random(46)
    parts = list(Sampler().sample(held_cluster(6), [], at=T0).nodes)
    seen = list(parts)
    kept = HistoryStore(tmp_path / "kept.sqlite")
    moment = T0
    for n in range(80):
        moment += timedelta(seconds=rng.choice([15] * 12 + [7, 600]))
        pick = rng.random()
        if pick < 0.6:
            i = rng.randrange(len(parts))
            parts[i] = _changed_part(parts[i], rng, n)
            seen.append(parts[i])
        elif pick < 0.7 and len(parts) > 2:
            parts.pop(rng.randrange(len(parts)))
        elif pick < 0.8:
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(seen))
        elif pick < 0.85:
            parts.append(parts[0])
        sample = Sample.of_parts(moment, tuple(parts))
        if rng.random() < 0.1:
            sample = replace(sample)  # not made of parts: its items compared one by one
        if rng.random() < 0.05:
            kept.close()
            kept = HistoryStore(tmp_path / "kept.sqlite")
        kept.add(sample, span_s=15, retention_days=35)
        plain = HistoryStore(tmp_path / "plain.sqlite")
        plain.add(sample, span_s=15, retention_days=35)
        end_s = moment.timestamp() + 15
        assert _answers(kept, end_s) == _answers(plain, end_s), n
        plain.close()
    kept.close()
