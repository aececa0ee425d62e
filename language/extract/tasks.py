"""Tasks and decisions in a sentence: who owns them and when they are due (English and Chinese)."""

from __future__ import annotations

import re
from datetime import datetime

from language.extract.entities import MENTION_RE
from language.extract.screen import screened
from language.extract.text import is_question
from language.text import ENGLISH_STOPWORDS, has_cjk
from language.time.dates import DateMention, find_time
from schemas import ChatMessage, TaskItem

__all__ = ["EN_DECISION", "EN_TASK_REQUEST", "ZH_DECISION", "find_task"]

EN_DECISION = screened(re.compile(
    r"(?i)\b(?:we|I)(?:'ve| have)? (?:decided|agreed)\b|\bdecided to\b|\b(?:let's|we'll|we will) go with\b|"
    r"\bit's decided\b|\bthe plan is\b|\bsettled on\b|\bfinal decision\b|\bwe(?:'re| are) going with\b|\bdecision:"
))
ZH_DECISION = re.compile(
    r"决定|定了|就这么定|就这样定|就这样吧|确定(?:了|用|选|下来)|最终(?:决定|选择|方案|定)|拍板|敲定|结论是|说好了|那就(?:用|选|定)"
)
_ACTION_VERBS = (
    r"take care of|handle|do|send|book|buy|call|email|write|prepare|finish|fix|bring|pick up|set up|organi[sz]e|"
    r"schedule|check|make|get|reserve|order|submit|share|update|review|draft|arrange|contact|ping|follow up|"
    r"clean|cook|pay|print|deploy|test|plan|invite|host|drive|collect|upload|post|reply|remind|look into|"
    r"sort out|figure out|find|buy|renew|cancel|confirm|ship|release|merge|report|present|"
    r"teach|help|visit|meet|start|complete|call"
)
EN_TASK_SELF = re.compile(
    rf"(?i)\bI(?:'ll| will| shall|'m going to| am going to| gonna)\s+(?:\w+ly\s+)?(?:{_ACTION_VERBS})\b"
)
EN_TASK_REQUEST = screened(re.compile(
    rf"(?i)\b(?:can|could|would) you (?:please )?(?:{_ACTION_VERBS})\b|^\s*(?:@\S+\s+)?please (?:{_ACTION_VERBS})\b"
))
EN_TASK_GROUP = screened(re.compile(
    rf"(?i)\blet's (?:{_ACTION_VERBS}|meet)\b|\bwe (?:need to|have to|must|should) (?:{_ACTION_VERBS})\b|"
    rf"\bremember to\b|\bdon't forget to\b|\bdeadline\b|\bdue (?:by|on)\b"
))
EN_TASK_NAMED = re.compile(rf"\b(?P<owner>[A-Z][a-z]+) (?i:will|'ll|is going to) (?i:{_ACTION_VERBS})\b")
ZH_TASK_SELF = re.compile(
    r"我来|我负责|交给我|包在我身上|我去(?!过|了)|我(?:明天|下周|今晚|待会|等下|马上|稍后|回头)(?:去|来|把|就)?"
)
ZH_TASK_REQUEST = re.compile(r"(?:你|您)(?:来|负责|去(?!过|了))|麻烦(?:你|您)|请(?:你|您)|拜托")
ZH_TASK_NAMED = re.compile(r"(?P<owner>[\u4e00-\u9fffA-Za-z]{1,4}?)(?:负责|来做|来搞|来弄|跟进|去做)")
ZH_TASK_GROUP = re.compile(
    r"(?:咱们|我们|大家)(?:一起)?(?:要|得|需要|必须)|记得|别忘了|不要忘了|务必|截止|(?:之前|以前|前)(?:要|得|必须)?.{0,10}(?:完成|提交|搞定|发|交)"
)

_WH_QUESTION = re.compile(
    r"什么|哪|谁|怎么|为什么|为啥|多少|几[点个时天号月]|(?i:^\W*(?:what|where|who|whom|whose|why|how|which|when)\b)"
)
_VAGUE_TASK_RE = screened(re.compile(
    r"(?i)\b(?:do|try) (?:my|our|his|her|their) best\b|\bcheck (?:it|them|this|that) out\b|\blet you know\b|"
    r"\b(?:share|tell) (?:\w+ )?more\b|\blet's (?:do|make) (?:it|this|that|a difference|a change|some \w+ change)\b|"
    r"\bmake (?:it|this) happen\b"
))


def find_task(
    sent: str,
    text: str,
    m: ChatMessage,
    speaker: str,
    addressee: str | None,
    dates: list[DateMention],
    names: frozenset[str] = frozenset(),
) -> TaskItem | None:
    cjk = has_cjk(sent)
    if _VAGUE_TASK_RE.search(sent) or (is_question(sent) and _WH_QUESTION.search(sent)):
        return None  # "深圳那边负责什么？", "Who's handling the slides?" ask; "Can you send the slides?" asks for a task
    is_decision = bool((ZH_DECISION if cjk else EN_DECISION).search(sent))
    owner: str | None = None
    if is_decision:
        owner = speaker if re.search(r"(?i)\bI(?:'ve| have)? decided\b|我(?:已经)?决定", sent) else None
    elif cjk:
        named = ZH_TASK_NAMED.search(sent)
        mention = MENTION_RE.search(sent)
        if ZH_TASK_SELF.search(sent) and not is_question(sent):
            owner = speaker
        elif mention and (ZH_TASK_REQUEST.search(sent) or named):
            owner = mention.group(1)
        elif ZH_TASK_REQUEST.search(sent):
            owner = addressee
        elif named:
            owner = _zh_owner(sent, named.group("owner"), names)
            if owner is None and not ZH_TASK_GROUP.search(sent):
                return None
        elif not ZH_TASK_GROUP.search(sent):
            return None
    else:
        named = EN_TASK_NAMED.search(sent)
        mention = MENTION_RE.search(sent)
        if EN_TASK_SELF.search(sent) and not is_question(sent):
            owner = speaker
        elif EN_TASK_REQUEST.search(sent):
            owner = mention.group(1) if mention else addressee
        elif named and named.group("owner").lower() not in ENGLISH_STOPWORDS:
            owner = named.group("owner")
        elif not EN_TASK_GROUP.search(sent):
            return None
    return TaskItem(
        text=text.strip(),
        owner=owner,
        due=_due(sent, m, dates),
        is_decision=is_decision,
        source_message_ids=[m.message_id],
    )


def _zh_owner(sent: str, guess: str, names: frozenset[str]) -> str | None:
    """Who "负责" a task: a participant named right before it, else the guessed name without 由/让/请."""
    for name in sorted(names, key=len, reverse=True):
        if re.search(re.escape(name) + r"(?:来)?(?:负责|来做|来搞|来弄|跟进|去做)", sent):
            return name
    guess = guess.lstrip("由让请叫给和跟")
    return guess if len(guess) >= 2 and not guess.startswith(("我", "你", "他", "她", "大家")) else None


def _due(sent: str, m: ChatMessage, dates: list[DateMention]) -> datetime | None:
    """The first day-level date of the sentence (at the time mentioned, else midnight) in the message's zone."""
    today = m.ts.date()  # a due date lies ahead: "last week we decided…" has none
    days = [d for d in dates if d.grain in ("day", "weekend", "absolute", "week") and d.day >= today]
    if not days:
        return None
    clock = find_time(sent)
    base = datetime(days[0].day.year, days[0].day.month, days[0].day.day, tzinfo=m.ts.tzinfo)
    return base.replace(hour=clock.hour, minute=clock.minute) if clock else base
