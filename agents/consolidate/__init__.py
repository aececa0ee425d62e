"""Consolidation rules and records (the public entry is :mod:`agents.consolidator`)."""
