"""docker-compose.yml and the Dockerfile, checked statically (no Docker engine needed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[3]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
EXPECTED = {"kafka", "redis", "elasticsearch", "bootstrap", "worker", "api"}
PINNED = re.compile(r"^[\w./-]+:\d+(\.\d+)+$")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def cli_app() -> typer.Typer:
    from memstream.cli import app
    from memstream.cli_prod import register

    return register(app)  # idempotent: a no-op once the lead's cli.py registers it


def test_services_present(compose):
    assert EXPECTED <= set(compose["services"])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_image_pinned(compose, name):
    image = compose["services"][name]["image"]
    assert PINNED.match(image), f"{name}: image {image!r} is not pinned to an exact version"
    assert not image.endswith(":latest")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_long_running_services_have_health_checks(compose, name):
    svc = compose["services"][name]
    if svc.get("restart") == "no":  # one-shot
        return
    check = svc.get("healthcheck")
    assert check and check.get("test"), f"{name} has no health check"
    assert not check.get("disable")


def _is_group(cmd) -> bool:  # typer vendors its own click: duck-type rather than isinstance(click.Group)
    return isinstance(getattr(cmd, "commands", None), dict)


def _walk(app: typer.Typer, args: list[str]):
    cmd = typer.main.get_command(app)
    path = []
    for token in args:
        if _is_group(cmd) and token in cmd.commands:
            cmd = cmd.commands[token]
            path.append(token)
        else:
            break
    return cmd, path


@pytest.mark.parametrize("name", ["bootstrap", "worker", "api"])
def test_commands_are_real_memstream_commands(compose, cli_app, name):
    command = compose["services"][name]["command"]
    assert command[0] == "memstream"
    args = command[1:]
    cmd, path = _walk(cli_app, args)
    assert path and not _is_group(cmd), f"{name}: {args} is not a memstream command"
    known = {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}
    for token in args[len(path) :]:
        if token.startswith("--"):
            assert token.split("=", 1)[0] in known, f"{name}: {token} is not an option of memstream {path}"
    result = CliRunner().invoke(cli_app, [*path, "--help"])
    assert result.exit_code == 0, result.output


def test_backends_and_scaling(compose):
    services = compose["services"]
    for name in ("bootstrap", "worker", "api"):
        env = services[name]["environment"]
        assert env["MEMSTREAM_LOG_URL"] == "kafka://kafka:9092"
        assert env["MEMSTREAM_STORE_URL"].startswith("es://elastic:${ELASTIC_PASSWORD:?")
        assert env["MEMSTREAM_STORE_URL"].endswith("@elasticsearch:9200")
        assert env["MEMSTREAM_WORKING_MEMORY_URL"] == "redis://redis:6379/0"
    worker = services["worker"]
    assert "container_name" not in worker and "ports" not in worker  # --scale worker=N must work
    assert worker["depends_on"]["bootstrap"]["condition"] == "service_completed_successfully"
    assert services["bootstrap"]["depends_on"]["kafka"]["condition"] == "service_healthy"
    es = services["elasticsearch"]["environment"]
    assert es["discovery.type"] == "single-node" and es["xpack.security.enabled"] == "true"
    assert es["ELASTIC_PASSWORD"].startswith("${ELASTIC_PASSWORD:?")  # generated, never a default
    assert "-Xmx" in es["ES_JAVA_OPTS"]
    for name in ("kafka", "redis", "elasticsearch"):
        mounts = services[name]["volumes"]
        assert any(m.split(":")[0] in compose["volumes"] for m in mounts), f"{name} keeps no data volume"


def test_dockerfile():
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert re.search(r"^FROM python:3\.11-slim$", text, re.M)
    torch = text.index("pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu")
    assert torch < text.index('pip install ".[prod]"')


def test_secure_by_default(compose):
    """Only the API is published (loopback unless told otherwise); the backends sit on an internal network;
    the API requires keys."""
    services = compose["services"]
    assert compose["networks"]["backend"]["internal"] is True
    for name, svc in services.items():
        if name != "api":
            assert "ports" not in svc, f"{name} publishes a host port"
            assert svc.get("networks") == ["backend"], name
    assert services["api"]["ports"] == ["${MEMSTREAM_PUBLISH:-127.0.0.1}:8080:8080"]
    assert services["api"]["environment"]["MEMSTREAM_SERVE__AUTH"] == "required"
    assert "EXTERNAL" not in services["kafka"]["environment"]["KAFKA_LISTENERS"]
