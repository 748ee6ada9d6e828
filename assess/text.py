"""Turning untrusted passage and response text into inert, highlighted HTML (no Streamlit here)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

# Words too common to be worth highlighting.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "tell",
        "know",
        "like",
        "want",
        "also",
        "get",
        "best",
        "good",
    ]
)

_WORD = re.compile(r"\w+", re.UNICODE)


def query_terms(*texts: str | None, min_length: int = 3) -> list[str]:
    """Content words of the query texts (lower-cased, stopwords and short words dropped), longest first."""
    terms = set()
    for text in texts:
        for w in _WORD.findall(text or ""):
            w = w.lower()
            if len(w) >= min_length and w not in STOPWORDS and not w.isdigit():
                terms.add(w)
    return sorted(terms, key=lambda t: (-len(t), t))


def inert_html(text: str, terms: list[str] | tuple[str, ...] = ()) -> str:
    """Escape ``text`` so that no HTML, markdown or LaTeX in it is ever interpreted; wrap query terms in <mark>.

    The result is one raw HTML block with no blank line (newlines become <br>), so a markdown
    renderer passes it through untouched; every character of the input is escaped as an entity
    where it could mean something (< > & " ' and the markdown/LaTeX punctuation).
    """
    pattern = None
    if terms:
        pattern = re.compile(r"\b(" + "|".join(re.escape(t) for t in terms) + r")\w*", re.IGNORECASE)
    out = []
    pos = 0
    spans = [] if pattern is None else [(m.start(), m.end()) for m in pattern.finditer(text)]
    for start, end in spans:
        out.append(_escape(text[pos:start]))
        out.append(f'<mark class="qterm">{_escape(text[start:end])}</mark>')
        pos = end
    out.append(_escape(text[pos:]))
    return '<div class="passage-text">' + "".join(out) + "</div>"


# One pass, one entity per character that HTML, markdown (links, autolinks, directives) or LaTeX
# could read as syntax.
_ENTITIES = str.maketrans({c: f"&#{ord(c)};" for c in "<>&\"'\\`*_{}[]()#+-!|$~:=./@"})


def _escape(text: str) -> str:
    # Newlines become <br> so the whole passage stays one raw HTML block (a blank line would end it).
    return showable(text).translate(_ENTITIES).replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")


def inline_html(text: str) -> str:
    """Escape untrusted text for use inside one of our HTML blocks (see :func:`line_html`)."""
    return _escape(text or "")


def line_html(label: str | None, text: str, *, css: str = "inert-line", strong: bool = False) -> str:
    """One raw HTML block ``<div>`` holding an optional bold label and untrusted text, escaped.

    A raw HTML block is passed through by the markdown renderer as it is, so nothing in ``text``
    becomes a link, an emphasis, a colour directive, an icon or math.
    """
    body = inline_html(text)
    if strong:
        body = f"<strong>{body}</strong>"
    head = f"<strong>{inline_html(label)}</strong> " if label else ""
    return f'<div class="{css}">{head}{body}</div>'


# C0/C1 control characters (tab and line breaks aside) and lone surrogates: never shown, never sent to the browser
# (a lone surrogate cannot even be encoded for it).
_UNSHOWABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def showable(text: object) -> str:
    """``text`` as a string a page can carry: control characters and lone surrogates become U+FFFD."""
    return _UNSHOWABLE.sub("\ufffd", "" if text is None else str(text))


# Markdown syntax that can start anywhere in a line: brackets (links, images, directives), emphasis, code,
# math, tables, strike-through, HTML, entities. "_" only at a word edge (inside a word it is no emphasis).
_MD_INLINE = re.compile(r"[\\`*\[\]<>!$|~&{}]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
# GitHub's bare autolinks (http://…, www.…, a@b.c) are found by a search over the text *after* parsing, so
# an entity cannot stop them: an invisible WORD JOINER (U+2060) goes before the ':' of '://', the '.' after
# 'www' and every '@', which those searches then no longer match.
_AUTOLINK = re.compile(r":(?=//)|(?<=[wW]{3})\.|@")
WORD_JOINER = "\u2060"
# Streamlit's directives that render something even without a [label] (":red" is an empty coloured span,
# ":small", ":help" …): their colon becomes an entity. Unknown directive names are shown as written.
_DIRECTIVE = re.compile(
    r":(?=(?:red|orange|yellow|green|blue|violet|gray|grey|rainbow|primary|small|shimmer|help|color)(?![\w-])"
    r"|[\w-]+-(?:background|badge)(?![\w-]))"
)
# Emoji shortcodes, ":material/…:" icons (Streamlit rewrites them to ":material_…:" before parsing) and
# ":streamlit:" are replaced in the text after parsing, like autolinks: a word joiner after the opening
# colon keeps them as written.
_SHORTCODE = re.compile(r"(?<=:)(?=[\w/+-]+:)")
# Block syntax counts only where a line starts: a heading, list, quote, rule or setext underline.
_MD_LINE_START = re.compile(r"^(\s*)([-+#=>]|\d+[.)])")


def inert_markdown(text: object) -> str:
    """Untrusted text made inert for a place Streamlit renders as markdown without raw HTML (a title, a
    caption, an error or info box, an expander, tab, button or metric label, a progress text).

    Each character that could start markdown, Streamlit directive or LaTeX syntax where it stands becomes a
    numeric character reference, which a markdown renderer shows as that literal character and never reads as
    syntax, and bare autolinks are broken by an invisible word joiner, so no link, image, autolink, emphasis,
    colour or math can form. Ordinary ids and names
    (``llm:demo-gpt``, ``101_1``) come out unchanged. Line breaks become spaces so the text stays inside
    the one line or label it was meant for.
    """
    flat = re.sub(r"\r\n|[\r\n\t]", " ", showable(text))
    head = ""
    if start := _MD_LINE_START.match(flat):
        head, flat = start.group(1) + _entities(start.group(2)), flat[start.end() :]
    flat = _DIRECTIVE.sub("&#58;", _MD_INLINE.sub(lambda m: _entities(m.group()), flat))
    return head + _SHORTCODE.sub(WORD_JOINER, _AUTOLINK.sub(lambda m: WORD_JOINER + m.group(), flat))


def inert_images(markdown: object) -> str:
    """Markdown written by an organizer (a crowd study's consent text and instructions) with its images made
    inert: a word joiner between the ``!`` and the ``[`` of every ``![…](…)`` and ``![…][…]`` leaves an
    ordinary link, so the page never fetches an address from the text (a tracking pixel in every worker's
    browser); everything else keeps its formatting. Streamlit escapes raw HTML (``<img>``) itself."""
    return showable(markdown).replace("![", "!" + WORD_JOINER + "[")


def _entities(text: str) -> str:
    return "".join(f"&#{ord(c)};" for c in text)


def code_span(text: object) -> str:
    """Untrusted text as one markdown code span (shown verbatim, monospaced): the fence is one backtick
    longer than any run of backticks inside, and line breaks become spaces so the span cannot end early."""
    flat = showable(text).replace("\r", " ").replace("\n", " ").replace("\t", " ")
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or (flat.startswith(" ") and flat.endswith(" ")) else ""
    return f"{fence}{pad}{flat}{pad}{fence}" if flat else "` `"


# ------------------------------------------------------------------------------------------- names

NAME_MAX = 64
NAME_RULE = "an assessor name is 1-64 characters, each printable, without spaces or ':'"

# Characters that draw nothing although Unicode counts them as letters or marks (fillers, blank patterns,
# the combining grapheme joiner, variation selectors): refused in names like the format characters.
_INVISIBLE = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f\u2800\u3164\uffa0"
    + "".join(map(chr, range(0xFE00, 0xFE10)))
)
# Categories a name may not hold: controls, format characters (bidi controls, zero-width space / joiners,
# soft hyphen, tags), surrogates, private use, unassigned code points, and line / paragraph separators.
_NOT_IN_NAMES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def normal_name(name: object) -> str:
    """A typed name as it is kept: NFKC-normalised (fullwidth, ligatures, compatibility forms folded) and
    stripped of surrounding spaces."""
    return unicodedata.normalize("NFKC", "" if name is None else str(name)).strip()


def name_problem(name: str) -> str | None:
    """What is wrong with ``name`` (already :func:`normal_name`) as an assessor or account name, or None.

    A name is 1-64 characters, each printable: no control, format (bidi override, zero-width), private-use,
    unassigned or invisible character, no space of any kind, and no ':' or a look-alike of it (the
    workbench's own source names hold one: ``llm:…``, ``crowd:…``)."""
    if not name or len(name) > NAME_MAX:
        return NAME_RULE
    for c in name:
        if unicodedata.category(c) in _NOT_IN_NAMES or c in _INVISIBLE:
            return f"{NAME_RULE}, found U+{ord(c):04X} {unicodedata.name(c, '(a control character)')}".rstrip()
        if c.isspace() or not c.isprintable():
            return NAME_RULE
    if ":" in skeleton(name):
        return NAME_RULE
    return None


# Look-alikes that NFKD does not fold, mapped to the Latin letter (or digit, or punctuation) they pass for.
# Capitals first (before case folding turns a Greek capital eta, which looks like H, into an eta, which
# looks like n), then small letters; the glyph folds last (0 as o; 1, I, i and | as l; rn as m, vv as w).
_UPPER_ALIKES = str.maketrans(
    {
        **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧϹͿ", "ABEZHIKMNOPTYXCJ", strict=True)),
        **dict(zip("АВЕЅІЈКМНОРСТУХҮԚԜҺӀЗ", "ABESIJKMHOPCTYXYQWHl3", strict=True)),
        **dict(zip("ՕՍ", "OU", strict=True)),
    }
)
_LOWER_ALIKES = str.maketrans(
    {
        **dict(zip("аеорсхуіјѕԁһԛԝүӏмктнв", "aeopcxyijsdhqwylmkthb", strict=True)),
        **dict(zip("αβγεηικνορτυχωϲϳμ", "abyeniknoptuxwcju", strict=True)),
        **dict(zip("օսհոɑɡıȷɩǀ", "oshnagijll", strict=True)),
        **dict(zip("ᴀʙᴄᴅᴇɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢ", "abcdeghijklmnoprstuvwyz", strict=True)),
        # Cherokee (its small letters case-fold to these capitals) and Lisu letters drawn like Latin ones
        **dict(zip("ᎪᏴᏟᎠᎬᏀᎻᎥᎫᏦᏞᎷᏢᎡᏒᏚᏕᎢᏙᎳᏔᎩᏃᏂᏏᏗ", "abcdeghijklmprrsstvwwyzhbd", strict=True)),
        **dict(zip("ꓮꓐꓚꓒꓓꓰꓝꓖꓧꓲꓙꓗꓡꓟꓠꓳꓑꓣꓢꓔꓴꓦꓪꓫꓬꓜ", "abcddefghljklmnoprstuvwxyz", strict=True)),
        **dict.fromkeys("\u02d0\u02f8\ua789\u2236\u05c3\u0589\u0703\u0704\u1361\u16ec\ua4fd\ufe30", ":"),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2212\u02d7\u2043\u2796\u058a\u05be\u1806", "-"),
        **dict.fromkeys("0", "o"),
        **dict.fromkeys("1i|\u01c0\u2223\u05c0\u07ca", "l"),
    }
)
_DIGRAPH_ALIKES = (("rn", "m"), ("vv", "w"))


def skeleton(text: str) -> str:
    """The shape of ``text`` for spotting look-alikes (in the spirit of Unicode's confusables skeleton, with
    a compact table of our own): compatibility decomposition, combining marks and format / invisible
    characters dropped, Greek, Cyrillic, Armenian and small-capital letters that look Latin mapped to
    Latin, case folded, and 0 / o, 1 / l / I / i, rn / m, vv / w made one. Two names with one skeleton
    are easy to mistake for each other on a page or in a terminal."""
    # twice: a Cyrillic i becomes i, then l like every i
    folded = _bare(_bare(text).translate(_UPPER_ALIKES).casefold()).translate(_LOWER_ALIKES).translate(_LOWER_ALIKES)
    for pair, single in _DIGRAPH_ALIKES:
        folded = folded.replace(pair, single)
    return folded


def _bare(text: str) -> str:
    # NFKD without the combining marks and the format and invisible characters.
    return "".join(
        c
        for c in unicodedata.normalize("NFKD", text)
        if unicodedata.category(c) not in ("Cf", "Mn", "Me") and c not in _INVISIBLE
    )


def look_alike(name: str, others: Iterable[str], prefixes: Iterable[str] = ()) -> str | None:
    """The first of ``others`` (other than ``name`` itself) that ``name`` may be mistaken for, or the first
    of ``prefixes`` followed by ``*`` that its skeleton starts with; None when there is none."""
    shape = skeleton(name)
    for prefix in prefixes:
        if shape.startswith(skeleton(prefix)):
            return f"{prefix}*"
    for other in others:
        if other != name and skeleton(other) == shape:
            return other
    return None


# Scripts a name may mix (Unicode's "highly restrictive" level, UTS #39 5.2): Latin with the scripts written
# alongside Han in Japanese, Chinese or Korean. Any other mixture (Latin with Cyrillic, Greek, Cherokee…) is
# how a look-alike of a name is made.
_SCRIPT_SETS = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)


def _script(c: str) -> str | None:
    """The script of a letter, read from its Unicode name's first word (Python has no script property);
    None for what every script shares (digits, punctuation, marks, the kana length mark)."""
    if not unicodedata.category(c).startswith("L"):
        return None
    word = unicodedata.name(c, "").split(" ", 1)[0]
    if word == "KATAKANA-HIRAGANA":
        return None
    return "HAN" if word in ("CJK", "IDEOGRAPHIC") else word or None


def mixed_scripts(name: str) -> str | None:
    """The scripts of ``name``'s letters when they are a mixture no writing system uses (``Latin and
    Cherokee``), else None. A name in one script (``王芳``, ``محمد``) or in Japanese (kanji, kana and Latin)
    passes; ``dᎪve`` does not."""
    scripts = {s for c in name if (s := _script(c))}
    if len(scripts) < 2 or any(scripts <= allowed for allowed in _SCRIPT_SETS):
        return None
    return " and ".join(sorted(s.title() for s in scripts))


ACTOR_RULE = "who acts: 1-100 printable characters without spaces, letters of one script"


def actor_problem(by: object) -> str | None:
    """What is wrong with ``by`` as who acts for the history (``--by``: an account name, ``os:USER``), or
    None: the name rule's characters (no control, bidi, zero-width or space character), ':' allowed, and
    no mixture of scripts."""
    text = "" if by is None else str(by)
    if not text or len(text) > 100:
        return f"{ACTOR_RULE}, found {len(text)} characters"
    return _character_problem(text, ACTOR_RULE) or (
        f"{ACTOR_RULE}, found {mixed}" if (mixed := mixed_scripts(text)) else None
    )


EMAIL_RULE = "an e-mail address: 3-320 printable characters without spaces, one '@' inside"


def email_problem(email: object) -> str | None:
    """What is wrong with ``email`` as an account's address (matched to the identity provider's), or None."""
    text = "" if email is None else str(email)
    if not 3 <= len(text) <= 320:
        return f"{EMAIL_RULE}, found {len(text)} characters"
    if bad := _character_problem(text, EMAIL_RULE):
        return bad
    local, at, domain = text.rpartition("@")
    if not (local and at and domain) or "@" in local:
        return f"{EMAIL_RULE}, found {text.count('@')} '@'"
    if mixed := mixed_scripts(domain) or mixed_scripts(local):
        return f"{EMAIL_RULE}, letters of one script, found {mixed}"
    return None


def _character_problem(text: str, rule: str) -> str | None:
    # the name rule's character test: what is found is named, never shown (it may be an escape sequence)
    for c in text:
        if unicodedata.category(c) in _NOT_IN_NAMES or c in _INVISIBLE or c.isspace() or not c.isprintable():
            return f"{rule}, found U+{ord(c):04X} {unicodedata.name(c, '(a control character)')}".rstrip()
    return None


# ------------------------------------------------------------------------------------------- terminals

# Everything outside printable ASCII, tab and newline is looked at one character at a time.
_NOT_PLAIN = re.compile(r"[^\t\n\x20-\x7e]")
# What a terminal must never receive raw: controls (ESC starts colour, cursor and title sequences; CR
# overwrites a line), format characters (bidi overrides reorder what is shown; zero-width characters hide
# text), lone surrogates and line / paragraph separators.
_NOT_FOR_TERMINALS = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def terminal_text(text: object) -> str:
    """``text`` safe to write to a terminal: each control, format (bidi, zero-width) or separator character
    becomes a visible escape, ``\\u001b`` for ESC, ``\\u202e`` for RIGHT-TO-LEFT OVERRIDE (``\\ud83d\\udc00``
    style pairs above U+FFFF); tab, newline and every printable character stay. The escapes are JSON's, so
    a JSON document passed through stays a JSON document with the same content."""

    def visible(m: re.Match) -> str:
        c = m.group()
        if unicodedata.category(c) not in _NOT_FOR_TERMINALS:
            return c
        code = ord(c)
        if code > 0xFFFF:
            code -= 0x10000
            return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
        return f"\\u{code:04x}"

    return _NOT_PLAIN.sub(visible, "" if text is None else str(text))
