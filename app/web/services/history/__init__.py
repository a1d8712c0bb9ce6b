"""The GPU-hour history: the sampler, the SQLite store, Prometheus as the engine, the service."""
