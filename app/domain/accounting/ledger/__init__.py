"""The per-GPU ledger: which GPU (or MIG device) gives which slots, who holds them, the figures.

In layers, each importing only those below it (an import-linter contract):
`figures` (a node's resources and expected slots) > `holders` (the kubelet's or inferred
holders) | `fractions` (GPU-fraction pods) > `devices` (GPUs and MIG devices from the
agent's readings) > `models` (GpuFacts, MigFacts, Visibility). DRA lands its holders in the
same ledger from `app/domain/dra/ledger.py`, one layer up.
"""
