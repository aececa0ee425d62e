"""Slots of shared plans: when/where an event happens and who owns a task (English and Chinese).

The person slots (:mod:`language.extract.slots`) are about people; these are about the group's plans, the
other thing that changes in a chat: "the weekly sync moves to Wednesday", "迁移推迟到6月3日", "聚餐改到五点半",
"actually Carol takes the release notes", "发布说明交给小李". Each yields a :class:`SlotMatch` whose
``subject`` is the event or task (its head noun: ``sync``, ``迁移``, ``release notes``) and whose
``attribute`` is ``when``, ``where`` or ``owner``, so a later value supersedes the earlier one.

Only statements about a plan count: a change cue ("moved to", "改到"), or a scheduling cue ("is on",
"定在") without a past-tense cue — "we went to a concert last Friday" is narration, not a plan.
"""

from __future__ import annotations

import re

from language.extract.corrections import corrected_span
from language.extract.plan_moves import (
    DAYS,
    EN_TIME,
    MONTHS,
    ZH_TIME,
    move_cue,
    moved_elsewhere,
    moves_plan,
    names_what_moved,
)
from language.extract.screen import screened
from language.extract.slots import SlotMatch
from language.extract.subject import looks_like_name
from language.lazy_re import lazy
from language.text import has_cjk
from language.time.dates import ZH_DATE_WORD

__all__ = ["EN_TIME", "ZH_TIME", "all_slots", "find_plan_slots", "is_plan_change", "planned_event"]

_EN_EVENTS = (
    r"(?:karaoke|game|movie|quiz|trivia|poker|board game|date|pizza|taco|"
    r"bowling|pub|open mic|talent) night|"
    r"meeting|standup|stand-up|sync|check-in|retro|retrospective|review|demo|launch|release|migration|"
    r"deadline|dinner|lunch|breakfast|brunch|party|interview|appointment|class|lesson|practice|training|"
    r"game|match|flight|workshop|offsite|kickoff|kick-off|presentation|wedding|concert|rehearsal|exam|"
    r"deployment|deploy|cutover|go-live|call|one-on-one|all-hands|barbecue|bbq|picnic|hike|trip|meetup|"
    r"session|ceremony|recital|tournament|checkup|check-up|rollout|freeze|handover"
)
_EN_EVENT = screened(lazy(rf"(?i)\b(?P<ev>{_EN_EVENTS})s?\b"))
_EN_EVENT_BEFORE = screened(lazy(rf"(?i)\b(?P<ev>{_EN_EVENTS})s?\s+$"))  # an event right before a preposition
_EN_ACTIVITY = lazy(r"\b[A-Z][a-z]+(?:'s|s') (?P<ev>[a-z]{3,}ing)\b(?! (?:\w+ )?(?:is|was) (?:fine|good|great))")
_ZH_EVENT = lazy(
    r"(?P<ev>(?<![邮当结格布饭])[\u4e00-\u9fffA-Za-z]{1,2}局(?![长面势])|周例会|周会|例会|晨会|站会|早会|电话会|视频会|评审会|复盘会|发布会|评审|复盘|开会|会议|上线|发版|发布|迁移|"
    r"截止日期|截止|聚餐|团建|晚饭|午饭|饭局|派对|聚会|面试|体检|培训|比赛|演出|婚礼|演唱会|考试|部署|答辩|约会|"
    r"分享会|读书会|年会|旅行|出差|航班|课)"
)
_ZH_MODIFIES = lazy(r"(?:后面|之后|以后|结束后|后|前面|之前|以前|前|上|里|中|当天)?的")  # N1(位置)的 N2: N2 is the head
_ZH_CANON = {"开会": "会议", "周例会": "周会", "截止日期": "截止", "发版": "发布"}

_TIME_WORD = lazy(rf"(?i)(?:{MONTHS}|(?:{DAYS})s?|noon|midnight|tomorrow|tonight|today|next|this|\d)\b")
_JOIN = lazy(r"^(?:\s*(?:at|@|on)?\s*|的)$", re.I)

