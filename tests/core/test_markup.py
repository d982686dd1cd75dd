"""The markup bound: hostile nesting is refused before the parser sees it, real pages are not."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from neardup.core import BadRecordError, page_from_mapping
from neardup.core.markup import (
    MAX_ELEMENTS,
    MAX_MARKUP_DEPTH,
    SCAN_FROM,
    check_markup,
    markup_size,
)

_PAD = "<p>filler" * SCAN_FROM  # past the scan's threshold, adding no depth


def _reason(content: str) -> str | None:
    try:
        check_markup(content, "text/html")
    except BadRecordError as error:
        return error.reason
    return None


@pytest.mark.parametrize(
    "hostile",
    [
        "<div>" * 100_000,
        "<ul><li>x" * 40_000,
        "<blockquote>" * 20_000,
        "<table><tr><td>" * 10_000,
        "<span>" * (MAX_MARKUP_DEPTH + 1) + "<p>x" * 20_000,
        # end tags that the parser ignores (their element is outside a table cell) do not
        # reset the count
        ("<div>" * 400 + "<table><td>" + "</div>" * 400) * 25,
    ],
)
def test_deep_markup_is_refused(hostile: str) -> None:
    assert _reason("<html><body>" + hostile) == "markup_too_deep"


def test_too_many_elements_are_refused() -> None:
    assert _reason("<br>" * (MAX_ELEMENTS + 1)) == "too_many_elements"


@pytest.mark.parametrize(
    "page",
    [
        # rows and cells whose end tags are left out, with an unclosed font in each cell
        "<table>" + "<tr><td>a<td><font>b" * 30_000 + "</table>",
        "<p>paragraph" * 50_000,
        "<ul>" + "<li>item" * 50_000 + "</ul>",
        "<dl>" + "<dt>term<dd>definition" * 20_000 + "</dl>",
        "<select>" + "<option>x" * 50_000 + "</select>",
        "<div><span>x</span></div>" * 50_000,
        # tags in scripts, styles and comments are not markup
        "<script>" + "for(i=0;i<n;i++){a<b}" * 20_000 + "</script><div>x</div>",
        "<!--" + "<div>" * 20_000 + "--><p>x</p>",
        "<style>" + "<div>" * 20_000 + "</style>",
        # self-closing syntax on void elements opens nothing
        "<img src=a/><br/>" * 20_000,
    ],
)
def test_large_real_shapes_pass(page: str) -> None:
    assert _reason(page) is None


def test_pages_under_the_scan_threshold_and_plain_text_are_not_scanned() -> None:
    assert _reason("<div>" * SCAN_FROM) is None
    try:
        check_markup("<div>" * (SCAN_FROM + 1), "text/plain")
    except BadRecordError:  # pragma: no cover - the failure being tested for
        pytest.fail("text that is not HTML was scanned as markup")


_NAMES = st.sampled_from(["div", "span", "section", "b", "a", "em", "article"])


@st.composite
def _balanced(draw: st.DrawFn, depth: int = 0) -> tuple[str, int]:
    """Well-formed markup and its nesting depth."""
    parts, deepest = [], depth
    for _ in range(draw(st.integers(0, 3 if depth < 6 else 0))):
        name = draw(_NAMES)
        inner, inner_depth = draw(_balanced(depth + 1))
        parts.append(f"<{name}>{inner}</{name}>")
        deepest = max(deepest, inner_depth)
    return "".join(parts) or "text", deepest


@given(_balanced(), st.integers(1, 200))
def test_the_scan_counts_the_nesting_of_well_formed_markup(
    tree: tuple[str, int], wrap: int
) -> None:
    markup, depth = tree
    wrapped = "<section>" * wrap + markup + "</section>" * wrap
    assert markup_size(wrapped, 10**9, 10**9)[0] == depth + wrap


def test_a_record_with_deep_markup_is_a_dead_letter_reason() -> None:
    record = {"url": "https://a/", "content": "<html><body>" + "<div>" * 50_000}
    with pytest.raises(BadRecordError) as raised:
        page_from_mapping(record)
    assert raised.value.reason == "markup_too_deep"
    assert str(MAX_MARKUP_DEPTH) in str(raised.value)
    # the same page as plain text is text, not markup
    page_from_mapping({**record, "content_type": "text/plain"})
    assert _reason(_PAD + "<div>" * (MAX_MARKUP_DEPTH - 1)) is None
