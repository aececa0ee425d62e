"""Hybrid store, embedders, fusion and retrieval strategies."""
