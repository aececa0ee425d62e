"""An example chat bot on memstream: every message goes into memory; when the bot is addressed, it reads
``/v1/context`` (the message's reply chain, its topic, the asker's recent messages, long-term memories)
before it answers, and its answer goes into memory too.

    memstream serve --data-dir .memstream-demo &        # e.g. after `memstream demo` (or: bash ops/look.sh)
    python docs/example_bot.py --chat team-alpha
    alice: @memo when is the Atlas launch?
    memo: ...

Input lines are ``sender: text``. With an OpenAI-compatible server (``--llm-url``, e.g. a local vLLM or
Ollama) the answer is written by the model from the context; without one the bot quotes its best memory.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime

from memstream.client import Client
from schemas import RetrieveResponse

SYSTEM = ("You are {bot}, a member of a group chat. Answer the last message briefly, using only the chat "
          "memory below; if it does not say, say you don't know.\n\n# Chat memory\n{context}")  # fmt: skip


SHORT_TERM = ("reply_chain", "active_topic", "asker_recent")  # the context's layers of recent messages


def quote_memory(question: str, ctx: RetrieveResponse) -> str:
    """The answer without a language model: the best long-term memory, with its date (not one of the
    messages the context already shows as the conversation, such as the question itself)."""
    shown = {mid for layer in ctx.layers if layer.name in SHORT_TERM for mid in layer.item_ids}
    items = [it for it in ctx.items if not set(it.source_message_ids) <= shown]
    if ctx.no_relevant_memory or not items:
        return "I don't remember anything about that."
    best = items[0]
    return f"From memory ({best.timestamp:%Y-%m-%d}): {best.text}"


def llm_answerer(base_url: str, model: str, bot: str) -> Callable[[str, RetrieveResponse], str]:
    from openai import OpenAI

    llm = OpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "not-needed"))

    def answer(question: str, ctx: RetrieveResponse) -> str:
        out = llm.chat.completions.create(model=model, temperature=0, messages=[
            {"role": "system", "content": SYSTEM.format(bot=bot, context=ctx.context)},
            {"role": "user", "content": question}])  # fmt: skip
        return (out.choices[0].message.content or "").strip()

    return answer


def bot_loop(ms: Client, chat_id: str, lines: Iterable[str], *, bot: str = "memo",
             answer: Callable[[str, RetrieveResponse], str] = quote_memory) -> Iterator[str]:  # fmt: skip
    """For each ``sender: text`` line: store it; when it says ``@bot``, read the context, answer, store the
    answer. Yields the bot's answers."""
    for n, line in enumerate(lines):
        sender, _, text = line.partition(":")
        if not text.strip():
            continue
        now = datetime.now(UTC).isoformat()
        mid = f"{now}-{n}"
        ms.add_messages([{"chat_id": chat_id, "message_id": mid, "sender": sender.strip(), "ts": now,
                          "text": text.strip(), "platform": "example"}])  # fmt: skip
        if f"@{bot}" not in text:
            continue
        question = text.replace(f"@{bot}", "").strip()
        ctx = ms.context(chat_id, question, trigger_message_id=mid, asker=sender.strip(), token_budget=800)
        reply = answer(question, ctx)
        ms.add_messages([{"chat_id": chat_id, "message_id": f"{mid}-{bot}", "sender": bot, "reply_to": mid,
                          "ts": datetime.now(UTC).isoformat(), "text": reply, "platform": "example"}])  # fmt: skip
        yield reply


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chat", required=True)
    ap.add_argument("--url", default=os.environ.get("MEMSTREAM_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--api-key", default=os.environ.get("MEMSTREAM_API_KEY"))
    ap.add_argument("--bot", default="memo", help="The bot's name; it answers lines that say @NAME.")
    ap.add_argument("--llm-url", help="An OpenAI-compatible server to write the answers.")
    ap.add_argument("--llm-model", default="gpt-4o-mini")
    args = ap.parse_args()
    answer = llm_answerer(args.llm_url, args.llm_model, args.bot) if args.llm_url else quote_memory
    with Client(args.url, api_key=args.api_key) as ms:
        for reply in bot_loop(ms, args.chat, sys.stdin, bot=args.bot, answer=answer):
            print(f"{args.bot}: {reply}", flush=True)


if __name__ == "__main__":
    main()