_EN_CHANGE = screened(lazy(
    r"(?i)\b(?:mov(?:e|es|ed|ing)|reschedul(?:e|es|ed|ing)|postpon(?:e|es|ed|ing)|push(?:es|ed|ing)? (?:back )?|"
    r"delay(?:s|ed|ing)?|shift(?:s|ed|ing)?|chang(?:e|es|ed|ing)|brought forward|bring(?:ing)? forward|"
    r"switch(?:es|ed|ing)?|instead|now|actually|no longer|not .{1,30} anymore|correction)\b"
))
_EN_TARGET = lazy(r"(?i)\b(?:to|until|till|for|instead(?: to)?|now(?: on| at)?)\s*$")
_EN_SCHEDULE = lazy(
    r"(?i)\b(?:is|are|'s|will be|is going to be|scheduled|planned|set|happens?|takes? place|starts?|begins?|"
    r"due|on|at|let's|we'll|we will|see you|plan|planning|planned|keep|booked|book|venue|location)\b"
)
_EN_PAST = screened(lazy(r"(?i)\b(?:went|was|were|had|did|attended|yesterday|last|ago|used to|enjoyed|loved)\b"))
_ZH_CHANGE = lazy(
    r"改到|改成|改在|改为|改去|换去|推迟|延期|延后|提前|挪到|换到|调到|调整到|不是.{0,8}了|现在是|变成"
)
_ZH_TARGET = lazy(
    r"(?:改到|改成|改在|改为|推迟到|延期到|延后到|提前到|挪到|换到|调到|调整到|变成|定在|定于|安排在|约在|(?<!不)是|(?<!不)在|到)\s*$"
)
_ZH_SCHEDULE = lazy(r"暂定|计划|定在|定于|安排在|约在|是|在|开|举行|见|集合|截止|上线|迁移|要|会|地点")
_ZH_PAST = lazy(r"昨天|前天|上周|上个月|去年|以前|那次|当时")

_ZH_PLACE = lazy(
    r"地点(?:改到|改成|换到|换成|换为|改在|改为|变成|定在|在|是|还是|[：:])(?P<v>[\u4e00-\u9fffA-Za-z]{2,10}?)(?:了|啦)?(?=[，。！？,.!?；;~]|$)|"
    r"(?<![地])(?:改到|换到|挪到|改在|定在|约在|改去|换去|在)(?P<v3>[\u4e00-\u9fffA-Za-z]{2,8}?)(?=[。！？!?；;~]|$)|"
    r"(?<![回过出进上下])去(?P<v4>[\u4e00-\u9fff]{2,4}?)(?:出差|旅游|旅行|玩|开会|参会|培训|度假)|"
    r"(?:改到|换到|改在|定在|约在)(?P<v2>[\u4e00-\u9fffA-Za-z]{2,8}?)(?:吃|聚|见|碰头|集合)"
)
_EN_PLACE = lazy(
    r"(?:\b(?:at|to|(?i:venue|location|place)(?: is)?:?) (?:the )?)(?P<v>[A-Z][\w'&-]*(?: (?:[A-Z][\w'&-]*|de|of|la)\b)*(?: (?:Grill|Cafe|Café|Bar|Hall|Room|Park))?)"
)

_OWNER_VERBS = (
    r"take over|take|handle|own|do|write|prepare|draft|lead|cover|run|finish|organi[sz]e|book|present"
)
_TASK = r"(?P<task>[a-z][\w-]*(?: [a-z][\w-]*){0,3}?)"
_TASK_END = r"(?=\s*(?:\bby\b|\bon\b|\bfor\b|\bbefore\b|\btomorrow\b|\btoday\b|\bthis\b|\bnext\b|\binstead\b|\bnow\b|\bfrom\b|\band\b|[,.!?;]|$))"
_EN_OWNER = (
    lazy(
        rf"(?P<owner>\b[A-Z][a-z]+|\bI)(?:'ll| will| is going to| am going to| can| is gonna|'m gonna) "
        rf"(?:{_OWNER_VERBS}) (?:the |our )?{_TASK}{_TASK_END}"
    ),
    lazy(
        rf"(?P<owner>\b[A-Z][a-z]+) (?:now )?(?:takes over|takes|is taking(?: over)?|handles|owns|is handling|"
        rf"is doing|is writing|is on|does|writes|leads) (?:the |our )?{_TASK}{_TASK_END}"
    ),
    lazy(
        rf"\b(?:the |our )?{_TASK} (?:is|are) (?:now )?(?:on|with|owned by|assigned to) (?P<owner>[A-Z][a-z]+|me)\b"
    ),
    lazy(
        rf"(?i:give|assign|hand|pass)(?:ing|ed|s)? (?:the |our )?{_TASK} (?:over )?to (?P<owner>[A-Z][a-z]+|me)\b"
    ),
)
_ZH_TASK = r"(?P<task>[\u4e00-\u9fffA-Za-z]{2,10}?)"


