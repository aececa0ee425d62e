"""Questions that ask two things at once (pure): split into parts, each retrieved on its own, merged.

"Whose injury got the trip called off, and have they been cleared to climb again?" asks two things that no
single memory holds; the whole question's words are split between two far-apart lines, so one ranking finds
one of them at best, and the abstention check, which reads how much of the question the top items cover,
often declines both. A part asked on its own is an ordinary one-fact question.

The split reads the sentence's shape, not its topic: a question mark with more text after it, a clause
mark (``;``, `` — ``, a comma) before a question word or an auxiliary that opens a new question, and in
Chinese every clause comma or question mark. A part that describes rather than asks ("the person who found
the sponsor — …", "中途放弃又回来的那个人，…") is asked too: it finds the bridge to the other part. A part
keeps the people the whole question names (a later part says "they", "他"). Parts with fewer than two
content words ("since when"; in Chinese one, and five characters: "多少钱") are too thin to search on their
own; the whole question still covers them.

:func:`merge` joins the answers: the whole question's items and each part's, round-robin from the best,
so every part's best item is in the first places; the merged answer abstains only when every one of them
did.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from language.text import extract_keywords, is_cjk_text
from schemas import RetrievedItem

__all__ = ["MIN_CJK", "MIN_WORDS", "merge_items", "parts"]

MIN_WORDS = 2  # content words a part needs to be searched on its own
MIN_CJK = (1, 5)  # a Chinese part: content words (the segmenter finds few in a short clause), characters

_OPENERS = (r"what|which|who|whose|whom|when|where|why|how|is|are|was|were|do|does|did|have|has|had|can|could"
            r"|will|would|should|shall")
# a mark that ends one question and opens another: "…? …", "…; when …", "… — what are they …"
_EN_SPLIT = re.compile(r"\?\s+(?=\S)|\s*;\s+|\s+[—–-]{1,2}\s+")
# a comma before a new question, after a question ("What caused …, and who rolled …"), not after a framing
# phrase ("According to Gina, what …", "Before they settled on …, which night …")
_EN_COMMA = re.compile(rf"(?i),\s+(?:(?:and|but|or|so)\s+)?(?=(?:{_OPENERS})\b)")
_EN_OPENS = re.compile(rf"(?i)^(?:{_OPENERS})\b")
_ZH_SPLIT = re.compile(r"[？?；;，,]\s*(?=\S)")


def parts(query: str, names: Sequence[str] = ()) -> list[str]:
    """The parts of a question that asks several things, each with the names the whole question gives; an
    empty list when it asks one thing (or only one part is worth a search of its own)."""
    text = query.strip()
    pieces = _ZH_SPLIT.split(text) if is_cjk_text(text) else [c for p in _EN_SPLIT.split(text) for c in _commas(p)]
    pieces = [p.strip(" ,;?？，；—–-") for p in pieces]
    kept = [p for p in pieces if _searchable(p)]
    if len(kept) < 2:
        return []
    out = []
    for p in kept:
        low = p.casefold()
        missing = [n for n in names if n.casefold() not in low]
        out.append(" ".join([*missing, p]) if missing else p)
    return list(dict.fromkeys(out))


def _commas(piece: str) -> list[str]:
    if not _EN_OPENS.match(piece.strip()):
        return [piece]
    return _EN_COMMA.split(piece)


def _searchable(part: str) -> bool:
    if is_cjk_text(part):
        return len(extract_keywords(part)) >= MIN_CJK[0] and len(part) >= MIN_CJK[1]
    return len(extract_keywords(part)) >= MIN_WORDS


def merge_items(lists: Sequence[Sequence[RetrievedItem]], k: int) -> list[RetrievedItem]:
    """Round-robin over ranked lists (the whole question's first), best first, each item once, at most
    ``k``."""
    out: list[RetrievedItem] = []
    seen: set[str] = set()
    depth = max((len(x) for x in lists), default=0)
    for i in range(depth):
        for items in lists:
            if i < len(items) and items[i].item_id not in seen:
                seen.add(items[i].item_id)
                out.append(items[i])
                if len(out) >= k:
                    return out
    return out
