"""The trusted auth proxies: whose headers count, and who the caller really is behind them."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.requests import Request


class TrustedProxies:
    """The `trusted_proxies` networks; only connections from them may vouch for a caller."""

    def __init__(self, networks: Iterable[str]) -> None:
        self._networks = [ipaddress.ip_network(c, strict=False) for c in networks]

    def trusted(self, address: str) -> bool:
        try:
            peer = ipaddress.ip_address(address.strip())
        except ValueError:
            return False
        return any(peer in network for network in self._networks)

    def from_trusted_proxy(self, request: Request) -> bool:
        """Whether the connection itself comes from a `trusted_proxies` address."""
        return self.trusted(request.client.host if request.client else "")

    def client_address(self, request: Request) -> str:
        """Who is calling: the peer, or behind trusted proxies the address they were called from.

        `X-Forwarded-For` is read right to left and only while each hop is a trusted proxy;
        from anyone else (loopback included, unless configured) it is ignored.
        """
        peer = request.client.host if request.client else "unknown"
        if not self.trusted(peer):
            return peer
        hops = [hop.strip() for hop in request.headers.get("x-forwarded-for", "").split(",")]
        for hop in reversed([hop for hop in hops if hop]):
            if not self.trusted(hop):
                return hop[:64]
        return peer

    def is_https(self, request: Request) -> bool:
        if request.url.scheme == "https":
            return True
        forwarded = request.headers.get("x-forwarded-proto", "")
        return forwarded.lower() == "https" and self.from_trusted_proxy(request)
