"""Slots stated without a fixed phrase (pure, English and Chinese): a cue of the slot's domain, a value of
the right shape next to it, and whom it is about.

The phrase rules of :mod:`language.extract.slots` catch "I live in X" / "我在X上班"; people also say
"First week at Stripe, the onboarding is intense", "Finally got a flat in Oslo", "从我武汉的住处到公司只要
二十分钟", "刚领到字节跳动的工牌", "Kombucha is my favourite drink", "发布说明有意见直接找小邓". Here:

- **where someone lives / works**: a domain cue (home, flat, commute, 住处, 新家… / badge, onboarding,
  canteen, offer, 入职, 工牌…) and a proper-noun value (a capitalised name; in Chinese the word next to the
  cue). A value introduced as the old one ("from X to Y", "X is history", "不在X", "从X跳槽到Y") is skipped;
  the value is the last one left. The subject is a member named before the value ("Heard Ivan joined X",
  "王芳说他住在X"), else the speaker.
- **favourites**: "V is my/the best K", "favourite K: V", "V all the way, favourite K", "最爱的K，那必须是V",
  "V是最好的K", "迷上了V，最好的K" -> ``favorite_<K>``.
- **owners of tasks** said indirectly: "reassigning T from A to B", "ping B about T", "T有意见直接找B",
  "T从A转给B", "B负责T" with people outside the chat (小何, Kenji).

Wishes and plans ("want to move to", "想去X工作") are not facts and yield nothing.
"""

from __future__ import annotations

import re

from language.extract.screen import screened
from language.extract.slots import SlotMatch
from language.extract.subject import looks_like_name, relative_subject
from language.extract.text import cjk_tags

__all__ = ["cue_slots"]

_EN_LIVES = screened(re.compile(
    r"(?i)\b(?:live[sd]?|living|home|house|apartment|flat|condo|moved|move|moving|relocat\w*|rent|rented|"
    r"lease|landlord|neighbou?rhood|commute|settled|based in|based out of|unpack\w*|balcony)\b"
))
_EN_WORKS = screened(re.compile(
    r"(?i)\b(?:work|works|working|worked|job|jobs|employer|company|joined|hired|offer|onboarding|badge|"
    r"manager|boss|office|colleagues?|co-?workers?|canteen|cafeteria|internship|payroll|resigned|promoted|"
    r"salary|team lead)\b"
))
_EN_WISH = screened(re.compile(
    r"(?i)\b(?:want|wanna|wants|wish|hope|hoping|thinking (?:about|of)|considering|might|maybe|would|could|"
    r"should|plan(?:ning)? to|dream|if|interview(?:ing|ed)?|applied|applying)\b"
))
_EN_OLD_BEFORE = screened(re.compile(
    r"(?i)\b(?:left|leaving|quit|not (?:in|at)|no longer (?:in|at)|out of|ex-|(?:lost|quit|left) (?:my|his|her|their|"
    r"the) job (?:at|with)|(?:fired|laid off) from)\s*$"
))
_EN_FROM = re.compile(r"(?i)\bfrom\s*$")
_EN_TO = re.compile(r"(?i)^\s*(?:to|for)\b")
_EN_OLD_AFTER = re.compile(r"(?i)^\W{0,2}\s*(?:is|was)? ?(?:history|over|behind me|anymore|no more|in the past)\b")
_CAPS = re.compile(r"\b[A-Z][\w&'.-]*(?:\s+(?:of\s+|de\s+|la\s+)?[A-Z][\w&'.-]*)*")
_EN_FILLER = frozenset(
    "i i'm i've i'd i'll update quick big news finally first just lunch dinner heads honestly heard "
    "switched changed changing still the a an my our we we're it's its so well ok oh wow hey hi yes yeah "
    "no not actually reminder sorry thanks today tomorrow tonight monday tuesday wednesday thursday "
    "friday saturday sunday january february march april may june july august september october "
    "november december".split()
)
_ZH_WISH = re.compile(r"想|希望|打算|准备|考虑|要是|如果|面试|投了")
_ZH_LIVES = re.compile(r"住|(?<!大)家(?!人|里人|伙)|搬|房子|租|公寓|安家|定居|落户|小区|房东|房租")
_ZH_WORKS = re.compile(r"上班|工作|入职|跳槽|公司|工牌|东家|领导|同事|offer|食堂|实习|离职|辞职|老板|单位|加班|工位")
_ZH_V = r"(?P<v>[\u4e00-\u9fffA-Za-z0-9]{2,8}?)"
_ZH_LIVES_VALUE = (
    re.compile(rf"(?:搬到|搬去|住在|住到|定居|安家在?|落户)(?:了)?{_ZH_V}(?=[了啦的，。！？,.!?\s]|$|住|安家)"),
    re.compile(rf"(?:在|我|从我){_ZH_V}的?(?:新家|住处|家|房子|公寓|小区|住的地方)"),
    re.compile(rf"(?:在){_ZH_V}(?:租了|买了|安家|定居|落户)"),
)
_ZH_WORKS_VALUE = (
    re.compile(rf"(?:入职|加入|跳槽到|跳槽去|跳到|去了|进了|现在在|在){_ZH_V}(?=第|的|了|啦|，|。|！|上班|工作|$)"),
    re.compile(rf"(?:^|[，,。！？：:]|领到|拿到|拿了|收到){_ZH_V}的?(?:工牌|食堂|offer|Offer|新领导|领导|同事|老板|工位)"),
)
_ZH_VERB_PREFIX = re.compile(r"^(?:刚|已经|终于|现在)?(?:领到|拿到|拿了|收到|进了|去了|到了|入职|加入|在|了)+")
_ZH_OLD_BEFORE = re.compile(r"(?:从|不在|离开了?|辞掉了?|不住)\s*$")
_ZH_NOT_VALUES = frozenset("公司 那边 这边 这里 那里 哪里 家里 老家 附近 楼下 现在 目前 新家 住处 上班 工作 第一周".split())


