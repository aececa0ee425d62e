"""Rule tables of the extractive distiller (English and Chinese) and the small pure helpers built on them.

Nothing here reads a clock or the environment: relative dates are resolved against the message's own
timestamp, so the same topic always distils to the same facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from functools import lru_cache

import rjieba
from dateutil.relativedelta import relativedelta

from retrieval.text import ENGLISH_STOPWORDS, has_cjk

__all__ = [
    "DateMention",
    "MULTI_VALUED",
    "SlotMatch",
    "annotate_dates",
    "cjk_tags",
    "find_dates",
    "find_slots",
    "find_time",
    "has_cjk",
    "is_filler",
    "is_question",
    "split_sentences",
    "to_third_person",
]

# ----------------------------------------------------------------------------------------------- sentences

_ABBREV = ("mr.", "mrs.", "ms.", "dr.", "st.", "e.g.", "i.e.", "vs.", "etc.", "jr.", "sr.", "prof.")
_SPLIT_RE = re.compile(r"(?<=[。！？；\n])|(?<=[!?;！？])\s*|(?<=\.)\s+|(?<=[~～])\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences of a chat message: split on CJK and Latin enders, abbreviations and ``?!`` runs kept whole."""
    out: list[str] = []
    for piece in _SPLIT_RE.split(text.replace("\u2019", "'")):
        piece = piece.strip()
        if not piece:
            continue
        if out and (not re.search(r"\w", piece) or out[-1].lower().rsplit(None, 1)[-1] in _ABBREV):
            out[-1] = f"{out[-1]} {piece}" if re.search(r"\w", piece) else out[-1] + piece
        else:
            out.append(piece)
    return out


# ----------------------------------------------------------------------------------- fillers and questions

_EN_FILLER_PHRASES = re.compile(
    r"\b(good (morning|night|evening|afternoon)|good to (see|hear from) you|nice to (see|meet) you|"
    r"thank(s| you)( so much| a lot)?|see (you|ya)( later| soon)?|talk (to you )?(later|soon)|take care|"
    r"sounds (good|great|fun)|no problem|no worries|got it|i see|me too|same here|that's (so )?(cool|great|"
    r"awesome|amazing|nice|wonderful|true|right)|how are you|how have you been|what's up|how's it going|"
    r"long time no see|you too|for sure|of course|all good|never mind|(?:i )?(?:totally |completely )?agree|"
    r"sounds like (?:a |an )?(?:great |good |fun |nice |awesome |cool |solid )?(?:plan|idea|time|blast|fun))\b",
    re.I,
)
_EN_FILLER_WORDS = frozenset(
    """hi hello hey heya yo hiya thanks thx ty ok okay k kk sure cool nice great awesome lol lmao rofl haha
    hahaha hehe yes yeah yep yup no nope bye goodbye night morning wow oh ah ahh aw aww hmm um uh right
    congrats congratulations welcome omg amazing wonderful fantastic perfect indeed totally absolutely
    exactly agreed true so really very much too the a and it that this is was just good glad happy love
    lovely yay woo cheers alright fine well indeed definitely""".split()
)
_ZH_FILLERS = tuple(
    "你好 您好 哈喽 嗨 哈 嘿 嗯 哦 噢 啊 呀 好的 好吧 好 行 可以 收到 谢谢 多谢 感谢 拜拜 再见 晚安 早上好 早安 早 对 对的 "
    "是的 没问题 了解 明白 在吗 在的 厉害 牛 太棒了 不错 赞 辛苦了 OK ok 嗯嗯 666 有道理 原来如此 真的吗 是吗 哇 天哪 好呀 "
    "好滴 没事 不客气 恭喜 哈哈".split()
)
_ZH_FILLER_RE = re.compile(
    "^(?:" + "|".join(sorted(map(re.escape, _ZH_FILLERS), key=len, reverse=True)) + ")+$"
)
_WORD_RE = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|\d+")


def is_filler(sentence: str, names: frozenset[str] = frozenset(), *, answer: bool = False) -> bool:
    """Greetings, thanks, acknowledgements and one-word reactions carry nothing worth remembering.

    ``answer=True`` keeps one-word replies that may carry a value ("Hangzhou!", "杭州").
    """
    bare = re.sub(r"[\s\W_]+", "", sentence)
    if not bare:
        return True
    if has_cjk(sentence):
        for name in names:
            bare = bare.replace(name, "")
        return not bare or bool(_ZH_FILLER_RE.match(bare)) or (len(bare) <= 2 and not answer)
    text = _EN_FILLER_PHRASES.sub(" ", sentence)
    lowered_names = {n.lower() for n in names} | {n.lower().split()[0] for n in names if n.strip()}
    words = [w.lower() for w in _WORD_RE.findall(text)]
    rest = [w for w in words if w not in _EN_FILLER_WORDS and w not in lowered_names and len(w) > 1]
    # Short vocatives such as "Hey Mel!" keep one unknown word (a nickname): still a filler.
    return not rest or (len(rest) == 1 and len(words) <= 3 and not rest[0].isdigit() and not answer)


_EN_Q_START = re.compile(
    r"^(what|where|when|who|whom|whose|why|how|which|do|does|did|are|is|was|were|can|could|would|will|"
    r"have|has|had|should|shall|may|any|anything)\b",
    re.I,
)
_ZH_Q_RE = re.compile(
    r"(吗|么|呢|吧)[~～。！!]*$|什么|怎么|哪|几[个点天岁号]|谁|多少|是不是|有没有|要不要|能不能|会不会"
)
_SMALL_TALK_Q = re.compile(
    r"^(how are you|how have you been|how('s| is) it going|what's up|what's new|anything new|you\??$|"
    r"and you|right|really|isn't it|don't you think|huh|what about you|how about you|how was your day|"
    r"是吗|真的吗|在吗|你好吗|对吧|对不对|你呢|好不好)",
    re.I,
)


def is_question(sentence: str) -> bool:
    s = sentence.strip()
    if s.endswith(("?", "？")):
        return True
    if has_cjk(s):
        return bool(_ZH_Q_RE.search(s)) and not s.endswith(("。", "！", "!"))
    return bool(_EN_Q_START.match(s)) and len(s.split()) <= 12 and not s.endswith(("!", "."))


def is_small_talk_question(sentence: str) -> bool:
    return bool(_SMALL_TALK_Q.match(sentence.strip().lstrip("@").strip()))


# ----------------------------------------------------------------------------------------------- jieba tags


@lru_cache(maxsize=4096)
def cjk_tags(text: str) -> tuple[tuple[str, str], ...]:
    """jieba (word, POS) pairs of ``text``; cached because summary, facts and entities re-tag sentences."""
    return tuple(rjieba.tag(text))


