"""Attribute/value slots (``lives_in``, ``works_at``, ``pet_name:cat``…) stated in a sentence, and retractions.

A slot names what a fact fills so that a later value of a single-valued slot can supersede an earlier one;
:data:`MULTI_VALUED` slots accumulate instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from itertools import repeat

from language.extract.corrections import corrected_value, is_correction
from language.extract.screen import admitted, fold, needs, screened
from language.extract.subject import en_subject, zh_subject
from language.lazy_re import lazy
from language.text import has_cjk

__all__ = [
    "EN_SLOTS",
    "MULTI_VALUED",
    "PETS",
    "ZH_PET",
    "ZH_SLOTS",
    "SlotMatch",
    "SlotRule",
    "find_slots",
    "instead_of",
    "is_called_off",
    "is_retraction",
    "states_change",
    "states_replacement",
]

MULTI_VALUED = frozenset(
    {"likes", "dislikes", "hobby", "pet", "visited", "owns", "child", "sibling", "friend"}
)
"""Slots a person can hold several values of at once: a new value is added, never a replacement."""

_PLACE = r"(?P<v>(?:the )?[A-Z][\w'.&-]*(?:[ -](?:of |de |da |do |la |le |upon |and )?[A-Z][\w'.&-]*){0,4})"
_PHRASE = r"(?P<v>[\w'&-]+(?: [\w'&-]+){0,5}?)(?=\s*(?:[,.;:!?)]|\band\b|\bbut\b|\bbecause\b|\bsince\b|\bso\b|\bnow\b|\banymore\b|\bany more\b|\bthese days\b|\bwith\b|$))"
_NAME = r"(?P<v>[A-Z][\w'-]*(?: [A-Z][\w'-]*)?)"
PETS = r"(?P<pet>cat|dog|kitten|puppy|pet|bird|parrot|hamster|rabbit|bunny|fish|turtle|horse|guinea pig|snake|lizard)"
_JOBS = (
    r"(?:teacher|engineer|developer|programmer|designer|doctor|nurse|lawyer|student|counselor|counsellor|"
    r"therapist|artist|painter|writer|author|musician|singer|actor|actress|manager|accountant|chef|cook|"
    r"driver|pilot|scientist|researcher|professor|consultant|analyst|architect|photographer|journalist|"
    r"dentist|pharmacist|firefighter|police officer|officer|soldier|farmer|mechanic|electrician|plumber|"
    r"entrepreneur|founder|ceo|cto|intern|freelancer|barista|waiter|waitress|cashier|librarian|"
    r"social worker|veterinarian|vet|dancer|coach|athlete|programmer|data scientist|product manager)"
)
_ZH_TERM = r"(?=[了啦呢啊吧哦呀嘛的，。！？、,.!?;；~～\s]|$|工作|上班|住|去|读|念|上学|第[一二三四五六七八九十\d])"
_ZH_VAL = r"(?P<v>[\u4e00-\u9fffA-Za-z0-9·]{1,12}?)"
_ZH_JOBS = (
    r"(?:老师|教师|工程师|医生|护士|律师|学生|研究生|博士生|博士|设计师|程序员|会计|经理|产品经理|销售|司机|厨师|"
    r"作家|记者|警察|演员|歌手|画家|教授|老板|创业者|架构师|分析师|咨询师|顾问|公务员|实习生|主播|运营|客服|"
    r"摄影师|翻译|编辑|律师|心理咨询师|兽医|健身教练|教练)"
)


@dataclass(frozen=True)
class SlotRule:
    attribute: str
    pattern: re.Pattern[str]
    negated: bool = False
    value: str | None = None  # a fixed value (``married``) when the pattern captures none
    subject_in_pattern: bool = False  # the pattern itself anchors the subject (``my cat is named``)


def _en(attr: str, pattern: str, **kw: object) -> SlotRule:
    """English rule: predicates are wrapped in ``(?i:...)``; values stay case-sensitive (names start upper)."""
    return SlotRule(attr, lazy(pattern), **kw)  # type: ignore[arg-type]


def _zh(attr: str, pattern: str, **kw: object) -> SlotRule:
    return SlotRule(attr, lazy(pattern), **kw)  # type: ignore[arg-type]


EN_SLOTS: tuple[SlotRule, ...] = (
    _en("lives_in", rf"\b(?i:(?:liv(?:e|es|ing)|resid(?:e|es|ing)) in) {_PLACE}"),
    _en("lives_in", rf"\b(?i:(?:mov(?:ed|ing|e)|relocat(?:ed|ing|e)) (?:back )?to) {_PLACE}"),
    _en("lives_in", rf"\b(?i:(?:mov(?:ed|ing|e)|relocat(?:ed|ing|e)) from) [A-Z][\w'.-]*(?: [A-Z][\w'.-]*)? (?i:to) {_PLACE}"),
    _en("lives_in", rf"\b(?i:(?:moved|moving) (?:out of|away from)) {_PLACE}", negated=True),
    _en("lives_in", rf"\b(?i:based in) {_PLACE}"),
    _en("works_at", rf"\b(?i:(?:work(?:s|ing)?|intern(?:s|ing)?) (?:at|for)) {_PLACE}"),
    _en(
        "works_at",
        rf"\b(?i:joined|got a job (?:at|with)|got hired (?:at|by)|started working (?:at|for)) {_PLACE}",
    ),
    _en(
        "works_at",
        rf"\b(?i:(?:quit|left|resigned from|got fired from|got laid off from) (?:\w+ )?(?:job (?:at|with) )?){_PLACE}",
        negated=True,
    ),
    _en("job", rf"(?i)\bwork(?:s|ing)? as an? {_PHRASE}"),
    _en("job", rf"(?i)(?:'m|\bam|\bis) (?:now )?an? (?P<v>(?:\w+ )?{_JOBS})\b"),
    _en("job", rf"(?i)\bmy (?:job|profession|occupation) is (?:an? )?{_PHRASE}", subject_in_pattern=True),
    _en(
        "pet_name",
        rf"\b(?i:my {PETS}(?:'s name is| is named| is called| named| called)) {_NAME}",
        subject_in_pattern=True,
    ),
    _en("pet_name", rf"\b(?i:have an? (?:new )?{PETS} (?:named|called)) {_NAME}"),
    _en("name", rf"\b(?i:my name is|call me) {_NAME}", subject_in_pattern=True),
    _en(
        "likes",
        rf"(?i)\b(?:don't|do not|doesn't|does not|no longer|never) (?:really )?(?:like|love|enjoy) {_PHRASE}",
        negated=True,
    ),
    _en("likes", r"(?i)\b(?:stopped|quit|gave up) (?P<v>\w+ing)\b", negated=True),
    _en(
        "likes",
        rf"(?i)\b(?:love|loves|like|likes|enjoy|enjoys|adore|adores|(?:'m|am|is|are|really|so) into|big fan of|"
        rf"passionate about) {_PHRASE}",
    ),
    _en("dislikes", rf"(?i)\b(?:hate|hates|can't stand|dislike|dislikes) {_PHRASE}"),
    _en(
        "favorite",
        rf"(?i)\bmy (?:favorite|favourite) (?P<k>\w+(?: \w+)?) is {_PHRASE}",
        subject_in_pattern=True,
    ),
    _en(
        "age",
        r"(?i)(?:'m|\bam|\bis|\bturned|\bturning) (?P<v>\d{1,3})(?: years? old)?(?![\w%:.])"
        r"(?! (?:minutes|hours|days|weeks|months|km|miles|kg|lbs|percent|times|am|pm))",
    ),
    _en("birthday", r"(?i)\bmy birthday is (?:on )?(?P<v>[\w ,]+?)(?=[.!?;]|$)", subject_in_pattern=True),
    _en(
        "relationship",
        r"(?i)(?:'m|\bam|\bis|\bgot|\bjust got) (?:now |happily |recently )?(?P<v>married|engaged|divorced|single|widowed)\b",
    ),
    _en("relationship", r"(?i)\b(?:broke up|split up)\b", value="single"),
    _en("school", rf"\b(?i:(?:study|studies|studying|enrolled|student) (?:\w+ )?at) {_PLACE}"),
    _en("school", rf"\b(?i:graduated from) {_PLACE}"),
    _en(
        "phone",
        r"(?i)\bmy (?:phone|cell|mobile)?(?: ?number)? is (?P<v>\+?\d[\d\s().-]{5,}\d)",
        subject_in_pattern=True,
    ),
    _en("email", r"(?i)\bmy email(?: address)? is (?P<v>\S+@\S+\.\w+)", subject_in_pattern=True),
    _en("hometown", rf"(?i:'m|\bam|\bis) (?i:originally )?(?i:from) {_PLACE}"),
    _en(
        "address",
        r"(?<![\w-])(?P<v>\d{1,5}[A-Za-z]? (?:[A-Z][\w'-]* ){1,3}(?:Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr|"
        r"Boulevard|Blvd|Way|Place|Pl|Court|Ct|Terrace|Crescent|Close|Square|Sq)\b\.?(?:,? (?:apt|apartment|flat|unit|"
        r"suite|#)\.? ?\w+|,? (?:first|second|third|fourth|fifth|\d+(?:st|nd|rd|th)) floor)?)",
    ),
    _en(
        "diet",
        r"(?i)(?:'m|\bam|\bis|\bare|\bwent|\bgone|\bgoing|\bbecame|\bbecome|\bnow|\bso|\bstill|\bstrictly|\bfully)"
        r" (?:now |fully |strictly |mostly |completely )?(?P<v>vegetarian|vegan|pescatarian|keto|paleo|gluten-free|"
        r"dairy-free|halal|kosher|carnivore)\b",
    ),
    _en("hometown", rf"\b(?i:grew up in) {_PLACE}"),
)

ZH_SLOTS: tuple[SlotRule, ...] = (
    _zh(
        "lives_in",
        rf"(?:住在|住(?![院宿手口嘴])|搬到了?|搬去了?|搬家到|搬回了?|定居在?|家在){_ZH_VAL}{_ZH_TERM}",
    ),
    _zh("lives_in", rf"(?:搬离了?|搬出了?){_ZH_VAL}{_ZH_TERM}", negated=True),
    _zh("works_at", rf"(?<![现正存实])在{_ZH_VAL}(?:工作|上班|任职|实习)"),
    _zh("works_at", rf"(?<![现正存实])在{_ZH_VAL}(?:做|当|干)[\u4e00-\u9fff]{{0,4}}?(?:{_ZH_JOBS[3:-1]}|开发|设计|运营|测试|研究)"),
    _zh("works_at", rf"(?:入职了?|加入了?|跳槽到了?){_ZH_VAL}{_ZH_TERM}"),
    _zh("works_at", rf"(?:去|到){_ZH_VAL}(?:工作|上班)"),
    _zh("works_at", rf"从{_ZH_VAL}(?:离职|辞职)", negated=True),
    _zh("works_at", r"(?:辞职|离职|被裁)了?", negated=True),
    _zh("job", rf"(?:是|当了?|做了?)(?:一名|一个|一位|个|名)?(?P<v>[\u4e00-\u9fff]{{0,6}}?{_ZH_JOBS})"),
    _zh("job", rf"工作是{_ZH_VAL}{_ZH_TERM}"),
    _zh(
        "pet_name",
        rf"(?P<pet>猫咪|猫|狗狗|狗|小猫|小狗|宠物|兔子|仓鼠|鹦鹉)(?:的名字|名字)?(?:叫做?|名叫|是){_ZH_VAL}{_ZH_TERM}",
    ),
    _zh("likes", rf"(?:不再喜欢|不喜欢|不爱|讨厌){_ZH_VAL}{_ZH_TERM}", negated=True),
    _zh("likes", rf"(?:喜欢|热爱|爱上了?|迷上了?|爱(?=吃|喝|看|玩|听|打|踢|跑|弹|画|唱)){_ZH_VAL}{_ZH_TERM}"),
    _zh("favorite", rf"最(?:喜欢|爱)的(?P<k>[\u4e00-\u9fff]{{1,4}}?)(?:是|换成了?|变成了?|改成了?){_ZH_VAL}{_ZH_TERM}"),
    _zh("age", r"(?:今年)?(?P<v>\d{1,3})岁"),
    _zh("birthday", r"生日(?:是|在)?(?P<v>\d{1,2}月\d{1,2}[日号])"),
    _zh("school", rf"(?<![现正存实])在{_ZH_VAL}(?:上学|读书|读研|读博|念书|上大学|读大学)"),
    _zh("school", rf"(?:毕业于|毕业自|考上了?){_ZH_VAL}{_ZH_TERM}"),
    _zh("phone", r"(?:手机号码?|电话号码?|手机)(?:是|：|:)?(?P<v>\+?\d[\d\- ]{5,}\d)"),
    _zh("relationship", r"(?P<v>结婚|订婚|离婚|单身|脱单)了?"),
    _zh("relationship", r"分手了?", value="单身"),
    _zh("hometown", rf"(?:老家|家乡)(?:在|是){_ZH_VAL}{_ZH_TERM}"),
    _zh("address", r"(?P<v>[\u4e00-\u9fff]{2,10}?(?:路|街|大道|胡同|巷)\d{1,5}号(?:院)?(?:\d{1,3}(?:号楼|栋|幢))?(?:\d{1,5}室?)?)"),
    _zh("diet", r"(?:开始|改成|改为|现在|已经|一直)?(?P<v>吃素|纯素|素食|生酮|吃全素)"),
)
ZH_PET = {"猫咪": "猫", "小猫": "猫", "狗狗": "狗", "小狗": "狗"}


@dataclass(frozen=True)
class SlotMatch:
    attribute: str
    value: str | None
    subject: str
    negated: bool
    start: int
    end: int


@cache
def en_screens() -> tuple[tuple[frozenset[str], ...], ...]:
    """Each English rule's :func:`~language.extract.screen.needs` (read on first use, not at import)."""
    return tuple(needs(rule.pattern) for rule in EN_SLOTS)


