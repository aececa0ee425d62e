"""``serve --workers`` start-up checks: a port already served by reuse-port listeners is refused."""

from __future__ import annotations

from memstream.serve_procs import check_port, listening_socket


def test_a_port_held_by_another_servers_reuse_port_listeners_is_refused():
    held = listening_socket("127.0.0.1", 0)  # what the workers of another `serve --workers` bind
    port = held.getsockname()[1]
    try:
        reason = check_port("127.0.0.1", port)
        assert reason is not None and str(port) in reason
    finally:
        held.close()
    assert check_port("127.0.0.1", port) is None  # free again
