"""Docs as tests: every shell command of README.md and docs/*.md runs here, on a copy of the demo.

What counts as a command: each line of a ```bash, ```sh, ```shell or ```console block (``$ `` lines in a
console block), a line that starts with a space or follows a trailing backslash continuing it; and the
inline spans `python -m assess ...` of README.md. A command runs in a fresh working directory laid out like
a clone (the project's code linked in, ``data/assess.db`` a copy of the demo store, ``../shared`` the
public iKAT files when they are beside the project) with $ASSESS_DB pointing at that store; ``--db PATH``,
``--db DB`` and ``--db D`` name it too. The commands of one block run in order on one working directory:
a command sees what the earlier ones wrote (the demo store, files, variables set with ``S=`` or
``export``). A command that fails (any exit status but 0) fails its test.

A trailing comment marks a command the test does not simply run:

- ``# synopsis`` (a usage line with placeholders: ``NAME``, ``[--json]``, ``a|b``): not run; its command
  must exist, every option it names must be one that command takes, every choice it lists one the option
  accepts, and it must name every option the command requires. Inline spans outside README.md are
  checked this way too.
- ``# needs: WHAT`` (an LLM endpoint, the network, Docker): checked as a synopsis is, then skipped, saying
  so. ``# needs: a PostgreSQL server`` is the exception: the test provides one (tests/pg.py, skipped only without the server binaries),
  checks that its roles and database are what the doc's `sudo -u postgres ...` lines make, and runs the
  workbench's commands on it with the doc's names mapped to the test's.
- ``# until stopped`` (a server): started on a free port, passed once it answers HTTP, then stopped.

Shown output is checked: ``# -> TEXT`` after a command (its output contains TEXT), or a ```text block
right after the command's block (the last command's output holds those lines in that order; a line
``...`` stands for any lines). Commands that read ``../shared/data`` skip when it is absent.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import SHARED

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_FENCES = {"bash", "sh", "shell", "console"}
PROGRAM = ("python", "-m", "assess")
STORE_NAMES = {"PATH", "DB", "D", "data/assess.db"}  # what the docs call the store after --db
LINKED = ("app.py", "pages", "assess", "store", ".streamlit", "requirements.txt", "pyproject.toml", "assets")
COPIED = ("deploy",)  # a command may write there (deploy/assess.env)
MARKERS = re.compile(r"[#;.]\s*(synopsis\b|needs:\s*(?P<needs>[^#;]*)|until stopped\b|->\s*(?P<shows>.*))")


@dataclass
class Command:
    doc: str
    line: int
    text: str  # the command as a shell would read it, comment removed
    comment: str = ""
    block: int | None = None  # blocks numbered per module run; None for an inline span
    index: int = 0  # position within the block
    inline: bool = False
    shown: list[str] = field(default_factory=list)  # a ```text block's lines after the block's last command
    directive: str = ""  # the block's <!-- docs-test: ... --> line

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def kind(self) -> str:
        if "synopsis" in self.directive:
            return "synopsis"
        for m in MARKERS.finditer(self.comment):
            word = m.group(1)
            if word.startswith("synopsis"):
                return "synopsis"
        for m in MARKERS.finditer(self.comment):
            word = m.group(1)
            if word.startswith("needs:"):
                return "needs"
            if word.startswith("until"):
                return "server"
        if self.inline and (self.doc != "README.md" or _has_placeholders(self.text)):
            return "synopsis"
        return "run"

    @property
    def run_text(self) -> str | None:
        """What runs: the command, or a block's usage line without its optional parts when nothing in it
        is a placeholder any more (``users list [--json]`` runs as ``users list``)."""
        kind = self.kind
        if kind == "run":
            return self.text
        if kind == "synopsis" and not self.inline and "needs:" not in self.comment:
            required = _required_part(self.text)
            if tuple(required.split()[:3]) == PROGRAM and not _has_placeholders(required):
                return required
        return None

    @property
    def needs(self) -> str:
        return next(m.group("needs").strip() for m in MARKERS.finditer(self.comment) if m.group("needs"))

    @property
    def shows(self) -> str | None:
        return next((m.group("shows").strip() for m in MARKERS.finditer(self.comment) if m.group("shows")), None)

    @property
    def assigns(self) -> bool:
        """A line that only sets a shell variable (``S=...``, ``export X=...``)."""
        return re.fullmatch(r"(export\s+)?[A-Za-z_][A-Za-z0-9_]*=\S*", self.text) is not None


def _split_comment(line: str) -> tuple[str, str]:
    """A shell line's command and its trailing comment (a # after a space, outside quotes)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i:]
    return line.rstrip(), ""