# ------------------------------------------------------------------------------------------ relative dates

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = tuple(
    "january february march april may june july august september october november december".split()
)
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 5}
_NUMBER_WORDS = dict(
    zip(
        "a an one two three four five six seven eight nine ten eleven twelve 一 两 二 三 四 五 六 七 八 九 十 几".split(),
        [1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 3],
        strict=True,
    )
) | {"a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3}
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11), "winter": (12, 2)}
_EN_NUM = r"(?P<n>\d+|a couple of|a couple|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_ZH_NUM = r"(?P<n>\d+|[一两二三四五六七八九十几])"
_WD = "|".join(_WEEKDAYS)
_EN_FUTURE = re.compile(r"\b(will|'ll|going to|gonna|plan|planning|next|tomorrow|shall|upcoming)\b", re.I)
_ZH_FUTURE = re.compile(r"要|会|打算|准备|计划|将|下周|明天")


@dataclass(frozen=True)
class DateMention:
    """A date expression found in a sentence, resolved against the message time."""

    start: int
    end: int
    day: date
    grain: str  # day | week | weekend | month | year | season | absolute
    approx: bool = False
    season: str | None = None

    def label(self, cjk: bool) -> str | None:
        d = self.day
        if self.grain == "absolute":
            return None
        if cjk:
            return {
                "day": f"({'约' if self.approx else ''}{d.isoformat()})",
                "week": f"({d.isoformat()}当周)",
                "weekend": f"({d.isoformat()}周末)",
                "month": f"({d.year}年{d.month}月)",
                "year": f"({d.year}年)",
                "season": f"({d.year}年{self.season})",
            }[self.grain]
        return {
            "day": f"({'around' if self.approx else 'on'} {d.isoformat()})",
            "week": f"(week of {d.isoformat()})",
            "weekend": f"(weekend of {d.isoformat()})",
            "month": f"(in {_MONTHS[d.month - 1].title()} {d.year})",
            "year": f"(in {d.year})",
            "season": f"(in {self.season} {d.year})",
        }[self.grain]


def _week_start(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _en_weekday(which: str, wd: int, ref: date, sentence: str) -> date | None:
    if which in ("last", "past"):
        return ref - timedelta(days=(ref.weekday() - wd) % 7 or 7)
    if which == "this":
        return _week_start(ref) + timedelta(days=wd)
    if which == "next":
        return _week_start(ref) + timedelta(days=7 + wd)
    if which == "coming":
        return ref + timedelta(days=(wd - ref.weekday()) % 7 or 7)
    # Bare "on Friday": only with a clear tense cue.
    if _EN_FUTURE.search(sentence):
        return ref + timedelta(days=(wd - ref.weekday()) % 7 or 7)
    if re.search(r"\b(went|was|were|did|had|got|saw|met|took|came|made|\w+ed)\b", sentence, re.I):
        return ref - timedelta(days=(ref.weekday() - wd) % 7 or 7)
    return None


def _shift(which: str) -> int:
    return {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1, "coming": 1}[which]


def _season_start(season: str, year: int) -> date:
    return date(year, _SEASONS[season][0], 1)


def _en_season(which: str, season: str, ref: date) -> date:
    start_this = _season_start(season, ref.year)
    if which in ("last", "past"):
        end_m = _SEASONS[season][1]
        # The most recent season of that name that has ended before the reference date.
        year = ref.year if (ref.month > end_m and season != "winter") else ref.year - 1
        return _season_start(season, year)
    if which == "next":
        return start_this if ref < start_this else _season_start(season, ref.year + 1)
    return start_this


def _num(token: str) -> int:
    token = token.lower().strip()
    return int(token) if token.isdigit() else _NUMBER_WORDS.get(token, 1)


_EN_DATE_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(the )?day before yesterday\b", re.I), "d-2"),
    (re.compile(r"\b(the )?day after tomorrow\b", re.I), "d+2"),
    (re.compile(r"\b(yesterday|last night)\b", re.I), "d-1"),
    (re.compile(r"\b(today|tonight|this (morning|afternoon|evening))\b", re.I), "d+0"),
    (re.compile(r"\btomorrow\b", re.I), "d+1"),
    (re.compile(rf"\b(?P<w>last|this|next|coming|past) (?P<wd>{_WD})\b", re.I), "weekday"),
    (re.compile(r"\b(?P<w>last|this|next|coming|past) weekend\b", re.I), "weekend"),
    (re.compile(r"\b(?P<w>last|this|next|coming|past|previous) (?P<unit>week|month|year)\b", re.I), "unit"),
    (
        re.compile(r"\b(?P<w>last|this|next|past) (?P<season>spring|summer|fall|autumn|winter)\b", re.I),
        "season",
    ),
    (re.compile(rf"\b{_EN_NUM} (?P<unit>day|week|month|year)s? ago\b", re.I), "ago"),
    (re.compile(rf"\bin {_EN_NUM} (?P<unit>day|week|month|year)s?\b", re.I), "in"),
    (re.compile(rf"\b(?:on )?(?P<wd>{_WD})\b", re.I), "bare_weekday"),
]
_ZH_DATE_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"大前天"), "d-3"),
    (re.compile(r"大后天"), "d+3"),
    (re.compile(r"前天"), "d-2"),
    (re.compile(r"后天"), "d+2"),
    (re.compile(r"昨天|昨日|昨晚|昨儿"), "d-1"),
    (re.compile(r"今天|今日|今晚|今早|今儿"), "d+0"),
    (re.compile(r"明天|明日|明晚|明早|明儿"), "d+1"),
    (
        re.compile(r"(?P<w>上上|上|下下|下|这|本)个?(?:周|星期|礼拜)(?P<wd>[一二三四五六日天末])"),
        "zh_weekday",
    ),
    (re.compile(r"(?P<w>上上|上|下下|下|这|本)个?(?:周|星期|礼拜)"), "zh_week"),
    (re.compile(r"(?P<w>上上|上|下下|下|这|本)个月"), "zh_month"),
    (re.compile(r"(?P<y>前|去|今|明|后)年"), "zh_year"),
    (
        re.compile(rf"{_ZH_NUM}(?P<unit>天|周|个星期|个礼拜|个月|年)(?P<dir>前|以前|之前|后|以后|之后)"),
        "zh_offset",
    ),
    (re.compile(r"(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])"), "zh_bare_weekday"),
]
_ABSOLUTE_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?P<y>(?:19|20)\d{2})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"), "iso"),
    (re.compile(r"(?:(?P<y>(?:19|20)\d{2})年)?(?P<m>\d{1,2})月(?P<d>\d{1,2})[日号]"), "iso"),
    (
        re.compile(
            rf"\b(?P<mon>{'|'.join(_MONTHS)})\.? (?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?:,? (?P<y>(?:19|20)\d{{2}}))?\b",
            re.I,
        ),
        "md",
    ),
    (
        re.compile(
            rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)? (?:of )?(?P<mon>{'|'.join(_MONTHS)})(?:,? (?P<y>(?:19|20)\d{{2}}))?\b",
            re.I,
        ),
        "md",
    ),
]
_ZH_OFFSET_UNIT = {
    "天": "day",
    "周": "week",
    "个星期": "week",
    "个礼拜": "week",
    "个月": "month",
    "年": "year",
}
_ZH_SHIFT = {"上上": -2, "上": -1, "下下": 2, "下": 1, "这": 0, "本": 0}
_ZH_YEAR = {"前": -2, "去": -1, "今": 0, "明": 1, "后": 2}


