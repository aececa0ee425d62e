"""Plans moved (pure): whether a sentence moves a plan, to what, and whether it names what it moves.

"Thursday moved to Friday 8pm" moves the plan being talked about; "Farewell drinks time changed to 6pm" moves
something it names; "评审材料改成小刘准备吧，我这周要请假" changes an owner, and its "这周" is no new time. Used by
:mod:`language.extract.event_slots` and :mod:`agents.consolidate.plan_context`.
"""

from __future__ import annotations

import re

from language.extract.corrections import corrected_value
from language.lazy_re import lazy
from language.text import has_cjk

__all__ = ["DAYS", "EN_TIME", "MONTHS", "MOVED_CUE", "ZH_NUM", "ZH_TIME", "move_cue", "moved_elsewhere", "moves_plan",
           "names_what_moved"]

# time expressions of a plan ("Friday 8pm", "下周一下午两点"), and the words they are made of
MONTHS = r"Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?"
DAYS = (
    r"Mon(?:day)?|Tue(?:s(?:day)?)?|Wed(?:nesday)?|Thu(?:rs(?:day)?)?|Fri(?:day)?|Sat(?:urday)?|Sun(?:day)?"
)
EN_TIME = lazy(
    rf"(?i)\b(?:(?:next|this|every|each|coming) )?(?:{DAYS})s?\b(?: (?:morning|afternoon|evening|night))?|"
    rf"\b(?:{MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?\b(?:,? \d{{4}})?|\b\d{{1,2}}(?:st|nd|rd|th)? of (?:{MONTHS})\b|"
    r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}\b|"
    r"\b(?:at )?\d{1,2}(?::\d{2})? ?(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}:\d{2}\b|\b(?:noon|midnight)\b|"
    r"\b(?:tomorrow|tonight|today)\b(?: (?:morning|afternoon|evening|night))?|\b(?:next|this) (?:week|month)\b|"
    r"\bend of (?:the )?(?:week|month)\b"
)
ZH_NUM = r"[零一二两三四五六七八九十\d]"
ZH_TIME = lazy(
    r"(?:下下|下个?|这个?|本|每个?)?(?:周|星期|礼拜)[一二三四五六日天]|"
    rf"{ZH_NUM}{{1,2}}月{ZH_NUM}{{1,3}}[日号]?|(?<![月\d]){ZH_NUM}{{1,3}}[号]|"
    r"(?:大后天|后天|明天|今天|今晚|明晚|月底|月初|下个月|下周|这周|本周)|"
    rf"(?:早上|上午|中午|下午|晚上|傍晚|凌晨)?{ZH_NUM}{{1,3}}(?:点钟?|[:：]\d{{2}})(?:{ZH_NUM}{{1,2}}分?|半|一刻|三刻)?|"
    r"(?:早上|上午|中午|下午|晚上|傍晚)"
)

# a plan moved (not merely "now" / "actually": "I'm at Figma now" moves no plan)
_MOVE = lazy(
    r"(?i)\b(?:mov(?:e|es|ed|ing)|reschedul\w*|postpon\w*|push(?:es|ed|ing)?|delay(?:s|ed|ing)?|shift(?:s|ed|ing)?|"
    r"chang(?:e|es|ed|ing)|instead|brought forward|bring(?:ing)? forward)\b|改到|改成|改在|改为|推迟|延期|延后|提前|挪到|换到|调到"
)


def moves_plan(sentence: str) -> bool:
    """The sentence moves a plan ("Thursday moved to Friday", "we'll meet at Marco's instead", "改到周四") —
    a stricter cue than :func:`language.extract.event_slots.is_plan_change`, which also takes "now" and "actually"."""
    if _MOVE.search(sentence) is not None:
        return True
    old = corrected_value(sentence)  # "Thursday the 12th, not Friday", "是八点，不是九点": a time corrected
    return bool(old) and (ZH_TIME if has_cjk(old) else EN_TIME).search(old) is not None


# what may stand before "moved to" when the change names nothing: times, pronouns, fillers ("Thursday moved
# to Friday btw", "Small change: it's moved to 8pm", "周四改到周五了")
_EN_UNNAMED = frozenset(
    "it it's its that that's this we we'll they everything all is was has have been got gets get just now btw so ok "
    "okay also actually update correction change changed small quick heads up fyi the our my plan plans again "
    "has been being will be moved moves move pushed postponed rescheduled delayed shifted bumped to until till "
    "and but oh hey".split()
)
_ZH_UNNAMED = lazy(r"[我们大家就又也都已经现在时间那个这个了吧啊，。、：:\s]")


def names_what_moved(head: str, speaker: str | None = None) -> bool:
    """The words before a plan's new time name something other than a time ("Farewell drinks time changed to"),
    besides the speaker ("Marco said Thursday moved to")."""
    if has_cjk(head):
        return bool(_ZH_UNNAMED.sub("", ZH_TIME.sub("", MOVED_CUE.sub("", head))))
    words = re.findall(r"[a-z']+", EN_TIME.sub(" ", re.sub(r"\([^)]*\)", " ", head)).lower())
    own = {w for w in re.findall(r"[a-z']+", (speaker or "").lower())} | {"said", "says", "told", "us", "everyone"}
    return any(w not in _EN_UNNAMED and w not in own for w in words)


def move_cue(sentence: str) -> re.Match[str] | None:
    """Where the sentence moves a plan, if it does."""
    return _MOVE.search(sentence)


MOVED_CUE = lazy(
    r"(?i)\b(?:mov(?:e|es|ed|ing)|reschedul\w*|postpon\w*|push(?:es|ed|ing)?(?: back)?|delay(?:s|ed|ing)?|"
    r"shift(?:s|ed|ing)?|chang(?:e|es|ed|ing))(?: (?:it|them|this|that))? (?:to|until|till)\s+|"
    r"(?:改到|改成|改在|改为|推迟到|延期到|延后到|提前到|挪到|换到|调到|调整到)"
)


def moved_elsewhere(text: str, spans: list[tuple[int, int]], cjk: bool) -> bool:
    """Every "moved to" / "改成" of the sentence is followed by something other than a time: what changed is
    not the time ("改成小刘准备", "moved to the big room")."""
    cues = [m.end() for m in MOVED_CUE.finditer(text)]
    return bool(cues) and not any(s <= end + 2 and end <= s for end in cues for s, _ in spans)
