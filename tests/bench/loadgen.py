"""A small HTTP/1.1 load generator: keep-alive connections on asyncio, raw sockets.

Used by the benchmark in its own process: for GET load when `wrk` is not installed, and
always for the agent-report POSTs (each body is sent once, in order, by C connections).
Prints one JSON object: requests, seconds, requests per second, latency p50/p99 in ms and
the count of each status code.

    python -m tests.bench.loadgen --url URL --path /api/v1/summary --connections 16 --duration 10
    python -m tests.bench.loadgen --url URL --path /api/v1/agent/reports --bodies FILE \
        --token T --connections 16 [--rate 67 --duration 60]   # paced: agents at work
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit


def percentile(sorted_values: list[float], fraction: float) -> float:
    """The value below which `fraction` of the samples lie (nearest rank)."""
    if not sorted_values:
        return float("nan")
    rank = min(len(sorted_values) - 1, max(0, round(fraction * len(sorted_values)) - 1))
    return sorted_values[rank]


def get_request(host: str, path: str, headers: tuple[str, ...] = ()) -> bytes:
    extra = "".join(f"{header}\r\n" for header in headers)
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: */*\r\n{extra}\r\n".encode()


def post_request(host: str, path: str, body: bytes, token: str) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {token}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def read_response(reader: asyncio.StreamReader) -> int:
    """Read one response; return its status code."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    return status


async def run(
    *,
    url: str,
    requests: Iterator[bytes],
    connections: int,
    duration_s: float | None,
    rate: float | None = None,
) -> dict[str, object]:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    latencies_ms: list[float] = []
    statuses: Counter[int] = Counter()
    errors = 0
    started = time.perf_counter()
    deadline = started + duration_s if duration_s else None
    sent_count = 0
    stopped = asyncio.Event()  # SIGTERM: finish the requests in flight, then report
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopped.set)

    async def worker() -> None:
        nonlocal errors, sent_count
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while (deadline is None or time.perf_counter() < deadline) and not stopped.is_set():
                try:
                    request = next(requests)
                except StopIteration:
                    return
                if rate:  # paced: request n leaves at started + n / rate
                    due = started + sent_count / rate
                    sent_count += 1
                    if due > time.perf_counter():
                        await asyncio.sleep(due - time.perf_counter())
                sent = time.perf_counter()
                writer.write(request)
                try:
                    status = await read_response(reader)
                except (asyncio.IncompleteReadError, ConnectionError):
                    # the server closed the connection (idle past its keep-alive): count it,
                    # then send the request again on a new one (an agent would retry it)
                    errors += 1
                    writer.close()
                    reader, writer = await asyncio.open_connection(host, port)
                    sent = time.perf_counter()
                    writer.write(request)
                    try:
                        status = await read_response(reader)
                    except (asyncio.IncompleteReadError, ConnectionError):
                        writer.close()
                        reader, writer = await asyncio.open_connection(host, port)
                        continue
                latencies_ms.append((time.perf_counter() - sent) * 1000)
                statuses[status] += 1
        finally:
            writer.close()

    await asyncio.gather(*(worker() for _ in range(connections)))
    elapsed_s = time.perf_counter() - started
    latencies_ms.sort()
    return {
        "requests": len(latencies_ms),
        "seconds": round(elapsed_s, 3),
        "rps": round(len(latencies_ms) / elapsed_s, 1) if elapsed_s else 0.0,
        "p50_ms": round(percentile(latencies_ms, 0.50), 3),
        "p99_ms": round(percentile(latencies_ms, 0.99), 3),
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "errors": errors,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="base URL, e.g. http://127.0.0.1:8000")
    parser.add_argument("--path", required=True)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--duration", type=float, default=None, help="seconds (GET mode)")
    parser.add_argument("--bodies", type=Path, default=None, help="JSON lines to POST, once each")
    parser.add_argument("--token", default="")
    parser.add_argument("--rate", type=float, default=None, help="requests per second, paced")
    parser.add_argument("--header", action="append", default=[], help="'Name: value' (GET)")
    args = parser.parse_args(argv)
    host = urlsplit(args.url).netloc
    requests: Iterator[bytes]
    if args.bodies is not None:

        def posts(path: Path) -> Iterator[bytes]:
            with path.open("rb") as lines:
                for line in lines:
                    if line.strip():
                        yield post_request(host, args.path, line.rstrip(b"\n"), args.token)

        requests = posts(args.bodies)
        duration = args.duration
    else:
        one = get_request(host, args.path, tuple(args.header))

        def forever() -> Iterator[bytes]:
            while True:
                yield one

        requests = forever()
        duration = args.duration or 10.0
    result = asyncio.run(
        run(
            url=args.url,
            requests=requests,
            connections=args.connections,
            duration_s=duration,
            rate=args.rate,
        )
    )
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
