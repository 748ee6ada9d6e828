"""A client that speaks Streamlit's websocket protocol as a browser tab does: for load benchmarks
(tests/benchmarks/bench_load.py) and tests that need many sessions without many browsers.

What a browser does (Streamlit 1.67; compared with the frames headless Chromium sends), and so this
client:

1. GET the page (``/judge?…``; behind nginx this sets the route cookie ``assess_route``), then
   ``/_stcore/health`` and ``/_stcore/host-config``.
2. Open ``ws://HOST/_stcore/stream`` with the site's cookies, ``Origin`` = the page's origin and the
   subprotocols ``streamlit`` and the ``_streamlit_xsrf`` cookie's value (or a placeholder).
3. Send ``BackMsg.rerun_script``: the query string, ``page_name`` = the URL path (``judge``), no
   widget state, ``context_info`` (time zone, locale, URL).
4. Every script run comes back as ForwardMsgs: ``new_session`` (the page's script hash),
   ``page_info_changed`` (the query string the script left), ``navigation`` (the pages),
   ``delta`` (``new_element`` / ``add_block`` at ``metadata.delta_path``) and ``script_finished``
   (status 2: stopped for a rerun, another run follows at once; 3: a fragment's run finished).
5. A click, or a button's keyboard shortcut (handled in the browser: the server cannot tell them
   apart), is another ``rerun_script`` with the page's script hash, the query string and
   ``widget_states``: every value widget on the page with its value, and the pressed button with
   ``trigger_value``; a widget drawn by an ``st.fragment`` (its deltas carry ``fragment_id``) also
   sends that ``fragment_id``, and only the fragment runs: its elements are replaced, the rest of the
   page stays. A changed checkbox or text field is a rerun with its new value; a form sends
   its fields' values with its submit button's trigger.

The client announces no cached message, so the server sends every delta in full (no ``ref_hash``).
Everything is bounded: every wait has a timeout (:class:`StreamlitTimeout`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect

from tests.processes import free_port, healthy, stop_process, streamlit_app  # noqa: F401  (re-exported)

ROOT = Path(__file__).resolve().parents[2]
FINISHED_EARLY_FOR_RERUN = 2
FINISHED_FRAGMENT = 3
VALUE_WIDGETS = ("text_input", "text_area", "checkbox")  # the value widgets this app's keyboard pages show


class StreamlitTimeout(TimeoutError):
    """The server did not finish a script run (or answer a request) in time."""


class StreamlitClosed(ConnectionError):
    """The websocket closed while a run was awaited."""


@dataclass
class Run:
    """One request (a rerun) and every ForwardMsg it brought, each with its arrival time (perf_counter)."""

    sent_at: float
    messages: list[tuple[float, ForwardMsg]] = field(default_factory=list)
    status: int | None = None
    finished_at: float | None = None
    errors: list[str] = field(default_factory=list)  # exceptions and error alerts the page showed
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def first(self, pattern: re.Pattern) -> tuple[float, re.Match] | None:
        """The arrival time and match of the first delta whose text matches ``pattern``."""
        for at, msg in self.messages:
            if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
                found = pattern.search(element_text(msg.delta.new_element))
                if found:
                    return at, found
        return None


def element_text(element) -> str:
    """The text an element shows (markdown, heading, alert, progress, caption, code, button label)."""
    kind = element.WhichOneof("type")
    if kind in ("markdown", "heading", "alert", "text"):
        return getattr(element, kind).body
    if kind == "progress":
        return element.progress.text
    if kind == "code":
        return element.code.code_text
    if kind in ("button", "checkbox", "text_input", "text_area"):
        return getattr(element, kind).label
    if kind == "exception":
        return element.exception.message
    return ""


class StreamlitClient:
    """One browser tab on one Streamlit app: ``await open()``, then ``click``, ``set_value``, ``submit``,
    ``switch_page``; ``texts()`` / ``find()`` read the page of the last finished run; ``close()``."""

    def __init__(
        self,
        base_url: str,
        path: str = "",
        query: str = "",
        *,
        timeout: float = 60.0,
        locale: str = "en-GB",
        timezone: str = "UTC",
    ):
        self.base_url = base_url.rstrip("/")
        self.path = path.strip("/")
        self.query = query  # the address bar's query string, as the scripts leave it
        self.timeout = timeout
        self.locale, self.timezone = locale, timezone
        self.cookies: dict[str, str] = {}
        self.page_script_hash = ""
        self.pages: dict[str, str] = {}  # url path -> script hash (from the navigation message)
        self.elements: dict[tuple, object] = {}  # the page of the last finished run: delta path -> Element
        self.session_id: str | None = None
        self._building: dict[tuple, object] = {}
        self._fragment_of: dict[tuple, str] = {}  # delta path -> the fragment that drew it ('' outside any)
        self._pending_fragment = ""  # the fragment a request re-runs, until its run starts
        self._values: dict[str, object] = {}  # widget id -> value the user set (committed)
        self._run: Run | None = None
        self._ws = None
        self._reader: asyncio.Task | None = None
        self.closed_reason: str | None = None

    # ------------------------------------------------------------------------------------- connection

    def _get(self, path_and_query: str) -> int:
        """One GET as the browser makes it (the site's cookies sent, cookies set kept); the status."""
        request = urllib.request.Request(self.base_url + path_and_query, headers=self._cookie_header())
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                response.read()
                status, headers = response.status, response.headers
        except urllib.error.HTTPError as exc:
            status, headers = exc.code, exc.headers
        for line in headers.get_all("Set-Cookie") or []:
            name, _, rest = line.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0].strip()
        return status

    def _cookie_header(self) -> dict[str, str]:
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())} if self.cookies else {}

    async def open(self) -> Run:
        """Load the page and open its session; returns the first run (finished)."""
        address = "/" + self.path + (f"?{self.query}" if self.query else "")
        for target in (address, "/_stcore/health", "/_stcore/host-config"):
            status = await asyncio.wait_for(asyncio.to_thread(self._get, target), self.timeout)
            if status != 200:
                raise ConnectionError(f"GET {target}: HTTP {status}")
        parts = urllib.parse.urlsplit(self.base_url)
        token = self.cookies.get("_streamlit_xsrf") or "PLACEHOLDER_AUTH_TOKEN"
        self._ws = await connect(
            f"ws://{parts.netloc}/_stcore/stream",
            subprotocols=["streamlit", token],
            origin=f"{parts.scheme}://{parts.netloc}",
            additional_headers=self._cookie_header(),
            open_timeout=self.timeout,
            close_timeout=5,
            max_size=256 * 2**20,
        )
        self._reader = asyncio.create_task(self._read())
        return await self._request(self._rerun_message(page_name=self.path, widgets=False))

    async def close(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._ws.close(), 10)
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader

    async def __aenter__(self) -> StreamlitClient:
        await self.open()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # ------------------------------------------------------------------------------------- receiving

    async def _read(self) -> None:
        try:
            async for raw in self._ws:
                at = time.perf_counter()
                msg = ForwardMsg()
                msg.ParseFromString(raw)
                self._handle(at, msg)
        except Exception as exc:  # the socket broke: whoever waits learns it
            self.closed_reason = f"{type(exc).__name__}: {exc}"
        else:
            self.closed_reason = "closed by the server"
        if self._run is not None:
            self._run.done.set()

    def _handle(self, at: float, msg: ForwardMsg) -> None:
        run = self._run
        if run is not None:
            run.messages.append((at, msg))
        kind = msg.WhichOneof("type")
        if kind == "new_session":  # a script run starts: a fragment's run keeps everything outside it
            fragment, self._pending_fragment = self._pending_fragment, ""
            self._building = (
                {p: e for p, e in self.elements.items() if self._fragment_of.get(p) != fragment} if fragment else {}
            )
            self.page_script_hash = msg.new_session.page_script_hash or self.page_script_hash
            self.session_id = msg.new_session.initialize.session_id or self.session_id
        elif kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string
        elif kind == "navigation":
            self.pages = {p.url_pathname: p.page_script_hash for p in msg.navigation.app_pages}
            self.page_script_hash = msg.navigation.page_script_hash or self.page_script_hash
        elif kind == "delta":
            delta = msg.delta
            which = delta.WhichOneof("type")
            if which == "new_element":
                element = delta.new_element
                path = tuple(msg.metadata.delta_path)
                self._building[path] = element
                self._fragment_of[path] = delta.fragment_id
            if which == "new_element" and run is not None:
                if element.WhichOneof("type") == "exception":
                    run.errors.append(f"exception: {element.exception.type}: {element.exception.message}")
                elif element.WhichOneof("type") == "alert" and element.alert.format == 1:  # ERROR
                    run.errors.append(f"error shown: {element.alert.body}")
        elif kind == "ref_hash" and run is not None:  # never expected: no cached message is announced
            run.errors.append("the server sent a cached-message reference")
        elif kind == "script_finished" and msg.script_finished != FINISHED_EARLY_FOR_RERUN:
            self.elements = self._building
            if run is not None:
                run.status, run.finished_at = msg.script_finished, at
                run.done.set()

    # ------------------------------------------------------------------------------------- sending

    def _rerun_message(
        self,
        *,
        page_name: str = "",
        widgets: bool = True,
        triggers=(),
        page_script_hash: str | None = None,
        fragment: str = "",
    ) -> BackMsg:
        msg = BackMsg()
        state = msg.rerun_script
        if fragment:  # a widget inside an st.fragment: the browser asks for that fragment's run only
            state.fragment_id = fragment
        state.query_string = self.query
        state.page_name = page_name
        state.page_script_hash = self.page_script_hash if page_script_hash is None else page_script_hash
        info = state.context_info
        info.timezone, info.timezone_offset, info.locale = self.timezone, 0, self.locale
        info.url = f"{self.base_url}/{self.path}"
        info.is_embedded, info.color_scheme = False, "light"
        state.widget_states.SetInParent()
        if widgets:
            for wid, value in self.widget_values().items():
                state.widget_states.widgets.append(_state(wid, value))
            for wid in triggers:
                state.widget_states.widgets.append(WidgetState(id=wid, trigger_value=True))
        return msg

    async def _request(self, msg: BackMsg) -> Run:
        if self._run is not None and not self._run.done.is_set():
            raise RuntimeError("one request at a time: the previous run has not finished")
        if self.closed_reason:
            raise StreamlitClosed(self.closed_reason)
        self._pending_fragment = msg.rerun_script.fragment_id
        run = Run(sent_at=time.perf_counter())
        self._run = run
        await asyncio.wait_for(self._ws.send(msg.SerializeToString()), self.timeout)
        try:
            await asyncio.wait_for(run.done.wait(), self.timeout)
        except TimeoutError:
            raise StreamlitTimeout(f"no finished script run within {self.timeout:g} s") from None
        if run.status is None:
            raise StreamlitClosed(self.closed_reason or "closed")
        return run

    def widget_values(self) -> dict[str, object]:
        """What the browser would send for the page's value widgets: the value set, else the widget's own."""
        values = {}
        for element in self.elements.values():
            kind = element.WhichOneof("type")
            if kind not in VALUE_WIDGETS:
                continue
            proto = getattr(element, kind)
            if proto.id in self._values:
                values[proto.id] = self._values[proto.id]
            elif not proto.form_id:  # a form's fields go with its submit button only
                values[proto.id] = proto.value if proto.set_value else proto.default
        return values

    def _widget(self, key: str) -> tuple[object, str]:
        for path, element in self.elements.items():
            kind = element.WhichOneof("type")
            proto = getattr(element, kind) if kind else None
            if proto is not None and getattr(proto, "id", "").endswith(f"-{key}"):
                return proto, self._fragment_of.get(path, "")
        raise LookupError(f"no widget with key {key!r} on the page")

    def widget(self, key: str):
        """The widget proto of ``key`` (the user key given to st.button / st.text_input …) on the page."""
        return self._widget(key)[0]

    def fragment_of(self, key: str) -> str:
        """The id of the st.fragment that drew the widget ``key`` ('' when it is outside every fragment)."""
        return self._widget(key)[1]

    async def click(self, key: str) -> Run:
        """Press the button ``key`` (a click, or its keyboard shortcut); inside a fragment, as a browser
        does, only that fragment runs."""
        proto, fragment = self._widget(key)
        return await self._request(self._rerun_message(triggers=[proto.id], fragment=fragment))

    async def set_value(self, key: str, value: object) -> Run:
        """Change a checkbox or text field (Enter / leaving the field): a rerun with its new value."""
        proto, fragment = self._widget(key)
        self._values[proto.id] = value
        return await self._request(self._rerun_message(fragment=fragment))

    async def submit(self, button_key: str, fields: dict[str, object]) -> Run:
        """Fill a form's fields and press its submit button."""
        for key, value in fields.items():
            self._values[self.widget(key).id] = value
        return await self._request(self._rerun_message(triggers=[self.widget(button_key).id]))

    async def switch_page(self, url_path: str) -> Run:
        """Follow the sidebar's link to a page (by its URL path, e.g. ``judge``)."""
        if url_path not in self.pages:
            raise LookupError(f"no page {url_path!r} in the navigation ({', '.join(self.pages)})")
        self.path, self.query, self._values = url_path, "", {}
        return await self._request(self._rerun_message(widgets=False, page_script_hash=self.pages[url_path]))

    # ------------------------------------------------------------------------------------- reading

    def texts(self) -> list[str]:
        """The texts on the page of the last finished run, in delta order."""
        items = sorted(self.elements.items())
        return [text for _path, element in items if (text := element_text(element))]

    def find(self, pattern: re.Pattern) -> re.Match | None:
        for text in self.texts():
            found = pattern.search(text)
            if found:
                return found
        return None


def _state(wid: str, value: object) -> WidgetState:
    if isinstance(value, bool):
        return WidgetState(id=wid, bool_value=value)
    if isinstance(value, str):
        return WidgetState(id=wid, string_value=value)
    raise TypeError(f"widget value of type {type(value).__name__} is not supported")


# ------------------------------------------------------------------------------------------- servers


@contextlib.contextmanager
def app_server(db: str, log_path: Path, *, start_timeout: float = 90, processes: list | None = None, **env_extra: str):
    """``streamlit run app.py`` on a free port of 127.0.0.1 with the store ``db`` (a SQLite file or a
    PostgreSQL URL); yields its URL (and appends its Popen to ``processes`` when given). $ASSESS_* of
    this process are not passed on (``env_extra`` sets them); the server runs in its own process
    group, stopped on exit."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSESS_")}
    env.update(ASSESS_DB=str(db), STREAMLIT_BROWSER_GATHER_USAGE_STATS="false", PYTHONUNBUFFERED="1")
    env.update(env_extra)
    with streamlit_app("app.py", log_path, env, start_timeout=start_timeout) as (url, proc):
        if processes is not None:
            processes.append(proc)
        yield url
