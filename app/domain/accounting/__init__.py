"""Accounting: nodes, pods, GPUs and agent reports -> per-node facts and the per-GPU ledger."""
