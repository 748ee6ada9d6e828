"""The documented deployment (docs/deploy.md): two Streamlit processes on one SQLite store behind
Debian's nginx, configured by deploy/nginx.conf itself (only its ports are changed here).

nginx runs as this user from a temporary folder (its own pid file, logs and temp folders,
``daemon off;``) on a free port of 127.0.0.1, so no system-wide nginx service is needed or touched.
Its access log records, for every request, the browser's route key, the app process that served it
and the status: that is how the tests see which process a browser reached and that the websocket
was upgraded (status 101).

Skips with the reason when /usr/sbin/nginx, /usr/bin/chromium or playwright is absent; `.ci/run`
installs nginx and chromium.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

NGINX = Path(os.environ.get("ASSESS_E2E_NGINX", "/usr/sbin/nginx"))
if not NGINX.exists():
    pytest.skip(f"{NGINX} is absent (Debian's nginx is needed: apt-get install nginx)", allow_module_level=True)

from tests.browser_support import (  # noqa: E402, F401  (fixtures)
    LOAD_TIMEOUT_MS,
    ROOT,
    START_TIMEOUT_S,
    _free_port,
    browser,
    demo_with_accounts,
    expect,
    press,
    settled,
    streamlit_server,
)
from tests.helpers import rows as store_rows  # noqa: E402
from tests.processes import healthy, stop_process  # noqa: E402

pytestmark = pytest.mark.browser

SITE = ROOT / "deploy" / "nginx.conf"
TOTAL = 217  # pooled (turn, passage) pairs of the embedded demo
POSITION = re.compile(r"^Passage (\S+) \((\d+) of (\d+)\)$")
# One access-log line: route key, the app process (upstream address), status, request line.
# nginx lists every process it tried, e.g. "127.0.0.1:1, 127.0.0.1:2" when the first refused.
LOG_LINE = re.compile(r'^route=(\S*) upstream=(\S+(?:, \S+)*) status=(\d+) "(\S+) (\S+) [^"]*"$')


# ------------------------------------------------------------------------------------------- nginx


def site_config(listen_port: int, app_urls: list[str]) -> str:
    """deploy/nginx.conf with its listen port and upstream servers replaced; everything else as shipped."""
    text = SITE.read_text(encoding="utf-8")
    text, n_listen = re.subn(r"(?m)^(\s*)listen 80;$", rf"\1listen 127.0.0.1:{listen_port};", text)
    upstream = re.compile(r"(?m)^(\s*)server 127\.0\.0\.1:\d+( [^;\n]*)?;\n")
    servers = upstream.findall(text)
    assert n_listen == 1 and len(servers) >= 1, f"{SITE}: expected one 'listen 80;' and upstream server lines"
    indent, options = servers[0]
    lines = "".join(f"{indent}server {url.removeprefix('http://')}{options};\n" for url in app_urls)
    text = upstream.sub("", text, count=len(servers) - 1)
    return upstream.sub(lambda _m: lines, text, count=1)


def main_config(tmp: Path, site: Path) -> str:
    """A whole nginx.conf that keeps every file nginx writes inside ``tmp``."""
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};\n" if os.geteuid() == 0 else ""
    temps = "".join(
        f"    {kind}_temp_path {tmp / (kind + '_temp')};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"{user}daemon off;\nworker_processes 1;\npid {tmp / 'nginx.pid'};\nerror_log {tmp / 'error.log'} notice;\n"
        "events { worker_connections 256; }\n"
        "http {\n"
        f"{temps}"
        "    log_format assess 'route=$assess_route upstream=$upstream_addr status=$status \"$request\"';\n"
        f"    access_log {tmp / 'access.log'} assess;\n"
        f"    include {site};\n"
        "}\n"
    )


def _status(url: str, headers: dict | None = None) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=5) as r:
            return r.status, dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers)
    except (urllib.error.URLError, OSError):
        return 0, {}


@contextlib.contextmanager
def nginx_proxy(tmp: Path, app_urls: list[str]):
    """Run nginx with deploy/nginx.conf in front of ``app_urls``; yield (proxy URL, access log path)."""
    tmp.mkdir(parents=True, exist_ok=True)
    for attempt in range(3):  # a free port can be taken between probing and binding: retry
        port = _free_port()
        site, conf = tmp / "assess-site.conf", tmp / "nginx.conf"
        site.write_text(site_config(port, app_urls), encoding="utf-8")
        conf.write_text(main_config(tmp, site), encoding="utf-8")
        args = [str(NGINX), "-p", str(tmp), "-e", str(tmp / "error.log"), "-c", str(conf)]
        check = subprocess.run([*args, "-t"], capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, f"nginx -t refused the configuration:\n{check.stderr}"
        with open(tmp / "nginx.out", "ab") as out:
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while proc.poll() is None and time.monotonic() < deadline and _status(url + "/_stcore/health")[0] != 200:
                time.sleep(0.1)
            if proc.poll() is None and _status(url + "/_stcore/health")[0] == 200:
                yield url, tmp / "access.log"
                return
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGQUIT)  # graceful: workers finish, logs are flushed
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
        if attempt == 2:
            log = (tmp / "error.log").read_text(errors="replace")[-3000:]
            pytest.fail(f"nginx did not serve the app through port {port}; its error log ends with:\n{log}")


def access_log(path: Path) -> list[tuple[str, str, int, str, str]]:
    """(route key, upstream, status, method, path) for every request nginx has finished."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = LOG_LINE.fullmatch(line)
        assert m, f"unexpected access-log line: {line!r}"
        rows.append((m.group(1), m.group(2), int(m.group(3)), m.group(4), m.group(5)))
    return rows