def _spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """Time expressions, adjacent ones joined ("周四晚上七点", "Wednesday at 3pm")."""
    spans: list[tuple[int, int]] = []
    for m in pattern.finditer(text):
        if spans and _JOIN.match(text[spans[-1][1] : m.start()]):
            spans[-1] = (spans[-1][0], m.end())
        else:
            spans.append((m.start(), m.end()))
    return spans


_CLAUSE_END = lazy(r"[，。；！？,;!?]|\.(?:\s|$)")


def _pick(text: str, spans: list[tuple[int, int]], target: re.Pattern[str], at: int | None = None) -> tuple[int, int] | None:
    """The value: the time right after a target cue ("to", "改到"), else the last one stated in the clause that
    names the event (``at``: where it is named; "读书会九点半开始，九点太赶了，八点半送到吧": 八点半 is
    another matter), else the last one stated."""
    for s, e in spans:
        if target.search(text[max(0, s - 14) : s]):
            return s, e
    if at is None:
        return spans[-1] if spans else None
    start = max((m.end() for m in _CLAUSE_END.finditer(text, 0, at)), default=0)
    end = next((m.start() for m in _CLAUSE_END.finditer(text, at)), len(text))
    own = [(s, e) for s, e in spans if start <= s and e <= end]
    return own[-1] if own else spans[-1] if spans else None


_EN_SUBJECT = lazy(r"\b(?i:the|our|my|this|that|next|a) (?P<ev>[a-z][a-z-]+(?: [a-z][a-z-]+){0,2})\b")
_NP_STOP = frozenset(
    "is are was were be been moves moved shifts slips slipped on at for to from has have had will gets got "
    "starts start begins this next each every with and or but now is' by in of off back happens happen takes "
    "took began ends ended goes went runs lands kicks wraps needs meets meet gathers gather held changed changes "
    "called rang texted emailed messaged said told asked wrote instead rather than rescheduled reschedules "
    "postponed postpones delayed delays pushed pushes cancelled canceled cancels"  # "The dentist called, they pushed it to June 14"
    .split()
)
_EN_PURPOSE = screened(lazy(
    r"(?i)\b(?:for|before|after|during|ahead of) (?:the|our) (?P<ev>[a-z][a-z-]+(?: [a-z][a-z-]+){0,2})\b"
))
_ZH_DATED_EVENT = lazy(
    r"^(?P<d>[\d一二三四五六七八九十]{1,2}月[\d一二三四五六七八九十]{1,3}[日号]|(?:下|这|本)?(?:周|星期)[一二三四五六日天])"
    r"(?P<ev>[\u4e00-\u9fff]{2,6}?)(?:的|那天|之前|前|当天)"
)
_STRONG = lazy(
    r"(?i)\b(?:planning|planned|plan to|scheduled|set for|let's|see you|keep|booked|penciled|pencilled)\b|"
    r"(?i:\b(?:meets|meet|gathers|is held|are held|takes place|take place)\b(?= (?:on|at|every|each|this|next)\b))|"
    r"暂定|定在|定于|计划|安排在|约在"
)
# a time the change starts from comes first and is no part of the event ("下周起羽毛球改到每周三": 羽毛球)
_ZH_SUBJECT = lazy(
    r"^(?:[^：:]{0,8}[：:])?(?:从?(?:" + ZH_DATE_WORD.pattern + r")(?:起|开始|以后|之后)[，,]?)?"
    r"(?P<ev>[\u4e00-\u9fff]{2,6}?)(?:的时间|时间|日期|的日期)?(?:不是|改|定|暂定|推迟|延期|延后|提前|"
    r"挪|调|计划|安排|还是|就在|在|是)"
)
_NOT_EVENTS = frozenset(
    "time date day days week weeks month year plan plans it one thing things way end moment morning afternoon "
    "evening night weekend lease rent news update heads all everyone team group chat idea venue location place "
    "kids children family friends people community shelter school cause landlord landlady boss neighbour "
    "neighbor roommate flatmate kitchen heating power internet wifi car me us him her them you it "
    "sister brother mom mum dad mother father wife husband daughter son kid kids baby aunt uncle cousin "
    "grandma grandpa friend girlfriend boyfriend partner pool gym office".split()
)


