"""Pure domain logic: models, plugin config parsing, accounting, findings, change planning.

Nothing here does I/O or reads the clock; see the import-linter contracts in pyproject.toml.
"""
