"""Writing a benchmark's report: printed as JSON, and kept in a file when asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["emit"]


def emit(report: dict[str, Any], out: Path | None, show: bool = True) -> None:
    """Print ``report`` (unless the caller prints its own summary) and write it to ``out``."""
    text = json.dumps(report, indent=2) + "\n"
    if show:
        print(text, end="")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