_EN_REPORTED = screened(re.compile(
    r"\b(?P<n>[A-Z][a-z]+) (?:says|said|told|tells|thinks|mentioned|reckons|claims|swears)\b|"
    r"(?i:\bheard (?:that )?|\bapparently |\bturns out )(?P<n2>[A-Z][a-z]+)\b"
))
_ZH_REPORTED = re.compile(
    r"(?:^|[，,：:])(?P<n>(?!我|你|他|她|听|据|有人|大家)[\u4e00-\u9fff]{2,3}?)(?:说|告诉我|提到|讲)|"
    r"(?:听说|据说|原来)(?P<n2>(?!我|你|他|她)[\u4e00-\u9fff]{2,3}?)(?=搬|去|在|跳槽|入职|拿了|住|已经|最|现在|说)"
)


def _reported(pattern: re.Pattern[str], head: str, speaker: str) -> str | None:
    """Someone named as the source or subject of reported news ("Wendy says…", "听说王芳…")."""
    m = pattern.search(head)
    name = (m["n"] or m["n2"]) if m else None
    return name if name and name != speaker and name.lower() not in _EN_FILLER else None


_EN_MINE = re.compile(r"(?i)\b(?:i|i'm|me|my|we|our)\b")  # "Kombucha is my favourite drink": the speaker's


def _en_subject(sentence: str, end: int, speaker: str, names: frozenset[str]) -> str:
    """A member named before the value ("Heard Ivan joined X", "Wendy told me they live in X"), else the speaker."""
    head = sentence[:end]
    relative = relative_subject(head, speaker, names)  # "My sister Ana joined…": Ana, not the speaker
    if relative is not None:
        return relative
    if re.match(r"(?i)\s*(?:i|i'm|we|we're|my|our)\b", head):
        return speaker
    for name in sorted(names, key=len, reverse=True):
        if name and name != speaker and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", head):
            return name
    first = re.sub(r"['\u2019]s$", "", head.split()[0].strip(",.!?:")) if head.split() else ""
    if first != speaker and looks_like_name(first) and not _EN_MINE.search(head) and re.match(
            rf"\s*{re.escape(first)}(?:['\u2019]s\b|\s+(?:is|was|has)\b)", head):  # fmt: skip
        return first  # "Tomasz is at the Gdańsk office these days": news about Tomasz, told by the speaker
    return _reported(_EN_REPORTED, head, speaker) or speaker