def _resolve(kind: str, m: re.Match[str], ref: date, sentence: str) -> tuple[date, str, bool] | None:
    g = m.groupdict()
    if kind.startswith("d") and kind[1] in "+-":
        return ref + timedelta(days=int(kind[1:])), "day", False
    if kind == "weekday":
        return _en_weekday(g["w"].lower(), _WEEKDAYS.index(g["wd"].lower()), ref, sentence), "day", False
    if kind == "bare_weekday":
        day = _en_weekday("", _WEEKDAYS.index(g["wd"].lower()), ref, sentence)
        return (day, "day", False) if day else None
    if kind == "weekend":
        which = g["w"].lower()
        offset = -2 if which in ("last", "past") else 5 + 7 * _shift(which)
        return _week_start(ref) + timedelta(days=offset), "weekend", False
    if kind == "unit":
        unit, k = g["unit"].lower(), _shift(g["w"].lower())
        if unit == "week":
            return _week_start(ref) + timedelta(days=7 * k), "week", False
        if unit == "month":
            return ref.replace(day=1) + relativedelta(months=k), "month", False
        return date(ref.year + k, 1, 1), "year", False
    if kind == "season":
        return _en_season(g["w"].lower(), g["season"].lower(), ref), "season", False
    if kind in ("ago", "in", "zh_offset"):
        n = _num(g["n"])
        unit = _ZH_OFFSET_UNIT[g["unit"]] if kind == "zh_offset" else g["unit"].lower()
        sign = -1 if kind == "ago" or (kind == "zh_offset" and "前" in g["dir"]) else 1
        if unit in ("day", "week"):
            approx = unit == "week" or g["n"].lower() in ("a few", "few", "several", "几")
            return ref + timedelta(days=sign * n * (7 if unit == "week" else 1)), "day", approx
        if unit == "month":
            return ref.replace(day=1) + relativedelta(months=sign * n), "month", False
        return date(ref.year + sign * n, 1, 1), "year", False
    if kind == "zh_weekday":
        k = _ZH_SHIFT[g["w"]]
        if g["wd"] == "末":
            return _week_start(ref) + timedelta(days=5 + 7 * k), "weekend", False
        return _week_start(ref) + timedelta(days=7 * k + _ZH_WEEKDAY[g["wd"]]), "day", False
    if kind == "zh_week":
        return _week_start(ref) + timedelta(days=7 * _ZH_SHIFT[g["w"]]), "week", False
    if kind == "zh_month":
        return ref.replace(day=1) + relativedelta(months=_ZH_SHIFT[g["w"]]), "month", False
    if kind == "zh_year":
        return date(ref.year + _ZH_YEAR[g["y"]], 1, 1), "year", False
    if kind == "zh_bare_weekday":
        wd = _ZH_WEEKDAY[g["wd"]]
        if _ZH_FUTURE.search(sentence):
            return ref + timedelta(days=(wd - ref.weekday()) % 7 or 7), "day", False
        if "了" in sentence or "过" in sentence:
            return ref - timedelta(days=(ref.weekday() - wd) % 7 or 7), "day", False
        return None
    return _resolve_absolute(g, ref)


def _resolve_absolute(g: dict[str, str | None], ref: date) -> tuple[date, str, bool] | None:
    month = _MONTHS.index(g["mon"].lower()) + 1 if g.get("mon") else int(g["m"] or 0)
    try:
        return date(int(g["y"] or ref.year), month, int(g["d"] or 0)), "absolute", False
    except ValueError:
        return None


def find_dates(sentence: str, ref: datetime) -> list[DateMention]:
    """Relative and absolute date expressions of ``sentence``, resolved against ``ref`` (the message time)."""
    ref_day = ref.date()
    rules = (_ZH_DATE_RULES if has_cjk(sentence) else []) + _EN_DATE_RULES + _ABSOLUTE_RULES
    found: list[DateMention] = []
    taken: list[tuple[int, int]] = []
    for pattern, kind in rules:
        for m in pattern.finditer(sentence):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            resolved = (
                _resolve(kind, m, ref_day, sentence)
                if kind not in ("iso", "md")
                else _resolve_absolute(m.groupdict(), ref_day)
            )
            if resolved is None:
                continue
            day, grain, approx = resolved
            season = m.group("season").lower() if "season" in m.groupdict() and m.group("season") else None
            if kind == "season" and season:
                grain = "season"
            found.append(DateMention(m.start(), m.end(), day, grain, approx, season))
            taken.append((m.start(), m.end()))
    return sorted(found, key=lambda d: d.start)


def annotate_dates(sentence: str, mentions: list[DateMention]) -> str:
    """``sentence`` with the absolute date inserted after each relative expression: ``yesterday (on 2023-05-07)``."""
    cjk = has_cjk(sentence)
    out = sentence
    for mention in sorted(mentions, key=lambda d: d.end, reverse=True):
        label = mention.label(cjk)
        if label:
            end = mention.end + (2 if out[mention.end : mention.end + 2] == "'s" else 0)
            out = f"{out[:end]}{label if cjk else ' ' + label}{out[end:]}"
    return out


_EN_TIME = re.compile(
    r"\b(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ap>am|pm|a\.m\.|p\.m\.)|\bat (?P<h2>\d{1,2}):(?P<m2>\d{2})\b",
    re.I,
)
_ZH_TIME = re.compile(
    r"(?P<p>上午|早上|中午|下午|晚上|傍晚)?(?P<h>\d{1,2}|[一二三四五六七八九十]{1,3})[点:：](?P<half>半)?(?:(?P<m>\d{1,2})分?)?"
)


def find_time(sentence: str) -> time | None:
    """A clock time mentioned in ``sentence`` (``3pm``, ``at 14:30``, ``下午3点``), if any."""
    m = _EN_TIME.search(sentence)
    if m:
        hour, minute = int(m.group("h") or m.group("h2")), int(m.group("m") or m.group("m2") or 0)
        ap = (m.group("ap") or "").lower().replace(".", "")
        hour = hour % 12 + (12 if ap == "pm" else 0) if ap else hour
        return time(hour % 24, minute % 60)
    m = _ZH_TIME.search(sentence)
    if m:
        raw = m.group("h")
        hour = int(raw) if raw.isdigit() else _zh_int(raw)
        if m.group("p") in ("下午", "晚上", "傍晚") and hour < 12:
            hour += 12
        minute = 30 if m.group("half") else int(m.group("m") or 0)
        return time(hour % 24, minute % 60)
    return None


