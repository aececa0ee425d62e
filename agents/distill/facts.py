"""Facts of one message, sentence by sentence: standalone rewriting, subject, slots, informativeness."""

from __future__ import annotations

import re

from agents.distill.context import Collected, Draft, Sentence, TopicContext, make_fact
from agents.distill.qa import answer_part, question_part
from agents.distill.summary import GENERIC_WORDS
from language.extract.corrections import corrected_span
from language.extract.entities import NOT_ENTITIES, find_entities
from language.extract.event_slots import all_slots
from language.extract.person import Rewrite, attributed, to_third_person
from language.extract.plan_moves import moves_plan
from language.extract.slot_text import question_slot, short_answer_value, slot_sentence
from language.extract.slots import SlotMatch, find_slots, is_retraction, states_change
from language.extract.tasks import find_task
from language.extract.text import cjk_tags, is_filler, is_question, split_sentences
from language.text import ENGLISH_STOPWORDS, extract_keywords, has_cjk, text_cache, tokenize
from language.time.anchors import named_week
from language.time.dates import annotate_dates, find_dates
from schemas import ChatMessage, Relation

__all__ = ["answer_slot_fact", "distill_message"]


_PREFERENCE_RE = re.compile(
    r"(?i)\b(love|like|enjoy|prefer|hate|favou?rite|fan of|into)\b|喜欢|爱|讨厌|最爱|偏好"
)
_PLAN_RE = re.compile(
    r"(?i)\b(going to|gonna|plan|planning|will|'ll|want to|hope to|thinking of)\b|打算|准备|计划|想要|要去"
)


_INTERJECTION_RE = re.compile(
    r"(?i)^(?:(?:yeah|yes|yep|yup|oh|wow|woah|whoa|ooh|yay|gosh|omg|man|dude|well|haha+|hehe|hmm+|aw+|ah+|"
    r"ok(?:ay)?|so|thanks|thank you|totally|"
    r"absolutely|lol|omg|hey|hi|anyway|by the way|btw)\b[\s,!.~-]*)+|"
    r"^(?:嗯+|哈+|哦+|噢|啊|哇|对|是的|好的|对了|话说)[，,！!~\s]+|^(?:对了|话说|顺便说一下)(?=[\u4e00-\u9fff])"
)

# what a user says to have a bot keep something: not part of the fact ("remember that my appointment is…")
_REMINDER_RE = re.compile(
    r"(?i)^(?:please |pls )?(?:remember|note|keep in mind|don't forget|do not forget)(?: that)?[\s,:]+|"
    r"^(?:fyi|just so you know|for the record)\b[\s,:]*|^(?:请)?(?:记住|记一下|帮我记(?:一下|住)?)[，,：:\s]*"
)


def distill_message(ctx: TopicContext, m: ChatMessage, question: ChatMessage | None, out: Collected) -> None:
    """Facts, tasks and relations of one message, sentence by sentence."""
    speaker, addressee = m.display_name, ctx.addressee(m)
    sources = [m.message_id] + ([question.message_id] if question is not None else [])
    week_of = ctx.week_context(m)  # "下周三聚餐改到周四" -> "收到，我周四可以": that Thursday
    event: str | None = None  # the event talked about, for a change that names none (read when one comes)
    for original in _statement_heads(split_sentences(m.text)):
        if is_filler(original, ctx.names):
            continue
        sent = _strip_lead(original, ctx.names)
        dates = find_dates(sent, m.ts, week_of=week_of)
        old = corrected_span(sent)  # "Saturday the 14th, not Friday": Friday is no date of the fact
        dates = [d for d in dates if not (old and d.start < old[1] and old[0] < d.end)]
        week_of = named_week(sent, dates) or week_of  # "下周三的会取消了。改到周四。"
        rewrite = to_third_person(annotate_dates(sent, dates), speaker, addressee)
        entities = find_entities(sent, ctx.names)
        out.entity_counts.update(entities)
        task = find_task(sent, rewrite.text, m, speaker, addressee, dates, ctx.names)
        if task is not None:
            out.tasks.append(task)
            out.sentences.append(
                Sentence(m, speaker, sent, set(tokenize(sent)), 1.5 if task.is_decision else 0.5)
            )
        if is_question(sent):
            continue
        if event is None and moves_plan(sent):
            event = ctx.event_context(m) or ""
        slots = all_slots(sent, speaker, ctx.names, event=event or None)
        if _FIRST_PERSON.search(sent) is None and asks_of_someone_else(question, m):
            # "is she still in Leeds?" - "nope, moved to York": the dropped subject is hers, not the speaker's
            slots = [s for s in slots if s.subject != speaker]
        out.relations.extend(
            Relation(
                subject=s.subject,
                predicate=s.attribute,
                object=s.value,
                source_message_ids=[m.message_id],
                at=m.ts,
            )
            for s in slots
            if s.value and not s.negated
        )
        if task is not None and not slots:
            continue  # a task sentence is stored as the task, not again as a fact
        score = _informativeness(sent, rewrite, bool(slots), bool(dates), bool(entities)) + (
            question is not None
        )
        if not slots and (len(_content_tokens(sent)) < 2 or (score < 2.5 and not (
                rewrite.first_person or _changed(sent) or (dates and moves_plan(sent))  # "Thursday moved to Friday"
                or _named_subject(sent, ctx.names) is not None))):  # news about someone: "Jo left the firm"
            continue
        out.sentences.append(Sentence(m, speaker, sent, set(tokenize(sent)), 0.3 * score))
        for draft in _fact_drafts(sent, original, rewrite, slots, speaker, addressee, ctx.names, entities):
            out.facts.append((make_fact(ctx, out, m, sources, speaker, draft), score))


