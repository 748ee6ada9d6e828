"""Server processes the tests and benchmarks start on 127.0.0.1: a free port, a health check, stopping a
process group, and ``streamlit run SCRIPT`` until it answers its health check."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def stop_process(proc: subprocess.Popen) -> None:
    """Stop a process started in its own session and everything in its group: SIGTERM, then SIGKILL.
    The leader is reaped only at the end, so the group id cannot be reused meanwhile."""

    def exited() -> bool:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None

    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while not exited() and time.monotonic() < deadline:
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


@contextlib.contextmanager
def streamlit_app(
    script: str, log_path: Path, env: dict[str, str], *, start_timeout: float = 90, cwd: Path = ROOT
) -> Iterator[tuple[str, subprocess.Popen]]:
    """``streamlit run SCRIPT`` (from ``cwd``, by default the project root) on a free port of 127.0.0.1 with exactly ``env``,
    in its own process group, stopped on exit; yields (URL, process) once it answers its health check.
    Raises RuntimeError with the end of its log when it does not start."""
    for _attempt in range(3):  # a free port can be taken between probing and binding: retry
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", script, "--server.headless", "true"]
                + ["--server.port", str(port), "--server.address", "127.0.0.1"]
                + ["--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
                cwd=cwd,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        try:
            deadline = time.monotonic() + start_timeout
            while time.monotonic() < deadline and proc.poll() is None and not healthy(url):
                time.sleep(0.2)
            if proc.poll() is None and healthy(url):
                yield url, proc
                return
        finally:
            stop_process(proc)
    tail = log_path.read_text(errors="replace")[-3000:]
    raise RuntimeError(f"the Streamlit server ({script}) did not become healthy; its log ends with:\n{tail}")


@contextlib.contextmanager
def api_server(target: str, timeout: float = 60, *, pids: list | None = None) -> Iterator[str]:
    """`python -m assess api --db TARGET` on a free port, as a client meets it; yields its base URL (and appends
    the server's process id to ``pids``)."""
    import httpx

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ASSESS_OPEN", None)
    # a file, not a pipe: the access log's line per request would fill a pipe and stall the server
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "assess", "api", "--port", str(port), "--db", str(target)],
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        if pids is not None:
            pids.append(proc.pid)
        try:
            while True:
                try:
                    if httpx.get(base + "/openapi.json", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"the API server did not start: {log.read().decode(errors='replace')}")
                time.sleep(0.2)
            yield base
        finally:
            stop_process(proc)
