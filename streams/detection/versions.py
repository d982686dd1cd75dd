"""The latest version of each url (``Settings.versions = "latest"``): which of a batch's
records supersede what the state holds, and the departure of the versions they replace.

Before a batch is detected, its records are decided in order against each url's version
(``state.versions.LiveVersions``): a fetch later than the version's last fetch (at the same
instant, the larger content fingerprint; a deletion wins a tie) supersedes it; the same
content again only moves the last fetch time, as an ``unchanged`` record (a 304) does; an
older fetch changes nothing, nor brings a deleted url back. A record without ``fetched_at``
never supersedes one that has it; among untimed records, the later arrival wins; a deletion
without ``fetched_at`` removes whatever version is there (as if made just after its last
fetch). So the url's version after any set of timed records is the same in any arrival
order; untimed ones follow their arrival.

A superseded or deleted version departs before the batch's documents are detected: its
matches go (the edges ``union.py`` keeps), its cluster is cut into what the remaining
matches hold together (``regroup.py``), and a new version is then detected as any new page.
A departing document's exact copies (the edges of score ``IDENTICAL``) stand in for it: the
oldest becomes its heir, takes its other matches and is the copy the others hang from, and
the index postings and fingerprints that name the departed document lead to the heir
(``state.versions.Departed``), whose sketch it still shares. A departed document that no
copy stands for is removed; its postings are left in the lists and lead nowhere. The
sketches of a url's last ``Settings.keep_versions`` departed versions are kept apart
(``state.versions.KeptVersions``), for history and lost and found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

from neardup.core import Page, PreparedDoc, Settings
from neardup.state import NO_TIME, LiveVersion, StateView, fetched_at_to_micros

from .events import ClusterSplit, DocRef, Event, PageChanged, PageRemoved
from .regroup import IDENTICAL, Regrouper

T = TypeVar("T")

__all__ = [
    "VERSION_COUNTERS",
    "VersionCounts",
    "Versioned",
    "expire_urls",
    "follow_versions",
    "standing",
    "standing_candidates",
    "standing_pairs",
]


#: the state's counters of what re-fetches did (``neardup stats``'s ``versions``)
VERSION_COUNTERS = (
    "pages_changed",
    "pages_removed",
    "fetched_unchanged",
    "stale_versions",
    "unknown_deletions",
    "versions_ignored",
)


@dataclass(slots=True)
class VersionCounts:
    """What a batch's records did to the urls' versions (``neardup stats`` keys)."""

    #: urls whose content changed, urls deleted, fetches that changed nothing (the same
    #: content, or a 304), records older than the url's version, deletions of unknown urls
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    stale: int = 0
    unknown_deletions: int = 0

    def counter_increments(self) -> dict[str, int]:
        return {
            "fetched_unchanged": self.unchanged,
            "stale_versions": self.stale,
            "unknown_deletions": self.unknown_deletions,
        }


@dataclass(slots=True)
class Versioned:
    """A batch after its versions were decided: the documents to detect, in order, and the
    events and counts of the versions that departed (``changes``: (old version, its
    cluster, new document id), for ``PageChanged`` once the new one is joined)."""

    docs: list[PreparedDoc]
    events: list[Event] = field(default_factory=list)
    counts: VersionCounts = field(default_factory=VersionCounts)
    changes: list[tuple[DocRef, int, int]] = field(default_factory=list)

    @property
    def splits(self) -> int:
        return sum(isinstance(event, ClusterSplit) for event in self.events)

    def counter_increments(self) -> dict[str, int]:
        """What the departures add to the state's counters (the new versions' documents
        are counted as any new document's): live urls go down by those that left."""
        counts = self.counts
        return {
            **counts.counter_increments(),
            "pages_changed": counts.changed,
            "pages_removed": counts.removed,
            "documents": -counts.changed - counts.removed,
            "cluster_splits": self.splits,
        }

    def changed_events(self, view: StateView, ref: Callable[[int], DocRef]) -> list[Event]:
        """A ``PageChanged`` for each changed url, naming its new version's cluster."""
        return [
            PageChanged(old, ref(new), old_cluster, view.clusters.find(new))
            for old, old_cluster, new in self.changes
        ]


def _rank(micros: int, deleted: bool, fingerprint: int) -> tuple[int, int, int]:
    return micros, int(deleted), fingerprint


#: what a record does to its url's version: nothing (older, or said already), move the last
#: fetch time (the same content), put a tombstone (no version there to leave), or take the
#: version's place (which departs, if there is one)
Decision = Literal["stale", "touch", "tombstone", "replace"]


def _decided(page: Page, micros: int, fingerprint: int, now: LiveVersion | None) -> Decision:
    """What a record (``micros``: its fetched_at, untimed deletions placed already) does
    to the url's version ``now``."""
    deleted = page.status == "deleted"
    if page.status == "unchanged":
        live = now is not None and not now.deleted
        return "touch" if live and now is not None and micros > now.last_fetched else "stale"
    if now is not None:
        if micros == NO_TIME and not deleted:  # untimed: arrival order among the untimed
            later = now.last_fetched == NO_TIME
        else:
            later = _rank(micros, deleted, fingerprint) > _rank(
                now.last_fetched, now.deleted, now.fingerprint
            )
        if not later:
            return "stale"
        if not deleted and not now.deleted and fingerprint == now.fingerprint:
            return "touch"
    if deleted and (now is None or now.deleted):
        return "tombstone"
    return "replace"


