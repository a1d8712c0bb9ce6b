"""Dynamic Resource Allocation (resource.k8s.io/v1): inventory, claims, ledger and findings.

Pure like the rest of `app.domain`: it reads DeviceClass, ResourceSlice, ResourceClaim and
Pod manifests (camelCase dicts) and never the clock or the network.
"""
