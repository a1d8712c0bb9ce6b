"""Dynamic Resource Allocation (resource.k8s.io/v1): inventory, claims, capacity and ledger."""
