"""`serving.listen()`: the socket `heddle serve` and `heddle worker` bind before anything starts."""

from __future__ import annotations

import socket

import pytest

from heddle.serving import PortUnavailable, listen


def test_port_zero_binds_a_free_port_and_writes_it_to_the_port_file(tmp_path):
    port_file = tmp_path / "port"
    with listen("127.0.0.1", 0, str(port_file)) as sock:
        port = sock.getsockname()[1]
        assert port > 0 and port_file.read_text() == f"{port}\n"
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # listening already: connections wait in the backlog until the server accepts
    assert not (tmp_path / "port.tmp").exists()


@pytest.mark.parametrize("host, port, reason", [
    ("127.0.0.1", "held", "Address already in use"),
    ("127.0.0.1", 70000, "port must be 0-65535"),
    ("192.0.2.1", 0, "Cannot assign requested address"),  # TEST-NET-1: not an address of this machine
])
def test_a_port_that_cannot_be_bound_is_one_clear_reason(host, port, reason, tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as held:
        port = held.getsockname()[1] if port == "held" else port
        with pytest.raises(PortUnavailable) as refused:
            listen(host, port, str(tmp_path / "port"))
    assert str(refused.value).startswith(f"cannot listen on {host}:{port}: ") and reason in str(refused.value)
    assert "\n" not in str(refused.value) and "while attempting" not in str(refused.value)
    assert not (tmp_path / "port").exists()  # nothing reported for a port not bound