def _event(sentence: str, cjk: bool) -> re.Match[str] | None:
    """The event a sentence is about: the one a thing is done for ("booked the room for the office move",
    "9月20日机房搬迁的作战室"), else a known event noun, else an open-ended noun phrase with a plan verb."""
    purpose = (_ZH_DATED_EVENT if cjk else _EN_PURPOSE).search(sentence)
    if purpose is not None and not cjk:
        # "the dinner after the match is at 8": an English noun phrase starts with its head, the event after
        # the preposition only places it
        head = _EN_EVENT_BEFORE.search(sentence, 0, purpose.start())
        if head is not None:
            return head
    if purpose is not None:
        head = purpose["ev"] if cjk else _np_head(purpose["ev"])
        if head and head.lower() not in _NOT_EVENTS and not _TIME_WORD.match(head):
            return _Found(head, purpose.start("ev"), purpose.start("ev") + len(head))
    found = (_ZH_EVENT if cjk else _EN_EVENT).search(sentence)
    if found is not None and cjk:
        # "读书会后面的聚餐十二点": a Chinese noun phrase ends in its head, the event before 的 only places it
        nxt = _ZH_EVENT.search(sentence, found.end())
        if nxt is not None and _ZH_MODIFIES.fullmatch(sentence, found.end(), nxt.start()):
            found = nxt
    if found is not None:
        return found
    if not cjk and (activity := _EN_ACTIVITY.search(sentence)) is not None and moves_plan(sentence):
        return _Found(activity["ev"].lower(), activity.start("ev"), activity.end("ev"))  # "Ella's swimming got moved"
    if not (_ZH_CHANGE if cjk else _EN_CHANGE).search(sentence) and not _STRONG.search(sentence):
        return None  # an open-ended noun phrase needs a plan verb to count as an event
    for m in (_ZH_SUBJECT if cjk else _EN_SUBJECT).finditer(sentence):
        head = m["ev"] if cjk else _np_head(m["ev"])
        if cjk and head.startswith(("我", "你", "他", "她", "大家", "咱们", "通知", "更新")):
            continue
        if head and head.lower() not in _NOT_EVENTS and not _TIME_WORD.match(head):
            return _Found(head, m.start(), m.start() + len(head))
    return None


class _Found:
    """A matched event noun: ``["ev"]``, ``start()`` and ``end()`` like a regex match."""

    def __init__(self, ev: str, start: int, end: int) -> None:
        self.ev, self._span = ev, (start, end)

    def __getitem__(self, key: str) -> str:
        return self.ev

    def start(self) -> int:
        return self._span[0]

    def end(self) -> int:
        return self._span[1]


def _np_head(np: str) -> str | None:
    words = []
    for w in np.split():
        if w.lower() in _NP_STOP:
            break
        words.append(w)
    return words[-1] if words else None


def _key(ev: str, cjk: bool) -> str:
    return _ZH_CANON.get(ev, ev) if cjk else ev.lower().replace("-", "")


def is_plan_change(sentence: str) -> bool:
    """The sentence moves, postpones or otherwise changes a plan ("pushed it to June 14", "改到周四")."""
    return (_ZH_CHANGE if has_cjk(sentence) else _EN_CHANGE).search(sentence) is not None