def _has_placeholders(text: str) -> bool:
    """A usage line's signs: optional parts, alternatives, ellipses, or a word in capitals (NAME, llm:NAME, T)."""
    if re.search(r"\[-|\[[A-Z]|\||\.\.\.|…", text):
        return True
    try:
        words = shlex.split(text)
    except ValueError:
        return True
    capitals = re.compile(r"(?<![A-Za-z0-9])[A-Z][A-Z0-9_]*(?![a-z0-9])")
    return any(capitals.search(w) and w not in STORE_NAMES for w in words[3:] if not w.startswith("-"))


def _required_part(text: str) -> str:
    """A usage line without its optional parts ``[...]``."""
    while (stripped := re.sub(r"\s*\[[^\[\]]*\]", "", text)) != text:
        text = stripped
    return text


def _fences(lines: list[str]):
    """(language, first line number, body lines, indentation) of each fenced block."""
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```\s*([\w+-]*)", lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = m.group(1), m.group(2).lower(), i + 1
        j = start
        while j < len(lines) and not re.match(r"^\s*```", lines[j]):
            j += 1
        body = [line[len(indent) :] if line.startswith(indent) else line.lstrip() for line in lines[start:j]]
        before = lines[i - 1] if i else ""
        directive = d.group(1) if (d := re.match(r"\s*<!--\s*docs-test:\s*(.*?)\s*-->", before)) else ""
        yield lang, start + 1, body, j + 1, directive
        i = j + 1


def collect() -> list[Command]:
    commands: list[Command] = []
    block_no = 0
    for path in DOCS:
        name = str(path.relative_to(ROOT))
        lines = path.read_text(encoding="utf-8").splitlines()
        fences = list(_fences(lines))
        for n, (lang, first, body, end, directive) in enumerate(fences):
            if lang not in SHELL_FENCES:
                continue
            block_no += 1
            block: list[Command] = []
            continuing = False
            for k, raw in enumerate(body):
                if lang == "console":
                    if not raw.startswith("$ "):
                        if block and not continuing:
                            block[-1].shown.append(raw)
                        continue
                    raw = raw[2:]
                if not raw.strip() or (raw.lstrip().startswith("#") and not continuing):
                    continue
                text, comment = _split_comment(raw)
                if block and (continuing or raw[:1].isspace()):
                    cmd = block[-1]
                    cmd.text = f"{cmd.text} {text.strip()}".strip()
                    cmd.comment = f"{cmd.comment} {comment}".strip()
                else:
                    block.append(
                        Command(name, first + k, text.strip(), comment, block_no, len(block), directive=directive)
                    )
                continuing = text.endswith("\\")
                if continuing:
                    block[-1].text = block[-1].text[:-1].rstrip()
            # a ```text block right after this one shows the output of its last command
            if block and n + 1 < len(fences) and fences[n + 1][0] == "text":
                between = lines[end : fences[n + 1][1] - 2]
                if not any(line.strip() for line in between):
                    block[-1].shown = [line for line in fences[n + 1][2] if line.strip()]
            commands += block
        text = "\n".join(lines)
        for m in re.finditer(r"`(python -m assess[^`]*)`", text):
            span = " ".join(m.group(1).split())
            if span.split() == list(PROGRAM):
                continue  # the program's name, not a command
            line = text.count("\n", 0, m.start()) + 1
            commands.append(Command(name, line, span, inline=True))
    return commands


COMMANDS = collect()
BLOCKS: dict[int, list[Command]] = {}
for _c in COMMANDS:
    if _c.block is not None:
        BLOCKS.setdefault(_c.block, []).append(_c)


# ----------------------------------------------------------------------------------------- synopses


def _subparsers(parser):
    import argparse

    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _clean(text: str) -> list[str]:
    text = re.sub(r"\s#.*$", "", text)
    text = re.sub(r"[\[\]()]", " ", text)
    return [w for w in text.split() if w not in ("...", "…")]


