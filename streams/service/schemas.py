"""The API's bodies and answers as msgspec Structs: a body is validated as it is decoded (a
wrong type, an unknown field, a value out of range is a 400 naming it), an answer is checked
against its type as it is encoded, and the OpenAPI description is generated from them.

The answers are those of the CLI (``running.queries``, ``running.reports``), which build
them as dicts: ``msgspec.convert`` makes each the Struct that describes it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

__all__ = [
    "MAX_FOLD_ITEMS",
    "MAX_LIMIT",
    "Cluster",
    "ClusterOf",
    "ClusterSummary",
    "Dashboard",
    "Doc",
    "ErrorAnswer",
    "FoldAnswer",
    "FoldQuery",
    "Growing",
    "History",
    "InlinePage",
    "ItemQuery",
    "Largest",
    "LostAndFound",
    "Merged",
    "MergedList",
    "Ranked",
    "Similar",
    "SimilarItem",
    "SimilarItems",
    "SimilarQuery",
    "SimilarToStored",
    "Stats",
]

#: ``limit`` of a listing, at most
MAX_LIMIT = 1000
#: items of a fold request, at most (a result page is ten; the textbook folds fifty)
MAX_FOLD_ITEMS = 200

Id = Annotated[str, Meta(pattern="^[0-9a-f]{16}$", description="16 hex digits")]
Fraction = Annotated[float, Meta(ge=0, le=1)]
Count = Annotated[int, Meta(ge=0)]
#: a limit in a body: JSON Schema takes 10.0 for an integer, and so does the body
BodyLimit = Annotated[
    float, Meta(ge=1, le=MAX_LIMIT, multiple_of=1, description="at most this many items")
]
Method = Literal["exact", "canonical", "shingle", "near", "contained"]
Mode = Annotated[
    Literal["pages", "items"],
    Meta(description="what the state holds: pages, or items of a schema (item mode)"),
]
#: item mode: what names a cluster or an item to a reader
Label = Annotated[
    str,
    Meta(
        description="item mode: the merged record's name (or the schema's first text field), "
        "from the cluster's first 32 members; an item's own, for a member"
    ),
]
T = TypeVar("T", bound=Struct)


class _Body(Struct, forbid_unknown_fields=True, kw_only=True):
    """A request body: unknown fields are refused."""


class SimilarQuery(_Body):
    content: Annotated[str, Meta(description="the document (HTML or text)")]
    content_type: str = "text/html"
    url: Annotated[str, Meta(description="a label for the document; it is not stored")] = "query:"
    limit: BodyLimit = 10
    min_resemblance: Fraction = 0.0
    containment: (
        Annotated[
            float,
            Meta(
                gt=0,
                le=1,
                description="only the documents containing at least this much of the posted "
                "one (its sources, for an excerpt), most containing first",
            ),
        ]
        | None
    ) = None
    excerpts: Annotated[
        bool,
        Meta(
            description="also the documents at least half inside the posted one (its excerpts), "
            "or with containment, at least that much inside it"
        ),
    ] = False


class InlinePage(_Body):
    url: str
    content: str
    content_type: str = "text/html"


class FoldQuery(_Body):
    items: Annotated[
        list[Annotated[str, Meta(min_length=1)] | InlinePage],
        Meta(
            max_length=MAX_FOLD_ITEMS,
            description="a ranked result list: stored URLs, or pages posted inline",
        ),
    ]
    threshold: Fraction | None = None


class ItemQuery(_Body):
    record: Annotated[
        dict[str, Any], Meta(description="an item as the schema's records are (not stored)")
    ]
    limit: BodyLimit = 10


class Doc(Struct, omit_defaults=True):
    id: Id
    url: str | None
    fetched_at: str | None
    label: Label | UnsetType = UNSET


class Ranked(Struct, kw_only=True):
    """A stored document with its estimated resemblance and containment to another."""

    url: str
    fetched_at: str | None
    id: Id
    resemblance: Fraction
    containment: Fraction
    contains: Fraction


class Match(Ranked, kw_only=True):
    exact: bool
    method: Method
    cluster: Id
    #: SimHash mode: the Hamming distance of the two pages' SimHashes
    distance: Annotated[int, Meta(ge=0, le=64)] | UnsetType = UNSET


class Similar(Struct):
    matches: list[Match]


class ClusterOf(Struct, kw_only=True):
    url: str
    known: bool
    doc: Doc
    cluster: Id
    size: Count


class SimilarToStored(ClusterOf, kw_only=True):
    matches: list[Ranked]


class Cluster(Struct, kw_only=True, omit_defaults=True):
    cluster: Id
    known: bool
    size: Count
    members: list[Doc]
    next: Id | None
    #: the id asked for, when it was retired by a merge into ``cluster``
    retired: Id | UnsetType = UNSET
    label: Label | UnsetType = UNSET


class ClusterSummary(Struct, omit_defaults=True):
    cluster: Id
    size: Count
    first: Doc
    label: Label | UnsetType = UNSET


class Largest(Struct):
    clusters: list[ClusterSummary]


class GrowingCluster(Struct, omit_defaults=True):
    cluster: Id
    joined: Count
    size: Count
    first: Doc
    label: Label | UnsetType = UNSET


class Growing(Struct):
    window_seconds: float
    clusters: list[GrowingCluster]


class Version(Struct):
    id: Id
    fetched_at: str | None


class LostAndFound(Struct, kw_only=True):
    url: str
    known: bool
    versions: list[Version]
    cluster: Id
    found: list[Ranked]


class HistoryVersion(Struct, kw_only=True):
    id: Id
    fetched_at: str | None
    cluster: Id
    resemblance_to_previous: Fraction | None
    containment_in_previous: Fraction | None
    previous_contained: Fraction | None


class History(Struct):
    url: str
    known: bool
    versions: list[HistoryVersion]


class FoldItem(Struct, kw_only=True, omit_defaults=True):
    rank: Count
    url: str
    known: bool
    inline: bool | UnsetType = UNSET
    id: Id | UnsetType = UNSET
    cluster: Id | UnsetType = UNSET
    resemblance: Fraction | UnsetType | None = UNSET


class FoldGroup(Struct):
    head: FoldItem
    folded: list[FoldItem]


class FoldAnswer(Struct):
    groups: list[FoldGroup]


class LargestByFirstUrl(Struct):
    cluster: Id
    size: Count
    first_url: str | None


class StopKeyCount(Struct):
    index: str
    key: str
    documents: Count


class VersionCounts(Struct, kw_only=True):
    """What re-fetches did (``versions = latest``; docs/versions.md)."""

    pages_changed: Count
    pages_removed: Count
    fetched_unchanged: Count
    stale_versions: Count
    unknown_deletions: Count
    #: deletion and unchanged records a state keeping every fetch (``all``) did not act on
    versions_ignored: Count


class Stats(Struct, kw_only=True):
    documents: Annotated[Count, Meta(description="documents; with versions = latest, live urls")]
    repeats_ignored: Count
    duplicates: Count
    duplicates_by_method: dict[str, Count]
    cluster_merges: Count
    candidates: Count
    pairs_estimated: Count
    clusters: Count
    documents_in_clusters: Count
    largest_clusters: list[LargestByFirstUrl]
    index_keys: dict[str, Count]
    stop_keys: Count
    top_stop_keys: list[StopKeyCount]
    disk_bytes: Count
    disk_bytes_per_document: float | None
    versions: VersionCounts
    settings: Annotated[str, Meta(description="the state's settings, as JSON")]
    mode: Mode


class Sample(Struct, kw_only=True):
    """The state's counters at one moment (``time``: seconds since the epoch)."""

    time: float
    documents: Count
    clusters: Count
    documents_in_clusters: Count
    merges: Count
    splits: Count
    duplicates: dict[str, Count]
    contained: Count
    largest_cluster: Count
    dead_letters: Count
    #: versions = latest; 0 otherwise, and in a sample stored before they were sampled
    changed: Annotated[Count, Meta(description="urls whose content changed (so far)")] = 0
    removed: Annotated[Count, Meta(description="urls deleted (so far)")] = 0