def follow_versions(
    view: StateView,
    docs: Sequence[PreparedDoc],
    settings: Settings,
    ref: Callable[[int], DocRef],
    gauges: dict[str, int],
) -> Versioned:
    """Decide a batch's records against the urls' versions, store the versions, and make
    the superseded and deleted ones depart; the documents left to detect."""
    urls = list(dict.fromkeys(doc.page.url for doc in docs))
    now: dict[str, LiveVersion | None] = dict(zip(urls, view.live.get_many(urls), strict=True))
    chosen: list[PreparedDoc | None] = []
    waiting: dict[str, int] = {}  # url -> its version among ``chosen``, not yet detected
    leaving: list[tuple[int, str]] = []  # stored versions that depart: (doc id, url)
    result = Versioned([])
    counts = result.counts
    for doc in docs:
        page, current = doc.page, now[doc.page.url]
        micros = fetched_at_to_micros(page.fetched_at)
        deleted = page.status == "deleted"
        fingerprint = 0 if page.status != "fetched" else doc.fingerprints.raw
        if deleted and micros == NO_TIME and current is not None and not current.deleted:
            micros = current.last_fetched  # made just after the version it removes
        decision = _decided(page, micros, fingerprint, current)
        if decision == "stale":
            counts.stale += 1
        elif decision == "touch":
            assert current is not None
            now[page.url] = replace(current, last_fetched=max(micros, current.last_fetched))
            counts.unchanged += 1
        else:
            if current is not None and not current.deleted:  # the version there departs
                if page.url in waiting:
                    chosen[waiting.pop(page.url)] = None  # of this batch: never detected
                else:
                    leaving.append((current.doc_id, page.url))
            counts.unknown_deletions += current is None and deleted
            now[page.url] = LiveVersion(micros, 0 if deleted else doc.doc_id, fingerprint, micros)
            if not deleted:
                waiting[page.url] = len(chosen)
                chosen.append(doc)
    for url in urls:
        if (version := now[url]) is not None:
            view.live.put(url, version)
    result.docs = [doc for doc in chosen if doc is not None]
    _depart(view, settings, docs, leaving, result, gauges, ref)
    _revive(view, [doc.doc_id for doc in result.docs])
    return result


def _revive(view: StateView, doc_ids: list[int]) -> None:
    """Versions fetched again after they departed (in arrival order, without times) are
    detected anew: they are kept no more, and lead to themselves again unless a copy stands
    for them (then a copy of it they are)."""
    for doc_id in view.kept.which(doc_ids):
        view.kept.remove(doc_id)
    departed = view.departed.heirs(doc_ids)
    if not departed:
        return
    now = standing(view, departed)
    for doc_id in departed:
        if not now[doc_id]:
            view.departed.unmark(doc_id)


def expire_urls(
    view: StateView,
    settings: Settings,
    expired: Sequence[tuple[str, LiveVersion]],
    ref: Callable[[int], DocRef],
    gauges: dict[str, int],
) -> Versioned:
    """Remove the urls' live versions given (fetched last before a retention bound), as
    deletions made just after their last fetch: a later fetch brings a url back."""
    result = Versioned([])
    for url, version in expired:
        view.live.put(url, LiveVersion(version.last_fetched, 0, 0, version.last_fetched))
    _depart(view, settings, [], [(v.doc_id, url) for url, v in expired], result, gauges, ref)
    return result


def _depart(
    view: StateView,
    settings: Settings,
    docs: Sequence[PreparedDoc],
    leaving: list[tuple[int, str]],
    result: Versioned,
    gauges: dict[str, int],
    ref: Callable[[int], DocRef],
) -> None:
    """The stored versions ``leaving`` depart, each a change (its url has a version in the
    batch's documents to detect) or a removal."""
    new_of = {doc.page.url: doc.doc_id for doc in result.docs}
    deleted_at = {doc.page.url: doc.page.fetched_at for doc in docs if doc.page.status == "deleted"}
    departing = _Departure(view, settings, result.events, gauges, ref)
    for doc_id, url in leaving:
        old, cluster = departing.depart(doc_id, url)
        if url in new_of:
            result.changes.append((old, cluster, new_of[url]))
            result.counts.changed += 1
        else:  # deleted, maybe after a new version of this batch that never got detected
            result.events.append(PageRemoved(old, cluster, deleted_at.get(url, "")))
            result.counts.removed += 1