def _zh_subject(sentence: str, end: int, speaker: str, names: frozenset[str]) -> str:
    head = sentence[:end]
    relative = relative_subject(head, speaker, names)  # "我妹妹在阿里上班": the speaker's 妹妹
    if relative is not None:
        return relative
    if head.lstrip().startswith("我"):
        return speaker
    for name in sorted(names, key=len, reverse=True):
        if name and name != speaker and name in head:
            return name
    return _reported(_ZH_REPORTED, head, speaker) or speaker


_EN_LINK = re.compile(r"(?i)(?:\b(?:in|at|to|from|joined|near|with)(?: the)?|\bmy|\bour|[:])\s*$")


def _en_values(sentence: str, names: frozenset[str]) -> list[re.Match[str]]:
    """Proper nouns linked to the sentence by a preposition ("a flat in Oslo", "joined Stripe", "jobs: Figma",
    "my Stripe badge"); a capitalised first word is just a sentence start."""
    out = []
    for m in _CAPS.finditer(sentence):
        words = m.group().split()
        first = words[0].strip("'.,!?") if words else ""
        if not words or first.lower() in _EN_FILLER or m.group() in names or _POSSESSIVE.sub("", first) in names:
            continue  # "moved to December.", "Hannah's visit": a time or a person, no place
        before, after = sentence[: m.start()], sentence[m.end() :]
        if not before.strip() or not _EN_LINK.search(before):
            continue
        if _EN_OLD_BEFORE.search(before) or _EN_OLD_AFTER.match(after):
            continue
        if _EN_FROM.search(before) and _EN_TO.match(after):
            continue  # "relocated from Oslo to Boston": Oslo is the old value
        out.append(m)
    return out


# something (not someone) was moved: "her flight was moved to December", "the meeting got moved to Room B"
_EN_THING_MOVED = screened(re.compile(
    r"\b(?P<subj>[\w']+)\s+(?:\w+\s+)?(?:was|were|got|been|is|are|gets|being)\s+(?:\w+ly\s+)?(?:moved|relocated)\b"
))
_POSSESSIVE = re.compile(r"['\u2019]s?$")
_PEOPLE_WORDS = frozenset("i we he she they you".split())


# the value's clause is said to someone, before any "I"/"we": "you work at …", "your new job at …"
_EN_YOU = re.compile(r"(?i)(?:^|[,.;:!?]\s*)(?:(?!\b(?:i|i'm|i've|we|we're|my|our)\b)[^,.;:!?])*\b(?:you|your|you're|you've)\b[^,.;:!?]*$")


def _en_person(sentence: str, speaker: str, names: frozenset[str]) -> list[SlotMatch]:
    if _EN_WISH.search(sentence):
        return []
    cues = _EN_THING_MOVED.sub(
        lambda m: m[0] if m["subj"].lower() in _PEOPLE_WORDS or m["subj"] in names else "", sentence
    )
    lives, works = len(_EN_LIVES.findall(cues)), len(_EN_WORKS.findall(cues))
    if lives == works:
        return []
    values = _en_values(sentence, names)
    if not values:
        return []
    m = values[-1]
    if _EN_YOU.search(sentence[: m.start()]):
        return []  # "Noted: you work at Monzo now" is the other's, if anyone's (a reply states the addressee's)
    value = " ".join(w for w in m.group().split() if w.lower() not in _EN_FILLER) or m.group()
    value = value.rstrip(".'-") or value  # "moved to Oslo." -> Oslo ("St. Louis" keeps its inner dot)
    subject = _en_subject(sentence, m.start(), speaker, names)
    return [SlotMatch("lives_in" if lives > works else "works_at", value, subject, False, m.start(), m.end())]


# the value's clause addresses someone before any "我": the value is not the speaker's
_ZH_YOU = re.compile(r"(?:^|[，,。！!？?；;\s])(?:(?![我，,。！!？?；;\s]).)*[你您](?:(?![，,。！!？?；;\s]).)*$")


def _zh_noun_phrase(value: str) -> bool:
    """A home or an employer is named by nouns: no time word ("下个月要搬"), particle ("番禺租了个小") or
    one-character verb (搬, 租) among the value's words. A name jieba reads as a verb has two or more
    characters (蔚来)."""
    return not any(tag.startswith(("t", "u")) or (tag == "v" and len(word) == 1) for word, tag in cjk_tags(value))