def _zh_int(raw: str) -> int:
    if raw == "十":
        return 10
    if raw.startswith("十"):
        return 10 + _NUMBER_WORDS.get(raw[1:], 0)
    if "十" in raw:
        tens, _, ones = raw.partition("十")
        return _NUMBER_WORDS.get(tens, 1) * 10 + _NUMBER_WORDS.get(ones, 0)
    return _NUMBER_WORDS.get(raw, 0)


# ------------------------------------------------------------------------------ first person -> third person

_ADVERBS = frozenset(
    """really also just still usually often always never actually finally recently totally definitely already
    sometimes absolutely truly honestly seriously even only mostly generally now currently probably certainly
    personally mainly kinda literally basically officially no longer""".split()
)
_IRREGULAR_PAST = frozenset(
    """was were went got saw made took had came found gave knew thought felt left met ran said told bought
    brought began became wrote won lost kept sent spent built taught caught fell held heard paid sold stood
    understood drove ate drank swam sang flew grew drew chose spoke broke forgot woke wore did put set cut let
    hit quit hurt read slept meant sat lit led fed fought sought shot shut spread struck swept threw tore
    won't wouldn't can't couldn't shouldn't didn't wasn't weren't hadn't mightn't must might may can could
    would should will shall ought used need""".split()
)
# fmt: off
_THIRD_PERSON = {"am": "is", "'m": "is", "are": "is", "have": "has", "do": "does", "don't": "doesn't",
                 "haven't": "hasn't", "go": "goes", "aren't": "isn't", "wanna": "wants to", "gonna": "is gonna",
                 "gotta": "has to"}
_MODALS = frozenset("must might may can could would should will shall ought used need won't wouldn't can't couldn't "
                    "shouldn't didn't wasn't weren't hadn't mightn't put set cut let hit read".split())
# fmt: on
_INVERTERS = frozenset(
    "can could would will do did does should may might must shall let make made help".split()
)
_CONJUNCTIONS = frozenset("and but so or because since when if that while although though then".split())


def conjugate(word: str) -> str:
    """Third-person-singular present of a verb that followed ``I``; past forms and modals unchanged."""
    low = word.lower()
    if low in _THIRD_PERSON:
        return _THIRD_PERSON[low]
    if (
        not low.isalpha()
        or low in _IRREGULAR_PAST
        or low.endswith("ed")
        or low in _CONJUNCTIONS
        or low in ("to", "and", "too", "myself", "alone", "both", "all")
        or word[0].isupper()
    ):
        return word
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return word + "es"
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


_TOKEN_RE = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|\s+|.", re.S)
# fmt: off
_DROPPED_SUBJECT = {  # first word of a subject-less chat line -> how to restore the subject
    **{w: "{s} " + w for w in "just went got had took made started finished moved tried bought visited saw met can't "
       "wanted needed loved".split()},
    **{w: "{s} is " + w for w in "gonna going thinking planning hoping trying working heading feeling looking getting "
       "researching reading watching learning studying preparing waiting packing cooking writing doing having "
       "finishing starting moving building training practicing practising traveling travelling visiting "
       "saving applying interviewing recovering".split()},
    "been": "{s} has been", "love": "{s} loves", "hope": "{s} hopes", "think": "{s} thinks", "want": "{s} wants",
    "need": "{s} needs", "was": "{s} was", "am": "{s} is", "feel": "{s} feels", "felt": "{s} felt",
    "did": "{s} did", "didn't": "{s} didn't", "won't": "{s} won't", "don't": "{s} doesn't", "gotta": "{s} has gotta",
}
# fmt: on
_ED_ADJECTIVES = frozenset(
    "excited thrilled stoked pleased tired bored scared worried interested amazed exhausted relieved "
    "delighted surprised shocked stressed overwhelmed inspired motivated blessed".split()
)
_FINITE_RE = re.compile(
    r"(?i)\b(?:is|are|was|were|has|have|had|does|do|did|can|will|would|makes|helps|looks|seems)\b|'s\b"
)


@dataclass(frozen=True)
class Rewrite:
    text: str
    first_person: bool
    second_person_subject: bool


def to_third_person(sentence: str, speaker: str, addressee: str | None = None) -> Rewrite:
    """Rewrite a sentence so it stands alone: ``I moved`` -> ``Alice moved``, ``my cat`` -> ``Alice's cat``.

    ``you``/``your`` become the addressee when one is known; ``我`` becomes the speaker for Chinese.
    """
    if has_cjk(sentence):
        return _zh_third_person(sentence, speaker, addressee)
    tokens = _TOKEN_RE.findall(sentence)
    out: list[str] = []
    first = second = False
    conj_next = False
    words_seen = 0
    for i, tok in enumerate(tokens):
        low = tok.lower()
        if tok.isspace() or not tok[0].isalpha():
            out.append(tok)
            if not tok.isspace():
                conj_next = False
            continue
        at_start = words_seen == 0 or (out and _prev_word(out) in _CONJUNCTIONS) or _after_punct(out)
        words_seen += 1
        if conj_next and _prev_word(out[:-2]) in _INVERTERS:
            conj_next = False  # "What can I say" -> "What can Alice say"
        if conj_next:
            if low in _ADVERBS:
                out.append(tok)
                continue
            out.append(conjugate(tok))
            conj_next = False
            continue
        hyphenated = i + 1 < len(tokens) and tokens[i + 1] == "-"  # "me-time" stays
        repl, conj, is_first, is_second = (
            (None, False, False, False)
            if hyphenated
            else _en_pronoun(low, tok, speaker, addressee, at_start, tokens, i)
        )
        if repl is None and words_seen == 1 and not _has_subject_pronoun(tokens):
            repl = _dropped_subject(low, sentence, speaker)
            is_first = repl is not None
        out.append(tok if repl is None else repl)
        conj_next = conj
        first = first or is_first
        second = second or is_second
    return Rewrite("".join(out), first, second)