def find_slots(sentence: str, speaker: str, names: frozenset[str]) -> list[SlotMatch]:
    """Known attribute slots stated in ``sentence`` and whom they are about.

    When one sentence both retracts and states a value of the same slot ("I don't live in Paris anymore,
    I moved to Berlin"), only the positive statement is kept: the update supersedes the old value anyway.
    """
    cjk = has_cjk(sentence)
    found: list[SlotMatch] = []
    folded = "" if cjk else fold(sentence)
    for rule, sets in zip(ZH_SLOTS, repeat(())) if cjk else zip(EN_SLOTS, en_screens(), strict=True):
        if sets and not admitted(sets, folded):
            continue  # a string every match holds is not there
        for m in rule.pattern.finditer(sentence):
            if any(m.start() < f.end and f.start < m.end() for f in found):
                continue
            match = _slot_from_match(rule, m, sentence, speaker, names, cjk)
            if match is not None:
                found.append(match)
    found.sort(key=lambda f: f.start)
    positive = {(f.subject, f.attribute) for f in found if not f.negated}
    kept: list[SlotMatch] = []
    for f in found:
        if f.negated and (f.subject, f.attribute) in positive:
            continue
        if (
            not f.negated
            and f.attribute not in MULTI_VALUED
            and any((k.subject, k.attribute, k.negated) == (f.subject, f.attribute, False) for k in kept)
        ):
            continue  # "moved to Hangzhou, now in Xihu district": the first value is the claim
        kept.append(f)
    return kept