def find_plan_slots(
    sentence: str, speaker: str, names: frozenset[str] = frozenset(), *, event: str | None = None
) -> list[SlotMatch]:
    """``when``/``where`` of a named event and ``owner`` of a task stated in ``sentence``. ``event``: the event
    the conversation is about (named a little earlier), for a change that names none: "Small change, we'll
    meet at Marco's instead", "周四改到周五了"."""
    cjk = has_cjk(sentence)
    out = _owner_slots(sentence, speaker, names, cjk)
    ev = _event(sentence, cjk)
    change = (_ZH_CHANGE if cjk else _EN_CHANGE).search(sentence)
    old = corrected_span(sentence)  # "Saturday the 14th, not Friday": a change, and "Friday" no value of it
    change_at = change.start() if change else old[0] if old else None
    moved = move_cue(sentence)
    if ev is None and event and moved and not names_what_moved(sentence[: moved.start()], speaker):
        ev = _Found(event, 0, 0)  # "Thursday moved to Friday 8pm", not "Farewell drinks time changed to 6pm"
    elif ev is None and event and old:
        ev = _Found(event, 0, 0)  # "更正一下，是10号，不是9号": the event being talked about
    if ev is None:
        return out
    past = (_ZH_PAST if cjk else _EN_PAST).search(sentence)
    dated = (_ZH_DATED_EVENT if cjk else _EN_PURPOSE).search(sentence) is not None
    if change_at is None and (past or not (dated or (_ZH_SCHEDULE if cjk else _EN_SCHEDULE).search(sentence))):
        return out
    key = _key(ev["ev"], cjk)
    spans = [
        (s, e)
        for s, e in _spans(ZH_TIME if cjk else EN_TIME, sentence)
        if not (s < ev.end() and ev.start() < e) and not (old and s < old[1] and old[0] < e)
    ]
    named_at = ev.start() if ev.end() > ev.start() else None  # an event of the conversation is named nowhere here
    picked = _pick(sentence, spans, _ZH_TARGET if cjk else _EN_TARGET, named_at)
    if picked is not None and moved_elsewhere(sentence, spans, cjk):
        picked = None  # "评审材料改成小刘准备吧，我这周要请假": the change is an owner, "这周" is another matter
    if picked is not None:
        value = sentence[picked[0] : picked[1]].strip(" ,，")
        value = re.sub(r"(?i)^at ", "", value)
        out.append(SlotMatch("when", value, key, False, picked[0], picked[1]))
    place = _place(sentence, cjk, change_at, old)
    if place is not None:
        g = place.groupdict()
        value = (g.get("v") or g.get("v2") or g.get("v3") or g.get("v4") or "").strip()
        if cjk and (ZH_TIME.search(value) or re.search(r"[了的吗呢吧]$|^[这那哪]", value)):
            value = ""
        if value and value not in names and value.split()[0] not in names and not _TIME_WORD.match(value):
            out.append(SlotMatch("where", value, key, False, place.start(), place.end()))
    return out


_EN_NOT_BEFORE = screened(lazy(r"(?i)(?:\bnot|n't|\bno longer)(?:\s+[\w'-]+){0,2}\s*$"))  # "not doing brunch at"
_EN_NOT_AFTER = lazy(r"(?i)^\W*(?:[\w'-]+\W+){0,2}?(?:anymore|any more)\b")  # "at Lula's anymore"


def _place(
    sentence: str, cjk: bool, change_at: int | None, old: tuple[int, int] | None
) -> re.Match[str] | None:
    """The place the sentence gives the event: (English) not one a negation governs ("not doing brunch at
    Lula's anymore, it's at Home Cafe now" -> Home Cafe); after a change, the first one said after it
    ("moved to Home Cafe, parking at Union Square" -> Home Cafe); never the value a correction replaces."""
    if cjk:
        m = _ZH_PLACE.search(sentence)
        return None if m is None or (old and m.start() < old[1] and old[0] < m.end()) else m
    kept = [m for m in _EN_PLACE.finditer(sentence)
            if not _EN_NOT_BEFORE.search(sentence[max(0, m.start() - 40) : m.start()])
            and not _EN_NOT_AFTER.search(sentence[m.end() :])
            and not (old and m.start() < old[1] and old[0] < m.end())]  # fmt: skip
    if change_at is not None and not old:
        after = [m for m in kept if m.start() >= change_at]
        return after[0] if after else (kept[-1] if kept else None)
    return kept[0] if kept else None


