"""The server contacts nobody (issue 32, item 10): `streamlit run app.py` headless with the shipped
.streamlit/config.toml, under a sitecustomize that records every non-loopback connect() and DNS lookup of the
server process, serves a page, a session and a websocket handshake with a foreign Origin, and records none.

Streamlit's lookups: the "External URL" banner line (skipped: config.toml sets browser.serverAddress) and the
cross-origin websocket check (assess.ui.internals.external_ip_off). The check's internal-address probe is a
UDP connect() that sends no datagram (it only asks the kernel for a route); it is recorded as ``udp`` and is
the one entry allowed."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.helpers import ROOT
from tests.processes import free_port, healthy, stop_process

RECORDER = r"""
import os, socket

_LOG = os.environ["ASSESS_NET_LOG"]
_LOCAL = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "::", "", None}


def _local(host):
    if isinstance(host, bytes):
        host = host.decode()
    return host in _LOCAL or (isinstance(host, str) and host.startswith("127."))


def _record(kind, target):
    with open(_LOG, "a") as f:
        f.write(f"{kind} {target!r}\n")


_connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex
_create, _getaddrinfo = socket.create_connection, socket.getaddrinfo


def _check(sock, address):
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
        _record("udp" if sock.type == socket.SOCK_DGRAM else "tcp", address)


def connect(self, address):
    _check(self, address)
    return _connect(self, address)


def connect_ex(self, address):
    _check(self, address)
    return _connect_ex(self, address)


def create_connection(address, *args, **kwargs):
    if not _local(address[0]):
        _record("tcp", address)
    return _create(address, *args, **kwargs)


def getaddrinfo(host, *args, **kwargs):
    if not _local(host):
        _record("dns", host)
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect, socket.socket.connect_ex = connect, connect_ex
socket.create_connection, socket.getaddrinfo = create_connection, getaddrinfo
"""


def test_the_server_opens_no_outbound_connection(tmp_path, demo_copy):
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    from tests.benchmarks.st_client import StreamlitClient

    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(RECORDER)
    net_log, server_log = tmp_path / "net.log", tmp_path / "server.log"
    net_log.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), str(ROOT)]),
        ASSESS_NET_LOG=str(net_log),
        ASSESS_DB=str(demo_copy(tmp_path / "store.db")),
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(server_log, "ab") as log:  # no --server.address: the banner's default, every-interface case
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true"]
            + ["--server.port", str(port), "--server.fileWatcherType", "none"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None and not healthy(url):
            time.sleep(0.2)
        assert healthy(url), server_log.read_text()[-3000:]
        with urllib.request.urlopen(f"{url}/", timeout=30) as page:
            assert page.status == 200

        async def a_session():  # a same-origin tab: app.py runs (and installs external_ip_off)
            async with StreamlitClient(url, timeout=60) as tab:
                assert tab.texts()

        asyncio.run(a_session())
        with pytest.raises(InvalidStatus) as refused:  # a foreign page's handshake: refused, nobody asked
            connect(
                f"ws://127.0.0.1:{port}/_stcore/stream",
                origin="https://elsewhere.example",
                subprotocols=["streamlit"],
                open_timeout=30,
            ).close()
        assert refused.value.response.status_code == 403
    finally:
        stop_process(proc)
    banner = server_log.read_text()
    assert f"URL: http://localhost:{port}" in banner and "External URL" not in banner, banner[-2000:]
    attempts = [line for line in net_log.read_text().splitlines() if not line.startswith("udp ")]
    assert attempts == [], attempts
