"""Every replica of the dashboard behind one name: resolve all its addresses.

The chart's headless Service has one A record per dashboard pod, so an agent that posts
to each address delivers its report to every replica; a plain Service (one virtual IP)
or an IP literal gives one target, exactly as before. IPv4 addresses are used when there
are any (`localhost` also resolves to `::1`, where a dashboard bound to 127.0.0.1 does
not listen); IPv6 only when the name has no A record.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

Resolver = Callable[[str, int], list[str]]


def resolve_all(host: str, port: int) -> list[str]:
    """The addresses of `host`, A records first (and only, when there are any)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    v4 = sorted({str(info[4][0]) for info in infos if info[0] == socket.AF_INET})
    v6 = sorted({str(info[4][0]) for info in infos if info[0] == socket.AF_INET6})
    return v4 or v6


@dataclass(frozen=True, slots=True)
class Target:
    """One replica: the URL to connect to, and the name to present (Host header, TLS SNI)."""

    url: str
    address: str  # for logs and outcomes: the IP, or the host when it was not resolved
    host_header: str | None = None  # set when `url` carries an IP instead of the name
    sni: str | None = None  # the name TLS verifies, when `url` carries an IP


def targets(url: str, resolve: Resolver) -> list[Target]:
    """One target per address of `url`'s host; the URL itself when the host is an IP literal
    or cannot be resolved (the POST then fails with the connection's own error)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        ipaddress.ip_address(host)
        return [Target(url=url, address=host)]
    except ValueError:
        pass
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError):
        addresses = []
    if not addresses:
        return [Target(url=url, address=host)]
    found = []
    for address in addresses:
        literal = f"[{address}]" if ":" in address else address
        netloc = f"{literal}:{parts.port}" if parts.port else literal
        found.append(
            Target(
                url=urlunsplit(parts._replace(netloc=netloc)),
                address=address,
                host_header=parts.netloc.rsplit("@", 1)[-1],
                sni=host,
            )
        )
    return found
