"""Findings: rules over the engine's facts, one module per scope, one catalogue of codes."""
