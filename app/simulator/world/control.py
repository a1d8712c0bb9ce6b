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


def control_routes(sim: SimulatedCluster) -> list[BaseRoute]:
    """Starlette routes bound to one simulator."""

    async def requests(request: Request) -> Response:
        if request.method == "DELETE":
            sim.reset_request_counts()
            return JSONResponse({"reset": True})
        counts = sorted(sim.request_counts().items())
        return JSONResponse(
            {
                "counts": [{"verb": v, "kind": k, "count": n} for (v, k), n in counts],
                "total": sum(n for _, n in counts),
            }
        )

    async def faults(request: Request) -> Response:
        if request.method == "DELETE":
            sim.clear_faults()
        elif request.method == "POST":
            try:
                body = await _body(request)
                if "unavailable" in body:
                    sim.set_unavailable(bool(body["unavailable"]))
                elif body.get("expire_watches"):
                    sim.expire_watches()
                elif body.get("drop_watches"):
                    sim.drop_watches()
                else:
                    sim.fail_next(
                        verb=body.get("verb"),
                        kind=body.get("kind"),
                        code=int(body.get("code", 500)),
                        count=int(body.get("count", 1)),
                    )
            except (ValueError, TypeError) as exc:
                return _error(400, str(exc))
        return JSONResponse(
            {
                "unavailable": sim.faults.unavailable,
                "pending": [dataclasses.asdict(r) for r in sim.faults.pending()],
            }
        )

    async def processes(request: Request) -> Response:
        if request.method == "POST":
            try:
                body = await _body(request)
                process = sim.workload.start(process_from(str(body["node"]), body))
            except (KeyError, ValueError, TypeError) as exc:
                return _error(400, f"bad process: {exc}")
            return JSONResponse(dataclasses.asdict(process), status_code=201)
        node = request.query_params.get("node")
        return JSONResponse({"processes": [dataclasses.asdict(p) for p in sim.processes(node)]})

    async def process(request: Request) -> Response:
        node = request.path_params["node"]
        if not sim.stop_process(node, int(request.path_params["pid"])):
            return _error(404, "no such process")
        return JSONResponse({"stopped": True})

    async def nodes(request: Request) -> Response:
        out = []
        for name, inventory in sim.inventories.items():
            outcome = sim.plugin_outcome(name)
            out.append(
                {
                    **dataclasses.asdict(inventory),
                    "plugin": dataclasses.asdict(outcome) if outcome else None,
                }
            )
        return JSONResponse({"nodes": out})

    async def report(request: Request) -> Response:
        found = sim.report(request.path_params["node"])
        if found is None:
            return _error(404, "no simulated node of that name")
        return JSONResponse(found.model_dump(mode="json", by_alias=True))

    return [
        Route("/_sim/requests", requests, methods=["GET", "DELETE"]),
        Route("/_sim/faults", faults, methods=["GET", "POST", "DELETE"]),
        Route("/_sim/processes", processes, methods=["GET", "POST"]),
        Route("/_sim/processes/{node}/{pid:int}", process, methods=["DELETE"]),
        Route("/_sim/nodes", nodes, methods=["GET"]),
        Route("/_sim/reports/{node}", report, methods=["GET"]),
    ]