def wait_for_log(path: Path, predicate, timeout_s: float = 15) -> list:
    """The access log once ``predicate(rows)`` holds (a websocket is logged when it closes)."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = access_log(path)
        if predicate(rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


# ------------------------------------------------------------------------------------------- cluster


def init_demo(db_path) -> None:
    """Create the shared store with the demo before any app process starts (as docs/deploy.md says)."""
    done = subprocess.run(
        [sys.executable, "-m", "assess", "init", "--demo", "--db", str(db_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("ASSESS_")},
    )
    assert done.returncode == 0, done.stderr


def app_dir(tmp: Path, name: str) -> Path:
    """A folder of its own for one app process's log."""
    (tmp / name).mkdir()
    return tmp / name


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def cluster(request, tmp_path_factory):
    """Two app processes on one store behind nginx — one SQLite file, or one PostgreSQL database:
    (proxy URL, [app A URL, app B URL], store, access log)."""
    tmp = tmp_path_factory.mktemp("deploy")
    if request.param == "sqlite":
        db_path = tmp / "shared.db"
    else:
        server = request.getfixturevalue("pg_cluster")
        db_path = server.url(server.create_database())
    init_demo(db_path)
    with contextlib.ExitStack() as stack:
        apps = [stack.enter_context(streamlit_server(app_dir(tmp, name), db=db_path))[0] for name in ("a", "b")]
        proxy, log = stack.enter_context(nginx_proxy(tmp / "nginx", apps))
        yield proxy, apps, db_path, log


def route_key_for(proxy: str, log: Path, app: str) -> str:
    """A route-key cookie value that nginx sends to ``app`` (found by asking and reading the log)."""
    upstream = app.removeprefix("http://")
    for i in range(64):
        key = f"probe{i}"
        status, _ = _status(proxy + "/_stcore/health", {"Cookie": f"assess_route={key}"})
        assert status == 200
        rows = wait_for_log(log, lambda r, key=key: any(row[0] == key for row in r))
        if any(row[0] == key and row[1] == upstream for row in rows):
            return key
    raise AssertionError(f"no route key among 64 reached {app}")


