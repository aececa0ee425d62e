"""``memstream keys list`` shows every key id whole, even in 80 columns, and ``keys revoke`` takes any start of
an id that no other live key shares (an ambiguous one is refused, naming the keys it could be)."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memstream.cli import app
from memstream.cli_common import run_cli
from memstream.keys import KeyInfo, KeyStore, match_key
from tests.live_server import child_env, memstream_cmd


def info(key_id: str) -> KeyInfo:
    from datetime import UTC, datetime

    return KeyInfo(key_id=key_id, name=f"bot-{key_id}", scopes=["read"], chats=["c"], created_at=datetime.now(UTC))


def test_match_key_takes_a_unique_start_and_refuses_an_ambiguous_one():
    keys = [info("3f2a9c01be77"), info("3f88aa001122"), info("b0b0b0b0b0b0")]
    assert match_key("b", keys).key_id == "b0b0b0b0b0b0"
    assert match_key("3f2", keys).key_id == "3f2a9c01be77"
    assert match_key("3f88aa001122", keys).key_id == "3f88aa001122"
    with pytest.raises(ValueError, match=r"'3f' is the start of 2 key ids \(3f2a9c01be77, 3f88aa001122\)"):
        match_key("3f", keys)
    with pytest.raises(ValueError, match="no key id starts with 'zz'"):
        match_key("zz", keys)
    with pytest.raises(ValueError, match="which key"):
        match_key(" ", keys)


@contextmanager
def keystore(data_dir: Path) -> Iterator[KeyStore]:
    store = KeyStore(data_dir / "keys.db")
    asyncio.run(store.open())
    try:
        yield store
    finally:
        asyncio.run(store.close())


def stored_keys(data_dir: Path) -> list[KeyInfo]:
    with keystore(data_dir) as store:
        return store.list_keys(include_revoked=True)


@pytest.fixture
def keyed(tmp_path):
    """A data dir with 17 keys: more than there are hex digits, so two ids always share their first."""
    data = tmp_path / "d"
    data.mkdir()
    with keystore(data) as store:
        for n in range(17):
            store.create(f"support-bot-number-{n}", ["read", "write"], ["team-alpha", "team-beta-long-name"], [])
    return data


def test_keys_list_shows_whole_ids_in_80_columns(keyed):
    listed = subprocess.run(memstream_cmd("keys", "list", "--data-dir", str(keyed)), capture_output=True, text=True,
                            timeout=120, env=child_env(COLUMNS="80"))  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert max(len(line) for line in listed.stdout.splitlines()) <= 80
    for key in stored_keys(keyed):
        assert key.key_id in listed.stdout


def test_keys_revoke_takes_the_shortest_unique_start(keyed, capsys):
    keys = stored_keys(keyed)
    ids = [k.key_id for k in keys]
    target = ids[0]
    start = next(target[:n] for n in range(1, 13) if sum(i.startswith(target[:n]) for i in ids) == 1)
    assert run_cli(app, ["keys", "revoke", start, "--data-dir", str(keyed)]) == 0
    assert f"revoked {target}" in capsys.readouterr().err
    assert [k.key_id for k in stored_keys(keyed) if k.revoked_at is not None] == [target]
    assert run_cli(app, ["keys", "revoke", target, "--data-dir", str(keyed)]) == 2
    assert f"key {target} (support-bot-number-0) was revoked on" in capsys.readouterr().err


def test_keys_revoke_refuses_a_start_several_ids_share(keyed, capsys):
    ids = [k.key_id for k in stored_keys(keyed)]
    assert run_cli(app, ["keys", "revoke", "", "--data-dir", str(keyed)]) == 2
    assert "which key?" in capsys.readouterr().err
    shared = next(a[:1] for a in ids for b in ids if a != b and a[0] == b[0])
    assert run_cli(app, ["keys", "revoke", shared, "--data-dir", str(keyed)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"'{shared}' is the start of" in err and "give more of the id" in err
    assert all(k.revoked_at is None for k in stored_keys(keyed))


def test_keys_list_of_a_data_dir_that_is_not_there_is_an_error(tmp_path, capsys):
    assert run_cli(app, ["keys", "list", "--data-dir", str(tmp_path / "nope")]) == 2
    assert "no data dir at" in capsys.readouterr().err and not (tmp_path / "nope").exists()