def _zh_person(sentence: str, speaker: str, names: frozenset[str]) -> list[SlotMatch]:
    if _ZH_WISH.search(sentence):
        return []
    out = []
    for attribute, cue, patterns in (
        ("lives_in", _ZH_LIVES, _ZH_LIVES_VALUE),
        ("works_at", _ZH_WORKS, _ZH_WORKS_VALUE),
    ):
        if not cue.search(sentence):
            continue
        found = None
        for pattern in patterns:
            for m in pattern.finditer(sentence):
                v = _ZH_VERB_PREFIX.sub("", m["v"])
                if len(v) < 2 or v in _ZH_NOT_VALUES or v in names or _ZH_OLD_BEFORE.search(sentence[: m.start("v")]):
                    continue
                if not _zh_noun_phrase(v) or _ZH_YOU.search(sentence[: m.start("v")]):
                    continue  # "我下个月要搬家" names no home; "那你不是要搬去广州了" is the other's, if anyone's
                if found is None or m.start("v") > found[1]:
                    found = (v, m.start("v"), m.end("v"))
        if found is not None:
            subject = _zh_subject(sentence, found[1], speaker, names)
            out.append(SlotMatch(attribute, found[0], subject, False, found[1], found[2]))
    return out[:1] if len(out) == 2 and out[0].value == out[1].value else out


_EN_FAV = (
    re.compile(r"(?i)(?P<v>[\w'-]+(?: [\w'-]+){0,2}) (?:is|are) (?:my|the|his|her|their) (?:(?:all-time|absolute) )?"
               r"(?:favou?rite|best|top) (?P<k>food|drink|team|dish|snack|sport|band|song|movie|film|book|game|"
               r"show|coffee|tea|beer|wine|restaurant|city|colou?r|place|artist|player|club)s?\b"),
    re.compile(r"(?i)\b(?:my )?(?:favou?rite|best) (?P<k>food|drink|team|dish|snack|sport|band|song|movie|film|book|"
               r"game|show|coffee|restaurant|club)s? ?(?::|is|=|would be|has to be|must be|-) (?P<v>[\w'-]+(?: [\w'-]+){0,2})"),
    re.compile(r"(?i)^(?P<v>[\w'-]+(?: [\w'-]+){0,2})(?: all the way| forever| for life| every time)?, (?:my |the )?"
               r"(?:favou?rite|best) (?P<k>\w+)"),
)
_EN_FAV_STRIP = re.compile(r"(?i)^(?:(?:honestly|really|definitely|obviously|clearly|well|so|but|and|now|yeah|"
                           r"i think|still|currently)\s+)+|^.*\b(?:says|said|thinks|reckons|claims)\s+")
_ZH_FAV = (
    re.compile(r"最(?:爱|喜欢)的(?P<k>[\u4e00-\u9fff]{1,3}?)[，,]?(?:那|那就)?(?:必须|肯定|绝对|当然|一定|还)?(?:是|就是|非)"
               r"(?P<v>[\u4e00-\u9fffA-Za-z0-9]{1,8}?)(?:了|啦|莫属|吧)?(?=[，。！？,.!?~]|$)"),
    re.compile(r"(?P<v>[\u4e00-\u9fffA-Za-z0-9]{1,8}?)(?:才)?是(?:我|他|她)?(?:心中)?最(?:好|爱|棒|喜欢)的(?P<k>[\u4e00-\u9fff]{1,3})"),
    re.compile(r"迷上了?(?P<v>[\u4e00-\u9fffA-Za-z0-9]{1,8}?)[，,](?:这是|是|真是)?(?:我)?最(?:好|爱|棒)的(?P<k>[\u4e00-\u9fff]{1,3})"),
)
_EN_FAV_CUE = screened(re.compile(r"(?i)favou?rite|best|top"))  # in every _EN_FAV pattern; "最" in every _ZH_FAV one
_ZH_FAV_PREFIX = re.compile(r"^.*?(?:说|觉得|认为)|^(?:要说|我|他|她|现在)")


