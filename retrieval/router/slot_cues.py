"""Cue words of slot statements (data, no logic): what marks a statement of a home, a job, a liking, a place,
a change's target, a negation, the present or the past; used by :mod:`retrieval.router.slot_recency`."""

from __future__ import annotations

from language.lazy_re import lazy
from language.text import tokenize
from retrieval.router.abstain_names import KINSHIP_ZH, ROLES_EN

CURRENT = lazy(
    r"(?i)\b(?:now|current(?:ly)?|latest|newest|still|these days|nowadays|at the moment|anymore|most recent|lately|"
    r"recently)\b|现在|目前|最新|如今|当前|眼下|现今|还在|这会儿|最近|近来|这阵子"
)
NAMED_VALUES = ("where", "lives_in", "works_at")
STATEMENT_KINDS = ("turn", "fact", "task", "decision", "date")
EN_NOT_VALUE = frozenset(
    "now currently current latest still new date day time place venue city team food team favourite favorite "
    "change changed changes moved move update updated instead anymore longer plan plans".split()
)
EN_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
WEEKDAYS = lazy(
    r"(?i)\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|(?:周|星期|礼拜)[一二三四五六日天]"
)
NOT_PEOPLE = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july august "
    "september october november december thanks thank please reminder change update note heads sorry okay yes "
    "hey hi hello great cool nice sure done also today tomorrow tonight weekly daily monthly".split()
)
NOT_VALUE_TOKENS = frozenset(t for w in (*EN_NOT_VALUE, *NOT_PEOPLE) for t in tokenize(w)) | EN_NOT_VALUE
ZH_NAME = lazy(r"(?:小|老|阿)[\u4e00-\u9fff]")
EN_NAME = lazy(r"\b[A-Z][a-z]{2,}\b")
CAP_PHRASE = lazy(r"\b[A-Z][\w'&-]*(?:\s+(?:[A-Z][\w'&-]*|(?:of|the|de|la)\b))*")
EN_WHERE = lazy(r"(?i)\b(?:at|in|to|venue|location|place|room|restaurant|moved|booked|directions)\b")
ZH_WHERE = lazy(r"在|去|到|改|地点|位置|地方|场地|订了|定在|餐厅|饭店|菜单")
EN_LIVES = lazy(
    r"(?i)\b(?:live[sd]?|living|moved|moving|move[sd]? (?:to|in|out)|relocat\w*|home|flat|apartment|house|city|rent|lease|"
    r"neighbou?rhood|"
    r"settled|based)\b"
)
ZH_LIVES = lazy(r"住|搬(?!迁)|安家|定居|落户|城市|房租|租房|新家|住处|老家|家在")
EN_WORKS = lazy(
    r"(?i)\b(?:work(?:s|ed|ing)?|job|joined|joining|started|starting|hired|offer|employer|company|badge|colleagues?|"
    r"boss|manager|onboarding|quit|position|role|salary|payroll|intern(?:ship)?)\b"
)
ZH_WORKS = lazy(
    r"上班|工作|公司|入职|跳槽|工牌|同事|单位|领导|老板|offer|转正|离职|东家|就职|值\S{0,3}班|加班|项目组|"
    r"工资|薪|年终奖|绩效|面试|实习|做(?:后端|前端|开发|产品|运营|设计|测试|销售|算法)"
)
_LIKING = r"obsessed with|fan of|hooked on|enough of|loves?|loved|likes?|prefers?|favou?rite(?: \w+)? (?:is|was|now)|best \w+ is"
_GO_TO = r"is\s+(?:my|his|her|their|our|\w+'s)\s+(?:go-?to|fave|fav)\b"  # "Pho 99 is my go-to"
EN_LIKED = lazy(  # a liking with an object that is a thing, not "it" / "that name"
    rf"(?i)\b(?:{_LIKING}|beats)\s+(?!(?:it|that|this|them|him|her|you|me|the|a|an|my|your|our|their|to|what|how|when)\b)"
    rf"[\w'-]{{2,}}|\bbig [\w' -]{{2,30}} fan\b|\b{_GO_TO}"
)
ZH_LIKED = lazy(r"(?:迷|爱|喜欢|想着|偏爱|首选)(?:上了?)?(?![这那它他她你我])[\u4e00-\u9fffA-Za-z]{2,}|[\u4e00-\u9fffA-Za-z]{2,}的(?:铁粉|粉丝)")
CATEGORIES = lazy(  # kinds of favourites: a liking statement naming another kind is not about the asked one
    r"(?i)\b(?:food|dish|drinks?|beverage|team|club|movie|film|book|song|band|singer|game|sport|colou?r|"
    r"restaurant|show|series|city|place|brand|car|artist|author|snack|dessert|coffee|tea|beer|wine)s?\b|"
    r"美食|菜|饮料|喝的|球队|电影|书|歌|乐队|歌手|游戏|运动|颜色|餐厅|剧|城市|品牌|作家|零食|甜品"
)
CALENDAR_WORD = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec|Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*\b"
EN_IN_PLACE = lazy(rf"\b(?:in|to)\s+(?!{CALENDAR_WORD})[A-Z][a-z]+")  # not "from": an offer from Twilio
EN_AT_ORG = lazy(rf"\b(?:at|for|with|joined|joining)\s+(?!{CALENDAR_WORD})[A-Z][\w&-]+")  # not "for July 26"
NEGATED_BEFORE = lazy(
    r"(?i)(?:\bnot|\bno longer|\binstead of|\bleft|\bquit|\bleaving)(?:\s+(?:at|in|with|on|for|to))?\s*$"
    r"|n't(?:\s+[a-z]+){1,2}\s*$"  # "doesn't live in Seattle anymore", "isn't at Canva"
    r"|(?:不归|不是|不再|不由|不找|不给|不在|不去|离开)\s*$"
)
CHANGE_TO = lazy(  # right before the new value of a change
    r"(?i)(?:改回|改到|改成|改在|改为|挪到|挪回|换到|换成|推到|推迟到|延后到|提前到|延到|调到|调整到|"
    r"\b(?:moved|moves|moving|pushed|changed|switched|back|postponed|rescheduled)(?:\s+\w+)?\s+to)\s*(?:每?周|下周|本周)?$"
)
FROM_BEFORE = lazy(r"(?i)(?:\bfrom|从)\s*$")
TO_AFTER = lazy(r"(?i)^\W{0,3}(?:\s*(?:to|->|→)\b|\S{0,4}(?:到|给|换成|改成|改到))")
CLAUSE = lazy(r"[,;!?，；：！？。]|[.:]\s|\bbut\b")
NEGATED_CLAUSE = lazy(r"(?i)\b(?:not|no longer|instead of)\b|不是|不再|取消")
STRONG = {
    "lives_in": lazy(r"(?i)\b(?:live[sd]? in|living in|moved to|home is|is home)\b|住在|搬到|搬去|安家|定居"),
    "works_at": lazy(r"(?i)\b(?:job is|work(?:s|ing)? (?:at|for)|joined|started at|employer)\b|入职|跳槽|上班|在\S{1,8}工作"),
}
EN_LIKED_OBJECT = lazy(  # what a liking names: "obsessed with Barcelona lately" -> Barcelona
    rf"(?i)\b(?:{_LIKING}|beats(?! everything| anything| all\b))\s+((?:the\s+)?[\w'-]+(?:\s+(?!(?:lately|now|these|"
    r"so|too|very|more|most|a|an|and|but|or|for|in|at|on|these|this|since|every|right)\b)[\w'-]+){0,2})"
    r"|\bbig ([\w' -]{2,30}?) fan\b|\b((?:[\w'-]+\s+){0,1}[\w'-]+)\s+beats\s+(?:everything|anything|all)\b"
    rf"|\b((?:[\w'-]+\s+){{0,1}}[\w'-]+)\s+{_GO_TO}"
)
ANNOTATION = lazy(r"[(（][^()（）]{1,40}[)）]")
FIRST_PERSON = lazy(r"(?i)\b(?:i|i'm|i've|i'll|my|me)\b|我")
QUESTION = lazy(r"[?？]\s*$")


