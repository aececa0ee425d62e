"""``memstream query``: a question to one chat, answered by a running ``memstream serve`` of the data dir
(:mod:`memstream.served`) or in this process. ``register(app)`` adds it (``memstream/cli.py`` does)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from memstream.cli_common import (
    QUICK_EXIT,
    ChatOpt,
    DataDir,
    EmbedderOpt,
    console,
    fail,
    one_chat,
    out,
    run,
    settings_from,
)


def register(app: typer.Typer) -> None:
    app.command()(query)


def query(
    words: Annotated[list[str], typer.Argument(metavar="QUESTION", help="The question (deprecated form: "
                                               "CHAT QUESTION, the chat first).")],
    chat: ChatOpt = None,
    k: Annotated[int, typer.Option(help="How many items.", min=1, max=100)] = 10,
    mode: Annotated[str, typer.Option(help="routed (query-type strategies) | hybrid | bm25 | embedding")] = "routed",
    as_json: Annotated[bool, typer.Option("--json", help="Print the full response as JSON.")] = False,
    asker: Annotated[str | None, typer.Option(help="Who asks (a sender id or name): the question's I/my/我 "
                                              "is them.")] = None,
    data_dir: DataDir = None,
    embedder: EmbedderOpt = None,
    local: Annotated[bool, typer.Option("--local", help="Answer in this process even when a `memstream serve` "
                                        "of the data dir is running (by default it is asked).")] = False,
    api_key: Annotated[str | None, typer.Option("--api-key", envvar="MEMSTREAM_API_KEY", help="Sent to a running "
                                                "server that wants one.")] = None,
) -> None:
    """Retrieve memory for a question in one chat: memstream query --chat C "question".

    A `memstream serve` of the same data dir answers it when one is running (nothing to load)."""
    old = words[0] if chat is None and len(words) > 1 else None
    chat_id, text = one_chat(chat, old, "query"), " ".join(words[1:] if old else words)
    payload = {"chat_id": chat_id, "query": text, "k": k, "mode": mode, "asker": asker}
    if not local and (body := _served(data_dir, embedder, payload, api_key)) is not None:
        if not json.loads(body)["items"]:  # nothing found: a chat the data dir does not hold is an error
            from memstream.cli_checks import check_chat_on_disk

            check_chat_on_disk(settings_from(data_dir, embedder), chat_id)
        QUICK_EXIT.append(True)
        _print_answer(body, as_json)
        return
    from pydantic import ValidationError

    from memstream.api_errors import plain_all
    from memstream.cli_checks import require_chat, require_data
    from memstream.clients import build_clients, retrieve_as_served
    from schemas import RetrieveRequest

    settings = settings_from(data_dir, embedder)
    try:
        req = RetrieveRequest(chat_id=chat_id, query=text, k=k, mode=mode, asker=asker)
    except ValueError as exc:  # the input contract: a bad chat id or mode, a blank question
        raise fail(plain_all(exc.errors()) if isinstance(exc, ValidationError) else str(exc)) from exc
    require_data(settings)

    async def main():
        clients = await build_clients(settings)
        try:
            await require_chat(clients.store, chat_id, settings)
            return await retrieve_as_served(clients, req)  # as /v1/retrieve answers it
        finally:
            await clients.close()

    resp = run(main())
    QUICK_EXIT.append(True)  # read-only, everything closed: the process may end without the teardown
    _print_answer(resp.model_dump_json(), as_json)


def _served(data_dir: Path | None, embedder: str | None, payload: dict, api_key: str | None) -> str | None:
    """The answer of the `memstream serve` running on the data dir (:mod:`memstream.served`), or None: no
    server, another embedder, or it did not answer (then the question is answered here). A question the
    server rejects as invalid is an error here too."""
    from memstream import served

    server = served.find(served.data_dir_of(data_dir))
    if server is None or not served.same_settings(server, embedder):
        return None
    answer = served.ask(server, "/v1/retrieve", payload, api_key)
    if answer is None:
        return None
    if answer.ok:
        return answer.body if served.is_retrieval_response(answer.body) else None
    if answer.status in (400, 422):  # said as a local validation error says it
        raise fail(_invalid(payload) or answer.reason())
    if answer.status in (401, 403):  # answering from disk instead would step around the server's keys
        raise fail(refused(server.url, answer.status, answer.reason(), api_key is not None))
    console.print(f"note: {server.url} answered {answer.status} ({answer.reason()}); answering here", soft_wrap=True)
    return None


def _invalid(payload: dict) -> str | None:
    """What the input contract finds wrong with the question, in plain words (None: nothing)."""
    from pydantic import ValidationError

    from memstream.api_errors import plain_all
    from schemas import RetrieveRequest

    try:
        RetrieveRequest.model_validate(payload)
    except ValidationError as exc:
        return plain_all(exc.errors())
    return None


def refused(url: str, status: int, reason: str, key_given: bool) -> str:
    """The error line of a server that refused the question's key (or wants one)."""
    if status == 401 and not key_given:
        return (f"{url} wants an API key ({reason}): pass --api-key KEY or set MEMSTREAM_API_KEY "
                "(--local reads the data dir in this process instead)")
    return f"{url} refused the key: {status} {reason}"


def _print_answer(body: str, as_json: bool) -> None:
    """A retrieval response (its JSON) as ``query`` prints it."""
    if as_json:
        out.print_json(body)
        return
    resp = json.loads(body)
    out.print(f"[bold]{resp['strategy']}[/bold] · {len(resp['items'])} items · {resp['context_tokens']} tokens")
    out.print(resp["context"], markup=False, highlight=False)  # chat text as written: "[/quote]" is no markup