def _favorites(sentence: str, speaker: str, names: frozenset[str], cjk: bool) -> list[SlotMatch]:
    if ("最" not in sentence) if cjk else (_EN_FAV_CUE.search(sentence) is None):
        return []  # every pattern needs it (most sentences: skips the costly scans)
    for pattern in _ZH_FAV if cjk else _EN_FAV:
        m = pattern.search(sentence)
        if m is None or re.search(r"不喜欢|不爱|not into|no longer|anymore", sentence[m.start("v") : m.end("v") + 12]):
            continue
        v = (_ZH_FAV_PREFIX if cjk else _EN_FAV_STRIP).sub("", m["v"]).strip()
        if len(v) < (1 if cjk else 2) or any(n and n in v for n in names) or v.lower().startswith(("hey ", "hi ")):
            continue
        k = m["k"].lower()
        subject = (_zh_subject if cjk else _en_subject)(sentence, m.end("v"), speaker, names)
        if not cjk and re.match(r"(?i)(?:my|i)\b", sentence[m.start() :]) is None and subject == speaker:
            subject = _en_subject(sentence, m.end(), speaker, names)
        return [SlotMatch(f"favorite_{k}", v, subject, False, m.start(), m.end())]
    return []


_EN_NAME = r"(?P<owner>[A-Z][a-z]+)"
_EN_TASK = r"(?:the |our )?(?P<task>[a-z][\w-]*(?: [a-z][\w-]*){0,2}?)"
_EN_OWNER = (
    re.compile(rf"(?i:(?:re)?assign(?:ing|ed|s)?|hand(?:ing|ed|s)? (?:over)?|pass(?:ing|ed|es)?|mov(?:ing|ed|es)?) "
               rf"{_EN_TASK} (?:over )?(?:from [A-Z][a-z]+ )?to {_EN_NAME}\b"),
    re.compile(rf"(?i:ping|ask|contact|talk to|reach out to|message|dm|see) {_EN_NAME}\b[^.!?]{{0,40}}?"
               rf"\b(?:on|about|for|regarding) {_EN_TASK}(?=[.!?,;]|$)"),
    re.compile(rf"{_EN_NAME} (?:asked|is asking|asks|needs|wants|is collecting|collects)\b[^.!?]{{0,30}}?"
               rf"\b(?:on|about|for) {_EN_TASK}(?=[.!?,;]|$)"),
)
_ZH_WHO = r"(?P<owner>(?:小|老|阿)[\u4e00-\u9fff]|{names})"
_ZH_TASK = r"(?P<task>[\u4e00-\u9fffA-Za-z]{2,8}?)"
_ZH_OWNER = (
    rf"{_ZH_TASK}(?:从[\u4e00-\u9fff]{{1,3}})?(?:转给|交给|转交给|移交给|改给|归){_ZH_WHO}",
    rf"{_ZH_TASK}(?:有|的)?(?:意见|问题|疑问|需求)?(?:直接|请|可以)?找{_ZH_WHO}",
    rf"{_ZH_WHO}找(?:我|大家|你)要{_ZH_TASK}的",
    rf"{_ZH_TASK}由{_ZH_WHO}(?:来)?(?:写|负责|做|跟进|准备|整理)",
    rf"(?:^|[，,：:])?{_ZH_WHO}(?:来|会|现在)?(?:负责|接手|跟进|来写|来做){_ZH_TASK}(?=[了啦的，。！？,.!?]|$)",
)


def _owners(sentence: str, speaker: str, names: frozenset[str], cjk: bool) -> list[SlotMatch]:
    if cjk:
        who = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True) if n) or "(?!)"
        patterns = [re.compile(p.replace("{names}", who)) for p in _ZH_OWNER]
    else:
        patterns = list(_EN_OWNER)
    for pattern in patterns:
        m = pattern.search(sentence)
        if m is None:
            continue
        task = re.sub(r"^(?:the|our|这个|那个|把)\s*", "", m["task"].lower() if not cjk else m["task"])
        task = re.sub(r"(?:的|改|就|还是|现在|也)+$", "", task)
        if len(task) < 2 or task in ("it", "that", "this", "me", "input", "comments", "任务", "事情", "素材"):
            continue
        owner = speaker if m["owner"] in ("我", "me", "Me") else m["owner"]
        return [SlotMatch("owner", owner, task, False, m.start(), m.end())]
    return []


def cue_slots(sentence: str, speaker: str, names: frozenset[str], cjk: bool) -> list[SlotMatch]:
    """Person, favourite and owner slots stated indirectly (see the module docstring)."""
    out = _zh_person(sentence, speaker, names) if cjk else _en_person(sentence, speaker, names)
    out += _favorites(sentence, speaker, names, cjk)
    out += _owners(sentence, speaker, names, cjk)
    return out
