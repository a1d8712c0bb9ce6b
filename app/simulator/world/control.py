"""The simulator's own HTTP endpoints under `/_sim/`: faults, request counts, processes.

GET    /_sim/requests                 {"counts": [{"verb", "kind", "count"}], "total"}
DELETE /_sim/requests                 reset the counters
GET    /_sim/faults                   {"unavailable", "pending": [{verb, kind, code, remaining}]}
POST   /_sim/faults                   one of: {"unavailable": true|false}
                                      {"verb"?, "kind"?, "code": 409|500|..., "count"?: 1}
                                      {"expire_watches": true}   {"drop_watches": true}
DELETE /_sim/faults                   clear every fault
GET    /_sim/processes[?node=N]       {"processes": [...]}
POST   /_sim/processes                {"node", "gpu", "used_memory_mib", "command"?,
                                       "user"? | "pod": "ns/name", "container"?, "pid"?}
DELETE /_sim/processes/{node}/{pid}
GET    /_sim/nodes                    inventories and what the plugin did on each node
GET    /_sim/reports/{node}           the agent report the node would send now
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from app.simulator.world.scenario import process_from

if TYPE_CHECKING:
    from app.simulator.world.cluster import SimulatedCluster


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _body(request: Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError as exc:
        raise ValueError(f"invalid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    return body


class _Control:
    """The `/_sim/` handlers of one simulator."""

    def __init__(self, sim: SimulatedCluster) -> None:
        self.sim = sim

    async def requests(self, request: Request) -> Response:
        if request.method == "DELETE":
            self.sim.reset_request_counts()
            return JSONResponse({"reset": True})
        counts = sorted(self.sim.request_counts().items())
        return JSONResponse(
            {
                "counts": [{"verb": v, "kind": k, "count": n} for (v, k), n in counts],
                "total": sum(n for _, n in counts),
            }
        )

    async def faults(self, request: Request) -> Response:
        if request.method == "DELETE":
            self.sim.clear_faults()
        elif request.method == "POST":
            try:
                self._apply_fault(await _body(request))
            except (ValueError, TypeError) as exc:
                return _error(400, str(exc))
        return JSONResponse(
            {
                "unavailable": self.sim.faults.unavailable,
                "pending": [dataclasses.asdict(r) for r in self.sim.faults.pending()],
            }
        )

    def _apply_fault(self, body: dict[str, Any]) -> None:
        if "unavailable" in body:
            self.sim.set_unavailable(bool(body["unavailable"]))
        elif body.get("expire_watches"):
            self.sim.expire_watches()
        elif body.get("drop_watches"):
            self.sim.drop_watches()
        else:
            self.sim.fail_next(
                verb=body.get("verb"),
                kind=body.get("kind"),
                code=int(body.get("code", 500)),
                count=int(body.get("count", 1)),
            )

    async def processes(self, request: Request) -> Response:
        if request.method == "POST":
            try:
                body = await _body(request)
                process = self.sim.workload.start(process_from(str(body["node"]), body))
            except (KeyError, ValueError, TypeError) as exc:
                return _error(400, f"bad process: {exc}")
            return JSONResponse(dataclasses.asdict(process), status_code=201)
        node = request.query_params.get("node")
        listed = self.sim.processes(node)
        return JSONResponse({"processes": [dataclasses.asdict(p) for p in listed]})

    async def process(self, request: Request) -> Response:
        node = request.path_params["node"]
        if not self.sim.stop_process(node, int(request.path_params["pid"])):
            return _error(404, "no such process")
        return JSONResponse({"stopped": True})

    async def nodes(self, request: Request) -> Response:
        out = []
        for name, inventory in self.sim.inventories.items():
            outcome = self.sim.plugin_outcome(name)
            out.append(
                {
                    **dataclasses.asdict(inventory),
                    "plugin": dataclasses.asdict(outcome) if outcome else None,
                }
            )
        return JSONResponse({"nodes": out})

    async def report(self, request: Request) -> Response:
        found = self.sim.report(request.path_params["node"])
        if found is None:
            return _error(404, "no simulated node of that name")
        return JSONResponse(found.model_dump(mode="json", by_alias=True))


def control_routes(sim: SimulatedCluster) -> list[BaseRoute]:
    """Starlette routes bound to one simulator."""
    control = _Control(sim)
    return [
        Route("/_sim/requests", control.requests, methods=["GET", "DELETE"]),
        Route("/_sim/faults", control.faults, methods=["GET", "POST", "DELETE"]),
        Route("/_sim/processes", control.processes, methods=["GET", "POST"]),
        Route("/_sim/processes/{node}/{pid:int}", control.process, methods=["DELETE"]),
        Route("/_sim/nodes", control.nodes, methods=["GET"]),
        Route("/_sim/reports/{node}", control.report, methods=["GET"]),
    ]
