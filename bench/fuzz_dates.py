"""The date sweep of the reliability fuzz: questions about times far back or far ahead ("What happened 9999
years ago?", "in 3 days", "上周") asked with ``now`` at the edges of the calendar — the first week of year 1
and the last week of year 9999, in the zones farthest from UTC — on ``/v1/retrieve`` and ``/v1/context``, with
and without an asker, some with a triggering message dated at those edges too. Every answer must be below 500:
date arithmetic past the calendar saturates, it never raises.

:func:`date_cases` is pure; :func:`ask_all` asks a running server a list of them; :func:`run` seeds a chat and
sweeps (``memstream bench reliability``'s fuzz step can add its result as ``fuzz.dates``).
"""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta, timezone

import httpx

CHAT = "dates0"
ASKER = "ann"
ZONES = (timezone(timedelta(hours=14)), UTC, timezone(timedelta(hours=-12)))  # the farthest from UTC both ways
EDGE_DAYS = 8  # the first and the last week of the calendar, and a day more
QUESTIONS = (
    *(f"What happened {n} years ago?" for n in (1, 2, 10, 100, 1000, 9998, 9999, 10000)),
    "What did I say 3 days ago?", "What is planned in 2 years?", "What did we decide last week?",
    "What happens next year?", "What did I say yesterday?", "Anything for tomorrow?",
    "10年前发生了什么？", "上周谁说了什么？", "明年有什么计划？",
)  # fmt: skip
# messages of the seeded chat, dated at the edges (the ones a trigger may point at) and one in an ordinary year
SEED = (("d0", "0001-01-02T00:00:00+00:00"), ("d1", "0001-01-05T12:00:00-12:00"), ("d2", "2024-03-01T09:00:00+00:00"),
        ("d3", "9999-12-30T00:00:00+14:00"), ("d4", "9999-12-31T12:00:00+00:00"))  # fmt: skip


def edge_nows() -> list[str]:
    """``now`` values: midnight of each day of the calendar's first week and 23:59 of each of its last, in
    each of :data:`ZONES` (ISO 8601)."""
    nows = []
    for day in range(EDGE_DAYS):
        for zone in ZONES:
            nows.append(datetime(1, 1, 1, tzinfo=zone).replace(day=1 + day).isoformat())
            nows.append((datetime(9999, 12, 31, 23, 59, tzinfo=zone) - timedelta(days=day)).isoformat())
    return nows


def date_cases(chat: str = CHAT, asker: str = ASKER) -> list[tuple[str, dict]]:
    """Every ``(path, body)`` of the sweep: each edge ``now`` with each question on ``/v1/context`` with and
    without ``asker`` and on ``/v1/retrieve`` with it; the triggering message cycles through :data:`SEED`
    and none."""
    triggers = [None, *(mid for mid, _ in SEED)]
    cases = []
    for now in edge_nows():
        for question in QUESTIONS:
            for path, who in (("/v1/context", asker), ("/v1/context", None), ("/v1/retrieve", asker)):
                body = {"chat_id": chat, "query": question, "now": now, "mode": "routed"}
                if who:
                    body["asker"] = who
                if path == "/v1/context" and (trigger := triggers[len(cases) % len(triggers)]):
                    body["trigger_message_id"] = trigger
                cases.append((path, body))
    return cases


async def seed_chat(client: httpx.AsyncClient, chat: str = CHAT, asker: str = ASKER) -> None:
    """The chat the sweep asks about: :data:`SEED`'s messages, the asker's and another sender's in turn."""
    messages = [{"chat_id": chat, "message_id": mid, "sender": asker if i % 2 == 0 else "bo", "ts": ts,
                 "text": f"the launch moved again, note {i}"} for i, (mid, ts) in enumerate(SEED)]  # fmt: skip
    r = await client.post("/v1/messages", json={"messages": messages, "flush": True, "wait": True})
    r.raise_for_status()


async def ask_all(client: httpx.AsyncClient, cases: list[tuple[str, dict]], concurrency: int = 8) -> dict:
    """Ask every case; ``{inputs, 5xx, hangs, status: {code: n}, failed: [first failing cases]}``."""
    out: dict = {"inputs": 0, "5xx": 0, "hangs": 0, "status": {}, "failed": []}
    sem = asyncio.Semaphore(concurrency)

    async def one(path: str, body: dict) -> None:
        async with sem:
            try:
                status = (await client.post(path, json=body)).status_code
            except httpx.TimeoutException:
                out["hangs"] += 1
                status = None
            out["inputs"] += 1
            if status is not None:
                out["status"][status] = out["status"].get(status, 0) + 1
                out["5xx"] += status >= 500
            if (status is None or status >= 500) and len(out["failed"]) < 10:
                out["failed"].append({"path": path, "status": status, **{k: body.get(k) for k in
                                      ("now", "query", "asker", "trigger_message_id")}})  # fmt: skip

    await asyncio.gather(*(one(path, body) for path, body in cases))
    return out


async def run(url: str, key: str | None = None, *, sample: int | None = None, seed: int = 1) -> dict:
    """Seed :data:`CHAT` on the server at ``url`` and ask :func:`date_cases` (``sample`` of them, drawn with
    ``seed``, or all). The fuzz step's hook: ``result["fuzz"]["dates"] = asyncio.run(fuzz_dates.run(url, key))``."""
    cases = date_cases()
    if sample is not None and sample < len(cases):
        cases = random.Random(seed).sample(cases, sample)
    headers = {"X-API-Key": key} if key else {}
    async with httpx.AsyncClient(base_url=url, timeout=10, headers=headers) as client:
        await seed_chat(client)
        return await ask_all(client, cases)
