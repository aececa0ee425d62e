"""``memstream serve --workers N``: N API processes on one port and one data dir, so reads use every core.

One Python process tops out near 150 requests/s on this service (one GIL: ~5 ms of CPU a BM25 retrieval,
~12 ms a one-message write with its processing). Here a small supervisor (this process, no app loaded)
starts N worker processes (``python -m memstream.serve_procs``); each binds its own listening socket with
``SO_REUSEPORT``, so the kernel spreads connections over them, and runs the app with ``shared=True``
(:mod:`memstream.serving`): the worker holding the data dir's processing lock runs the pipeline, the others
serve reads and append writes to the durable log, and one takes the lock over if it dies. The supervisor
restarts a worker that dies (unless it failed at start: then every worker is stopped), and forwards SIGTERM/SIGINT (graceful stop of every worker).
Each worker loads its own embedding model and counts its own metrics (``/metrics`` is per process).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time

from memstream.served import announce, new_token
from memstream.settings import Settings

ENV_SETTINGS = "MEMSTREAM_SERVE_SETTINGS"  # the supervisor's settled Settings, as JSON, for its workers
ENV_INSTANCE = "MEMSTREAM_SERVE_INSTANCE"  # the token the workers' responses carry (memstream.served)
UP_S = 5.0  # a first-started worker failing (exit code > 0) sooner than this stops the serve; a restarted one
# failing that fast is restarted after a backoff


def listening_socket(host: str, port: int) -> socket.socket:
    """A listening socket that other processes may bind too (``SO_REUSEPORT``: the kernel balances)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)
    return sock


def check_port(host: str, port: int) -> str | None:
    """None if ``host:port`` is free (checked by binding and closing), else the reason. The check binds
    *without* ``SO_REUSEPORT``: another server's reuse-port listeners (a second ``serve --workers`` on
    another data dir) would let a reuse-port bind succeed and the kernel split the connections between both."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(1)
    except OSError as exc:
        return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


def _plain(value: object) -> object:
    """``Settings.model_dump()`` as JSON-able values, secrets revealed (their JSON dump masks them)."""
    from pydantic import SecretStr

    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    return value if value is None or isinstance(value, str | int | float | bool) else str(value)


def settings_json(settings: Settings) -> str:
    return json.dumps(_plain(settings.model_dump()))


def run_workers(settings: Settings, host: str, port: int, workers: int, **uvicorn_kw) -> int:
    """Start ``workers`` worker processes and supervise them until SIGTERM/SIGINT; returns an exit code."""
    from memstream.dirlock import processing_lock_free

    holder = processing_lock_free(settings.data_dir)
    problem = (f"{settings.data_dir} is being processed by {holder}; stop it first" if holder
               else check_port(host, port))  # fmt: skip
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    from memstream.metrics_shared import SharedMetrics

    SharedMetrics.clear(settings.data_dir)  # a crashed run's files: their pids may be reused by now
    token = new_token()  # every worker's responses carry it: `memstream query` asks these workers
    env = {**os.environ, ENV_SETTINGS: settings_json(settings), ENV_INSTANCE: token}
    args = [sys.executable, "-m", "memstream.serve_procs", host, str(port), json.dumps(uvicorn_kw)]
    with announce(settings.data_dir, host, port, settings.embedder, token):
        return _supervise(args, env, workers)


def _supervise(args: list[str], env: dict[str, str], workers: int) -> int:
    """Run ``workers`` processes of ``args``, restarting those that die, until SIGTERM/SIGINT."""
    procs: list[subprocess.Popen] = []
    started: list[float] = []
    stopping: list[int] = []
    first = set(range(workers))  # workers still on their first start: failing at once stops the serve
    restarts = [0] * workers  # quick failures in a row per worker: the next restart waits 2**n s (max 60)
    due: list[float | None] = [None] * workers  # when a dead worker is restarted

    def spawn(i: int) -> None:
        proc = subprocess.Popen([*args, str(i)], env=env)
        if i < len(procs):
            procs[i], started[i] = proc, time.monotonic()
        else:
            procs.append(proc)
            started.append(time.monotonic())

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)

    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for i in range(workers):
            spawn(i)
        code = 0
        while not stopping:
            time.sleep(0.2)
            for i, proc in enumerate(procs):
                now = time.monotonic()
                if proc.poll() is None:
                    if now - started[i] >= UP_S:
                        restarts[i] = 0  # up for a while: a later failure starts the backoff afresh
                    continue
                quick = proc.returncode > 0 and now - started[i] < UP_S  # it failed, it was not killed
                if quick and i in first:  # the serve's own start failed: say so and stop
                    print(
                        f"error: worker {i} (pid {proc.pid}) exited with {proc.returncode} at start",
                        file=sys.stderr,
                    )
                    stopping.append(signal.SIGTERM)
                    code = 1
                    break
                if due[i] is None:  # just found dead: restart at once, or after a backoff if it keeps failing
                    due[i] = now + (min(60.0, 2.0 ** restarts[i]) if quick else 0.0)
                    restarts[i] = restarts[i] + 1 if quick else 0
                    print(
                        f"worker {i} (pid {proc.pid}) exited with {proc.returncode}; restarting"
                        + (f" in {due[i] - now:.0f} s" if due[i] > now else ""),
                        file=sys.stderr,
                    )
                if now >= due[i]:
                    due[i] = None
                    first.discard(i)
                    spawn(i)
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 30
        for proc in procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return code
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def _die_with_parent() -> None:
    """Linux: SIGTERM this worker when the supervisor dies (even by SIGKILL)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def worker_main(host: str, port: int, uvicorn_kw: dict, index: int) -> None:
    """One worker: the app (shared) on its own ``SO_REUSEPORT`` socket."""
    import uvicorn

    from memstream.api import create_app

    parent = os.getppid()
    _die_with_parent()
    if os.getppid() != parent:  # the supervisor died before the line above
        return
    settings = Settings(**json.loads(os.environ[ENV_SETTINGS]))
    sock = listening_socket(host, port)
    app = create_app(settings, shared=True, instance=os.environ.get(ENV_INSTANCE))
    config = uvicorn.Config(app, host=host, port=port, **uvicorn_kw)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    worker_main(sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), int(sys.argv[4]))
