"""What a ``memstream`` command loads before it runs: ``--help`` and a question put to a running server need
neither the settings nor numpy nor the contracts' models (each command imports what it uses)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer

import schemas
from memstream.cli_common import check_chat


def test_the_cli_module_loads_light():
    script = (
        "import sys\nimport memstream.cli\n"
        "print(sorted(m for m in ('memstream.settings', 'numpy', 'schemas.memory', 'schemas.messages', 'asyncio',"
        " 'agents.config', 'memstream.clients') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_contracts_load_by_name():
    assert sorted(schemas.__all__) == sorted(schemas._MODULE_OF)
    for name in schemas.__all__:
        value = getattr(schemas, name)
        assert value is getattr(sys.modules[schemas._MODULE_OF[name]], name)
    with pytest.raises(AttributeError):
        schemas.NoSuchModel  # noqa: B018
    assert schemas.memory.MemoryRecord is schemas.MemoryRecord and schemas.ids.valid_id("c1") == "c1"


@pytest.mark.parametrize("bad", ["a/b", "", " c1", "x" * 257, "tab\there", "\ud800"])
def test_a_bad_chat_id_is_refused_as_the_contract_refuses_it(bad):
    from pydantic import TypeAdapter, ValidationError

    from schemas.base import Id

    with pytest.raises(ValidationError):
        TypeAdapter(Id).validate_python(bad)
    with pytest.raises(typer.BadParameter, match="bad chat id"):
        check_chat(bad)
    assert check_chat("team-alpha") == TypeAdapter(Id).validate_python("team-alpha")


def test_a_question_answered_in_the_process_does_not_load_the_pipeline(tmp_path):
    """``memstream query --local`` imports the store, the model and the router, not the runner and its stages
    (the distiller, segmenter and prompts cost a cold query ~0.15 s)."""
    from tests.live_server import ingested

    data = ingested(tmp_path, ["I live in Hangzhou now.", "Since when?"])  # in a process of its own
    script = (
        "import sys\nfrom memstream.cli import app\nfrom memstream.cli_common import run_cli\n"
        f"code = run_cli(app, ['query', '--chat', 'c1', 'Where does ann live?', '--data-dir', {str(data)!r},"
        " '--embedder', 'none', '--local'])\n"
        "assert code == 0, code\n"
        "print(sorted(m for m in ('streams.runner', 'agents.distiller', 'agents.segmenter') if m in sys.modules),"
        " file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.stderr.strip().splitlines()[-1] == "[]", proc.stderr[-800:]