_LIKE_AS_PREPOSITION = screened(lazy(
    r"(?i)\b(?:is|was|are|were|'s|be|been|feel|feels|felt|look|looks|sound|sounds|seem|seems|just|more|much|kinda|"
    r"something|anything|things|stuff) like\b"
))
_PLACE_SLOTS = frozenset({"lives_in", "works_at", "school", "hometown"})
_NOT_A_PLACE = lazy(
    r"(?i)(?:january|february|march|april|may|june|july|august|september|october|november|december|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tomorrow|tonight|next|this|noon|midnight|"
    r"spring|summer|autumn|fall|winter|christmas|easter)(?:\s+(?:\d.*|the \d.*|\w+day|morning|afternoon|evening|night))?$"
)
_PASSIVE = screened(lazy(
    r"(?i)\b(?P<subj>[\w']+)\s+(?:\w+\s+)?(?:was|were|been|being|be|is|are|got|get|gets|getting)\s+(?:\w+ly\s+)?$"
))
_PEOPLE_PRONOUNS = frozenset("i we he she they you i'm we're he's she's they're you're".split())
_BAD_VALUES = frozenset(
    "it that this them you him her those these how what when there here so one some lot all too much "
    "your my his their our me us".split()
)


def _slot_from_match(
    rule: SlotRule, m: re.Match[str], sentence: str, speaker: str, names: frozenset[str], cjk: bool
) -> SlotMatch | None:
    groups = m.groupdict()
    value = (groups.get("v") or rule.value or "").strip(" ,.!?;:'\"") or None
    attribute = rule.attribute
    if value:
        value = re.sub(r"^(?:now|currently|still) ", "", value)
        value = re.sub(r"^(?:to |the )", "", value) if attribute in ("likes", "dislikes") else value
        if attribute in ("likes", "dislikes") and any(w.lower() in _BAD_VALUES for w in value.split()[:2]):
            return None
        if value.lower() in _BAD_VALUES:
            return None
        if cjk and len(value) < 2 and not groups.get("pet"):
            return None
    elif not rule.negated:
        return None
    if attribute in _PLACE_SLOTS and value and not cjk and _NOT_A_PLACE.match(value):
        return None  # "her flight was moved to December", "moved to Friday": a time, not a place
    if attribute == "lives_in" and not cjk and m[0][:5].lower() in ("moved", "reloc"):
        passive = _PASSIVE.search(sentence[: m.start()])
        if passive and passive["subj"].lower() not in _PEOPLE_PRONOUNS and passive["subj"] not in names:
            return None  # "the meeting was moved to Room B": something was moved, nobody moved house
    if attribute in ("likes", "dislikes") and _LIKE_AS_PREPOSITION.search(sentence[: m.start() + 6]):
        return None  # "is like a way to…", "looks like fun"
    if groups.get("pet"):
        pet = ZH_PET.get(groups["pet"], groups["pet"]).lower()
        attribute = f"pet_name:{pet}"
    if groups.get("k"):
        attribute = f"favorite_{groups['k'].lower().replace(' ', '_')}"
    if rule.subject_in_pattern:
        subject, negated = speaker, False
    elif attribute == "address":  # "Olive lives at 3 Oak Road", "Sure, my place works. It's 14 Elm Street"
        head = sentence[: m.start()]
        if cjk:  # "我家地址是朝阳区…": the lead is no part of the address, but says whose it is
            lead = _ZH_ADDRESS_LEAD.match(value or "")
            head, value = (head + lead.group(0), (value or "")[lead.end() :]) if lead else (head, value)
        subject, negated = _address_owner(head, speaker, names), False
    elif cjk:
        subject, negated = zh_subject(sentence[: m.start()], speaker, names)
    else:
        subject, negated = en_subject(sentence[: m.start()], speaker, names)
    if subject is None:
        return None
    negated = negated or rule.negated or _retraction_near(sentence, m.end(), cjk)
    return SlotMatch(attribute, value, subject, negated, m.start(), m.end())


