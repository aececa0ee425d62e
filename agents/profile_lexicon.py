"""The attribute classes of a person's profile and their cue words, English and Chinese (pure data).

A class gathers what a person did, likes, owns or visited of one kind (books read, places visited, pets…).
Its cues are words a chat message uses when it says one instance ("I just finished a novel", "我去了杭州");
its names are the words a question uses for the whole set ("What books…", "what activities…", "哪些爱好").
Written from general chat-memory categories (mem0 / Zep profile fields), not from any benchmark's questions.
"""

from __future__ import annotations

import re
from functools import cache

from language.text import has_cjk, plain_tokens, tokenize

# class -> (words a question uses for the whole set, as written: plural or mass nouns; cue words of one instance)
_CLASSES: dict[str, tuple[str, str]] = {
    "sports": (
        "sports exercises workouts fitness 运动 锻炼 健身 体育",
        "sport sports exercise workout gym yoga pilates running jogging marathon swimming cycling biking climbing "
        "skiing snowboarding surfing kayaking tennis soccer football basketball baseball golf volleyball hockey "
        "boxing kickboxing karate taekwondo judo wrestling martial weightlifting crossfit rowing skating "
        "跑步 游泳 健身 瑜伽 骑车 骑行 爬山 滑雪 冲浪 篮球 足球 网球 羽毛球 乒乓球 拳击 马拉松 锻炼",
    ),
    "outdoors": (
        "outdoor outdoors nature 户外 大自然",
        "hike hiking hiked camp camping camped campfire trail trails outdoors nature mountain mountains forest "
        "woods beach lake river picnic fishing kayak canoe national park sunrise sunset stargazing "
        "徒步 露营 爬山 登山 野餐 钓鱼 海边 山上 森林 湖边 公园 户外",
    ),
    "arts": (
        "art arts crafts artworks paintings drawings 艺术 手工",
        "paint painting painted painter draw drawing sketch sketching pottery ceramics clay sculpture sculpting "
        "knitting sewing crochet quilting craft crafts artwork canvas watercolor photography photographer "
        "calligraphy 画画 绘画 油画 水彩 素描 陶艺 手工 编织 摄影 书法 雕塑",
    ),
    "music": (
        "music instruments bands songs concerts artists musicians 音乐 乐器 歌曲",
        "music musician song songs band concert album singer singing sing guitar piano violin cello drums "
        "clarinet flute saxophone trumpet ukulele choir orchestra playlist festival gig "
        "音乐 唱歌 歌曲 乐队 演唱会 音乐会 吉他 钢琴 小提琴 鼓 长笛",
    ),
    "reading": (
        "books novels authors writers literature 书 小说 作家",
        "book books novel novels read reading reread author series chapter library bookstore literature poem "
        "poems poetry memoir biography fiction fantasy 读 看书 读书 书 小说 作者 诗",
    ),
    "writing": (
        "writing writings stories poems scripts screenplays 写作 作品",
        "write writing wrote written writer screenplay script scripts blog post journal diary essay article "
        "story stories poem poetry draft manuscript publish published 写 写作 剧本 日记 博客 文章 投稿",
    ),
    "screen": (
        "movies films shows series tv 电影 电视剧",
        "movie movies film films watch watched watching show series episode season tv netflix cinema theater "
        "theatre documentary anime trilogy 电影 电视剧 看剧 纪录片 动漫 影院",
    ),
    "games": (
        "games 游戏",
        "game games gaming gamer console playstation xbox nintendo switch pc chess catan boardgame board "
        "tournament tournaments esports level 游戏 打游戏 桌游 象棋 围棋 比赛",
    ),
    "food": (
        "food foods dishes recipes desserts meals 美食 食谱 甜点 菜",
        "cook cooking cooked bake baking baked recipe recipes dish dessert cake cookies pie bread soup stew "
        "pasta pizza salad curry chocolate icecream ice cream restaurant dinner lunch breakfast meal vegan "
        "做饭 烤 蛋糕 甜点 菜谱 食谱 餐厅 火锅 包子 饺子 面条",
    ),
    "travel": (
        "places cities countries states locations destinations trips travels 地方 城市 国家 旅行 旅游 景点",
        "travel traveled travelled traveling trip trips visit visited visiting vacation holiday holidays "
        "flight flew abroad tour tourist city country road roadtrip journey 旅行 旅游 出差 去了 飞 度假 城市 "
        "国家 景点",
    ),
    "pets": (
        "pets animals 宠物 动物",
        "pet pets dog dogs puppy cat cats kitten turtle turtles bird birds parrot fish hamster rabbit bunny "
        "horse guinea adopted vet 宠物 狗 猫 狗狗 猫咪 小狗 小猫 兔子 乌龟 鹦鹉 仓鼠 领养",
    ),
    "family": (
        "family kids children sons daughters parents siblings 家人 孩子 父母",
        "family kid kids child children son daughter husband wife partner mom mother dad father parents "
        "brother sister grandma grandmother grandpa grandfather grandparents aunt uncle cousin baby "
        "家人 孩子 儿子 女儿 老公 老婆 丈夫 妻子 妈妈 爸爸 父母 哥哥 姐姐 弟弟 妹妹 奶奶 爷爷",
    ),
    "work": (
        "jobs careers businesses companies goals 职业",
        "job work working career business company startup boss office colleague colleagues coworker client "
        "clients promotion interview hired fired salary project studio store shop launch brand endorsement "
        "工作 上班 公司 老板 同事 客户 升职 面试 项目 创业 店",
    ),
    "events": (
        "events occasions 活动",
        "event festival parade conference party fundraiser workshop seminar meetup ceremony wedding "
        "competition convention rally march protest gala fair exhibition exhibit museum class classes "
        "活动 聚会 派对 婚礼 比赛 展览 讲座 会议 音乐节 游行 博物馆 课",
    ),
    "causes": (
        "causes charities 公益 慈善",
        "volunteer volunteering volunteered charity donate donated donation shelter fundraiser cause causes "
        "nonprofit community mentor mentoring mentorship activist advocacy veterans homeless "
        "志愿 志愿者 公益 慈善 捐 捐款 义工 社区",
    ),
    "health": (
        "health injuries illnesses allergies 健康 过敏",
        "injury injured hurt sick illness doctor hospital allergy allergic surgery therapy therapist "
        "medication pain diagnosed recovery ankle 生病 医院 医生 过敏 受伤 手术 治疗 吃药 感冒",
    ),
    "things": (
        "items things possessions collections gifts 东西 收藏 礼物",
        "bought buy purchased purchase collect collection collecting own owns gift gifts present souvenir "
        "figurine jersey sneakers shoes necklace car 买 买了 收藏 礼物 送",
    ),
}
# question words for the whole set that span several classes ("hobbies": sports, outdoors, arts…)
_UMBRELLA = {
    "hobbies pastimes interests activities 爱好 兴趣": (
        "sports", "outdoors", "arts", "music", "reading", "writing", "screen", "games", "food", "events",
    ),
}  # fmt: skip