def _dropped_subject(first: str, sentence: str, speaker: str) -> str | None:
    """Chat drops the subject: ``Gonna continue my edu`` -> ``Alice is gonna continue…``."""
    if first.endswith("ing") and first in _DROPPED_SUBJECT:
        head = re.split(r"[,;:\u2014\u2013]| - ", sentence, maxsplit=1)[0]
        # a gerund subject has a finite verb of its own: "Taking care of ourselves is vital"
        return None if _FINITE_RE.search(head) else _DROPPED_SUBJECT[first].format(s=speaker)
    if first in _DROPPED_SUBJECT:
        return _DROPPED_SUBJECT[first].format(s=speaker)
    if first in _ED_ADJECTIVES:
        return f"{speaker} is {first}"
    if (first.endswith("ed") and len(first) > 4) or (first in _IRREGULAR_PAST and first not in _MODALS):
        return f"{speaker} {first}"  # "Lost my job yesterday" -> "Alice lost…"
    return None


def _prev_word(out: list[str]) -> str:
    for tok in reversed(out):
        if not tok.isspace():
            return tok.lower()
    return ""


def _after_punct(out: list[str]) -> bool:
    prev = _prev_word(out)
    return bool(prev) and not prev[0].isalnum()


def _has_subject_pronoun(tokens: list[str]) -> bool:
    return any(
        t.lower() in ("i", "i'm", "i've", "i'd", "i'll", "we", "you", "he", "she", "they", "it")
        for t in tokens[:6]
    )


def _next_word(tokens: list[str], i: int) -> str:
    for tok in tokens[i + 1 :]:
        if tok.isspace():
            continue
        return tok.lower()
    return ""


def _en_pronoun(
    low: str, tok: str, speaker: str, addressee: str | None, at_start: bool, tokens: list[str], i: int
) -> tuple[str | None, bool, bool, bool]:
    """(replacement, conjugate-next-verb, first-person, second-person-subject) for one token."""
    we = f"{speaker} and others"
    table = {
        "i": (speaker, True),
        "i'm": (f"{speaker} is", False),
        "i've": (f"{speaker} has", False),
        "i'll": (f"{speaker} will", False),
        "me": (speaker, False),
        "my": (f"{speaker}'s", False),
        "mine": (f"{speaker}'s", False),
        "myself": ("themselves", False),
        "we": (we, False),
        "we're": (f"{we} are", False),
        "we've": (f"{we} have", False),
        "we'll": (f"{we} will", False),
        "we'd": (f"{we} would", False),
        "us": (we, False),
        "our": (f"{speaker}'s", False),
        "ours": (f"{speaker}'s", False),
        "ourselves": ("themselves", False),
    }
    if low == "i'd":
        had = _next_word(tokens, i) in ("been", "never", "already") or _next_word(tokens, i).endswith("ed")
        return (f"{speaker} {'had' if had else 'would'}", False, True, False)
    if low in table:
        repl, conj = table[low]
        return repl, conj, True, False
    if addressee is None:
        return None, False, False, False
    if low in ("your", "yours"):
        return f"{addressee}'s", False, False, False
    second = {"you're": "is", "you've": "has", "you'll": "will", "you'd": "would", "you were": "was"}
    if low in second:
        return f"{addressee} {second[low]}", False, False, at_start
    if low == "yourself":
        return addressee, False, False, False
    if low == "you":
        nxt = _next_word(tokens, i)
        if nxt in ("guys", "all", "both", "two"):
            return None, False, False, False
        if at_start and nxt == "were":
            return addressee, False, False, True
        return addressee, at_start, False, at_start
    return None, False, False, False


_ZH_DROP_TAGS = ("v", "d", "t")


def _zh_third_person(sentence: str, speaker: str, addressee: str | None) -> Rewrite:
    first = "我" in sentence or "咱" in sentence
    text = re.sub(r"我们|咱们|咱", f"{speaker}他们", sentence)
    text = text.replace("我", speaker)
    second = False
    if addressee:
        second = bool(re.match(r"^[，,\s]*(?:你|您)(?!们)", text))
        text = re.sub(r"(?:你|您)(?!们|好)", addressee, text)
    if not first and not second:
        tags = [t for t in cjk_tags(text) if t[1] != "x"]
        starts_with_verb = bool(tags) and (
            tags[0][1].startswith("v")
            or (tags[0][1] in _ZH_DROP_TAGS and len(tags) > 1 and tags[1][1].startswith(("v", "d", "p")))
            or (
                tags[0][0] in ("在", "从", "跟", "和", "给", "刚", "正在")
                and any(t[1].startswith("v") for t in tags[1:4])
            )
        )
        if starts_with_verb and not tags[0][0].startswith(("是", "有")):
            return Rewrite(speaker + text, True, False)
    return Rewrite(text, first, second)


# ------------------------------------------------------------------------------------------------- slots

MULTI_VALUED = frozenset(
    {"likes", "dislikes", "hobby", "pet", "visited", "owns", "child", "sibling", "friend"}
)
"""Slots a person can hold several values of at once: a new value is added, never a replacement."""

_PLACE = r"(?P<v>(?:the )?[A-Z][\w'.&-]*(?:[ -](?:of |de |da |do |la |le |upon |and )?[A-Z][\w'.&-]*){0,4})"
_PHRASE = r"(?P<v>[\w'&-]+(?: [\w'&-]+){0,5}?)(?=\s*(?:[,.;:!?)]|\band\b|\bbut\b|\bbecause\b|\bsince\b|\bso\b|\bnow\b|\banymore\b|\bany more\b|\bthese days\b|\bwith\b|$))"
_NAME = r"(?P<v>[A-Z][\w'-]*(?: [A-Z][\w'-]*)?)"
_PETS = r"(?P<pet>cat|dog|kitten|puppy|pet|bird|parrot|hamster|rabbit|bunny|fish|turtle|horse|guinea pig|snake|lizard)"
_JOBS = (
    r"(?:teacher|engineer|developer|programmer|designer|doctor|nurse|lawyer|student|counselor|counsellor|"
    r"therapist|artist|painter|writer|author|musician|singer|actor|actress|manager|accountant|chef|cook|"
    r"driver|pilot|scientist|researcher|professor|consultant|analyst|architect|photographer|journalist|"
    r"dentist|pharmacist|firefighter|police officer|officer|soldier|farmer|mechanic|electrician|plumber|"
    r"entrepreneur|founder|ceo|cto|intern|freelancer|barista|waiter|waitress|cashier|librarian|"
    r"social worker|veterinarian|vet|dancer|coach|athlete|programmer|data scientist|product manager)"
)
_ZH_TERM = r"(?=[了啦呢啊吧哦呀嘛的，。！？、,.!?;；~～\s]|$|工作|上班|住|去|读|念|上学)"
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
    return SlotRule(attr, re.compile(pattern), **kw)  # type: ignore[arg-type]


def _zh(attr: str, pattern: str, **kw: object) -> SlotRule:
    return SlotRule(attr, re.compile(pattern), **kw)  # type: ignore[arg-type]


