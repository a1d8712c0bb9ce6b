"""The dashboard's use cases, free of HTTP: routers and pages call them."""
