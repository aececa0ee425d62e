"""The router's query types (:mod:`retrieval.router.classifier`), named in responses and in the settings; a module
of their own so that the settings read them without loading the API's models."""

from __future__ import annotations

from typing import Literal

__all__ = ["QUERY_TYPES", "QueryType"]

QueryType = Literal["factual_extraction", "temporal_reasoning", "knowledge_update", "multi_hop", "abstention"]
QUERY_TYPES: tuple[QueryType, ...] = (
    "factual_extraction", "temporal_reasoning", "knowledge_update", "multi_hop", "abstention",
)  # fmt: skip