def _fact_drafts(
    sent: str,
    original: str,
    rewrite: Rewrite,
    slots: list[SlotMatch],
    speaker: str,
    addressee: str | None,
    names: frozenset[str],
    entities: list[str],
) -> list[Draft]:
    """The sentence as one standalone fact, plus a short fact for every further slot it states."""
    cjk = has_cjk(sent)
    first = slots[0] if slots else None
    subject = first.subject if first else _subject(sent, rewrite, speaker, addressee, names)
    text = rewrite.text
    if first and subject not in text and subject.replace("的", "") not in text:  # "在阿里巴巴上班" said by 小王
        text = (
            subject + text
            if cjk
            else slot_sentence(first.attribute, first.value, subject, first.negated, False) or text
        )
    if not (rewrite.first_person or slots or subject not in (None, speaker)) or (
        subject == addressee and rewrite.second_person_subject
    ):
        text = attributed(text, speaker)  # someone else's news or opinion: keep who said it
    negated = (first.negated if first else False) or is_retraction(original)
    conf = 0.9 if slots else 0.8 if rewrite.first_person else 0.6 if text.startswith(speaker) else 0.7
    drafts = [Draft(text, subject, first, negated, entities, conf)]
    for slot in slots[1:]:
        extra = slot_sentence(slot.attribute, slot.value, slot.subject, slot.negated, cjk)
        if extra:
            drafts.append(Draft(extra, slot.subject, slot, slot.negated, entities, 0.85))
    return drafts



def _subject(
    sent: str, rewrite: Rewrite, speaker: str, addressee: str | None, names: frozenset[str]
) -> str | None:
    if rewrite.first_person:
        return speaker
    named = _named_subject(sent, names)
    if named is not None:
        return named
    if rewrite.second_person_subject:
        return addressee
    # "吉他学不下去了，现在改练钢琴", "Forget the Figma thing, the offer fell through": the speaker's own change
    return speaker if _changed(sent) else None


def _named_subject(sent: str, names: frozenset[str]) -> str | None:
    """A person the sentence opens with: a participant, a name jieba tags (Chinese), a capitalised entity."""
    if has_cjk(sent):
        for name in sorted(names, key=len, reverse=True):
            if sent.startswith(name):
                return name
        tags = cjk_tags(sent)
        return tags[0][0] if tags and tags[0][1] in ("nr", "nrt", "nrfg") else None
    first = sent.split(" ", 1)[0].strip(",.!?:")
    if first in names or (
        first[:1].isupper()
        and first.lower() not in ENGLISH_STOPWORDS
        and first not in NOT_ENTITIES
        and first in find_entities(sent, names)
    ):
        return first
    return None