def pinned_page(browser, proxy: str, key: str):
    """A page in a fresh browser context whose route cookie pins it to one app process."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-GB")
    context.add_cookies([{"name": "assess_route", "value": key, "url": proxy}])
    return context, context.new_page()


def judge_position(page, n: int) -> str:
    """Wait until the judge page shows passage ``n`` of the queue with its run over; return its id."""
    line = page.get_by_text(re.compile(rf"^Passage \S+ \({n} of {TOTAL}\)$")).first
    expect(line).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)
    m = POSITION.fullmatch(page.get_by_text(POSITION).first.inner_text().strip())
    assert m and int(m.group(2)) == n and int(m.group(3)) == TOTAL, m
    return m.group(1)


# ------------------------------------------------------------------------------------------- tests


def test_the_proxy_serves_the_app_sets_a_route_cookie_and_upgrades_the_websocket(cluster, browser):
    proxy, apps, _db, log = cluster
    status, headers = _status(proxy + "/")
    assert status == 200
    cookie = headers.get("Set-Cookie", "")
    assert re.fullmatch(r"assess_route=[0-9a-f]{32}; Path=/; HttpOnly; SameSite=Lax", cookie), cookie
    # A browser that already has its route keeps it: no new cookie.
    assert "Set-Cookie" not in _status(proxy + "/", {"Cookie": "assess_route=abc"})[1]

    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-GB")
    try:
        page = context.new_page()
        page.goto(proxy + "/")
        # The home page's content arrives over the websocket: seeing it means the upgrade worked.
        expect(page.get_by_text("Assessment workbench").first).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        expect(page.get_by_text("Pooled pairs")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        settled(page)
        key = next(c["value"] for c in context.cookies() if c["name"] == "assess_route")
    finally:
        context.close()

    def websocket_logged(rows):
        return any(r[0] == key and r[4] == "/_stcore/stream" for r in rows)

    rows = [r for r in wait_for_log(log, websocket_logged) if r[0] == key]
    streams = [r for r in rows if r[4] == "/_stcore/stream"]
    assert streams and all(r[2] == 101 for r in streams), rows
    # Sticky: every request of that browser, the page, its assets and its websocket, reached one process.
    served_by = {r[1] for r in rows}
    assert len(served_by) == 1 and served_by <= {a.removeprefix("http://") for a in apps}, rows


def test_a_label_made_through_one_process_is_seen_through_the_other(cluster, browser):
    proxy, (app_a, app_b), db_path, log = cluster
    key_a, key_b = route_key_for(proxy, log, app_a), route_key_for(proxy, log, app_b)
    assessor = "deploy1"

    context_a, page_a = pinned_page(browser, proxy, key_a)
    try:
        page_a.goto(f"{proxy}/judge?assessor={assessor}")
        first = judge_position(page_a, 1)
        press(page_a, "3")
        second = judge_position(page_a, 2)
        assert second != first
        # The form's "judged" counter moved on the page that made the label.
        expect(page_a.get_by_text(re.compile(rf"^Turn \S+: 1 / \d+ judged · all: 1 / {TOTAL}$"))).to_be_visible()
    finally:
        context_a.close()
    rows = store_rows(db_path, "SELECT passage_id, grade, via FROM passage_labels WHERE source = :s", {"s": assessor})
    assert rows == [(first, 3, "ui")]

    context_b, page_b = pinned_page(browser, proxy, key_b)
    try:
        page_b.goto(f"{proxy}/judge?assessor={assessor}")
        # Process B reads the label process A stored: the queue resumes at the second passage.
        assert judge_position(page_b, 2) == second
        expect(page_b.get_by_text(re.compile(rf"^Turn \S+: 1 / \d+ judged · all: 1 / {TOTAL}$"))).to_be_visible()
    finally:
        context_b.close()

    def both_streams(rows):
        return all(any(r[0] == k and r[4] == "/_stcore/stream" for r in rows) for k in (key_a, key_b))

    rows = wait_for_log(log, both_streams)
    for key, app in ((key_a, app_a), (key_b, app_b)):
        served = {(r[1], r[2]) for r in rows if r[0] == key and r[4] == "/_stcore/stream"}
        assert served == {(app.removeprefix("http://"), 101)}, (key, rows)


def test_the_proxy_moves_a_browser_on_when_its_process_is_down(tmp_path):
    """A stopped process behind the proxy: new requests reach the other one (no 502 for the browser)."""
    db_path = tmp_path / "shared.db"
    init_demo(db_path)
    with streamlit_server(app_dir(tmp_path, "a"), db=db_path) as (app_a, _):
        dead = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
        with nginx_proxy(tmp_path / "nginx", [dead, app_a]) as (proxy, log):
            statuses = [_status(proxy + "/_stcore/health", {"Cookie": f"assess_route=k{i}"})[0] for i in range(12)]
            assert statuses == [200] * 12
            tried = [r[1].split(", ") for r in access_log(log)]
            # Every request was answered by the live process; at least one had first tried the dead one.
            assert {t[-1] for t in tried} == {app_a.removeprefix("http://")}
            assert [dead.removeprefix("http://"), app_a.removeprefix("http://")] in tried, tried


def test_the_shipped_site_file_is_what_the_tests_run():
    """Guards site_config: it changes only the listen line and the upstream's server lines."""
    shipped = SITE.read_text(encoding="utf-8")
    rendered = site_config(9999, ["http://127.0.0.1:7001", "http://127.0.0.1:7002", "http://127.0.0.1:7003"])
    keep = [line for line in shipped.splitlines() if "listen 80;" not in line and "server 127.0.0.1:" not in line]
    got = [
        line
        for line in rendered.splitlines()
        if "listen 127.0.0.1:9999;" not in line and "server 127.0.0.1:" not in line
    ]
    assert got == keep
    assert re.findall(r"server (127\.0\.0\.1:\d+) max_fails=1 fail_timeout=10s;", rendered) == [
        "127.0.0.1:7001",
        "127.0.0.1:7002",
        "127.0.0.1:7003",
    ]
    assert shutil.which(str(NGINX))


# ------------------------------------------------------------------------------------------- client addresses


