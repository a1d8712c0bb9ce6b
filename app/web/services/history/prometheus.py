"""The history read from Prometheus (or Thanos, Mimir: the same query API) over our own
series: the `gpu_slots_held_*` and `gpu_slots_history_gpu_info` families /metrics exports
from each history sample.

Prometheus scrapes /metrics every `interval_s` (the history interval), so a window's
share-seconds are the sum of its samples times that interval, as the SQLite file keeps
them. A Prometheus that cannot be reached, answers too slowly or answers something else is
a HistoryUnavailableError saying which.
"""

from __future__ import annotations

from typing import Any

import httpx

from app.domain.history.records import HeldBucket, PastGpu, PastHold
from app.domain.history.showback import HeldSeconds, ShowbackBy, held_seconds
from app.errors import HistoryUnavailableError


class PrometheusHistory:
    """PromQL range and instant queries answering the store's questions."""

    def __init__(self, url: str, *, interval_s: float, timeout_s: float) -> None:
        self._url = url.rstrip("/")
        self._interval_s = interval_s
        self._timeout_s = timeout_s

    def held(
        self, start_s: float, end_s: float, *, by: ShowbackBy
    ) -> tuple[list[HeldSeconds], float]:
        """Share- and slot-seconds per namespace, owner or node, and physical GPU-seconds."""
        window = f"{max(1, round(end_s - start_s))}s"
        figures: dict[str, list[float]] = {}
        for column, family in enumerate(
            ("gpu_slots_held_gpus", "gpu_slots_held_used_gpus", "gpu_slots_held_idle_gpus")
        ):
            query = f"sum by ({by}) (sum_over_time({family}[{window}]))"
            for labels, value in self._vector(query, at_s=end_s):
                sums = figures.setdefault(labels.get(by, ""), [0.0, 0.0, 0.0])
                sums[column] = value * self._interval_s
        query = f"sum by ({by}, resource) (sum_over_time(gpu_slots_held_slots[{window}]))"
        slots = [
            (labels.get(by, ""), labels.get("resource", ""), value * self._interval_s)
            for labels, value in self._vector(query, at_s=end_s)
        ]
        physical = self._vector(
            f"sum(count_over_time(gpu_slots_history_gpu_info[{window}]))", at_s=end_s
        )
        shares = [(key, share, used, idle) for key, (share, used, idle) in figures.items()]
        found = held_seconds(by, shares, slots)
        return found, (physical[0][1] * self._interval_s if physical else 0.0)

    def buckets(self, start_s: float, end_s: float, *, step_s: float) -> list[HeldBucket]:
        """The window in buckets of `step_s`: each a range query's point at its bucket's end."""
        step = f"{max(1, round(step_s))}s"
        count = int(-(-(end_s - start_s) // step_s))
        series: dict[str, dict[int, float]] = {}
        for field, query in (
            ("share_s", f"sum(sum_over_time(gpu_slots_held_gpus[{step}]))"),
            ("used_s", f"sum(sum_over_time(gpu_slots_held_used_gpus[{step}]))"),
            ("idle_s", f"sum(sum_over_time(gpu_slots_held_idle_gpus[{step}]))"),
            ("physical_s", f"sum(count_over_time(gpu_slots_history_gpu_info[{step}]))"),
        ):
            points = self._matrix(
                query,
                start_s=start_s + step_s,
                end_s=start_s + count * step_s,
                step_s=step_s,
            )
            series[field] = {
                round((at - start_s) / step_s) - 1: value * self._interval_s for at, value in points
            }
        return [
            HeldBucket(
                index,
                series["share_s"].get(index, 0.0),
                series["used_s"].get(index, 0.0),
                series["idle_s"].get(index, 0.0),
                series["physical_s"].get(index, 0.0),
            )
            for index in range(count)
        ]

    def holds_at(self, node: str, at_s: float) -> tuple[list[PastHold], list[PastGpu]]:
        """Who held each GPU of `node` at `at_s`: the latest scrape at or before it."""
        quoted = _quoted(node)
        holds = [
            _past_hold(labels, int(value), since_s=at_s, span_s=self._interval_s)
            for labels, value in self._vector(
                f'gpu_slots_held_gpu_slots{{node="{quoted}"}}', at_s=at_s
            )
        ]
        gpus = [
            PastGpu(
                labels.get("UUID", ""),
                int(labels.get("gpu", "-1")),
                labels.get("mode", ""),
                int(labels.get("replicas", "0")),
                labels.get("config", ""),
            )
            for labels, _ in self._vector(
                f'gpu_slots_history_gpu_info{{node="{quoted}"}}', at_s=at_s
            )
        ]
        holds.sort(key=lambda hold: (hold.gpu_index, hold.pod, hold.resource))
        return holds, sorted(gpus, key=lambda gpu: (gpu.index, gpu.uuid))

    def holds_between(self, node: str, start_s: float, end_s: float) -> list[PastHold]:
        """Spans of pods holding slots of the node's GPUs: a range query's points, joined
        while they follow each other."""
        quoted = _quoted(node)
        step_s = max(self._interval_s, (end_s - start_s) / 1000)
        data = self._get(
            "/api/v1/query_range",
            {
                "query": f'gpu_slots_held_gpu_slots{{node="{quoted}"}}',
                "start": f"{start_s:.3f}",
                "end": f"{end_s:.3f}",
                "step": f"{step_s:g}",
            },
        )
        spans = []
        for series in data.get("result") or []:
            labels = series["metric"]
            since: float | None = None
            last = 0.0
            points = [(float(at), int(float(value))) for at, value in series["values"]]
            for index, (at, slots) in enumerate(points):
                if since is None:
                    since = at
                ends = index + 1 == len(points) or points[index + 1][0] - at > step_s * 1.5
                last = at
                if ends:
                    spans.append(
                        _past_hold(labels, slots, since_s=since, span_s=last - since + step_s)
                    )
                    since = None
        return sorted(spans, key=lambda hold: (hold.gpu_index, hold.since_s, hold.pod))

    def _vector(self, query: str, *, at_s: float) -> list[tuple[dict[str, str], float]]:
        data = self._get("/api/v1/query", {"query": query, "time": f"{at_s:.3f}"})
        if data.get("resultType") != "vector":
            raise HistoryUnavailableError("history.prometheus-answer", f"not a vector: {query}")
        return [(item["metric"], float(item["value"][1])) for item in data["result"]]

    def _matrix(
        self, query: str, *, start_s: float, end_s: float, step_s: float
    ) -> list[tuple[float, float]]:
        params = {
            "query": query,
            "start": f"{start_s:.3f}",
            "end": f"{end_s:.3f}",
            "step": f"{step_s:g}",
        }
        data = self._get("/api/v1/query_range", params)
        result = data.get("result") or []
        return [(float(at), float(value)) for at, value in (result[0]["values"] if result else [])]

    def _get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        try:
            answer = httpx.get(f"{self._url}{path}", params=params, timeout=self._timeout_s)
        except httpx.TimeoutException as exc:
            raise HistoryUnavailableError(
                "history.prometheus-slow", f"{self._url} gave no answer in {self._timeout_s:g} s"
            ) from exc
        except httpx.TransportError as exc:
            raise HistoryUnavailableError("history.prometheus-down", f"{self._url}: {exc}") from exc
        try:
            body = answer.json()
        except ValueError:
            body = None
        answered = isinstance(body, dict) and body.get("status") == "success"
        if answer.status_code != 200 or not isinstance(body, dict) or not answered:
            said = f"{self._url}{path}: {answer.status_code} {answer.text[:300]}"
            raise HistoryUnavailableError("history.prometheus-answer", said)
        data = body.get("data")
        if not isinstance(data, dict):
            raise HistoryUnavailableError("history.prometheus-answer", f"{path}: no data")
        return data


def _quoted(value: str) -> str:
    """A label value inside a PromQL double-quoted string."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _past_hold(labels: dict[str, str], slots: int, *, since_s: float, span_s: float) -> PastHold:
    """A pod's slots of one GPU, from the labels of a `gpu_slots_held_gpu_slots` series."""
    return PastHold(
        gpu_uuid=labels.get("UUID", ""),
        gpu_index=int(labels.get("gpu", "-1")),
        pod=f"{labels.get('namespace', '')}/{labels.get('pod', '')}",
        resource=labels.get("resource", ""),
        slots=slots,
        mode=labels.get("mode", ""),
        replicas=int(labels.get("replicas", "0")),
        config=labels.get("config", ""),
        since_s=since_s,
        span_s=span_s,
    )