EN_SLOTS: tuple[SlotRule, ...] = (
    _en("lives_in", rf"\b(?i:(?:liv(?:e|es|ing)|resid(?:e|es|ing)) in) {_PLACE}"),
    _en("lives_in", rf"\b(?i:(?:mov(?:ed|ing|e)|relocat(?:ed|ing|e)) (?:back )?to) {_PLACE}"),
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
        rf"\b(?i:my {_PETS}(?:'s name is| is named| is called| named| called)) {_NAME}",
        subject_in_pattern=True,
    ),
    _en("pet_name", rf"\b(?i:have an? (?:new )?{_PETS} (?:named|called)) {_NAME}"),
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
    _en("hometown", rf"\b(?i:grew up in) {_PLACE}"),
)

ZH_SLOTS: tuple[SlotRule, ...] = (
    _zh(
        "lives_in",
        rf"(?:住在|住(?![院宿手口嘴])|搬到了?|搬去了?|搬家到|搬回了?|定居在?|家在){_ZH_VAL}{_ZH_TERM}",
    ),
    _zh("lives_in", rf"(?:搬离了?|搬出了?){_ZH_VAL}{_ZH_TERM}", negated=True),
    _zh("works_at", rf"(?<![现正存实])在{_ZH_VAL}(?:工作|上班|任职|实习)"),
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
    _zh("age", r"(?:今年)?(?P<v>\d{1,3})岁"),
    _zh("birthday", r"生日(?:是|在)?(?P<v>\d{1,2}月\d{1,2}[日号])"),
    _zh("school", rf"(?<![现正存实])在{_ZH_VAL}(?:上学|读书|读研|读博|念书|上大学|读大学)"),
    _zh("school", rf"(?:毕业于|毕业自|考上了?){_ZH_VAL}{_ZH_TERM}"),
    _zh("phone", r"(?:手机号码?|电话号码?|手机)(?:是|：|:)?(?P<v>\+?\d[\d\- ]{5,}\d)"),
    _zh("relationship", r"(?P<v>结婚|订婚|离婚|单身|脱单)了?"),
    _zh("relationship", r"分手了?", value="单身"),
    _zh("hometown", rf"(?:老家|家乡)(?:在|是){_ZH_VAL}{_ZH_TERM}"),
)
_ZH_PET = {"猫咪": "猫", "小猫": "猫", "狗狗": "狗", "小狗": "狗"}
_RELATION_WORDS = (
    "wife husband partner boyfriend girlfriend sister brother mom mother dad father son daughter friend kid kids "
    "child children cousin aunt uncle grandma grandpa grandmother grandfather fiance fiancee roommate boss "
    "colleague coworker neighbor"
).split()
_ZH_RELATIONS = (
    "老婆|老公|妻子|丈夫|女朋友|男朋友|对象|妈妈|妈|爸爸|爸|儿子|女儿|哥哥|姐姐|弟弟|妹妹|朋友|室友|同事|老板"
)
_EN_STRIP = frozenset(
    """am is are was were 'm 's 've 're have has had will 'll would 'd be been being just now currently recently
    also still finally actually already really ever officially soon gonna going to want wanna plan planning
    hope hoping trying decided and then""".split()
)
_EN_NEG = frozenset(
    "not never no longer don't doesn't didn't isn't aren't wasn't haven't hasn't won't can't cannot".split()
)
_ZH_STRIP = re.compile(
    r"(?:现在|目前|已经|刚刚|刚|也|还|一直|都|就|又|最近|今年|去年|上个月|下个月|明年|准备|打算|要|会|将|已|正在|"
    r"马上|终于|其实|本来|原来|之前|以前|后来|从小|打小|养了一只|养了只|养了|养的|家的|家|的|一只|只|个)$"
)
_ZH_NEG = re.compile(r"(?:不再|已经不|不|没有|没)$")
ZH_DATE_WORD = re.compile(
    r"(?:上上|上|下下|下|这|本)个?(?:周|星期|礼拜)[一二三四五六日天末]?|大?[前昨今明后]天|[去今明前后]年|(?:上|下|这)个月|"
    r"\d{1,2}月\d{1,2}[日号]?|(?:周|星期|礼拜)[一二三四五六日天]|[早晚]上|[上中下]午|刚才|今晚|昨晚|明早|\d+[天周年]前"
)
_ZH_DATE_TAIL = re.compile(f"(?:{ZH_DATE_WORD.pattern})$")


@dataclass(frozen=True)
class SlotMatch:
    attribute: str
    value: str | None
    subject: str
    negated: bool
    start: int
    end: int


def _en_subject(prefix: str, speaker: str, names: frozenset[str]) -> tuple[str | None, bool]:
    """Who the clause before a predicate is about, and whether it negates it (``I don't`` -> speaker, True)."""
    clauses = re.split(r"[,;:]|\b(?:and|but|so|because|since|when|after|before|though)\b", prefix)
    words = clauses[-1].replace("\u2019", "'").split()
    negated = False
    while words:
        low = words[-1].lower()
        if low in _EN_DESIRE:
            return None, False  # "I want to move to Paris", "I'd love to live in Rome": a wish, not a fact
        if low in _EN_NEG or low.endswith("n't") or low == "used":
            negated = True  # "I don't live in…", "I used to work at…"
        elif low not in _EN_STRIP and not low.endswith("ly"):
            break
        words.pop()
    if not words:
        if len(clauses) == 1 or re.search(r"\b(?:I|I'm|I've|we)\b", prefix):
            return (
                speaker,
                negated,
            )  # dropped subject in chat: "Moved to Berlin last month", "I went and loved it"
        return None, negated  # "…so much energy and love everywhere": a noun, not a verb
    low = words[-1].lower()
    if low in ("i'd", "we'd"):
        return None, False
    if low in ("i", "i'm", "i've", "i'll", "we", "we're", "we've", "me"):
        return speaker, negated
    if len(words) >= 2 and words[-2].lower() in ("my", "our") and low in _RELATION_WORDS:
        return f"{speaker}'s {low}", negated
    if len(words) == 1 and (words[0] in names or _looks_like_name(words[0])):
        return words[0], negated
    full = " ".join(words)
    if full in names:
        return full, negated
    return None, negated


def _looks_like_name(word: str) -> bool:
    """A capitalised clause-initial word that is probably a person ("Bob"), not "Looks" / "Their" / "It's"."""
    low = word.lower()
    return (
        word[:1].isupper()
        and word.isalpha()
        and low not in _EN_NOT_NAMES
        and low not in ENGLISH_STOPWORDS
        and not low.endswith(("s", "ing", "ed", "ly"))
    )


_EN_DESIRE = frozenset("want wanna wants wish wishes hope hoping would dream dreaming".split())
_EN_NOT_NAMES = frozenset(
    "he she they it this that there who which what the a an everyone someone nobody somebody people their "
    "love life work sounds looks seems feels anyway maybe also just still even really actually".split()
)


