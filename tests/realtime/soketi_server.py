"""soketi (an open-source Pusher-protocol server, from npm) as a real process on loopback ports,
and a plain TCP relay that stands for the public address browsers are given.

soketi binds its ports as configured and never reports them, so they are picked below the
ephemeral range (support.net.port_block), where only an explicit bind can take them. Its config
file binds everything to 127.0.0.1, including the UDP socket of its cluster discovery, which
would otherwise broadcast to the whole network.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import httpx

from support.net import port_block

SOKETI_DIR = Path(__file__).parent / "soketi"
START_SECONDS = 60
# uws-js-unofficial falls back to a pure-JS server when its native binary does not load on this
# Node or C library; the test is about soketi as deployed, so that fallback counts as a failure.
FALLBACK_WARNING = "Falling back to a NodeJS implementation"


@dataclass
class Soketi:
    proc: subprocess.Popen
    port: int
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def soketi(folder: Path, *, app_id: str, key: str, secret: str):
    """A soketi process with one app (id, key, secret) on 127.0.0.1, ready; stopped on exit."""
    port = port_block(3)
    metrics_port, cluster_port = port + 1, port + 2
    config = {
        "host": "127.0.0.1",
        "port": port,
        "metrics.host": "127.0.0.1",
        "metrics.port": metrics_port,
        "cluster.address": "127.0.0.1",
        "cluster.port": cluster_port,
        "cluster.unicast": "127.0.0.1",
        "appManager.array.apps": [
            {
                "id": app_id,
                "key": key,
                "secret": secret,
                "enabled": True,
                "enableClientMessages": False,
                "maxConnections": -1,
                "maxBackendEventsPerSecond": -1,
                "maxClientEventsPerSecond": -1,
                "maxReadRequestsPerSecond": -1,
                "webhooks": [],
            }
        ],
    }
    (folder / "soketi.json").write_text(json.dumps(config))
    log = folder / "soketi.log"
    # The config file rules (no SOKETI_*), and the native server (no UWS_USE_FALLBACK).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOKETI_", "UWS_"))}
    with log.open("wb") as out:  # cwd=folder: soketi reads a .env from its working directory
        proc = subprocess.Popen(
            [str(SOKETI_DIR / "node_modules" / ".bin" / "soketi"), "start", f"--config={folder / 'soketi.json'}"],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = Soketi(proc, port, log)
    try:
        _wait_ready(server)
        yield server
    finally:
        proc.terminate()  # soketi closes its sockets and exits on SIGTERM
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _wait_ready(server: Soketi) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"soketi exited {server.proc.returncode}:\n{server.output()[-3000:]}")
        if FALLBACK_WARNING in server.output():
            raise RuntimeError(f"soketi runs without its native uWebSockets.js:\n{server.output()[-3000:]}")
        with suppress(httpx.HTTPError):
            if httpx.get(f"http://127.0.0.1:{server.port}/ready", timeout=1).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"soketi not ready in {START_SECONDS} s:\n{server.output()[-3000:]}")


class Relay:
    """Forwards every TCP connection on its own loopback port to `target`: the public address
    (a load balancer, say) through which browsers reach a Pusher-protocol server that Heddle
    reaches at another, internal one. Counts the connections it carried."""

    def __init__(self, target: int):
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            self.connections += 1
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        with suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        for sock in (src, dst):  # one side closed: close both, which ends the other pipe too
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        with suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() that close() alone would not
        self.listener.close()
