"""Change planning: a mode change request -> the exact objects to write, its preview, rollback."""