@contextlib.contextmanager
def shipped_apps(tmp: Path, db_path: Path, n: int = 1, **env: str):
    """deploy/run-apps.sh as shipped (its environment defaults included) starting ``n`` app processes on
    ``db_path``; yield their URLs once they answer."""
    tmp.mkdir(parents=True, exist_ok=True)
    first = _free_port()
    urls = [f"http://127.0.0.1:{first + i}" for i in range(n)]
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("ASSESS_")}
    run_env.update(ASSESS_DB=str(db_path), ASSESS_LOG_DIR=str(tmp), PYTHON=sys.executable, **env)
    with open(tmp / "run-apps.out", "ab") as out:
        proc = subprocess.Popen(
            ["bash", str(ROOT / "deploy" / "run-apps.sh"), str(n), str(first)],
            cwd=ROOT,
            env=run_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S * 2
        while proc.poll() is None and time.monotonic() < deadline and not all(healthy(u) for u in urls):
            time.sleep(0.2)
        if not all(healthy(u) for u in urls):
            logs = "".join(p.read_text(errors="replace")[-2000:] for p in sorted(tmp.glob("*.log")))
            pytest.fail(f"deploy/run-apps.sh did not start {urls}:\n{logs}")
        yield urls
    finally:
        stop_process(proc)


@contextlib.contextmanager
def from_address(source: str, target_port: int):
    """A TCP relay on 127.0.0.1 whose connections to ``target_port`` come from ``source`` (another loopback
    address): a browser sent through it reaches nginx as a second client machine. Yields the relay's URL."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while chunk := a.recv(65536):
                b.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def serve() -> None:
        while not stop.is_set():
            try:
                client, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", target_port), source_address=(source, 0))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=pipe, args=(a, b), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()


AMY_PASSWORD = "assessor-passphrase-1"
REFUSED = re.compile("wrong name or password|too many failed sign-ins")


def _attempt(page, name: str, password: str) -> None:
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_label("Account name")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)
    sidebar.get_by_label("Account name").fill(name)
    sidebar.get_by_label("Password", exact=True).fill(password)
    sidebar.get_by_role("button", name="Sign in").click()


FORGED = "198.51.100.66"


def test_two_clients_behind_the_shipped_nginx_have_their_own_address_limits(tmp_path, browser):
    """Behind deploy/nginx.conf, with the app processes started by deploy/run-apps.sh as shipped: five wrong
    passwords from one client machine lock that client's address (its sixth attempt, right password and all, is
    refused "for this address"), while a client on another machine signs in at once. The address is the
    X-Forwarded-For entry nginx adds (ASSESS_TRUST_PROXY, on in the shipped launcher), never one the client
    sends: the intruder's own X-Forwarded-For header changes nothing. (Without the setting, Streamlit's uvicorn
    takes the left-most entry a local peer forwards, which a client on nginx's machine chooses.)"""
    db_path = tmp_path / "shared.db"
    demo_with_accounts(("amy", "assessor", AMY_PASSWORD))(db_path)
    with contextlib.ExitStack() as stack:
        apps = stack.enter_context(shipped_apps(tmp_path / "apps", db_path, ASSESS_OPEN="0"))
        proxy, _log = stack.enter_context(nginx_proxy(tmp_path / "nginx", apps))
        elsewhere = stack.enter_context(from_address("127.0.0.2", int(proxy.rsplit(":", 1)[1])))
        contexts = [
            browser.new_context(locale="en-GB", extra_http_headers={"X-Forwarded-For": FORGED}),
            browser.new_context(locale="en-GB"),
        ]
        for context in contexts:
            stack.callback(context.close)
        intruder, colleague = (context.new_page() for context in contexts)

        intruder.goto(proxy + "/")  # from 127.0.0.1, claiming to be FORGED
        for i in range(5):  # five names, so no account's own limit is reached: only the address's
            _attempt(intruder, f"guess{i}", "not-the-password")
            deadline = time.monotonic() + 30
            failed = "SELECT id FROM sign_in_failures WHERE pending = 0 AND scope LIKE 'account:%'"
            while len(store_rows(db_path, failed)) < i + 1:
                assert time.monotonic() < deadline, f"attempt {i + 1} was not recorded"
                time.sleep(0.1)
        _attempt(intruder, "amy", AMY_PASSWORD)
        expect(intruder.get_by_text("too many failed sign-ins for this address", exact=False)).to_be_visible()
        expect(intruder.get_by_test_id("stSidebar").get_by_role("button", name="Sign out")).to_have_count(0)

        colleague.goto(elsewhere + "/")  # from 127.0.0.2
        _attempt(colleague, "amy", AMY_PASSWORD)
        expect(colleague.get_by_test_id("stSidebar").get_by_role("button", name="Sign out")).to_be_visible()
        expect(colleague.get_by_text(REFUSED)).to_have_count(0)

    scopes = store_rows(db_path, "SELECT scope, COUNT(*) FROM sign_in_failures GROUP BY scope ORDER BY scope")
    assert scopes == [(f"account:guess{i}", 1) for i in range(5)] + [("address:127.0.0.1", 5)], scopes
    assert store_rows(db_path, "SELECT name, via FROM sign_in_sessions") == [("amy", "password")]
