"""Admin changes (mode, split): the one ChangeKind pipeline, their history, undo and rollout."""