_ZH_ADDRESS_LEAD = lazy(r"^.*(?:地址是|住址是|地址[：:]?|住址[：:]?|住在|家在|搬到|在)")
# an address said on its own ("It's 14 Elm Street, third floor" right after "my place works"): the speaker's
_BARE_ADDRESS_LEAD = lazy(r"(?i)\W*(?:(?:it|that)(?:'s| is)|(?:the )?address(?: is)?:?|here(?: it is)?:?)?\W*")
_OWN_PLACE = lazy(r"(?i)\b(?:my|our|i|i'm|we|we're)\b|我")
_NOT_HOME = lazy(r"(?i)\b(?:office|company|work|shop|store|restaurant|cafe|school|clinic|venue)\b|公司|办公|单位|店|学校|医院")


def _address_owner(head: str, speaker: str, names: frozenset[str]) -> str | None:
    """Whose address: the last member named before it, else the speaker when they speak of their own place
    ("my place works. It's …", "我家地址是…"); None for anything else's ("The office is at …")."""
    if _NOT_HOME.search(head):
        return None  # "我们公司在…", "our office is at …": a place of work, not a home
    named = [(head.rfind(n), n) for n in names if n and n in head]
    if named:
        return max(named)[1]
    return speaker if _OWN_PLACE.search(head) or _BARE_ADDRESS_LEAD.fullmatch(head) else None


