"""Deterministic generator of scripted bilingual chats whose facts change: the data of ``memstream bench updates``.

Pure and seeded (``random.Random(seed)``, no model, no I/O but :func:`write_dataset`). Each chat is Chinese or
English (alternating, so half and half), a group (3-5 people) or private (2 people) chat spread over 10-40
days in sessions where several threads interleave: facts that change 1-3 times (where someone lives or works,
the day of a recurring meeting, the date of a plan, the time or place of a social event, the owner of a task,
favourite food/drink/team; changes are explicit, "改到 / no longer / not X anymore", or implicit, just the new
statement later), short reactions, small talk, and sometimes

- a user to delete after ingest, who states unusual made-up words (canaries) others reply to but never repeat;
- an IM edit: the same ``message_id`` re-sent later in the stream with a corrected value, the original ``ts``
  and ``metadata.edited_at``; or a retraction: same id, ``text`` "" and ``metadata.retracted``.

Questions (:class:`Question`) carry their type and gold: ``current`` (newest value; ``stale`` = the superseded
ones), ``answerable`` (a fact that never changed), ``edit`` (the edited value; stale = the original),
``retraction`` (the withdrawn value must not come back), ``deleted`` (about the deleted user's canaries) and
``unanswerable`` (a member who never said anything on the subject, someone not in the chat, a topic never
discussed). Gold values list their aliases (周三/星期三/Wednesday) so that scoring is a plain substring test
after :func:`norm`.

Held out by construction: every list of phrasings, names, nouns and values in :mod:`bench.updates_templates`
has two disjoint halves (even / odd positions). The ``tune`` split (seed 1) draws only from the first half,
the ``test`` split (seed 2) only from the second, so nothing tuned on ``tune`` sees a ``test`` phrasing, name,
place or value.

The data types are in :mod:`bench.updates_model` (re-exported here), one chat's script in
:mod:`bench.updates_chat`.

    python -m bench.updates_gen --split tune --out FILE.jsonl [--chats N]   # + FILE.questions.json
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from bench.updates_chat import build_chat
from bench.updates_model import Dataset, Deletion, Question, Value, norm, value_pool

__all__ = ["SPLITS", "Dataset", "Deletion", "Question", "Value", "generate", "norm", "sidecar_path", "value_pool",
           "write_dataset"]  # fmt: skip

SPLITS: dict[str, tuple[int, int]] = {"tune": (1, 0), "test": (2, 1)}  # split -> (seed, template half)


def generate(split: str = "test", chats: int = 200, seed: int | None = None) -> Dataset:
    """The chats, questions and deletions of one split (``tune``: seed 1, first half; ``test``: seed 2);
    ``seed``: other chats in the split's phrasings (fresh names, values and orders, same templates)."""
    seed, half = (SPLITS[split][0] if seed is None else seed), SPLITS[split][1]
    rng, canaries = random.Random(seed), set()
    messages: list[dict[str, Any]] = []
    questions: list[Question] = []
    deletions: list[Deletion] = []
    for i in range(chats):
        lang = "zh" if i % 2 == 0 else "en"
        b = build_chat(rng, f"upd-{split}-{i:03d}-{lang}", lang, half, canaries)
        chat_msgs, ids = b.render()
        messages.extend(chat_msgs)
        for n, q in enumerate(b.questions):
            extra = {k: v for k, v in q.items() if k != "canary"}
            questions.append(Question(qid=f"{b.chat_id}/q{n}", chat_id=b.chat_id, lang=lang, chat_type=b.chat_type,
                                      **extra | {"evidence": [ids[k] for k in q["evidence"]]}))
        if b.deleted:
            uid, name = b.deleted
            deletions.append(Deletion(chat_id=b.chat_id, user=uid, user_name=name,
                                      message_ids=[ids[m.key] for m in b.msgs if m.sender == uid],
                                      canaries=[q["canary"] for q in b.questions if "canary" in q]))
    return Dataset(split=split, seed=seed, half=half, chats=chats, messages=messages, questions=questions,
                   deletions=deletions)


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name.removesuffix(".jsonl") + ".questions.json")


def write_dataset(ds: Dataset, path: Path) -> Path:
    """``path`` (JSON Lines of messages) + ``<path without .jsonl>.questions.json``; returns the sidecar."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for rec in ds.messages:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    side = sidecar_path(path)
    body = ds.model_dump(mode="json", exclude={"messages"}) | {"message_count": len(ds.messages)}
    side.write_text(json.dumps(body, ensure_ascii=False, indent=1), encoding="utf-8")
    return side


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Generate the memory-update benchmark data.")
    ap.add_argument("--split", choices=sorted(SPLITS), default="test")
    ap.add_argument("--chats", type=int, default=200)
    ap.add_argument("--out", type=Path, required=True, help="FILE.jsonl (questions to FILE.questions.json)")
    args = ap.parse_args(argv)
    ds = generate(args.split, args.chats)
    side = write_dataset(ds, args.out)
    print(f"{len(ds.messages)} messages, {len(ds.questions)} questions, {len(ds.deletions)} deletions -> "
          f"{args.out}, {side}")


if __name__ == "__main__":
    main()
