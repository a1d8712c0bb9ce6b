"""The simulator's nodes, device plugin, DRA driver and agents, acting on any API server."""