class SizeClass(Struct):
    size: Annotated[str, Meta(description='a power-of-two class of sizes, e.g. "4-7"')]
    clusters: Count


class Dashboard(Struct, kw_only=True, omit_defaults=True):
    now: float
    mode: Mode
    samples: list[Sample]
    size_distribution: list[SizeClass]
    largest: list[ClusterSummary]
    growing: list[GrowingCluster]
    window_seconds: float
    #: item mode: the field the clusters' labels are taken from
    label_field: (
        Annotated[str, Meta(description="item mode: the field the labels are read from")]
        | UnsetType
    ) = UNSET


class SimilarItem(Struct, kw_only=True):
    id: str
    url: str | None
    cluster: Id
    score: Fraction
    matched: Annotated[bool, Meta(description="the score reaches the schema's threshold")]
    fields: dict[str, Fraction]


class SimilarItems(Struct):
    matches: list[SimilarItem]


class Merged(Struct, kw_only=True):
    """A cluster of items as one record, made from its members as they are now."""

    cluster: Id
    size: Count
    members: list[str]
    record: dict[str, Any]
    urls: list[str]


class MergedList(Struct):
    clusters: list[Merged]


class ErrorDetail(Struct):
    status: int
    code: str
    message: str


class ErrorAnswer(Struct):
    error: ErrorDetail


#: every answer type with its name in the description
ANSWERS: tuple[type[Struct], ...] = (
    Similar,
    SimilarToStored,
    ClusterOf,
    Cluster,
    Largest,
    Growing,
    LostAndFound,
    History,
    FoldAnswer,
    Stats,
    SimilarItems,
    Merged,
    MergedList,
    Dashboard,
    ErrorAnswer,
)


def answer_of(value: object, kind: type[T]) -> T:
    """A CLI answer (a dict) as the Struct that describes it."""
    return msgspec.convert(value, kind)
