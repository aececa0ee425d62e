"""Slots said without a fixed phrase (language/extract/cue_slots.py via all_slots), English and Chinese."""

import pytest

from language.extract.event_slots import all_slots

NAMES = frozenset({"Bob", "Alice", "小王", "李雷"})


def slots(text: str, speaker: str) -> set[tuple[str, str, str]]:
    return {(s.attribute, s.subject, (s.value or "").rstrip(".")) for s in all_slots(text, speaker, NAMES)
            if not s.negated}


@pytest.mark.parametrize(
    ("text", "speaker", "want"),
    [
        ("Finally got a flat in Toronto, signing the lease today.", "Bob", ("lives_in", "Bob", "Toronto")),
        ("Big news, we relocated from Oslo to Boston.", "Bob", ("lives_in", "Bob", "Boston")),
        ("First week at Stripe, the onboarding is intense.", "Bob", ("works_at", "Bob", "Stripe")),
        ("Heard Ivan joined Shopify.", "Bob", ("works_at", "Ivan", "Shopify")),
        ("Alice got an offer from Dropbox and took it.", "Bob", ("works_at", "Alice", "Dropbox")),
        ("从我武汉的住处到公司只要二十分钟。", "小王", ("lives_in", "小王", "武汉")),
        ("入职网易第一周，新人手续好多。", "小王", ("works_at", "小王", "网易")),
        ("李雷说他住在杭州。", "小王", ("lives_in", "李雷", "杭州")),
        ("听说王芳搬到南京了", "小王", ("lives_in", "王芳", "南京")),
        ("Kombucha is my favourite drink.", "Bob", ("favorite_drink", "Bob", "Kombucha")),
        ("Alice says Packers is the best team.", "Bob", ("favorite_team", "Alice", "Packers")),
        ("要说最爱的球队，那必须是湖人。", "小王", ("favorite_球队", "小王", "湖人")),
        ("Reassigning the release notes from Carol to Omar.", "Bob", ("owner", "release notes", "Omar")),
        ("测试用例从小何转给小韩。", "小王", ("owner", "测试用例", "小韩")),
        ("发布说明有意见直接找小邓。", "小王", ("owner", "发布说明", "小邓")),
        ("部门午饭地点：鼎泰丰。", "小王", ("where", "午饭", "鼎泰丰")),
        ("Karaoke night venue: Casa Verde.", "Bob", ("where", "karaoke night", "Casa Verde")),
        ("大家好，我在字节跳动做后端开发。", "小王", ("works_at", "小王", "字节跳动")),
        ("我上个月已经从字节离职了，现在在阿里云。", "小王", ("works_at", "小王", "阿里云")),  # past the retraction
    ],
)
def test_indirect_statements_fill_their_slot(text, speaker, want):
    assert want in slots(text, speaker)


@pytest.mark.parametrize(
    "text",
    [
        "I want to move to Lisbon one day.",  # a wish
        "Thinking about applying to Google.",
        "我想去杭州工作。",
        "Dinner moved to Casa Nova.",  # the event moved, not a person
        "The weather in Paris was lovely.",  # no domain cue
    ],
)
def test_wishes_events_and_small_talk_fill_no_person_slot(text):
    assert not any(a in ("lives_in", "works_at") for a, _, _ in slots(text, "Bob"))


def test_the_old_value_of_a_change_is_not_the_new_one():
    assert ("works_at", "Bob", "Figma") in slots("Switched jobs: Figma now, Airbnb is history.", "Bob")
    assert ("works_at", "Bob", "Airbnb") not in slots("Switched jobs: Figma now, Airbnb is history.", "Bob")
    assert ("lives_in", "小王", "长沙") not in slots("我们从长沙搬到杭州了！", "小王")


