"""Phrasings, names and values of the memory-update benchmark (:mod:`bench.updates_gen`), English and Chinese.

Every list is written whole and split into two disjoint halves by position: even positions belong to the
``tune`` half (0), odd positions to the ``test`` half (1) (:func:`half`). Lists are written `` | ``-separated.

A value entry is ``surface/alias/alias…``: the surface is what the chat says, every part is an accepted
answer (matched as a plain substring after :func:`bench.updates_gen.norm`).
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def _s(text: str) -> list[str]:
    return [p.strip() for p in " ".join(text.split()).split(" | ") if p.strip()]


def half(items: list[T] | tuple[T, ...], which: int) -> list[T]:
    """The tune half (0: even positions) or the test half (1: odd positions) of a list."""
    return list(items[which::2])


PERSON_FAMILIES = ("lives", "works", "preference")
FAMILIES = ("lives", "works", "recurring", "plan_date", "social_time", "social_place", "owner", "preference")

# family -> lang -> kind -> phrasings. Kinds: init (first statement), explicit (a change that says so; may name
# {old}), implicit (just the new statement), third (someone else tells it about {name}; person families),
# q_now (the "now" question), q (the plain question).
TEMPLATES: dict[str, dict[str, dict[str, list[str]]]] = {
    "lives": {
        "en": {
            "init": _s("""I live in {v}, been here a couple of years now. | Home is {v} for me, in case anyone passes
                through. | Finally got a flat in {v}, signing the lease today. | We're based in {v}, the rent is
                brutal."""),
            "explicit": _s("""Update: I moved to {v}, not living in {old} anymore. | I don't live in {old} anymore,
                moved to {v} last weekend. | Big news, we relocated from {old} to {v}. | Changed cities: {v} is home
                now."""),
            "implicit": _s("""The new apartment in {v} has a tiny balcony but I love it. | Unpacked the last boxes
                at my place in {v} tonight. | My commute from home in {v} is twenty minutes, so much better. | Living
                in {v} means brunch every weekend."""),
            "third": _s("""{name} told me they live in {v}. | Heard {name} moved to {v}. | {name} lives in {v}
                these days. | {name} just got a place in {v}."""),
            "q_now": _s("""Where does {name} live now? | Which city is {name} living in these days? | Where is
                {name} based now? | What city does {name} currently live in?"""),
            "q": _s("""Where does {name} live? | Which city is {name} in? | Where is {name} based? | What city does
                {name} live in?"""),
        },
        "zh": {
            "init": _s("""我住在{v}，来这边两年了。 | 我家在{v}，有空来玩。 | 我在{v}租了个房子，今天签合同。 | 我常住{v}，
                房租太贵了。"""),
            "explicit": _s("""更新一下：我搬到{v}了，不在{old}住了。 | 我已经不住{old}了，上个周末搬去了{v}。 |
                我们从{old}搬到{v}了！ | 换城市了，现在住在{v}。"""),
            "implicit": _s("""在{v}的新家阳台很小，但我很喜欢。 | 终于把{v}新家的箱子都拆完了。 | 从我{v}的住处到公司只要
                二十分钟。 | 住在{v}以后天天吃早茶。"""),
            "third": _s("""{name}说他住在{v}。 | 听说{name}搬到{v}了。 | {name}现在住在{v}。 | {name}已经在{v}安家了。"""),
            "q_now": _s("""{name}现在住在哪里？ | {name}现在住哪个城市？ | {name}目前住在哪？ | {name}现在在哪个城市生活？"""),
            "q": _s("""{name}住在哪里？ | {name}住哪个城市？ | {name}家在哪？ | {name}在哪个城市生活？"""),
        },
    },
    "works": {
        "en": {
            "init": _s("""I work at {v}, on the payments team. | Day job is at {v}, mostly backend stuff. | I'm at
                {v}, been there since spring. | Still at {v}, still on call every other week."""),
            "explicit": _s("""Quick update: I left {old} and joined {v}. | I'm not at {old} anymore, started at {v}
                this week. | Switched jobs: {v} now, {old} is history. | Changed jobs, I work at {v} now."""),
            "implicit": _s("""First week at {v}, the onboarding is intense. | Just got my {v} badge, finally
                official. | Lunch at the {v} canteen is surprisingly good. | My new manager at {v} seems great."""),
            "third": _s("""{name} works at {v}. | Heard {name} joined {v}. | {name} got an offer from {v} and took
                it. | {name} is with {v} these days."""),
            "q_now": _s("""Where does {name} work now? | Which company is {name} at now? | Who is {name}'s current
                employer? | Where is {name} working these days?"""),
            "q": _s("""Where does {name} work? | Which company is {name} at? | Who does {name} work for? | Where is
                {name} employed?"""),
        },
        "zh": {
            "init": _s("""我在{v}上班，做支付相关的。 | 我在{v}做后端，挺忙的。 | 我目前在{v}工作，干了快两年了。 |
                我还在{v}，隔周值一次班。"""),
            "explicit": _s("""报告一下：我从{old}跳槽到{v}了。 | 我已经不在{old}了，这周入职{v}。 | 换工作了，现在在{v}。 |
                我离开{old}了，新东家是{v}。"""),
            "implicit": _s("""入职{v}第一周，新人手续好多。 | 刚领到{v}的工牌，终于正式了。 | {v}食堂的午饭居然挺好吃。 |
                {v}的新领导人不错。"""),
            "third": _s("""{name}在{v}上班。 | 听说{name}跳槽去{v}了。 | {name}拿了{v}的offer，已经入职了。 |
                {name}最近在{v}工作。"""),
            "q_now": _s("""{name}现在在哪家公司上班？ | {name}现在在哪工作？ | {name}目前在哪个公司？ |
                {name}现在的东家是哪家？"""),
            "q": _s("""{name}在哪家公司上班？ | {name}在哪工作？ | {name}在哪个公司？ | {name}的东家是哪家？"""),
        },
    },
    "recurring": {
        "en": {
            "init": _s("""Reminder: the {noun} is every {v}. | The {noun} happens on {v}s. | Let's keep the {noun}
                on {v} each week. | The {noun} is on {v} as usual, don't forget."""),
            "explicit": _s("""Heads up: the {noun} moves to {v} from now on. | The {noun} is no longer on {old}, it's
                {v} now. | Changing the {noun} to {v}, {old} clashes with too much. | From next week the {noun} is on
                {v} instead of {old}."""),
            "implicit": _s("""See you all at the {noun} on {v}. | For the {noun} on {v} I'll bring the agenda. |
                I'll book the room for the {noun} on {v}. | Might be a few minutes late to the {noun} on {v}."""),
            "q_now": _s("""What day is the {noun} now? | When is the {noun} these days? | Which day is the {noun} on
                now? | What day do we have the {noun} now?"""),
            "q": _s("""What day is the {noun}? | When is the {noun}? | Which day is the {noun} on? | What day do we
                have the {noun}?"""),
        },
        "zh": {
            "init": _s("""提醒一下，{noun}固定在每{v}。 | {noun}还是每{v}开，别忘了。 | 以后{noun}就定在{v}吧。 |
                {noun}一般都是{v}，大家留出时间。"""),
            "explicit": _s("""通知：{noun}改到{v}了。 | {noun}不在{old}了，以后改成{v}。 | {old}冲突太多，{noun}调整到{v}。 |
                从下周起{noun}从{old}挪到{v}。"""),
            "implicit": _s("""{v}的{noun}我来准备议程。 | 大家{v}{noun}见。 | {v}{noun}的会议室我订好了。 |
                这周{v}的{noun}我可能晚到几分钟。"""),
            "q_now": _s("""{noun}现在是周几？ | {noun}现在改到哪天了？ | {noun}现在在星期几开？ | 现在{noun}是哪天？"""),
            "q": _s("""{noun}是周几？ | {noun}在哪天？ | {noun}星期几开？ | {noun}是哪天？"""),
        },
    },
    "plan_date": {
        "en": {
            "init": _s("""We're planning {noun} for {v}. | The date for {noun} is {v}. | Target date for {noun}:
                {v}. | Let's aim to do {noun} on {v}."""),
            "explicit": _s("""{noun} is pushed back to {v}. | Change of plan: {noun} moves from {old} to {v}. |
                {noun} is no longer on {old}, the new date is {v}. | We had to postpone {noun} to {v}."""),
            "implicit": _s("""Ops is on standby for {noun} on {v}. | Please freeze merges before {noun} on {v}. |
                Booked the war room on {v} for {noun}. | Customers were told {noun} happens on {v}."""),
            "q_now": _s("""When is {noun} now? | What's the current date for {noun}? | When is {noun} scheduled
                now? | Which date is {noun} on now?"""),
            "q": _s("""When is {noun}? | What's the date for {noun}? | When is {noun} scheduled? | Which date is
                {noun} on?"""),
        },
        "zh": {
            "init": _s("""{noun}定在{v}。 | {noun}计划{v}进行。 | {noun}的时间暂定{v}。 | 我们打算{v}做{noun}。"""),
            "explicit": _s("""{noun}推迟到{v}了。 | {noun}从{old}改到{v}。 | {noun}不是{old}了，改成{v}。 |
                计划有变：{noun}延期到{v}。"""),
            "implicit": _s("""{v}{noun}那天运维全员待命。 | {v}{noun}之前大家停止合代码。 | {v}{noun}的作战室我订了。 |
                已经通知客户{v}{noun}。"""),
            "q_now": _s("""{noun}现在定在哪天？ | {noun}现在是什么时候？ | {noun}现在改到几号了？ | {noun}最新的日期是哪天？"""),
            "q": _s("""{noun}定在哪天？ | {noun}是什么时候？ | {noun}是几号？ | {noun}的日期是哪天？"""),
        },
    },
    "social_time": {
        "en": {
            "init": _s("""The {noun} starts at {v}. | {noun} at {v}, don't be late! | Let's meet for the {noun} at
                {v}. | I booked the {noun} for {v}."""),
            "explicit": _s("""The {noun} is moved to {v}. | Change: the {noun} is at {v}, not {old}. | Moving the
                {noun} from {old} to {v}, the place closes early. | {noun} time changed to {v}."""),
            "implicit": _s("""See you at {v} for the {noun}. | Be there by {v} for the {noun}. | Our table for the
                {noun} is held from {v}. | Doors open at {v} for the {noun}."""),
            "q_now": _s("""What time is the {noun} now? | When does the {noun} start now? | What time should we be at
                the {noun} now? | When is the {noun} now?"""),
            "q": _s("""What time is the {noun}? | When does the {noun} start? | What time should we be at the
                {noun}? | When is the {noun}?"""),
        },
        "zh": {
            "init": _s("""{noun}{v}开始。 | {noun}定在{v}，别迟到。 | {noun}大家{v}集合。 | {noun}我订了{v}的位子。"""),
            "explicit": _s("""{noun}改到{v}了。 | {noun}不是{old}了，改成{v}。 | 餐厅有变动，{noun}从{old}调到{v}。 |
                {noun}时间调整为{v}。"""),
            "implicit": _s("""{v}{noun}见。 | {noun}{v}准时到哈。 | {noun}的桌子从{v}开始留。 | {noun}{v}开门，早点来。"""),
            "q_now": _s("""{noun}现在几点开始？ | {noun}现在是几点？ | {noun}现在改到几点了？ | {noun}最新时间是几点？"""),
            "q": _s("""{noun}几点开始？ | {noun}是几点？ | {noun}定在几点？ | {noun}时间是几点？"""),
        },
    },
    "social_place": {
        "en": {
            "init": _s("""The {noun} is at {v}. | Booked {v} for the {noun}. | {noun} venue: {v}. | We're doing the
                {noun} at {v}."""),
            "explicit": _s("""The {noun} moves to {v}, {old} is fully booked. | Not {old} anymore: the {noun} is at
                {v}. | Switching the {noun} venue to {v}. | Change of venue for the {noun}: {v}."""),
            "implicit": _s("""{v} has good parking, nice pick for the {noun}. | The menu at {v} looks great for the
                {noun}. | I'll be a bit late to {v} for the {noun}. | Directions to {v} for the {noun} are
                pinned."""),
            "q_now": _s("""Where is the {noun} now? | Which place is the {noun} at now? | Where are we having the
                {noun} now? | What's the venue for the {noun} now?"""),
            "q": _s("""Where is the {noun}? | Which place is the {noun} at? | Where are we having the {noun}? |
                What's the venue for the {noun}?"""),
        },
        "zh": {
            "init": _s("""{noun}在{v}。 | {noun}我订了{v}。 | {noun}地点：{v}。 | {noun}去{v}吃。"""),
            "explicit": _s("""{old}订满了，{noun}换到{v}。 | {noun}不去{old}了，改去{v}。 | {noun}地点改成{v}。 |
                通知：{noun}改在{v}。"""),
            "implicit": _s("""{v}停车方便，{noun}选得好。 | 看了{v}的菜单，{noun}有得吃了。 | {noun}我可能晚点到{v}。 |
                {v}的位置发群里了，{noun}别走错。"""),
            "q_now": _s("""{noun}现在在哪里？ | {noun}现在去哪家？ | {noun}现在改到哪了？ | {noun}最新的地点是哪？"""),
            "q": _s("""{noun}在哪里？ | {noun}去哪家？ | {noun}地点是哪？ | {noun}在哪家店？"""),
        },
    },
    "owner": {
        "en": {
            "init": _s("""{v} will write {noun}. | {v} is taking {noun}. | Assigning {noun} to {v}. | {v} volunteered
                for {noun}."""),
            "explicit": _s("""Actually {v} takes {noun}, {old} is swamped. | {noun}: not {old} anymore, {v} owns it
                now. | Reassigning {noun} from {old} to {v}. | Change: {v} is doing {noun} instead."""),
            "implicit": _s("""{v} asked me for input on {noun}. | {v} shared a first draft of {noun}. | Ping {v} if
                you have comments on {noun}. | {v} will present {noun} at the review."""),
            "q_now": _s("""Who is writing {noun} now? | Who owns {noun} now? | Who's responsible for {noun} now? |
                Who is doing {noun} now?"""),
            "q": _s("""Who is writing {noun}? | Who owns {noun}? | Who's responsible for {noun}? | Who is doing
                {noun}?"""),
        },
        "zh": {
            "init": _s("""{noun}由{v}来写。 | {noun}交给{v}。 | {v}负责{noun}。 | {v}主动认领了{noun}。"""),
            "explicit": _s("""{noun}改由{v}负责，{old}太忙了。 | {noun}不归{old}了，交给{v}。 | {noun}从{old}转给{v}。 |
                调整一下，{noun}这个任务交给{v}。"""),
            "implicit": _s("""{v}找我要{noun}的素材。 | {v}发了{noun}的初稿。 | {noun}有意见直接找{v}。 |
                评审会上{v}来讲{noun}。"""),
            "q_now": _s("""{noun}现在谁负责？ | {noun}现在谁在写？ | {noun}现在归谁？ | 现在谁在做{noun}？"""),
            "q": _s("""{noun}谁负责？ | {noun}谁在写？ | {noun}归谁？ | 谁在做{noun}？"""),
        },
    },
    "preference": {
        "en": {
            "init": _s("""My favourite {noun} is {v}, no contest. | Nothing beats {v}, best {noun} ever. | {v} is my
                favourite {noun}. | If I had to pick one {noun}: {v}."""),
            "explicit": _s("""I'm not into {old} anymore, {v} is my favourite {noun} now. | Changed my mind:
                favourite {noun} is {v} now. | Used to be {old}, but now my favourite {noun} is {v}. | New favourite
                {noun}: {v}."""),
            "implicit": _s("""Honestly {v} is the best {noun} there is. | Can't get enough of {v} lately, best
                {noun}. | {v} all the way, favourite {noun} for sure. | Nothing hits like {v}, top {noun} for me."""),
            "third": _s("""{name}'s favourite {noun} is {v}. | {name} is obsessed with {v} lately. | {name} says {v}
                is the best {noun}. | Heard {name} is a big {v} fan."""),
            "q_now": _s("""What is {name}'s favourite {noun} now? | What {noun} does {name} like most now? | Which
                {noun} is {name}'s favourite these days? | What's {name}'s top {noun} now?"""),
            "q": _s("""What is {name}'s favourite {noun}? | What {noun} does {name} like most? | Which {noun} is
                {name}'s favourite? | What's {name}'s top {noun}?"""),
        },
        "zh": {
            "init": _s("""我最喜欢的{noun}是{v}。 | {v}是我心中最好的{noun}。 | 要说最爱的{noun}，那必须是{v}。 |
                {noun}里我最喜欢{v}。"""),
            "explicit": _s("""我现在不喜欢{old}了，最喜欢{v}。 | 改主意了，我最喜欢的{noun}变成{v}了。 |
                我以前最爱{old}，现在最喜欢{v}。 | 我最喜欢的{noun}换成{v}了。"""),
            "implicit": _s("""最近迷上了{v}，最好的{noun}。 | {v}真是天下第一{noun}。 | 这阵子天天都想着{v}。 |
                {v}永远的神，{noun}就它了。"""),
            "third": _s("""{name}最喜欢的{noun}是{v}。 | {name}最近特别迷{v}。 | {name}说{v}是最好的{noun}。 |
                听说{name}是{v}的铁粉。"""),
            "q_now": _s("""{name}现在最喜欢什么{noun}？ | {name}现在最爱的{noun}是什么？ | {name}最近最喜欢哪个{noun}？ |
                {name}现在最喜欢的{noun}是哪个？"""),
            "q": _s("""{name}最喜欢什么{noun}？ | {name}最爱的{noun}是什么？ | {name}最喜欢哪个{noun}？ |
                {name}最喜欢的{noun}是哪个？"""),
        },
    },
}