CLASSES = tuple(_CLASSES)


@cache
def cue_tokens() -> dict[str, frozenset[str]]:
    """class -> the tokenized cue words of one instance (tokenized as documents are)."""
    return {c: frozenset(tokenize(cues)) for c, (_, cues) in _CLASSES.items()}


@cache
def _set_words() -> dict[str, tuple[frozenset[str], tuple[str, ...]]]:
    """class -> (English set words as written, Chinese set words); umbrella words under ``"*"``."""

    def split(words: str) -> tuple[frozenset[str], tuple[str, ...]]:
        ws = words.split()
        return frozenset(w for w in ws if not has_cjk(w)), tuple(w for w in ws if has_cjk(w))

    out = {c: split(names) for c, (names, _) in _CLASSES.items()}
    out |= {f"*{i}": split(words) for i, words in enumerate(_UMBRELLA)}
    return out


def set_classes(text: str) -> list[str]:
    """The classes a question names as a set, by its words as written ("books", "pets", "哪些城市"; "hobbies"
    spans several): "book" alone asks for one book, not a set. Pure."""
    words = set(re.findall(r"[a-z]+", text.lower()))
    umbrellas = list(_UMBRELLA.values())
    out: list[str] = []
    for key, (en, zh) in _set_words().items():
        if words & en or any(w in text for w in zh):
            out.extend(umbrellas[int(key[1:])] if key.startswith("*") else [key])
    return list(dict.fromkeys(out))


@cache
def _plain_cue_tokens() -> dict[str, frozenset[str]]:
    """:func:`cue_tokens` without the tokens of their Chinese cues, read without jieba."""
    return {c: frozenset(plain_tokens(cues)) for c, (_, cues) in _CLASSES.items()}


def cues_for(tokens: set[str] | frozenset[str]) -> dict[str, frozenset[str]]:
    """:func:`cue_tokens` as far as ``tokens`` can meet them: tokens with no CJK in them can only meet cue
    tokens with none (a CJK run's tokens are pieces of it), which are read without jieba, so an English
    question or message does not load its dictionary (~0.16 s of a ``memstream query``)."""
    return cue_tokens() if any(has_cjk(t) for t in tokens) else _plain_cue_tokens()


def classes_of(tokens: set[str] | frozenset[str]) -> list[str]:
    """The classes whose cues a text's tokens carry, in class order. Pure."""
    return [c for c, cue in cues_for(tokens).items() if tokens & cue]


def asked_classes(text: str) -> list[str]:
    """The classes a question asks for as a set: those it names ("books", "hobbies"), else those of its cue
    words ("How many times has X camped?"). Pure."""
    return set_classes(text) or classes_of(set(tokenize(text)))