def _zh_subject(prefix: str, speaker: str, names: frozenset[str]) -> tuple[str | None, bool]:
    clause = re.split(r"[，,；;：:。！!？?]", prefix)[-1].strip()
    if re.search(r"想|希望|梦想|打算要", clause):
        return None, False  # a wish, not a fact
    negated = bool(re.search(r"以前|曾经|之前|原来", clause))  # "我以前在阿里工作": no longer true
    for _ in range(8):
        stripped = _ZH_STRIP.sub("", _ZH_DATE_TAIL.sub("", clause))
        neg = _ZH_NEG.sub("", stripped)
        if neg != stripped:
            negated = True
        if neg == clause:
            break
        clause = neg
    if not clause or clause in ("我", "我们", "咱们", "咱"):
        return speaker, negated
    rel = re.fullmatch(rf"(?:我|我们)(?:的|家)?({_ZH_RELATIONS})", clause)
    if rel:
        return f"{speaker}的{rel.group(1)}", negated
    if clause in names:
        return clause, negated
    tags = cjk_tags(clause)
    if len(tags) == 1 and tags[0][1] in ("nr", "nrt", "nrfg"):
        return clause, negated
    return None, negated


def find_slots(sentence: str, speaker: str, names: frozenset[str]) -> list[SlotMatch]:
    """Known attribute slots stated in ``sentence`` and whom they are about.

    When one sentence both retracts and states a value of the same slot ("I don't live in Paris anymore,
    I moved to Berlin"), only the positive statement is kept: the update supersedes the old value anyway.
    """
    cjk = has_cjk(sentence)
    found: list[SlotMatch] = []
    for rule in ZH_SLOTS if cjk else EN_SLOTS:
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


_LIKE_AS_PREPOSITION = re.compile(
    r"(?i)\b(?:is|was|are|were|'s|be|been|feel|feels|felt|look|looks|sound|sounds|seem|seems|just|more|much|kinda|"
    r"something|anything|things|stuff) like\b"
)
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
        value = re.sub(r"^(?:to |the )", "", value) if attribute in ("likes", "dislikes") else value
        if attribute in ("likes", "dislikes") and any(w.lower() in _BAD_VALUES for w in value.split()[:2]):
            return None
        if value.lower() in _BAD_VALUES:
            return None
        if cjk and len(value) < 2 and not groups.get("pet"):
            return None
    elif not rule.negated:
        return None
    if attribute in ("likes", "dislikes") and _LIKE_AS_PREPOSITION.search(sentence[: m.start() + 6]):
        return None  # "is like a way to…", "looks like fun"
    if groups.get("pet"):
        pet = _ZH_PET.get(groups["pet"], groups["pet"]).lower()
        attribute = f"pet_name:{pet}"
    if groups.get("k"):
        attribute = f"favorite_{groups['k'].lower().replace(' ', '_')}"
    if rule.subject_in_pattern:
        subject, negated = speaker, False
    elif cjk:
        subject, negated = _zh_subject(sentence[: m.start()], speaker, names)
    else:
        subject, negated = _en_subject(sentence[: m.start()], speaker, names)
    if subject is None:
        return None
    negated = negated or rule.negated or _retraction_near(sentence, m.end(), cjk)
    return SlotMatch(attribute, value, subject, negated, m.start(), m.end())


_EN_RETRACT = re.compile(
    r"\bno longer\b|(?:\bnot|n't|\bnever)\b[^.!?]{0,50}\b(?:anymore|any ?more)\b|\bactually,? no\b|\bscratch that\b|"
    r"\bthat(?:'s| is|'s not| isn't| wasn't) (?:not )?true\b|\bi was wrong\b|\bcorrection:",
    re.I,
)
_ZH_RETRACT = re.compile(
    r"不再|已经不|(?:我|他|她|已经)不.{1,6}了|已经没有.{0,6}了|其实不是|其实没有|说错了|不是真的"
)


def _retraction_near(sentence: str, end: int, cjk: bool) -> bool:
    """English puts the retraction after the value ("live in Paris anymore"); Chinese puts it before."""
    if cjk:
        return False
    tail = re.split(r"[,;.!?]", sentence[end:], maxsplit=1)[0]
    return bool(re.search(r"\b(anymore|any more|no longer)\b", tail, re.I))


def is_retraction(sentence: str) -> bool:
    """An explicit negation or correction of something said before ("I no longer…", "我不再…", "actually no")."""
    return bool((_ZH_RETRACT if has_cjk(sentence) else _EN_RETRACT).search(sentence))


# ------------------------------------------------------------------------------------------ slot sentences

# fmt: off
_EN_TEMPLATES = {  # slot -> (statement, negated statement)
    "lives_in": ("{s} lives in {v}", "{s} no longer lives in {v}"),
    "works_at": ("{s} works at {v}", "{s} no longer works at {v}"),
    "job": ("{s} works as {v}", "{s} no longer works as {v}"),
    "likes": ("{s} likes {v}", "{s} does not like {v}"),
    "dislikes": ("{s} dislikes {v}", "{s} no longer dislikes {v}"),
    "age": ("{s} is {v} years old", "{s} is not {v} years old"),
    "birthday": ("{s}'s birthday is {v}", "{s}'s birthday is not {v}"),
    "relationship": ("{s} is {v}", "{s} is no longer {v}"),
    "school": ("{s} studies at {v}", "{s} no longer studies at {v}"),
    "phone": ("{s}'s phone number is {v}", "{s}'s phone number is no longer {v}"),
    "email": ("{s}'s email is {v}", "{s}'s email is no longer {v}"),
    "hometown": ("{s} is from {v}", "{s} is not from {v}"),
    "name": ("{s}'s name is {v}", "{s}'s name is not {v}"),
    "pet_name": ("{s}'s {k} is named {v}", "{s}'s {k} is no longer named {v}"),
    "favorite": ("{s}'s favorite {k} is {v}", "{s}'s favorite {k} is no longer {v}"),
}
# fmt: on
# fmt: off
_ZH_TEMPLATES = {
    "lives_in": ("{s}住在{v}", "{s}不再住在{v}"), "works_at": ("{s}在{v}工作", "{s}不再在{v}工作"),
    "job": ("{s}是{v}", "{s}不再是{v}"), "likes": ("{s}喜欢{v}", "{s}不喜欢{v}"),
    "dislikes": ("{s}不喜欢{v}", "{s}不再讨厌{v}"), "age": ("{s}{v}岁", "{s}不是{v}岁"),
    "birthday": ("{s}的生日是{v}", "{s}的生日不是{v}"), "relationship": ("{s}{v}了", "{s}不再{v}"),
    "school": ("{s}在{v}上学", "{s}不再在{v}上学"), "phone": ("{s}的手机号是{v}", "{s}的手机号不再是{v}"),
    "email": ("{s}的邮箱是{v}", "{s}的邮箱不再是{v}"), "hometown": ("{s}的老家在{v}", "{s}的老家不在{v}"),
    "name": ("{s}的名字是{v}", "{s}的名字不是{v}"), "pet_name": ("{s}的{k}叫{v}", "{s}的{k}不再叫{v}"),
    "favorite": ("{s}最喜欢的{k}是{v}", "{s}最喜欢的{k}不再是{v}"),
}
# fmt: on