def standing(view: StateView, doc_ids: Iterable[int], verified: bool = False) -> dict[int, int]:
    """Each of ``doc_ids`` -> the live document standing for it: itself, the heir of a
    departed one (``state.versions.Departed``), or 0 when none does (removed).
    ``verified``: the documents are candidates just met, so each is stored or of the batch
    unless it departed (a removed one has no sketch to verify against)."""
    wanted = set(doc_ids)
    heirs = view.departed.live(wanted)
    made = {}
    for doc_id in wanted:
        now = heirs.get(doc_id)
        if now is None and verified:
            made[doc_id] = doc_id
        else:
            now = doc_id if now is None else now
            made[doc_id] = now if now and view.documents.has(now) else 0
    return made


def standing_candidates(view: StateView, found: Sequence[set[int]]) -> list[set[int]]:
    """Each document's candidates with the departed ones replaced by their heirs (which
    hold their sketches now), the removed ones left out."""
    now = standing(view, set().union(*found), verified=True)
    return [{now[doc_id] for doc_id in candidates} - {0} for candidates in found]


def standing_pairs(
    view: StateView, found: Sequence[Sequence[tuple[int, T]]]
) -> list[list[tuple[int, T]]]:
    """``standing_candidates`` for verified pairs (earlier document, estimate): a document
    met twice (itself and a departed one it stands for) once, with its first estimate (a
    copy's sketch is the departed one's: the estimates are equal)."""
    now = standing(view, {doc_id for pairs in found for doc_id, _ in pairs}, verified=True)
    made = []
    for pairs in found:
        kept: dict[int, T] = {}
        for doc_id, estimate in pairs:
            if (live := now[doc_id]) and live not in kept:
                kept[live] = estimate
        made.append(list(kept.items()))
    return made


class _Departure:
    """Makes stored versions leave the clusters, the edges and the documents."""

    def __init__(
        self,
        view: StateView,
        settings: Settings,
        events: list[Event],
        gauges: dict[str, int],
        ref: Callable[[int], DocRef],
    ) -> None:
        self.view = view
        self.ref = ref
        self.keep = settings.keep_versions
        self.regrouper = Regrouper(
            view, events, gauges, ref, cut=settings.split_clusters, keep_roots=True
        )

    def depart(self, doc_id: int, url: str) -> tuple[DocRef, int]:
        """Make one stored version of ``url`` leave; its reference and the cluster it was in.
        Its sketch is kept apart among the url's ``keep`` latest departed versions (for
        history and lost and found), or goes with its record."""
        view = self.view
        old = self.ref(doc_id)
        cluster = view.clusters.find(doc_id)
        scores = view.edges.neighbours(doc_id)
        view.edges.remove_all(doc_id)
        copies = sorted(
            (other for other, score in scores.items() if score == IDENTICAL),
            key=lambda other: (view.documents.fetched_micros(other), other),
        )
        kept = self._kept(doc_id) if self.keep else None
        if copies:  # the oldest copy stands in: the others' copy, and the matches' end
            heir = copies[0]
            for other, score in scores.items():
                if other != heir:
                    view.edges.add(heir, other, max(score, view.edges.score(heir, other)))
            self._hand_down(doc_id, heir)
            view.departed.mark(doc_id, heir)
            view.departed.unmark(heir)  # live: its own postings lead to it again
        else:
            view.departed.unmark(doc_id)
        self.regrouper.regroup({doc_id, *scores}, gone=doc_id)
        view.documents.remove(doc_id)  # after the regroup, which reads members' fetch times
        if kept is not None:
            # where it was: its copy, or its closest match (its cluster's root may be itself)
            nearest = max(scores, key=lambda other: (scores[other], -other), default=0)
            view.kept.put(doc_id, nearest, kept)
            self._evict(url)
        return old, cluster

    def _kept(self, doc_id: int) -> bytes | None:
        """The stored record holding a departing version's sketch (a copy's is its
        original's, which may go later), as stored: copied, not decoded."""
        owner = self.view.documents.owner_id(doc_id)
        return None if owner is None else self.view.documents.raw(owner)

    def _evict(self, url: str) -> None:
        """Only the url's ``keep`` latest departed versions are kept."""
        kept = self.view.kept.which([doc_id for _, doc_id in self.view.urls.versions(url)])
        for doc_id in kept[: max(0, len(kept) - self.keep)]:  # oldest first
            self.view.kept.remove(doc_id)

    def _hand_down(self, doc_id: int, heir: int) -> None:
        """A departing document's sketch, if it keeps one, goes to its heir, and every copy
        that shared it (all in the heir's group of copies) shares the heir's."""
        documents, edges = self.view.documents, self.view.edges
        record = documents.get(doc_id)
        if record is None or record.duplicate_of:
            return  # a copy itself: its copies share its original's sketch, which stays
        mine = documents.get(heir)
        assert mine is not None
        documents.put(heir, replace(record, url=mine.url, fetched_at=mine.fetched_at))
        seen, waiting = {heir}, [heir]
        while waiting:
            for other, score in edges.neighbours(waiting.pop()).items():
                if score == IDENTICAL and other not in seen:
                    seen.add(other)
                    waiting.append(other)
                    copy = documents.get(other)
                    if copy is not None and copy.duplicate_of == doc_id:
                        documents.put(other, replace(copy, duplicate_of=heir))