# nouns of the non-person families (the event, plan, task) and the preference categories (noun, value pool)
NOUNS: dict[str, dict[str, list[str]]] = {
    "recurring": {"en": _s("weekly sync | team meeting | book club | badminton night"),
                  "zh": _s("周会 | 例会 | 读书会 | 羽毛球局")},
    "plan_date": {"en": _s("the database migration | the beta launch | the office move | the v2 release"),
                  "zh": _s("数据库迁移 | 新版上线 | 机房搬迁 | APP发布")},
    "social_time": {"en": _s("team dinner | farewell drinks | barbecue | birthday dinner"),
                    "zh": _s("团队聚餐 | 欢送会 | 烧烤局 | 生日聚会")},
    "social_place": {"en": _s("team lunch | holiday party | karaoke night | anniversary dinner"),
                     "zh": _s("部门午饭 | 年底聚会 | K歌局 | 周年饭局")},
    "owner": {"en": _s("the release notes | the demo slides | the test plan | the weekly report"),
              "zh": _s("发布说明 | 演示PPT | 测试用例 | 周报")},
}
PREF_CATEGORIES: dict[str, dict[str, str]] = {
    "food": {"en": "food", "zh": "美食"}, "drink": {"en": "drink", "zh": "饮料"}, "team": {"en": "team", "zh": "球队"},
}

