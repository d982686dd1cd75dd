"""What the union stage knows of a document: no sketch, no keys."""

from __future__ import annotations

from typing import NamedTuple

from neardup.core import PreparedDoc

__all__ = ["DocHead"]


class DocHead(NamedTuple):
    """A document's id, url, fetched_at and shingle count, and what following its url's
    version needs (``versions.py``): the record's status and raw content fingerprint. A
    named tuple, which the findings decoder builds without running Python code for each
    document."""

    doc_id: int
    url: str
    fetched_at: str
    shingle_count: int
    status: str = "fetched"
    fingerprint: int = 0

    @classmethod
    def of(cls, doc: PreparedDoc) -> DocHead:
        page = doc.page
        fetched = page.status == "fetched"
        return cls(
            doc.doc_id,
            page.url,
            page.fetched_at,
            doc.shingle_count,
            page.status,
            doc.fingerprints.raw if fetched else 0,
        )
