"""A fixed bound on a page's markup, checked before the HTML parser sees it.

An HTML5 tree builder checks "is an element of this kind in scope" by walking its stack of
open elements, so its time grows with the number of tags times the nesting depth: a page of
a hundred thousand nested ``<div>`` holds a core for many seconds. A page nested deeper than
``MAX_MARKUP_DEPTH`` or holding more than ``MAX_ELEMENTS`` start tags is refused instead,
with a reason, whatever the machine's speed: every run refuses the same records. Within
both bounds the parser's worst case for a page of the largest record size stays short
(docs/limits.md has the measurements).

The depth is counted by a scan of the tags, not by the parser: an element opens at its
start tag and closes at its end tag, with the parser's rules that matter for depth (void
elements never open, a paragraph, list item, row, cell or option closes the open one of its
list, row or table, an end tag does not reach past a table or cell into the elements
outside it, script and style hold no tags, comments are skipped). It is written by hand
because no parser offers such a bound; the scan runs only on pages with more than
``SCAN_FROM`` "<", since fewer tags cannot hold the parser long however they nest.
"""

from __future__ import annotations

import re

from .canonical import looks_like_html
from .exceptions import BadRecordError

__all__ = ["MAX_ELEMENTS", "MAX_MARKUP_DEPTH", "SCAN_FROM", "check_markup", "markup_size"]

#: elements nested deeper than this are refused (Blink stops nesting at 512 as well)
MAX_MARKUP_DEPTH = 512
#: start tags past this many are refused (pages of real sites hold tens of thousands)
MAX_ELEMENTS = 250_000
#: pages with at most this many "<" are not scanned: depth times tags stays small
SCAN_FROM = 16_384


def _names(words: str) -> frozenset[str]:
    return frozenset(words.split())


# a comment, an element whose content is text to the parser (up to its end tag), or a tag
_TOKEN = re.compile(
    r"<!--.*?(?:-->|\Z)"
    r"|<(script|style|textarea|title|xmp|iframe|noembed|noframes)(?=[\t\n\f\r />]).*?(?:</\1|\Z)"
    r"|<(/?)([A-Za-z][^\t\n\f\r />]*)",
    re.DOTALL | re.IGNORECASE,
)
_VOID = _names(
    "area base basefont bgsound br col embed frame hr image img input keygen link meta param "
    "source track wbr"
)
# an end tag does not close elements outside these (the parser's default scope) ...
_SCOPE = _names("table td th caption template object applet marquee")
# ... but a table's own parts close up to their table (its "table scope")
_TABLE_SCOPE = _names("table template")
_TABLE_PARTS = _names("table tbody thead tfoot tr td th caption")
# a start tag that closes an open element of its group, unless one of the limits (or a
# scope boundary) opened after it: the parser's implied end tags
_IMPLIED: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    name: (tuple(group.split()), tuple(limits.split()))
    for names, group, limits in [
        ("p", "p", "button"),
        ("li", "li", "ul ol menu"),
        ("dt dd", "dt dd", "dl"),
        ("option optgroup", "option", "select datalist"),
        ("rb rt rp rtc", "rb rt rp rtc", "ruby"),
        ("td th", "td th", "tr"),
        ("tr", "tr", "tbody thead tfoot"),
        ("tbody thead tfoot", "tbody thead tfoot", ""),
    ]
    for name in names.split()
}
# start tags the parser merges into the one element it already has
_ONCE = _names("html head body")
_NOT_OPENING = _VOID | _ONCE


class _OpenElements:
    """The open elements as the scan sees them: their names, where each name was opened,
    and where the scope boundaries are. Each element is pushed and popped once, and each
    tag costs a few lookups, however deep the nesting."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._at: dict[str, list[int]] = {}
        self._scope = [-1]  # where boundaries of the default scope opened
        self._table_scope = [-1]

    def push(self, name: str) -> int:
        index = len(self.names)
        self._at.setdefault(name, []).append(index)
        if name in _SCOPE:
            self._scope.append(index)
            if name in _TABLE_SCOPE:
                self._table_scope.append(index)
        self.names.append(name)
        return index + 1

    def _latest(self, names: tuple[str, ...]) -> int:
        latest = -1
        at = self._at
        for name in names:
            opened = at.get(name)
            if opened and opened[-1] > latest:
                latest = opened[-1]
        return latest

    def _boundary(self, name: str) -> int:
        return (self._table_scope if name in _TABLE_PARTS else self._scope)[-1]

    def _close_from(self, index: int) -> None:
        names, at = self.names, self._at
        for popped in reversed(names[index:]):
            at[popped].pop()
            if popped in _SCOPE:
                self._scope.pop()
                if popped in _TABLE_SCOPE:
                    self._table_scope.pop()
        del names[index:]

    def end_tag(self, name: str) -> None:
        """Close the latest ``name`` and what opened after it, unless a scope boundary
        opened after it (the parser then ignores the end tag)."""
        opened = self._at.get(name)
        if opened and opened[-1] >= self._boundary(name):
            self._close_from(opened[-1])

    def implied_end(self, name: str) -> None:
        """A start tag's implied end of an open element of its group (a list item closes
        the list item before it, not one of an outer list)."""
        group, limits = _IMPLIED[name]
        latest = self._latest(group)
        if latest > self._boundary(name) and latest > self._latest(limits):
            self._close_from(latest)


def markup_size(
    content: str, max_depth: int = MAX_MARKUP_DEPTH, max_elements: int = MAX_ELEMENTS
) -> tuple[int, int, int]:
    """The deepest nesting the scan finds and the number of start tags, up to the first tag
    past either bound, and where that tag starts (-1 if none is)."""
    open_elements = _OpenElements()
    end_tag, implied_end = open_elements.end_tag, open_elements.implied_end
    push = open_elements.push
    depth = elements = 0
    for token in _TOKEN.finditer(content):
        raw, end, name = token.groups()
        if name is None:  # a comment, or an element of text such as a script
            elements += raw is not None
        elif end:
            end_tag(name.lower())
            continue
        else:
            elements += 1
            name = name.lower()
            if name not in _NOT_OPENING:
                if name in _IMPLIED:
                    implied_end(name)
                opened = push(name)
                if opened > depth:
                    depth = opened
        if depth > max_depth or elements > max_elements:
            return depth, elements, token.start()
    return depth, elements, -1


def check_markup(content: str, content_type: str = "") -> None:
    """Refuse HTML nested deeper than ``MAX_MARKUP_DEPTH`` or with more than
    ``MAX_ELEMENTS`` start tags (``BadRecordError`` ``markup_too_deep`` or
    ``too_many_elements``); a page with at most ``SCAN_FROM`` "<" is not scanned."""
    if content.count("<") <= SCAN_FROM or not looks_like_html(content, content_type):
        return
    depth, elements, at = markup_size(content)
    if depth > MAX_MARKUP_DEPTH:
        raise BadRecordError(
            "markup_too_deep",
            f"the markup nests elements over {MAX_MARKUP_DEPTH} deep (at character {at}): "
            f"over the limit of {MAX_MARKUP_DEPTH}",
        )
    if elements > MAX_ELEMENTS:
        raise BadRecordError(
            "too_many_elements",
            f"the markup has over {MAX_ELEMENTS} elements (at character {at})",
        )