# members "id:name"; owners are colleagues named in a task but never in the chat; absent people are never named
MEMBERS = {
    "en": _s("""alice:Alice | bob:Bob | emma:Emma | frank:Frank | helen:Helen | ivan:Ivan | julia:Julia | kevin:Kevin |
        laura:Laura | mike:Mike | sophie:Sophie | victor:Victor | wendy:Wendy | xavier:Xavier | yusuf:Yusuf |
        zoe:Zoe"""),
    "zh": _s("""xiaowang:小王 | laozhang:老张 | ajie:阿杰 | xiaomei:小美 | wangfang:王芳 | chenchen:陈晨 | liuyang:刘洋 |
        zhouting:周婷 | sunhao:孙浩 | linlin:林琳 | guoqiang:郭强 | mali:马丽 | huanglei:黄磊 | xuting:徐婷 |
        yangfan:杨帆 | tianye:田野"""),
}
OWNERS = {
    "en": _s("Carol | Priya | Marco | Hannah | Kenji | Olga | Tariq | Grace | Felix | Nina | Omar | Ingrid"),
    "zh": _s("小李 | 阿强 | 小刘 | 老钱 | 小赵 | 阿敏 | 小何 | 大伟 | 小韩 | 老吴 | 小邓 | 阿峰"),
}
ABSENT = {
    "en": _s("grandma | Uncle Ray | the landlord | Aunt Rosa | my cousin Leo | Mr. Patel"),
    "zh": _s("外婆 | 表哥 | 房东 | 张阿姨 | 隔壁老王 | 大舅"),
}

