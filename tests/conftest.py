"""Shared fixtures. Tests import the packages from the repo root (installed editable by ops/test.sh)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def minilm():
    """The real default embedder, loaded once per test session."""
    from backends.embed.embedder import build_embedder

    return build_embedder("minilm", None, 64)