EN_ASK_WORDS = frozenset(
    "who whom whose what which when where how what's who's where's when's is are was were be the a an of for on at in to by with now current "
    "currently latest newest still these days nowadays moment doing does do did done own owns owner owning handle "
    "handles handling run runs running lead leads leading write writes writing working take takes taking charge "
    "we us our you your they i have having has "
    "responsible assigned date day time place venue location happening scheduled set planned held it its".split()
)
ZH_ASK_WORDS = lazy(
    r"现在|目前|最新|如今|当前|眼下|还在|是谁|谁|负责|在做|来做|做|在写|写|跟进|的|是|哪一天|哪天|几号|日期|时间|"
    r"什么时候|几点|地点|在哪|哪里|哪儿|哪家|哪个|什么地方|定在|改到|改在|去|在|呢|吗|[？?，,。！!\s]"
)
PAST = lazy(
    r"(?i)\b(?:was|were|did|had|used to|before|originally|at first|first|previously|earlier|ago|last (?:year|month|"
    r"week|time)|back then|in (?:19|20)\d\d)\b|以前|之前|原来|原先|当时|去年|上次|最初|一开始|最早|过去|曾经|那时"
)
PRESENT = lazy(r"(?i)\b(?:is|are|does|do)\b|'s\b")
TAKES_IT = lazy(
    r"(?i)\bI(?:'ll| will| can|'m| am)\s+(?:gonna\s+)?(?:take|handle|own|do|write|cover|run|lead|prepare|draft)\b|"
    r"\b(?:is|it's) mine\b|\bwith me\b|我来|我负责|我接|归我|交给我|我写|我做"
)
_NAME = r"[^\s:：\d][^\s:：]{0,23}"  # a speaker label's name: "小李" of "小李: …", not the "10" of "10:00"
LABEL = lazy(rf"(?:^|(?<=\s)){_NAME}[:：](?!\d)")
LABELLED = lazy(rf"(?:^|(?<=\s))({_NAME})[:：](?!\d)\s*(.+?)(?=\s+{_NAME}[:：](?!\d)|$)")
KIN_AFTER = lazy(  # right after a name: the name's relative is meant ("小美妹妹", "Mia's sister")
    "(?:的)?(?:" + "|".join(sorted(KINSHIP_ZH, key=len, reverse=True)) + ")|(?i:['’]s\\s+(?:"
    + "|".join(sorted(ROLES_EN, key=len, reverse=True)) + r")\b)"
)
MY_KIN = lazy(r"(?i)\b(?:my|our)\s+(?:" + "|".join(sorted(ROLES_EN, key=len, reverse=True)) + r")\b")
