"""memstream: a streaming, event-driven memory pipeline for LLM chat bots."""

__version__ = "0.1.0"
