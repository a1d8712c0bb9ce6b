"""Agent reports in: their intake, the store of each node's latest report, peer sync.

The lowest of the services' flows: it imports nothing of snapshots, changes or history.
"""
