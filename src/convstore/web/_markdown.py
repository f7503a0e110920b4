"""Message text as safe HTML: CommonMark (markdown-it-py) with code highlighted by Pygments.

Invariants (what makes the returned markup safe to mark as such):

- Raw HTML is off: a ``<script>`` or ``<img onerror>`` in the text is escaped as text.
- Every link goes through `_allowed_link`: only ``http``, ``https`` and ``mailto`` URLs (and
  ``#`` anchors) become links; ``javascript:``, ``data:`` and everything else stay text.
  Links carry ``rel="nofollow noopener noreferrer"``.
- An image is shown only when it is one of the store's own attachments (``/attachments/<sha>``
  under this app); any other is written out as text, so a page never loads an outside URL.
- Code blocks are highlighted on the server into ``<span class>`` elements (Pygments escapes
  the code); the colours live in the stylesheet. No script, no inline style.
- Text over `MARKDOWN_CHARS` is shown as plain, cut text: a page stays bounded in size and time.
- Text with nothing Markdown could read as syntax (`_SYNTAX` finds nothing) skips the parser:
  its paragraphs are escaped and wrapped as the parser would wrap them (half a page's time
  went into parsing plain chat text).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

__all__ = ["MARKDOWN_CHARS", "render_markdown"]

MARKDOWN_CHARS: Final = 100_000
"""Longer text is shown as plain text, cut here (the whole is in the ``.json`` document)."""
_SCHEMES: Final = ("http://", "https://", "mailto:")
_ATTACHMENT: Final = re.compile(r"/attachments/[0-9a-f]{64}\Z")
_FORMATTER: Final = HtmlFormatter(nowrap=True)
_SYNTAX: Final = re.compile(
    r"[*_`#\[\]!<>|~\\&\t]"  # emphasis, code, headings, links, HTML, tables, escapes, tabs
    r"|^ {0,3}(?:[-+=]|\d{1,9}[.)])"  # lists, setext underlines, ordered lists
    r"|^ {4}"  # indented code
    r"| {2,}$",  # hard line breaks
    re.MULTILINE,
)
_BLANK_LINE: Final = re.compile(r"\n[ \t]*\n\s*")


def _highlight(code: str, lang: str, _attrs: str) -> str:
    """The code as Pygments' escaped, class-marked spans; ``""``: markdown-it escapes it."""
    if not lang:
        return ""
    try:
        lexer = get_lexer_by_name(lang.lower(), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return ""
    return str(highlight(code, lexer, _FORMATTER))


def _allowed_link(url: str) -> bool:
    lowered = url.strip().lower()
    if lowered.startswith((*_SCHEMES, "#")):
        return True
    # The store's own attachments (this app's path; `_image` checks the root exactly).
    relative = lowered.startswith("/") and not lowered.startswith("//")
    return relative and _ATTACHMENT.search(lowered) is not None


def _image(
    renderer: RendererHTML,
    tokens: Sequence[Token],
    idx: int,
    options: OptionsDict,
    env: EnvType,
) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    root = str(env.get("root", ""))
    alt = renderer.renderInlineAsText(token.children or [], options, env)
    if src.startswith(root) and _ATTACHMENT.fullmatch(src[len(root) :]) and src[:1] == "/":
        return f'<img src="{escape(src)}" alt="{escape(alt)}" loading="lazy">'
    return str(escape(f"[image: {alt}] ({src})"))


def _link_open(
    renderer: RendererHTML,
    tokens: Sequence[Token],
    idx: int,
    options: OptionsDict,
    env: EnvType,
) -> str:
    tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
    return str(renderer.renderToken(tokens, idx, options, env))


def _parser() -> MarkdownIt:
    md = MarkdownIt(
        "commonmark",
        {"html": False, "linkify": False, "typographer": False, "highlight": _highlight},
    ).enable(["table", "strikethrough"])
    # markdown-it's own check refuses javascript:, vbscript:, file: and most data: URLs;
    # this one is narrower: what a person may follow out of a stored conversation.
    md.validateLink = _allowed_link  # type: ignore[method-assign]
    md.add_render_rule("image", _image)
    md.add_render_rule("link_open", _link_open)
    return md


_MD: Final = _parser()


def render_markdown(text: str, *, root: str = "") -> Markup:
    """``text`` as HTML: Markdown rendered safely, or cut plain text when it is too long.

    ``root``: the app's root path, for recognising the store's own attachment URLs.
    """
    if len(text) > MARKDOWN_CHARS:
        cut = escape(text[:MARKDOWN_CHARS])
        note = escape(f"… (cut: {len(text):,} characters; the whole is in the .json document)")
        return Markup('<div class="text plain">{}<span class="meta">{}</span></div>').format(
            cut, note
        )
    # Line ends normalised as the parser does (CommonMark: \r\n and \r are line ends).
    plain = text.replace("\r\n", "\n").replace("\r", "\n")
    if _SYNTAX.search(plain) is None:
        paragraphs = _BLANK_LINE.split(plain.strip())
        return Markup("").join(
            Markup("<p>{}</p>\n").format("\n".join(line.strip(" ") for line in p.split("\n")))
            for p in paragraphs
            if p.strip()
        )
    env: dict[str, Any] = {"root": root}
    return Markup(_MD.render(text, env))  # noqa: S704 - safe by the module's invariants