_EN_RETRACT = screened(lazy(
    r"\bno longer\b|(?:\bnot|n't|\bnever)\b[^.!?]{0,50}\b(?:anymore|any ?more)\b|\bactually,? no\b|\bscratch that\b|"
    r"\bthat(?:'s| is|'s not| isn't| wasn't) (?:not )?true\b|\bi was wrong\b|\bcorrection:|"
    r"(?<!\blights )(?<!\bphone )(?<!\bpower )(?<!\bAC )(?<!\bTV )(?<!\bheating )(?<!\balarm )"
    r"\b(?:is|are|'s|got) (?:off|cancell?ed|called off|scrapped)(?=\s*(?:[,.;!?]|$|now\b|after all\b))|"
    r"\bnot happening\b|\bcalled (?:it )?off\b|\bfell through\b|\bforget (?:the|about the)\b|\bnever ?mind\b|"
    r"\b(?:that|it|this|the test|the results?) (?:was|were) wrong\b|\bactually (?:is|are|was|were)n't\b|"
    r"\bactually not\b",
    re.I,
))
# a plan called off, said in a sentence that changes nothing else ("moved to Mia's, the AC at Jake's is off"
# is a change, not a retraction)
_CALLED_OFF = lazy(r"(?i)\b(?:is|are|'s|got) (?:off|cancell?ed|called off|scrapped)\b|(?:取消|泡汤)了")
_CHANGE = lazy(r"(?i)\b(?:moved?|moving|changed?|switched|instead|rescheduled|postponed)\b|改到|改成|挪到|换成|改在|改去|换去|改飞")
_ZH_RETRACT = lazy(
    r"不再|已经不|(?:我|他|她|已经)不.{1,6}了|已经没有.{0,6}了|其实不是|其实没有|说错了|不是真的|"
    r"(?:取消|泡汤)了|不(?:去|搬|办|弄|做)了"
)