# value pools: pool -> lang -> entries "surface/alias/…"
VALUES: dict[str, dict[str, list[str]]] = {
    "lives": {
        "en": _s("""Lisbon | Denver | Austin | Seattle | Boston | Portland | Toronto | Dublin | Oslo | Melbourne |
            Chicago | Vancouver"""),
        "zh": _s("""杭州/hangzhou | 深圳/shenzhen | 成都/chengdu | 苏州/suzhou | 南京/nanjing | 厦门/xiamen | 武汉/wuhan |
            西安/xi'an | 青岛/qingdao | 大连/dalian | 长沙/changsha | 昆明/kunming"""),
    },
    "works": {
        "en": _s("""Stripe | Shopify | Atlassian | Spotify | Dropbox | Canva | Twilio | Zillow | Figma | Notion |
            Airbnb | Datadog"""),
        "zh": _s("""字节跳动/字节/bytedance | 腾讯/tencent | 阿里巴巴/阿里/alibaba | 美团/meituan | 京东/jingdong |
            小米/xiaomi | 网易/netease | 华为/huawei | 百度/baidu | 滴滴/didi | 快手/kuaishou | 拼多多/pinduoduo"""),
    },
    "recurring": {  # tune: Mon Wed Fri, test: Tue Thu Sat
        "en": _s("""Monday/周一/星期一 | Tuesday/周二/星期二 | Wednesday/周三/星期三 | Thursday/周四/星期四 |
            Friday/周五/星期五 | Saturday/周六/星期六"""),
        "zh": _s("""周一/星期一/礼拜一/monday | 周二/星期二/礼拜二/tuesday | 周三/星期三/礼拜三/wednesday |
            周四/星期四/礼拜四/thursday | 周五/星期五/礼拜五/friday | 周六/星期六/礼拜六/saturday"""),
    },
    "social_time": {  # tune: 5:30 7:00 8:30 pm, test: 6:00 7:30 8:00 pm
        "en": _s("""5:30pm/5:30/17:30/五点半 | 6pm/18:00/六点 | 7pm/19:00/七点 | 7:30pm/7:30/19:30/七点半 |
            8:30pm/8:30/20:30/八点半 | 8pm/20:00/八点"""),
        "zh": _s("""晚上五点半/五点半/5点半/17:30/5:30 | 晚上六点/六点/6点/18:00/6pm | 晚上七点/七点/7点/19:00/7pm |
            晚上七点半/七点半/7点半/19:30/7:30 | 晚上八点半/八点半/8点半/20:30/8:30 | 晚上八点/八点/8点/20:00/8pm"""),
    },
    "social_place": {
        "en": _s("""Nando's | The Red Lion/red lion | Luigi's | Blue Fin/bluefin | Golden Dragon | The Oak Room/oak
            room | Casa Verde | Pho Saigon"""),
        "zh": _s("海底捞 | 蜀乡情 | 西贝 | 太二 | 鼎泰丰 | 眉州东坡 | 绿茶餐厅 | 大董"),
    },
    "food": {"en": _s("ramen | tacos | pad thai | lasagna | dumplings | paella | curry | burritos"),
             "zh": _s("火锅/hotpot | 烤鸭 | 小龙虾 | 寿司/sushi | 麻辣烫 | 饺子 | 螺蛳粉 | 煎饼果子")},
    "drink": {"en": _s("espresso | matcha | chai | lemonade | kombucha | cold brew | iced tea | hot chocolate"),
              "zh": _s("奶茶 | 美式 | 拿铁/latte | 乌龙茶 | 柠檬茶 | 豆浆 | 椰汁 | 酸梅汤")},
    "team": {"en": _s("Arsenal | Celtics | Yankees | Lakers | Packers | Barcelona | Liverpool | Chelsea"),
             "zh": _s("湖人/lakers | 勇士 | 皇马 | 巴萨 | 曼联 | 利物浦 | 国安 | 申花")},
    # edits (tune: 2pm 4pm, test: 3pm 10am; rooms tune 301 412 508, test 305 417 210)
    "edit_time": {"en": _s("2pm/14:00/两点 | 3pm/15:00/三点 | 4pm/16:00/四点 | 10am/10:00/十点"),
                  "zh": _s("下午两点/两点/2点/14:00/2pm | 下午三点/三点/3点/15:00/3pm | 下午四点/四点/4点/16:00/4pm |"
                           " 上午十点/十点/10点/10:00/10am")},
    "edit_room": {"en": _s("""room 301/301会议室 | room 305/305会议室 | room 412/412会议室 | room 417/417会议室 |
                      room 508/508会议室 | room 210/210会议室"""),
                  "zh": _s("""301会议室/room301 | 305会议室/room305 | 412会议室/room412 | 417会议室/room417 |
                      508会议室/room508 | 210会议室/room210""")},
    "offsite": {"en": _s("Lake Tahoe | Napa | Whistler | Banff | Big Sur | Cape Cod"),
                "zh": _s("莫干山 | 千岛湖 | 安吉 | 黄山 | 溧阳 | 崇礼")},
}
MONTHS_EN = ("April", "May", "June", "July", "August", "September")