def slot_sentence(attribute: str, value: str | None, subject: str, negated: bool, cjk: bool) -> str | None:
    """A short standalone sentence stating one slot value: ``Alice lives in Berlin`` / ``小王住在杭州``."""
    base, _, qualifier = attribute.partition(":")
    if base.startswith("favorite_"):
        base, qualifier = "favorite", base.removeprefix("favorite_").replace("_", " ")
    templates = (_ZH_TEMPLATES if cjk else _EN_TEMPLATES).get(base)
    if templates is None or not value:
        return None
    return templates[1 if negated else 0].format(s=subject, v=value, k=qualifier or "pet")


# --------------------------------------------------------------------------------- questions about a slot

_QUESTION_SLOTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"(?i)\bwhere (?:do|did) you (?:live|stay)|where are you (?:living|based|staying)|where(?:'d| did) you move"
        ),
        "lives_in",
    ),
    (
        re.compile(r"(?i)\bwhere (?:do|are) you (?:work|working)|who do you work for|which company"),
        "works_at",
    ),
    (
        re.compile(
            r"(?i)\bwhat do you do(?: for (?:a living|work))?\s*\??$|what(?:'s| is) your (?:job|profession)"
        ),
        "job",
    ),
    (re.compile(r"(?i)\bhow old are you"), "age"),
    (re.compile(rf"(?i)\bwhat(?:'s| is) (?:your|the) {_PETS}(?:'s)? (?:name|called)"), "pet_name"),
    (re.compile(r"(?i)\bwhen(?:'s| is) your birthday"), "birthday"),
    (re.compile(r"(?i)\bwhere are you (?:originally )?from"), "hometown"),
    (re.compile(r"(?:你|您)(?:现在)?住(?:在)?哪|(?:你|您)家在哪"), "lives_in"),
    (re.compile(r"(?:你|您)(?:现在)?在哪(?:里|儿|家公司)?(?:工作|上班)"), "works_at"),
    (re.compile(r"(?:你|您)(?:是)?(?:做|干)什么(?:工作)?的|(?:你|您)的工作是什么"), "job"),
    (re.compile(r"(?:你|您)(?:今年)?(?:多大|几岁)"), "age"),
    (re.compile(r"(?:你|您)(?:家|的)?(?P<pet>猫咪|猫|狗狗|狗)(?:叫什么|的名字)"), "pet_name"),
    (re.compile(r"(?:你|您)的?生日"), "birthday"),
    (re.compile(r"(?:你|您)(?:是)?哪里人|(?:你|您)的?老家在哪"), "hometown"),
)
_ANSWER_LEAD = re.compile(
    r"(?i)^(?:(?:yes|yeah|well|oh|um|so|actually|now|currently)[,!. ]+)*(?:i(?:'m| am)?\s*(?:live|living|work|working|"
    r"based|from|staying)?\s*(?:in|at|for|from)?\s+|(?:it's|it is|its|he's|she's|that's|they're|his name is|"
    r"her name is|its name is|(?:my )?\w+'s name is)\s+|in\s+|at\s+|我(?:现在)?(?:住在|住|在|是|叫|今年)?|在|住在|叫|是)"
)


def question_slot(question: str) -> tuple[str, str | None] | None:
    """The slot a question asks the addressee about (``where do you live?`` -> ``lives_in``)."""
    for pattern, attribute in _QUESTION_SLOTS:
        m = pattern.search(question)
        if m:
            pet = m.groupdict().get("pet")
            return attribute, (_ZH_PET.get(pet, pet).lower() if pet else None)
    return None


def short_answer_value(answer: str) -> str | None:
    """The bare value of a short answer (``In Hangzhou now!`` -> ``Hangzhou now``), or None if not short."""
    text = split_sentences(answer)[0] if answer.strip() else ""
    text = _ANSWER_LEAD.sub("", text.strip()).strip(" .!?。！？~,，")
    text = re.sub(r"(?i)\s+(?:now|currently|these days)$|(?:了|啦|呢|哦|呀)+$", "", text).strip()
    if not text or (has_cjk(text) and len(text) > 12) or (not has_cjk(text) and len(text.split()) > 4):
        return None
    return text


# ------------------------------------------------------------------------------------- tasks and decisions

EN_DECISION = re.compile(
    r"(?i)\b(?:we|I)(?:'ve| have)? (?:decided|agreed)\b|\bdecided to\b|\b(?:let's|we'll|we will) go with\b|"
    r"\bit's decided\b|\bthe plan is\b|\bsettled on\b|\bfinal decision\b|\bwe(?:'re| are) going with\b|\bdecision:"
)
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
EN_TASK_REQUEST = re.compile(
    rf"(?i)\b(?:can|could|would) you (?:please )?(?:{_ACTION_VERBS})\b|^\s*(?:@\S+\s+)?please (?:{_ACTION_VERBS})\b"
)
EN_TASK_GROUP = re.compile(
    rf"(?i)\blet's (?:{_ACTION_VERBS}|meet)\b|\bwe (?:need to|have to|must|should) (?:{_ACTION_VERBS})\b|"
    rf"\bremember to\b|\bdon't forget to\b|\bdeadline\b|\bdue (?:by|on)\b"
)
EN_TASK_NAMED = re.compile(rf"\b(?P<owner>[A-Z][a-z]+) (?i:will|'ll|is going to) (?i:{_ACTION_VERBS})\b")
ZH_TASK_SELF = re.compile(
    r"我来|我负责|交给我|包在我身上|我去(?!过|了)|我(?:明天|下周|今晚|待会|等下|马上|稍后|回头)(?:去|来|把|就)?"
)
ZH_TASK_REQUEST = re.compile(r"(?:你|您)(?:来|负责|去(?!过|了))|麻烦(?:你|您)|请(?:你|您)|拜托")
ZH_TASK_NAMED = re.compile(r"(?P<owner>[\u4e00-\u9fffA-Za-z]{1,4}?)(?:负责|来做|来搞|来弄|跟进|去做)")
ZH_TASK_GROUP = re.compile(
    r"(?:咱们|我们|大家)(?:一起)?(?:要|得|需要|必须)|记得|别忘了|不要忘了|务必|截止|(?:之前|以前|前)(?:要|得|必须)?.{0,10}(?:完成|提交|搞定|发|交)"
)
