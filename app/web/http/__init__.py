"""HTTP plumbing shared by the routers: error mapping, headers, OpenAPI, page helpers."""
