"""``memstream mcp``: the MCP stdio server (memstream/mcp.py). ``register(app)`` adds the command."""

from __future__ import annotations

from typing import Annotated

import typer


def mcp(
    url: Annotated[str | None, typer.Option("--url", envvar="MEMSTREAM_URL", show_default=False,
                                            help="The memstream API to use (a running `memstream serve`; "
                                            "default: the local one).")] = None,
    api_key: Annotated[str | None, typer.Option("--api-key", envvar="MEMSTREAM_API_KEY",
                                                help="API key, sent as a Bearer token.")] = None,
) -> None:
    """Serve the retrieve / context / add tools over the Model Context Protocol on stdin/stdout.

    Add it to an agent framework as a stdio server, e.g. command `memstream`, args `["mcp", "--url",
    "http://127.0.0.1:8080"]`. Logs go to stderr; stdout carries only protocol messages."""
    import asyncio

    from memstream.client import DEFAULT_URL  # here, not at import: httpx costs every CLI command ~0.1 s
    from memstream.mcp import run_stdio

    asyncio.run(run_stdio(url or DEFAULT_URL, api_key))


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
