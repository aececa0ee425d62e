"""A generated set for the sensitive-information detector: chat lines (zh/en) with planted values of each
kind at known spans, and look-alike negatives (times, dates, prices, order and tracking numbers, versions,
IPs, non-Luhn card-length numbers, rooms). ``score`` gives precision/recall per kind (span overlap)."""

from __future__ import annotations

import random
from collections.abc import Callable

from streams.sensitive import KINDS, detect, id_checksum, luhn

Planted = tuple[str, int, int]  # kind, start, end


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def _luhn_complete(rng: random.Random, prefix: str, length: int) -> str:
    body = prefix + _digits(rng, length - len(prefix) - 1)
    return next(body + d for d in "0123456789" if luhn(body + d))


def phone(rng):
    mobile = rng.choice("3456789")
    n = f"1{mobile}{_digits(rng, 9)}"
    return rng.choice([n, f"{n[:3]} {n[3:7]} {n[7:]}", f"{n[:3]}-{n[3:7]}-{n[7:]}", f"+86 {n}",
                       f"0{rng.choice(['10', '21', '571', '755'])}-{_digits(rng, 8)}",
                       f"({rng.randint(201, 989)}) {rng.randint(200, 999)}-{_digits(rng, 4)}",
                       f"{rng.randint(201, 989)}-{rng.randint(200, 999)}-{_digits(rng, 4)}",
                       f"+44 20 {_digits(rng, 4)} {_digits(rng, 4)}", f"+1 415 {rng.randint(200, 999)} {_digits(rng, 4)}"])


def id_card(rng):
    if rng.random() < 0.25:
        return f"{rng.randint(100, 899)}-{rng.randint(10, 99)}-{_digits(rng, 4)}"
    body = f"{rng.choice(['110105', '310104', '330106', '440305', '510107'])}{rng.randint(1950, 2010)}" \
           f"{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{_digits(rng, 3)}"
    return next(body + c for c in "0123456789X" if id_checksum(body + c))


def bank_card(rng):
    n = _luhn_complete(rng, rng.choice(["4", "51", "62", "6222"]), rng.choice([16, 16, 19]))
    return n if rng.random() < 0.5 else " ".join(n[i:i + 4] for i in range(0, len(n), 4))


def email(rng):
    user = rng.choice(["bob", "alice.w", "li_lei", "zhang.san99", "ops-team"])
    return f"{user}@{rng.choice(['example.com', 'mail.qq.com', '163.com', 'corp.example.org'])}"


def secret(rng):
    alnum = "".join(rng.choice("abcdefghjkmnpqrstuvwxyzABCDEFGH23456789") for _ in range(rng.randint(8, 14)))
    word = alnum + rng.choice(["", "!", "#1", "@x"])
    return rng.choice([("password: ", word), ("my password is ", word), ("密码是", word), ("口令：", word),
                       ("key ", "sk-" + _digits(rng, 6) + alnum + "abcdEFGH1234"), ("", "AKIA" + _digits(rng, 16)),
                       ("token=", "ghp_" + "x" * 8 + alnum + "A" * 16)])


def address(rng):
    if rng.random() < 0.5:
        street = rng.choice(["Baker Street", "Elm St", "Maple Avenue", "Sunset Blvd", "Oak Lane", "King Road"])
        return f"{rng.randint(1, 9999)} {street}" + rng.choice(["", f", Apt {rng.randint(1, 40)}"])
    city = rng.choice(["杭州市西湖区", "上海市浦东新区", "北京市海淀区", "深圳市南山区", ""])
    road = rng.choice(["文三路", "世纪大道", "中关村大街", "科技园路", "南京西路"])
    return f"{city}{road}{rng.randint(1, 999)}号" + rng.choice(["", f"{rng.randint(1, 9)}幢{rng.randint(101, 2505)}室"])


MAKERS: dict[str, Callable] = {"phone": phone, "id_card": id_card, "bank_card": bank_card, "email": email,
                               "secret": secret, "address": address}
FRAMES = {
    "en": ["Sure, {v} works for me.", "you can reach it at {v} after 6pm", "Noted: {v}", "ok so it's {v}, right?"],
    "zh": ["好的，{v} 你记一下", "我的是{v}，别外传", "收到：{v}", "发你了 {v} 看下"],
}
NEGATIVES = [
    "Meeting moved to 10:30 on 2024-05-01.", "The order #20240501 ships tomorrow.", "It costs ¥1999 or $249.99.",
    "Upgrade to v2.3.14 before Friday.", "Server 192.168.1.10 is down again.", "We have 30000 users now.",
    "Tracking number SF1234567890123.", "Room 502, building 3.", "明天下午3点在3号会议室", "价格是12800元",
    "订单号 4111111111111112 已发货", "我们组有 12 个人", "第 2024 届年会", "Call the 911 if needed.",
    "版本 1.12.0 已发布", "the password policy changed last week", "my key takeaway is simple",
    "I live near the lake now", "我住在西湖边", "电话会议改到周三", "he said 138 is a lucky number",
    "invoice 2024-0012-7781 paid", "Flight CA1234 lands at 18:05",
]


def generate(n_per_kind: int = 200, seed: int = 7) -> list[tuple[str, list[Planted]]]:
    rng = random.Random(seed)
    out: list[tuple[str, list[Planted]]] = []
    for kind, make in MAKERS.items():
        for i in range(n_per_kind):
            value = make(rng)
            lead, value = value if isinstance(value, tuple) else ("", value)
            frame = rng.choice(FRAMES["zh" if i % 2 else "en"])
            before, after = frame.split("{v}")
            text = f"{before}{lead}{value}{after}"
            start = len(before) + len(lead)
            out.append((text, [(kind, start, start + len(value))]))
    for i in range(n_per_kind * 2):
        out.append((NEGATIVES[i % len(NEGATIVES)], []))
    rng.shuffle(out)
    return out


def score(data: list[tuple[str, list[Planted]]]) -> dict[str, dict[str, float]]:
    """Precision/recall per kind: a finding is right when it overlaps a planted value of its kind."""
    tp = dict.fromkeys(KINDS, 0)
    fp = dict.fromkeys(KINDS, 0)
    fn = dict.fromkeys(KINDS, 0)
    for text, planted in data:
        found = detect(text)
        for f in found:
            hit = any(k == f.kind and f.start < e and s < f.end for k, s, e in planted)
            tp[f.kind] += hit
            fp[f.kind] += not hit
        for k, s, e in planted:
            fn[k] += not any(f.kind == k and f.start < e and s < f.end for f in found)
    return {k: {"precision": round(tp[k] / max(1, tp[k] + fp[k]), 4), "recall": round(tp[k] / max(1, tp[k] + fn[k]), 4),
                "n": tp[k] + fn[k]} for k in KINDS}
