"""Codes inside text: model numbers, SKUs, part numbers ("XK-2041B", "DSC W80", "elplp12").

A product title says what the product is in a few common words ("digital camera") and which
one it is in a code; two titles that share a rare code name one product whatever their other
words. A code is a run of letters and digits, with hyphens, slashes or dots inside, that
holds both a letter and a digit and is at least ``MIN_CODE`` characters long once the
separators are dropped, or a run of at least ``MIN_DIGITS`` digits (a part number, a UPC;
not a decimal number: a price).
Ordinals ("21st") and quantities with a short unit ("500gb", "1080p", "24in") are not codes:
they are shared by unrelated products. A code split by a space ("DSC W80", "KX TG5431": up to
three letters, then letters and digits) is also read joined, so either spelling meets the other.
"""

from __future__ import annotations

import re

__all__ = ["MIN_CODE", "MIN_DIGITS", "codes_in"]

#: letters and digits a code holds at least (separators dropped)
MIN_CODE = 4
#: digits a code of digits alone holds at least (a model number "36226"; a year has four)
MIN_DIGITS = 5

_RUN = re.compile(r"[^\W_]+(?:[-/.][^\W_]+)*")
_SEPARATORS = re.compile(r"[-/.]")
_ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th)$")
_QUANTITY = re.compile(r"^\d+(?:\.\d+)?[a-z]{1,3}$")
_DECIMAL = re.compile(r"^\d+(?:[.,]\d+)+$")
_LETTERS = re.compile(r"^[a-z]{1,3}$")


def _is_code(run: str) -> bool:
    has_digit = any(char.isdigit() for char in run)
    if not has_digit:
        return False
    if run.isdigit():
        return len(run) >= MIN_DIGITS
    return len(run) >= MIN_CODE and not _ORDINAL.match(run) and not _QUANTITY.match(run)


def codes_in(folded: str) -> list[str]:
    """The distinct codes of a folded text (case folded, accents removed), in order."""
    runs = [match.group() for match in _RUN.finditer(folded)]
    # a price or a size ("101.82", "2.5") is no code, whatever its digits
    bare = ["" if _DECIMAL.match(run) else _SEPARATORS.sub("", run) for run in runs]
    found: dict[str, None] = {}
    for at, run in enumerate(bare):
        if _is_code(run):
            found[run] = None
        # a code split by a space: letters then a run with digits ("dsc w80")
        after = bare[at + 1] if at + 1 < len(bare) else ""
        if (
            _LETTERS.match(run)
            and not after.isalpha()
            and not after.isdigit()
            and not _ORDINAL.match(after)
            and not _QUANTITY.match(after)
        ):
            joined = run + after
            if _is_code(joined):
                found[joined] = None
    return list(found)