# an edited message: (kind of value, statement, question); the subject nouns
EDITS: dict[str, list[tuple[str, str, str]]] = {
    "en": [("edit_time", "The {noun} is at {v} tomorrow, please be on time.", "What time is the {noun}?"),
           ("edit_time", "Heads up: {noun} today at {v}.", "When does the {noun} start?"),
           ("edit_room", "The {noun} is in {v}.", "Which room is the {noun} in?"),
           ("edit_room", "{noun} will be held in {v}, bring your laptop.", "Where is the {noun} held?")],
    "zh": [("edit_time", "{noun}明天{v}开始，准时哈。", "{noun}几点开始？"),
           ("edit_time", "提醒：{noun}今天{v}。", "{noun}是几点？"),
           ("edit_room", "{noun}在{v}。", "{noun}在哪个会议室？"),
           ("edit_room", "{noun}地点是{v}，记得带电脑。", "{noun}在哪开？")],
}
EDIT_NOUNS = {"en": _s("design review | vendor call | security training | candidate interview"),
              "zh": _s("设计评审 | 供应商电话会 | 安全培训 | 候选人面试")}
# a retracted message (the whole message is withdrawn later) and its question
RETRACTIONS: dict[str, list[tuple[str, str]]] = {
    "en": [("The offsite is going to be at {v}!", "Where is the offsite?"),
           ("Offsite location confirmed: {v}.", "Where are we going for the offsite?")],
    "zh": [("团建定在{v}了！", "团建去哪里？"), ("团建地点确定：{v}。", "团建在哪？")],
}
# a deleted user's canary statement and the question about it
CANARIES: dict[str, list[tuple[str, str]]] = {
    "en": [("My cat is called {c}, she's a menace.", "What is {name}'s cat called?"),
           ("Our band is called {c}, gig next month.", "What's the name of {name}'s band?"),
           ("I named my new car {c}.", "What did {name} name the new car?"),
           ("My gamer tag is {c}, add me.", "What is {name}'s gamer tag?")],
    "zh": [("我家猫叫{c}，特别黏人。", "{name}的猫叫什么？"), ("我们乐队叫{c}，下个月演出。", "{name}的乐队叫什么？"),
           ("我给新车起名叫{c}。", "{name}的新车叫什么名字？"), ("我的游戏ID是{c}，来加我。", "{name}的游戏ID是什么？")],
}
CANARY_SYLLABLES = _s("zor | quib | vex | plo | mirk | thaz | gol | fren | yub | krin | dax | wob | snel | trum | jib | varn")
CANARY_REPLIES = {"en": _s("haha love that name | wait, really? | that's so cool | ha, nice one"),
                  "zh": _s("哈哈这名字好有意思 | 真的假的 | 太酷了 | 笑死")}