def _owner_slots(sentence: str, speaker: str, names: frozenset[str], cjk: bool) -> list[SlotMatch]:
    if cjk:
        return _zh_owner_slots(sentence, speaker, names)
    for pattern in _EN_OWNER:
        m = pattern.search(sentence)
        if m is None:
            continue
        owner = m["owner"]
        owner = speaker if owner in ("I", "me") else owner
        if _TIME_WORD.match(owner) or not (owner in names or owner == speaker or looks_like_name(owner)):
            continue
        task = re.sub(r"^(?:the|our) ", "", m["task"].lower())
        if owner.lower() in ("it", "this", "that", "we", "you", "they", "he", "she") or len(task) < 3:
            continue
        if task.split()[0] in ("it", "that", "this", "them", "a", "an", "some", "my", "your", "best", "what"):
            continue
        return [SlotMatch("owner", owner, task, False, m.start(), m.end())]
    return []


def _zh_owner_slots(sentence: str, speaker: str, names: frozenset[str]) -> list[SlotMatch]:
    people = sorted((n for n in names if n), key=len, reverse=True)
    who = "|".join(re.escape(n) for n in people) or r"[\u4e00-\u9fff]{2,3}"
    who += r"|(?:小|老|阿)[\u4e00-\u9fff](?=来|写|做|负责|跟进|接手|准备|整理)"  # 小赵写: a nickname not (yet) in the chat
    patterns = (
        lazy(
            rf"{_ZH_TASK}(?:就|改|还是|现在)?(?:交给|由|让|改成|换成)(?P<owner>{who}|我)(?:来)?(?:负责|写|做|跟进|搞|弄|准备|整理)?"
        ),
        lazy(
            rf"(?P<owner>{who}|我)(?:来|会|现在)?(?:负责|接手|来写|来做|跟进)(?P<task>[\u4e00-\u9fffA-Za-z]{{2,10}})"
        ),
        lazy(rf"{_ZH_TASK}(?:就|还是|现在)?(?P<owner>{who}|我)(?:来|会)?(?:负责|接手|跟进|来写|来做)"),
    )
    for pattern in patterns:
        m = pattern.search(sentence)
        if m is None:
            continue
        task = re.sub(r"^(?:这个|那个|把|的)", "", m["task"]).rstrip("的就")
        if len(task) < 2 or task in ("任务", "事情", "这事", "工作"):
            continue
        owner = speaker if m["owner"] == "我" else m["owner"]
        return [SlotMatch("owner", owner, task, False, m.start(), m.end())]
    return []


def all_slots(
    sentence: str, speaker: str, names: frozenset[str], *, event: str | None = None
) -> list[SlotMatch]:
    """Person slots (:func:`language.extract.slots.find_slots`) plus the plan slots not overlapping them
    (``event``: see :func:`find_plan_slots`)."""
    from language.extract.cue_slots import cue_slots
    from language.extract.slots import find_slots

    cjk = has_cjk(sentence)
    found = [
        f for f in find_slots(sentence, speaker, names) if not _event(f.subject, cjk)
    ]  # "Dinner moved to…"
    people = list(found)
    for p in find_plan_slots(sentence, speaker, names, event=event):
        if not any(p.start < f.end and f.start < p.end for f in people):
            found.append(p)
    positive = [f for f in found if not f.negated]  # "从字节离职了，现在在阿里云": the old value's retraction
    stated = {(f.attribute, f.subject) for f in positive} | {f.attribute for f in positive}  # leaves the new one
    planned = any(f.attribute in ("when", "where") for f in found)
    for c in cue_slots(sentence, speaker, names, cjk):  # said indirectly: only what the phrase rules missed
        if planned and c.attribute == "lives_in":
            continue  # "Dinner moved to Casa Nova": the event moved, not a person
        overlaps = any(c.start < f.end and f.start < c.end for f in people)
        if c.attribute not in stated and (not overlaps or c.attribute.startswith(("favorite_", "owner"))):
            found.append(c)
    return sorted(found, key=lambda f: f.start)


def planned_event(sentence: str, speaker: str, names: frozenset[str] = frozenset()) -> str | None:
    """The event whose time or place ``sentence`` states ("the book club meets at Olive's this Thursday" ->
    ``club``), for the changes said next that name none."""
    for f in find_plan_slots(sentence, speaker, names):
        if f.attribute in ("when", "where"):
            return f.subject
    return None
