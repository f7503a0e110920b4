"""`render_markdown`: safe HTML, and a fast path for plain text that equals the parser's output."""

from __future__ import annotations

import html

from hypothesis import given, settings
from hypothesis import strategies as st

from convstore.web._markdown import _MD, _SYNTAX, MARKDOWN_CHARS, render_markdown

# Plain chat text and the characters around Markdown's syntax (digits, dots, dashes, colons,
# spaces, tabs, line ends, URLs) so the property meets the fast path's edges.
PLAIN = st.lists(
    st.sampled_from([*"ab yzé—€0129.,;:?'\"()-+=/\t\n\r", "http://x.org/a", "  ", "\n\n"]),
    max_size=40,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(PLAIN)
def test_the_fast_path_renders_what_the_parser_renders(text: str) -> None:
    # The same markup; quotes may be escaped differently (&#39; or '), which reads the same.
    assert html.unescape(str(render_markdown(text))) == html.unescape(_MD.render(text))


def test_markdown_syntax_takes_the_parser() -> None:
    for text in (
        "**b**",
        "- item",
        "1. one",
        "# h",
        "a  \nb",
        "    code",
        "x\n===",
        "<b>",
        "&amp;",
    ):
        assert _SYNTAX.search(text) is not None, text


def test_text_over_the_limit_is_plain_and_cut() -> None:
    shown = str(render_markdown("**x** " * (MARKDOWN_CHARS // 6 + 10)))
    assert "<strong>" not in shown
    assert "cut:" in shown
    assert len(shown) < MARKDOWN_CHARS + 500