# questions about what was never said: someone absent, or a topic nobody discussed
ABSENT_QUESTIONS = {
    "en": _s("""What flowers does {absent} like? | When is {absent}'s birthday? | What car does {absent} drive? |
        What is {absent}'s dog called?"""),
    "zh": _s("{absent}喜欢什么花？ | {absent}的生日是哪天？ | {absent}开什么车？ | {absent}养的狗叫什么？"),
}
NEVER_QUESTIONS = {
    "en": _s("""Where is the company holiday gala? | What's the office wifi password? | Who has a dog? | When is
        the next fire drill? | What's the team's travel budget? | What's the new intern's name?"""),
    "zh": _s("公司年会在哪里办？ | 办公室的wifi密码是多少？ | 谁养了狗？ | 下次消防演习是什么时候？ | 团队的差旅预算是多少？ |"
             " 新来的实习生叫什么？"),
}

REACTIONS = {"en": _s("ok | got it | sounds good | noted, thanks | nice! | 👍 | cool | makes sense"),
             "zh": _s("好的 | 收到 | 了解 | 没问题 | 好嘞 | 👌 | 可以 | 明白")}
# small talk: an opener and its replies, "opener || reply || reply"
FILLER = {
    "en": [f.split(" || ") for f in _s("""Anyone else's laptop super slow today? || Mine too, IT is on it || restart
        fixed it for me | It's pouring outside, forgot my umbrella || same lol || there are spares by the door |
        Did anyone watch the game last night? || missed it, any good? || what a finish | The coffee machine is broken
        again || noooo || tea it is then | Weekend plans anyone? || hiking if it doesn't rain || sleeping mostly |
        Who keeps leaving dishes in the sink || guilty || not me this time | My phone fell into the bathtub || oh no
        || try the rice trick | Traffic was insane this morning || took me an hour || bike life | Is the printer
        fixed yet? || jammed again || fine on my end | Happy to be done with that bug finally || nice work || what was
        it? | The new keyboard is so loud || mechanical? || I kind of like it | Long day, heading out soon || same ||
        see you tomorrow""")],
    "zh": [f.split(" || ") for f in _s("""今天电脑好卡啊 || 我也是 || 重启一下试试 | 外面下大雨了，没带伞 || 一样 ||
        前台有伞可以借 | 昨晚的比赛有人看吗 || 没看，精彩吗 || 最后太刺激了 | 楼下咖啡机又坏了 || 啊不是吧 || 那喝茶吧 |
        周末有什么安排 || 去爬山 || 在家睡觉 | 谁又把碗放水池里了 || 我的我的 || 这次不是我 | 手机掉水里了 || 天哪 ||
        放米里试试 | 早上堵车太严重了 || 我堵了一个小时 || 还是骑车好 | 打印机能用吗 || 又卡纸了 || 我这边可以 |
        那个bug终于修好了 || 辛苦了 || 原因是啥 | 新键盘好吵 || 机械的吗 || 我觉得还行 | 今天好累，准备下班了 ||
        一样 || 明天见""")],
}
