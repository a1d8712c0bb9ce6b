"""The snapshot builder: accounting, DRA, plugin and findings tied into one pure function."""
