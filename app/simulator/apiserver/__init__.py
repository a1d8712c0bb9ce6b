"""The simulated Kubernetes API server: HTTP, storage, the API rules, watch and paging."""