def check_synopsis(text: str) -> list[str]:
    """What is wrong with a usage line: unknown commands, options or choices, required options missing."""
    from assess.cli import build_parser

    words = _clean(text)
    if tuple(words[:3]) != PROGRAM:
        return []  # not ours (streamlit, pip, ...): nothing to check against
    words = words[3:]
    problems: list[str] = []
    alternatives = [[]]
    for i, w in enumerate(words):
        if w == "|" and not words[i + 1 : i + 2][0].startswith("-"):
            alternatives.append([])  # `disable amy | enable amy`: another command
        elif w != "|":  # `[--password-stdin | --no-password]`: options of the same command
            alternatives[-1].append(w)
    prefix: list[str] = []
    for n, alt in enumerate(alternatives):
        words = (prefix + alt) if n else alt
        parser, path, several = build_parser(), [], False
        while (sub := _subparsers(parser)) is not None and words and not re.fullmatch(r"[A-Z][A-Z_]*", words[0]):
            names = words[0].split("|")
            unknown = [name for name in names if name not in sub.choices]
            if unknown:
                problems.append(f"no command {' '.join([*path, unknown[0]])!r}")
                return problems
            path.append(names[0])
            several = several or len(names) > 1
            parser, words = sub.choices[names[0]], words[1:]
        if n == 0:
            prefix = path[:-1]
        options = {o: a for a in parser._actions for o in a.option_strings}
        positionals = [a for a in parser._actions if not a.option_strings and a.choices]
        named = set()
        for i, w in enumerate(words):
            before = options.get(words[i - 1]) if i else None
            if before is not None and before.nargs != 0 and not w.startswith("-"):
                continue  # the value of the option before (checked with it)
            if w.startswith("-") and len(w) > 1 and not w.lstrip("-").isdigit():
                for opt in w.split("|"):
                    opt = opt.split("=")[0]
                    if opt not in options:
                        problems.append(f"{' '.join(path)}: no option {opt}")
                        continue
                    named.add(options[opt].dest)
                    action = options[opt]
                    value = words[i + 1] if i + 1 < len(words) else ""
                    if action.choices and value and not value.startswith("-"):
                        for choice in value.split("|"):
                            if re.fullmatch(r"[a-z0-9][a-z0-9_.:@-]*", choice) and choice not in action.choices:
                                problems.append(f"{' '.join(path)} {opt}: no choice {choice!r}")
            elif "|" in w and positionals:
                choices = positionals[0].choices
                for choice in w.split("|"):
                    if choice not in choices and not re.fullmatch(r"[A-Z][A-Z0-9_.]*", choice):
                        problems.append(f"{' '.join(path)}: no {positionals[0].dest} {choice!r}")
        if len(alternatives) == 1 and not several:
            for a in parser._actions:
                if a.option_strings and a.required and a.dest not in named:
                    problems.append(f"{' '.join(path)}: the required option {a.option_strings[0]} is missing")
    return problems


# ------------------------------------------------------------------------------------------ running


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory, demo_copy) -> Path:
    return demo_copy(tmp_path_factory.mktemp("demo") / "assess.db")


class Clones:
    """Working directories after each command of a block, so that a block's commands run in order once."""

    def __init__(self, base: Path, demo: Path):
        self.base, self.demo, self.after = base, demo, {}

    def fresh(self, name: str, *, empty: bool = False) -> Path:
        top = self.base / name
        clone = top / "repo"
        (clone / "data").mkdir(parents=True)
        if not empty:
            shutil.copy(self.demo, clone / "data" / "assess.db")
        for entry in LINKED:
            (clone / entry).symlink_to(ROOT / entry)
        for entry in COPIED:
            shutil.copytree(ROOT / entry, clone / entry)
        if SHARED.exists():
            (top / "shared").symlink_to(SHARED)
        return clone

    def before(self, cmd: Command) -> Path:
        """A working directory with the block's earlier commands run (replayed when not kept)."""
        block = BLOCKS[cmd.block]
        done = max((i for i in range(cmd.index) if (cmd.block, i) in self.after), default=-1)
        clone = self.fresh(f"b{cmd.block}-{cmd.index}", empty="empty store" in cmd.directive)
        if done >= 0:
            shutil.rmtree(clone.parent)
            shutil.copytree(self.after[(cmd.block, done)].parent, clone.parent, symlinks=True)
        for earlier in block[done + 1 : cmd.index]:
            if earlier.run_text is not None:
                execute(earlier, clone)
        return clone

    def keep(self, cmd: Command, clone: Path) -> None:
        self.after[(cmd.block, cmd.index)] = clone