@pytest.mark.parametrize(
    ("text", "speaker", "want"),
    [  # a relative the sentence opens with is the subject, not the speaker; "she" is the first clause's subject
        ("My sister Ana works at Siemens as an engineer.", "Bob", ("works_at", "Ana", "Siemens")),
        ("Ana left Siemens, she works at Bosch now.", "Bob", ("works_at", "Ana", "Bosch")),
        ("My sister works at Siemens.", "Bob", ("works_at", "Bob's sister", "Siemens")),
        ("My brother lives in Madrid.", "Bob", ("lives_in", "Bob's brother", "Madrid")),
        ("我妹妹在阿里上班。", "小王", ("works_at", "小王的妹妹", "阿里")),
        ("我妹妹跳槽到腾讯了。", "小王", ("works_at", "小王的妹妹", "腾讯")),
        ("我老婆在协和医院当护士。", "小王", ("works_at", "小王的老婆", "协和医院")),
        ("我妹妹现在在字节，加班好多", "小王", ("works_at", "小王的妹妹", "字节")),  # the cue slots' subject
        ("Bob said he moved to Oslo.", "Alice", ("lives_in", "Bob", "Oslo")),
        # a person the sentence opens with, not in the chat: news about them, told by the speaker
        ("Tomasz is at the Gdańsk office these days.", "Bob", ("works_at", "Tomasz", "Gdańsk")),
        ("Marta's at the Leeds office now.", "Alice", ("works_at", "Marta", "Leeds")),
    ],
)
def test_relatives_and_pronouns_are_the_subject(text, speaker, want):
    found = {(s.attribute, s.subject, s.value) for s in all_slots(text, speaker, NAMES) if not s.negated}
    assert want in found, found
    assert not any(a == want[0] and s == speaker for a, s, _ in found)  # never the speaker's own


@pytest.mark.parametrize(
    ("text", "speaker", "want"),
    [  # a clause without its own subject carries the one said before it; a relative named is that person
        ("我表哥老周上个月辞职了，现在在成都上班", "小王", ("works_at", "老周", "成都")),
        ("我同事阿强在京东上班", "小王", ("works_at", "阿强", "京东")),
        ("李雷换工作了，在深圳上班", "小王", ("works_at", "李雷", "深圳")),
        ("我朋友毕业以后，在广州工作", "小王", ("works_at", "小王的朋友", "广州")),
    ],
)
def test_a_clause_without_its_own_subject_is_about_the_one_said_before(text, speaker, want):
    found = {(s.attribute, s.subject, s.value) for s in all_slots(text, speaker, NAMES) if not s.negated}
    assert want in found, found
    assert not any(a == want[0] and s == speaker for a, s, _ in found)


def test_the_speakers_own_clause_stays_theirs():
    assert ("works_at", "小王", "深圳") in slots("我跳槽去了腾讯，在深圳上班", "小王")


@pytest.mark.parametrize("text", ["老实说，在杭州上班挺累的", "阿里的offer拿到了，在杭州上班"])
def test_a_clause_opening_is_not_taken_for_a_name(text):
    assert ("works_at", "小王", "杭州") in slots(text, "小王")


@pytest.mark.parametrize(
    "text",
    [
        "我下个月要搬家了，房东要卖房子",  # a move with no home named: "下个月要搬" is no place
        "那你不是要搬去杭州了",  # the one addressed moves, if anyone does: not the speaker
        "你是不是要去网易上班了",
        # a bot confirming what it was told speaks of the user: "you", not its own employer or home
        "Noted: you work at Monzo as a data analyst.",
        "Congrats, your new flat in Leeds sounds lovely",
        "好的，已记下：你现在在字节上班",
    ],
)
def test_a_time_or_an_addressee_gives_the_speaker_no_home_or_employer(text):
    assert not any(a in ("lives_in", "works_at") and s == "小王" for a, s, _ in slots(text, "小王"))


def test_the_speakers_own_home_or_employer_is_theirs_even_beside_a_you():
    assert ("works_at", "Bob", "Monzo") in slots("I told you I work at Monzo now", "Bob")
    assert ("lives_in", "Bob", "Leeds") in slots("thank you! I moved to Leeds last week", "Bob")


def test_a_chinese_home_or_employer_is_a_noun_phrase():
    # "在番禺租了个小房子" read "番禺租了个小" as the home; "跳槽去了字节" read "了字节" as the employer
    assert ("lives_in", "小王", "番禺") in slots("受不了了 月底搬去广州 在番禺租了个小房子", "小王")
    assert ("works_at", "小王的表姐", "字节") in slots("我表姐跳槽去了字节", "小王")
    assert ("lives_in", "小王", "杭州") in slots("你搬去哪了 我搬到杭州了", "小王")