def _strip_lead(sent: str, names: frozenset[str]) -> str:
    """Drop leading interjections and vocatives: ``Yeah, Caroline, I painted…`` -> ``I painted…``."""
    out = sent
    for _ in range(3):
        before = out
        out = _REMINDER_RE.sub("", _INTERJECTION_RE.sub("", out).strip()).strip()
        for name in names:
            for form in {name, name.split()[0]}:
                if out[: len(form)].casefold() == form.casefold() and out[len(form) : len(form) + 1] in (
                    ",", "!", "，", "！"
                ):
                    out = out[len(form) + 1 :].strip()
        if out == before:
            break
    return out or sent


_LAST_CLAUSE = re.compile(r"^(?P<head>.+)[,，;；]\s*(?P<tail>[^,，;；]+)$")


def _statement_heads(sentences: list[str]) -> list[str]:
    """The sentences, a question whose first part states a change said as two ("I'm not doing the snacks
    anymore, can you take over?", "我不去了，你去吗？"): the change is news, the question is not."""
    out: list[str] = []
    for sent in sentences:
        m = _LAST_CLAUSE.match(sent.strip()) if is_question(sent) else None
        if m and not is_question(m["head"]) and _changed(m["head"]):
            out += [m["head"], m["tail"]]
        else:
            out.append(sent)
    return out


def _content_tokens(sent: str) -> set[str]:
    return extract_keywords(sent) - GENERIC_WORDS


@text_cache(4096)  # asked up to three times a sentence: its score, the keep check, its subject
def _changed(sent: str) -> bool:
    """A change or retraction said without a subject, as Chinese chat says most things ("吉他学不下去了，现在改
    练钢琴", "成都出差取消了，改去重庆") and English corrections do ("Forget the Figma thing, the offer fell
    through"): news about the speaker as much as a first-person sentence, and what keeps memory current."""
    return states_change(sent) or is_retraction(sent)


_FIRST_PERSON = re.compile(r"(?i)\b(?:i|i'm|im|i've|i'll|i'd|me|my|mine|we|we're|our|us)\b|我|咱")
_THIRD_PERSON = re.compile(r"(?i)\b(?:she|he|her|him|his|they|them|their)\b|[他她]")
_SECOND_PERSON = re.compile(r"(?i)\b(?:you|your|u|ur)\b|你|您")


def asks_of_someone_else(question: ChatMessage | None, answer: ChatMessage) -> bool:
    """``question`` (another person's, answered by ``answer``) asks about a third person ("is she still in
    Leeds?", "他还在杭州吗？"), not about the one answering."""
    return (question is not None and question.sender != answer.sender
            and _THIRD_PERSON.search(question.text) is not None and _SECOND_PERSON.search(question.text) is None)  # fmt: skip


def _informativeness(sent: str, rewrite: Rewrite, slot: bool, dated: bool, has_entities: bool) -> float:
    n_tokens = len(_content_tokens(sent))
    score = 3.0 * slot + 1.5 * (rewrite.first_person or _changed(sent)) + 1.5 * dated + 1.0 * has_entities
    score += 0.5 * bool(re.search(r"\d", sent)) + 1.0 * bool(_PREFERENCE_RE.search(sent))
    score += 0.5 * bool(_PLAN_RE.search(sent)) + 0.15 * min(n_tokens, 10)
    return score - 0.5 * rewrite.second_person_subject


def answer_slot_fact(ctx: TopicContext, answer: ChatMessage, question: ChatMessage, out: Collected) -> None:
    """``Where do you live now?`` — ``Hangzhou.`` becomes the fact ``Bob lives in Hangzhou``."""
    asked = question_slot(question_part(question, ctx.names))
    if asked is None or asks_of_someone_else(question, answer) or find_slots(answer.text, answer.display_name, ctx.names):
        return
    value = short_answer_value(answer_part(answer, ctx.names))
    if value is None:
        return
    attribute = f"{asked[0]}:{asked[1]}" if asked[1] else asked[0]
    text = slot_sentence(attribute, value, answer.display_name, False, has_cjk(question.text + answer.text))
    if text is None:
        return
    slot = SlotMatch(attribute, value, answer.display_name, False, 0, 0)
    draft = Draft(text, answer.display_name, slot, False, [value], 0.7)
    fact = make_fact(ctx, out, answer, [answer.message_id, question.message_id], answer.display_name, draft)
    out.facts.append((fact, 4.0))
    out.relations.append(
        Relation(
            subject=answer.display_name,
            predicate=attribute,
            object=value,
            source_message_ids=[answer.message_id, question.message_id],
            at=answer.ts,
        )
    )