@pytest.fixture(scope="module")
def clones(tmp_path_factory, demo_store) -> Clones:
    return Clones(tmp_path_factory.mktemp("clones"), demo_store)


def _argv(cmd: Command, clone: Path) -> list[str] | None:
    """The arguments after ``python -m assess`` when the command is only that (run in process), else None."""
    if re.search(r"[|&;<>$`]", cmd.run_text) or any(c.assigns for c in BLOCKS.get(cmd.block, [])[: cmd.index]):
        return None
    words = shlex.split(cmd.run_text)
    if tuple(words[:3]) != PROGRAM:
        return None
    return _store_named(words[3:], clone)


def _store_named(words: list[str], clone: Path) -> list[str]:
    out = list(words)
    for i, w in enumerate(out[:-1]):
        if w == "--db" and out[i + 1] in STORE_NAMES:
            out[i + 1] = str(clone / "data" / "assess.db")
    return out


def _environment(clone: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSESS_", "OPENAI_"))}
    env["ASSESS_DB"] = str(clone / "data" / "assess.db")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(clone)
    return env


def _public_files() -> dict[str, Path]:
    """The public iKAT files by name: a doc may name one as if it were in the working directory."""
    if not (SHARED / "data").exists():
        return {}
    return {p.name: p for p in sorted((SHARED / "data").rglob("*")) if p.is_file() and ".git" not in p.parts}


PUBLIC = _public_files()


def _public_named(cmd: Command) -> list[str]:
    try:
        words = shlex.split(cmd.text)
    except ValueError:
        words = cmd.text.split()
    return [w for w in words if w in PUBLIC or re.fullmatch(r"20\d\d_test_topics\.json", w)]


def execute(cmd: Command, clone: Path) -> tuple[int, str]:
    """Run one command in the working directory ``clone``: its exit status and output (stdout, then stderr)."""
    for name in _public_named(cmd):
        if not (clone / name).exists() and name in PUBLIC:
            (clone / name).symlink_to(PUBLIC[name])
    argv = _argv(cmd, clone)
    if argv is not None:
        from assess.cli import main

        out, err = io.StringIO(), io.StringIO()
        saved_env, saved_cwd = dict(os.environ), os.getcwd()
        os.environ.clear()
        os.environ.update(_environment(clone))
        os.chdir(clone)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    status = main(argv)
                except SystemExit as exc:  # argparse
                    status = exc.code if isinstance(exc.code, int) else 2
        finally:
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
        return status, out.getvalue() + err.getvalue()
    prelude = [c.text for c in BLOCKS.get(cmd.block, [])[: cmd.index] if c.assigns]
    words = [*prelude, _shell_store_named(cmd.run_text, clone)]
    proc = subprocess.run(
        ["bash", "-c", "set -e\n" + "\n".join(words)],
        cwd=clone,
        env=_environment(clone),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    return proc.returncode, proc.stdout + proc.stderr


def _shell_store_named(text: str, clone: Path) -> str:
    store = shlex.quote(str(clone / "data" / "assess.db"))
    return re.sub(r"--db (PATH|DB|D)(?=\s|$)", f"--db {store}", text)


def _needs_shared(cmd: Command) -> bool:
    block = BLOCKS.get(cmd.block, [cmd])
    return any("shared/data" in c.text or _public_named(c) for c in block[: cmd.index + 1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(cmd: Command, clone: Path) -> None:
    """Start a server command on a free port, wait for its answer (Streamlit's health and page, or the HTTP
    API's OpenAPI document), stop it."""
    port = _free_port()
    text = re.sub(r"--server\.port \d+", f"--server.port {port}", cmd.text)
    api = " assess api " in f" {text} "
    if api:
        text = _shell_store_named(re.sub(r"--port \d+", f"--port {port}", text), clone)
    probes = ("/openapi.json",) if api else ("/_stcore/health", "/")
    env = {**_environment(clone), "STREAMLIT_SERVER_PORT": str(port), "STREAMLIT_SERVER_HEADLESS": "true"}
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {text}"],
        cwd=clone,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"{cmd.text} exited {proc.returncode}: {proc.stdout.read()}"
            try:
                for probe in probes:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}{probe}", timeout=5) as r:
                        assert r.status == 200 and (probe != "/_stcore/health" or r.read().strip() == b"ok")
                return
            except OSError:
                time.sleep(0.5)
        pytest.fail(f"{cmd.text} did not answer on port {port} within 120 s")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def check_shown(cmd: Command, output: str) -> None:
    if cmd.shows is not None:
        assert cmd.shows in output, f"{cmd.id}: the doc shows {cmd.shows!r}; the command printed:\n{output}"
    if cmd.shown:
        got = [line.rstrip() for line in output.splitlines()]
        at = 0
        for want in (line.rstrip() for line in cmd.shown):
            if want.strip() in ("...", "…"):
                continue
            try:
                at = got.index(want, at) + 1
            except ValueError:
                pytest.fail(f"{cmd.id}: the doc shows the line {want!r}; the command printed:\n{output}")


POSTGRESQL = "a PostgreSQL server"


@pytest.fixture(scope="module")
def pg_campaign(pg_cluster):
    """The test's PostgreSQL server for docs/deploy.md's commands: a database with a campaign's two roles (what
    the doc's `sudo -u postgres createuser/createdb` lines make), and the doc's names mapped to them."""
    name = pg_cluster.create_database()
    roles = pg_cluster.create_roles(name)
    yield {
        "cluster": pg_cluster,
        "roles": roles,
        "names": {
            "127.0.0.1:5432/assess": f"127.0.0.1:{pg_cluster.port}/{name}",
            "assess_owner": roles.owner,
            "assess_app": roles.app,
        },
        "database": name,
    }
    pg_cluster.drop_database(name)


def postgresql_command(cmd: Command, campaign: dict, clones: Clones) -> None:
    """A command that needs a PostgreSQL server, on the test's own: role and database creation is checked to
    be what the test's cluster made; the workbench's commands run with the doc's names mapped to it."""
    text = cmd.text
    for doc_name, ours in campaign["names"].items():
        text = re.sub(rf"(?<![\w]){re.escape(doc_name)}(?![\w])", ours, text)
    words = shlex.split(text)
    cluster = campaign["cluster"]
    if words[:3] == ["sudo", "-u", "postgres"]:
        with cluster.connect() as conn:
            if words[3] == "createuser":
                assert conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (words[4],)).fetchone()
            elif words[3] == "createdb":
                database = campaign["database"] if words[-1] == "assess" else words[-1]
                owner = conn.execute(
                    "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s", (database,)
                ).fetchone()
                assert owner == (words[words.index("--owner") + 1],)
            else:
                pytest.fail(f"{cmd.id}: the test does not provide {words[3]}")
        return
    assert tuple(words[:3]) == PROGRAM, f"{cmd.id}: the test provides PostgreSQL only to `python -m assess`"
    clone = clones.fresh(f"pg-{cmd.line}", empty=True)
    proc = subprocess.run(
        [sys.executable, "-m", "assess", *words[3:]],
        cwd=clone,
        env=_environment(clone),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"{cmd.id}: `{text}` exited {proc.returncode}:\n{proc.stdout}{proc.stderr}"
    if words[3] == "init" and "--app-role" in words:  # then the app role works the store (ASSESS_DB)
        stats = subprocess.run(
            [sys.executable, "-m", "assess", "stats", "--db", campaign["roles"].app_url],
            cwd=clone,
            env=_environment(clone),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert stats.returncode == 0, stats.stderr


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "cmd",
    [
        pytest.param(c, marks=pytest.mark.postgresql) if c.kind == "needs" and c.needs == POSTGRESQL else c
        for c in COMMANDS
    ],
    ids=[c.id for c in COMMANDS],
)
def test_doc_command(cmd: Command, request):
    kind = cmd.kind
    if kind == "synopsis":
        assert check_synopsis(cmd.text) == [], f"{cmd.id}: {cmd.text}"
        if cmd.run_text is None:
            return
    if kind == "needs" and cmd.needs == POSTGRESQL:
        postgresql_command(cmd, request.getfixturevalue("pg_campaign"), request.getfixturevalue("clones"))
        return
    if kind == "needs":  # not run here: its command and options must still exist
        assert check_synopsis(cmd.text) == [], f"{cmd.id}: {cmd.text}"
        pytest.skip(f"{cmd.id} needs {cmd.needs}")
    if _needs_shared(cmd) and not (SHARED / "data").exists():
        pytest.skip(f"{cmd.id} reads ../shared/data, which is absent")
    clones = request.getfixturevalue("clones")
    if cmd.block is None:
        clone = clones.fresh(f"inline-{cmd.doc.replace('/', '-')}-{cmd.line}-{abs(hash(cmd.text))}")
    else:
        clone = clones.before(cmd)
    if kind == "server":
        serve(cmd, clone)
        return
    status, output = execute(cmd, clone)
    if cmd.block is not None:
        clones.keep(cmd, clone)
    assert status == 0, f"{cmd.id}: `{cmd.text}` exited {status}:\n{output}"
    check_shown(cmd, output)


def test_the_docs_have_commands_of_every_kind():
    """The extraction finds the commands: a change of fences or markers that hid them would pass silently."""
    kinds = {c.kind for c in COMMANDS}
    assert {"run", "synopsis", "needs", "server"} <= kinds
    assert sum(c.kind == "run" for c in COMMANDS) >= 20


@pytest.mark.parametrize(
    "line, problem",
    [
        ("python -m assess history --turn T --item X --sauce S", "history: no option --sauce"),
        ("python -m assess histories --turn T", "no command 'histories'"),
        ("python -m assess export qrels|ptkb-qrels|fish --db PATH --source S", "export: no kind 'fish'"),
        ("python -m assess agreement --task passage|ptkb|fish --a A --b B", "agreement --task: no choice 'fish'"),
        ("python -m assess users add NAME --role organizer | frobnicate amy", "no command 'users frobnicate'"),
        ("python -m assess assign --db PATH", "assign: the required option --assessor is missing"),
    ],
)
def test_synopsis_check_finds_drift(line, problem):
    assert problem in check_synopsis(line)


def test_synopsis_check_passes_a_true_usage_line():
    assert check_synopsis("python -m assess export qrels|ptkb-qrels|nuggets --db PATH --source NAME [--dedup]") == []
    assert check_synopsis("python -m assess users reset amy [--password-stdin | --no-password]") == []


def test_shown_output_is_compared_line_by_line_in_order():
    cmd = Command(
        "doc.md", 1, "python -m assess stats", shown=["conversations        2", "...", "turns                12"]
    )
    check_shown(cmd, "conversations        2\nturns                12\n")
    with pytest.raises(pytest.fail.Exception):
        check_shown(cmd, "turns                12\nconversations        2\n")
    arrow = Command("doc.md", 1, "python -m assess stats", comment="# -> turns 12")
    with pytest.raises(AssertionError):
        check_shown(arrow, "turns 13\n")


def test_readme_describes_the_demo_that_init_loads(demo_store):
    """The README's numbers for the demo are the store's: a newcomer meets no impossible number."""
    import json

    from assess.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["stats", "--db", str(demo_store), "--json"]) == 0
    s = json.loads(out.getvalue())
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    without = s["passages"] - s["passages_with_text"]
    assert (
        f"{s['conversations']} conversations, {s['turns']} turns, {s['passages_with_text']} passages with text "
        f"(plus {without} that have only an id), {s['runs']} runs pooled at depth 10 ({s['pooled_pairs']} pooled pairs)"
    ) in readme
    llms = sorted(name for name in s["passage_labels"] if name.startswith("llm:"))
    people = sorted(name for name in s["passage_labels"] if not name.startswith("llm:"))
    assert f"under the sources `{llms[0]}` and `{llms[1]}`" in readme and len(llms) == 2
    assert f"simulated assessors (`{people[0]}`, `{people[1]}`)" in readme and len(people) == 2
