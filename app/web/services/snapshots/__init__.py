"""The published snapshot: the build loop, its builder, renderings cached per snapshot.

Reads the reports' flow; pages, changes and the history read it.
"""
