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
A departing document's exact copies stand in for it: the first of them left in the order
they came (``state.versions.CopyGroups``) becomes its heir, takes its other matches and is
the copy the others hang from, and the index postings and fingerprints that name the
departed document lead to the heir (``state.versions.Departed``), whose sketch it still
shares. A departed document that no copy stands for is removed; its postings are left in
the lists and lead nowhere. The sketches of a url's last ``Settings.keep_versions``
departed versions are kept apart (``state.versions.KeptVersions``), for history and lost
and found, at most ``Settings.keep_versions_days`` of event time.

With detection shards every stage decides the same versions from the same records (each
keeps every url's version and every group of copies), and does what a departure changes in
what it holds (``_Sides``): a shard the sketches, postings' heirs and copies, the union
stage the matches, clusters and events.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

from neardup.core import PreparedDoc, Settings
from neardup.state import NO_TIME, LiveVersion, StateView, fetched_at_to_micros

from .events import ClusterSplit, DocRef, Event, PageChanged, PageRemoved
from .heads import DocHead
from .regroup import Regrouper
from .result import BatchResult

T = TypeVar("T")

__all__ = [
    "VERSION_COUNTERS",
    "VersionCounts",
    "Versioned",
    "expire_urls",
    "follow_versions",
    "follow_versions_in_shard",
    "follow_versions_in_union",
    "standing",
    "standing_candidates",
    "standing_pairs",
    "with_versions",
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
    #: content, or a 304), records older than the url's version, deletions of unknown urls,
    #: deliveries of the very version there (same url, fetched_at and content)
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    stale: int = 0
    unknown_deletions: int = 0
    repeats: int = 0

    def counter_increments(self) -> dict[str, int]:
        return {
            "repeats": self.repeats,
            "fetched_unchanged": self.unchanged,
            "stale_versions": self.stale,
            "unknown_deletions": self.unknown_deletions,
        }


@dataclass(slots=True)
class Versioned:
    """A batch after its versions were decided: the records to detect (``chosen``: their
    places in the batch, in order), and the events and counts of the versions that
    departed (``changes``: (old version, its cluster, new document id), for
    ``PageChanged`` once the new one is joined)."""

    chosen: list[int]
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


def with_versions(
    view: StateView,
    result: BatchResult,
    versioned: Versioned,
    records: int,
    ref: Callable[[int], DocRef],
) -> BatchResult:
    """A batch's result (of its ``records``) with what its versions did: the departures'
    events first, then the detection's, then a ``PageChanged`` for each changed url; the
    counts, also added to the state's counters."""
    view.counters.add_many(versioned.counter_increments())
    return dataclasses.replace(
        result,
        events=(*versioned.events, *result.events, *versioned.changed_events(view, ref)),
        changed=versioned.counts.changed,
        removed=versioned.counts.removed,
        repeats=result.repeats + versioned.counts.repeats,
        version_records=records - len(versioned.chosen) - versioned.counts.repeats,
        splits=result.splits + versioned.splits,
    )


def _rank(micros: int, deleted: bool, fingerprint: int) -> tuple[int, int, int]:
    return micros, int(deleted), fingerprint


#: what a record does to its url's version: nothing (older, or said already), move the last
#: fetch time (the same content), put a tombstone (no version there to leave), or take the
#: version's place (which departs, if there is one)
Decision = Literal["stale", "touch", "tombstone", "replace"]


def _decided(head: DocHead, micros: int, now: LiveVersion | None) -> Decision:
    """What a record (``micros``: its fetched_at, untimed deletions placed already) does
    to the url's version ``now``."""
    deleted = head.status == "deleted"
    fingerprint = head.fingerprint
    if head.status == "unchanged":
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
    heads: Sequence[DocHead],
    settings: Settings,
    ref: Callable[[int], DocRef],
) -> Versioned:
    """Decide a batch's records (their heads) against the urls' versions, store the
    versions, and make the superseded and deleted ones depart: where one state keeps the
    whole detector (the embedded one). ``Versioned.chosen``: the records left to detect."""
    return _follow(view, heads, settings, ref, _Sides(shard=True, union=True))


def follow_versions_in_shard(
    view: StateView,
    docs: Sequence[PreparedDoc],
    settings: Settings,
    keeps: Callable[[int], bool],
) -> list[PreparedDoc]:
    """``follow_versions`` in a detection shard: the same decisions (every shard keeps every
    url's version), and what a departure changes in a shard (sketches, postings' heirs,
    copies); the documents left to detect."""
    heads = [DocHead.of(doc) for doc in docs]
    sides = _Sides(shard=True, union=False, keeps=keeps)
    versioned = _follow(view, heads, settings, lambda doc_id: DocRef(doc_id, "", ""), sides)
    return [docs[index] for index in versioned.chosen]


def follow_versions_in_union(
    view: StateView,
    heads: Sequence[DocHead],
    settings: Settings,
    ref: Callable[[int], DocRef],
) -> Versioned:
    """``follow_versions`` in the union stage of detection shards: the same decisions, and
    what a departure changes there (matches, clusters, events, counts)."""
    return _follow(view, heads, settings, ref, _Sides(shard=False, union=True))


@dataclass(frozen=True, slots=True)
class _Sides:
    """What a state keeps of the detector: a shard's part (sketches, index postings,
    copies; ``keeps``: the documents it owns, None for all), the union stage's (matches,
    clusters, events), or both (one state, the embedded detector)."""

    shard: bool
    union: bool
    keeps: Callable[[int], bool] | None = None


def _follow(
    view: StateView,
    heads: Sequence[DocHead],
    settings: Settings,
    ref: Callable[[int], DocRef],
    sides: _Sides,
) -> Versioned:
    urls = list(dict.fromkeys(head.url for head in heads))
    now: dict[str, LiveVersion | None] = dict(zip(urls, view.live.get_many(urls), strict=True))
    chosen: list[int | None] = []
    waiting: dict[str, int] = {}  # url -> its version among ``chosen``, not yet detected
    leaving: list[tuple[int, str]] = []  # stored versions that depart: (doc id, url)
    result = Versioned([])
    counts = result.counts
    for index, head in enumerate(heads):
        url, current = head.url, now[head.url]
        micros = fetched_at_to_micros(head.fetched_at)
        deleted = head.status == "deleted"
        if current is not None and head.doc_id == current.doc_id and not deleted:
            counts.repeats += 1  # delivered again (at least once): already known
            continue
        if deleted and micros == NO_TIME and current is not None and not current.deleted:
            micros = current.last_fetched  # made just after the version it removes
        decision = _decided(head, micros, current)
        if decision == "stale":
            counts.stale += 1
        elif decision == "touch":
            assert current is not None
            now[url] = replace(current, last_fetched=max(micros, current.last_fetched))
            counts.unchanged += 1
        else:
            if current is not None and not current.deleted:  # the version there departs
                if url in waiting:
                    chosen[waiting.pop(url)] = None  # of this batch: never detected
                else:
                    leaving.append((current.doc_id, url))
            counts.unknown_deletions += current is None and deleted
            now[url] = LiveVersion(micros, 0 if deleted else head.doc_id, head.fingerprint, micros)
            if not deleted:
                waiting[url] = len(chosen)
                chosen.append(index)
    for url in urls:
        if (version := now[url]) is not None:
            view.live.put(url, version)
    result.chosen = [index for index in chosen if index is not None]
    new_of = {heads[index].url: heads[index].doc_id for index in result.chosen}
    deleted_at = {head.url: head.fetched_at for head in heads if head.status == "deleted"}
    gauges: dict[str, int] = {}
    # event time: the batch's latest fetch (untimed records have none)
    at = max((fetched_at_to_micros(head.fetched_at) for head in heads), default=NO_TIME)
    _depart(view, settings, leaving, new_of, deleted_at, result, gauges, ref, sides, at)
    _revive(view, [heads[index].doc_id for index in result.chosen], sides)
    if sides.shard and sides.union and settings.keep_versions_days and at != NO_TIME:
        view.kept.expire_before(at - settings.keep_versions_days * _MICROS_A_DAY)
    if sides.union:  # the cluster gauges now, before the batch's joins move them on
        view.counters.add_many(gauges)
    return result


_MICROS_A_DAY = 86_400 * 1_000_000


def _revive(view: StateView, doc_ids: list[int], sides: _Sides) -> None:
    """Versions fetched again after they departed (in arrival order, without times) are
    detected anew: they are kept no more, and lead to themselves again unless a copy stands
    for them (then a copy of it they are)."""
    if sides.union and sides.shard:  # where departed versions are kept
        for doc_id in view.kept.which(doc_ids):
            view.kept.remove(doc_id)
    if not sides.shard:
        return
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
    sides = _Sides(shard=True, union=True)
    for url, version in expired:  # each departs when it was last fetched
        leaving = [(version.doc_id, url)]
        _depart(view, settings, leaving, {}, {}, result, gauges, ref, sides, version.last_fetched)
    return result


def _depart(
    view: StateView,
    settings: Settings,
    leaving: list[tuple[int, str]],
    new_of: dict[str, int],
    deleted_at: dict[str, str],
    result: Versioned,
    gauges: dict[str, int],
    ref: Callable[[int], DocRef],
    sides: _Sides,
    now: int,
) -> None:
    """The stored versions ``leaving`` depart at ``now`` (event time), each a change (its
    url has a version in the batch's documents to detect, ``new_of``) or a removal."""
    departing = _Departure(view, settings, result.events, gauges, ref, sides, now)
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
            made[doc_id] = now if now and _present(view, now) else 0
    return made


def _present(view: StateView, doc_id: int) -> bool:
    """Whether a document is live: stored, or in a detection shard that does not keep it,
    seen (a departure removes both, in every shard)."""
    return view.documents.has(doc_id) or view.seen.has(doc_id)


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
    """Makes stored versions leave what a state keeps of them (``_Sides``): the clusters and
    the matches, the copies, the sketches and the documents."""

    def __init__(
        self,
        view: StateView,
        settings: Settings,
        events: list[Event],
        gauges: dict[str, int],
        ref: Callable[[int], DocRef],
        sides: _Sides,
        now: int,
    ) -> None:
        self.view = view
        self.now = now
        self.ref = ref
        self.sides = sides
        # departed versions are kept where one state holds their sketches and matches
        self.keep = settings.keep_versions if sides.shard and sides.union else 0
        self.regrouper = Regrouper(
            view, events, gauges, ref, cut=settings.split_clusters, keep_roots=True
        )

    def depart(self, doc_id: int, url: str) -> tuple[DocRef, int]:
        """Make one stored version of ``url`` leave; its reference and the cluster it was in
        (in a shard, which keeps no clusters: an empty reference and 0). Its sketch is kept
        apart among the url's ``keep`` latest departed versions (for history and lost and
        found), or goes with its record."""
        view, sides = self.view, self.sides
        # the first of its copies left stands in: the others' copy, and the matches' end
        heir = view.copies.heir(doc_id)
        old, cluster, scores, kept = DocRef(doc_id, "", ""), 0, dict[int, float](), None
        if sides.union:
            old, cluster = self.ref(doc_id), view.clusters.find(doc_id)
            scores = view.edges.neighbours(doc_id)
            view.edges.remove_all(doc_id)
            for other, score in scores.items() if heir else ():
                if other != heir:
                    view.edges.add(heir, other, max(score, view.edges.score(heir, other)))
            kept = self._kept(doc_id) if self.keep else None
        if sides.shard:
            if heir:
                self._hand_down(doc_id, heir)
                view.departed.mark(doc_id, heir)
                view.departed.unmark(heir)  # live: its own postings lead to it again
            else:  # its postings and fingerprints lead nowhere: swept out
                view.sweep.remove(doc_id)
            if sides.keeps is not None and not sides.keeps(doc_id):
                view.seen.remove(doc_id)
        view.copies.leave(doc_id)
        if sides.union:
            self.regrouper.regroup({doc_id, *scores, *([heir] if heir else [])}, gone=doc_id)
        view.documents.remove(doc_id)  # after the regroup, which reads members' fetch times
        if kept is not None:
            # where it was: its copy, or its closest match (its cluster's root may be itself)
            nearest = max(scores, key=lambda other: (scores[other], -other), default=0)
            view.kept.put(doc_id, nearest, kept, self.now)
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
        """A departing document's sketch, where this state keeps it, goes to its heir, and
        every copy here that shared it shares the heir's. In a detection shard the heir may
        be another shard's document: the sketch is kept here under its id all the same
        (without its url), next to the postings that lead to it."""
        documents = self.view.documents
        record = documents.get(doc_id)
        if record is None or record.duplicate_of:
            return  # a copy itself: its copies share its original's sketch, which stays
        mine = documents.get(heir)
        url, fetched_at = ("", "") if mine is None else (mine.url, mine.fetched_at)
        documents.put(heir, replace(record, url=url, fetched_at=fetched_at))
        for other in self.view.copies.others(doc_id):
            copy = documents.get(other) if other != heir else None
            if copy is not None and copy.duplicate_of == doc_id:
                documents.put(other, replace(copy, duplicate_of=heir))