def _retraction_near(sentence: str, end: int, cjk: bool) -> bool:
    """English puts the retraction after the value ("live in Paris anymore"); Chinese puts it before."""
    if cjk:
        return False
    tail = re.split(r"[,;.!?]", sentence[end:], maxsplit=1)[0]
    return bool(re.search(r"\b(anymore|any more|no longer)\b", tail, re.I))


# the speaker's own habit or pursuit changed: "吉他学不下去了，现在改练钢琴", "I quit coffee", "switched to tea"
_ZH_CHANGED = lazy(r"改[去成到在为练用学做吃喝住回]|换[成到去]|不再|取消了|泡汤了|放弃了?|戒了|不.{1,4}了")
_EN_CHANGED = screened(lazy(r"(?i)\b(?:quit|quitting|switched|gave up|given up|no longer|anymore|any more)\b"))


_INSTEAD_OF = screened(lazy(
    r"(?i)\b(?:instead of|rather than|in place of)\s+(?P<x>[^.,;:!?()]{2,60}?)"
    r"(?=\s+(?:now|again|anymore|these days|from now on|lately|today|tonight|this \w+|for \w+)\b|[.,;:!?()]|$)"
))


def instead_of(sentence: str) -> str:
    """What a statement says it replaces ("I'd rather do Klara instead of The Remains of the Day" -> "The
    Remains of the Day"; a correction's old value, :func:`language.extract.corrections.corrected_value`), or ""."""
    m = _INSTEAD_OF.search(sentence)
    return m["x"].strip() if m else corrected_value(sentence)  # "it's Delft, not Rotterdam" -> "Rotterdam"


def states_change(sentence: str) -> bool:
    """The sentence says something changed or stopped, or corrects what was said (a cue, not what changed)."""
    return (_ZH_CHANGED if has_cjk(sentence) else _EN_CHANGED).search(sentence) is not None or is_correction(sentence)


def is_retraction(sentence: str) -> bool:
    """An explicit negation or correction of something said before ("I no longer…", "我不再…", "actually no",
    "Porto is off", "泡汤了") — a plan called off only in a sentence that changes nothing else."""
    m = (_ZH_RETRACT if has_cjk(sentence) else _EN_RETRACT).search(sentence)
    if m is None or corrected_value(sentence):  # "说错了，是周日不是周六" states Sunday: a change
        return False
    return not (_CALLED_OFF.fullmatch(m.group(0).strip()) and _CHANGE.search(sentence))


_CANCELLED = lazy(r"(?i)\b(?:cancell?(?:ed|ing)?|called (?:it )?off|is off|are off|scrapped|not happening)\b|取消|泡汤|不去了")


def is_called_off(sentence: str) -> bool:
    """The sentence calls a plan off ("I cancelled it", "the trip is off", "聚餐取消了")."""
    return _CANCELLED.search(sentence) is not None


def states_replacement(sentence: str) -> bool:
    """The sentence says something changed or what it replaces ("… instead of X"): a new version of an old
    statement, not just more detail about it."""
    return states_change(sentence) or bool(instead_of(sentence))
