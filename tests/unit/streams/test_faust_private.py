"""The one module holding every private Faust / aiokafka internal memstream uses: pinned to the versions it was
checked against, each internal still there (an upgrade fails here, by name, before it fails in a worker)."""

from __future__ import annotations

from importlib.metadata import version

import faust

from streams import faust_private
from streams.faust_private import SUPPORTED, internals


def test_the_installed_faust_and_aiokafka_are_the_versions_the_adapter_supports():
    for dist, prefixes in SUPPORTED.items():
        assert version(dist).startswith(prefixes), (
            f"{dist} {version(dist)} is installed; streams/faust_private.py was checked against {prefixes}: "
            "check each internal it uses, then extend SUPPORTED"
        )


def test_every_class_internal_the_adapter_uses_is_there():
    assert [what for what, owner, attr in internals() if not hasattr(owner, attr)] == []


async def test_a_streams_internals_are_there_and_a_processor_goes_as_it_came():
    app = faust.App("private-test", broker="kafka://127.0.0.1:1", web_enabled=False, autodiscover=False,
                    store="memory://")  # fmt: skip
    stream = app.stream(app.topic("private-test", value_serializer="raw"))

    async def gen():
        yield None

    agen = gen()
    faust_private.track_generator(stream, agen)
    assert agen in stream._active_agens

    def add(value):
        return value

    before = list(stream._processors)
    stream.add_processor(add)
    faust_private.drop_processor(stream, add)
    assert list(stream._processors) == before
    await agen.aclose()


def test_no_other_module_touches_a_private_faust_or_aiokafka_internal():
    """Every private name used lives in the adapter: the other stream modules reach Faust through it."""
    from pathlib import Path

    root = Path(faust_private.__file__).parent
    names = ("_active_agens", "_enable_passive", "_processors", "_create_worker_consumer", "_fetch_max_wait_ms",
             "_ensure_producer", "_new_consumer_thread", "_new_transport")  # fmt: skip
    for path in sorted(root.rglob("*.py")):
        if path.name != "faust_private.py":
            text = path.read_text(encoding="utf-8")
            assert not [n for n in names if n in text], path
