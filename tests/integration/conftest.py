"""Fixtures for the integration tier: real local servers, started once per session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def es_url(tmp_path_factory) -> Iterator[str]:
    """A noida-db Elasticsearch API (ES 8.15-compatible) on a free loopback port, for the whole session.

    Yields ``http://127.0.0.1:PORT``; skips when noida-db is not installed (``pip install .[test]``).
    ``MEMSTREAM_TEST_ES_URL=http://host:9200`` runs the suites against that cluster instead (test indices
    get unique prefixes and are deleted afterwards).
    """
    if url := os.environ.get("MEMSTREAM_TEST_ES_URL"):
        yield url
        return
    pytest.importorskip("noida_db", reason="noida-db (the local Elasticsearch API) is not installed")
    pytest.importorskip("elasticsearch", reason="the elasticsearch client (extra 'prod') is not installed")
    from memstream.devservers import noida_server

    with noida_server(tmp_path_factory.mktemp("noida-db")) as url:
        yield url
