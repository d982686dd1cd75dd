"""The JSON query API (version 1): each endpoint a function of its parsed inputs, answering
with a Struct of ``schemas.py``.

The answers are those of the CLI (``running.queries``, ``running.reports``), computed from
the documents a request names: no endpoint reads every cluster or every document. In item
mode, the clusters and members listed carry a label (``reports.ItemLabels``: a cluster's is
made from its first 32 members' records). The dashboard's history and the growing clusters
come from the samples the writer keeps in the state (``state/timeline.py``), so any reader
of the state, started at any time, draws them.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import msgspec
from neardup.core import BadRecordError, Page
from neardup.core.items.schema import ItemSchema
from neardup.core.markup import check_markup
from neardup.state import Sample as StoredSample
from neardup.state import State
from neardup.state.items import stored_schema

from ..detection import format_id
from ..detection.history import SAMPLED_COUNTERS
from ..running import queries, reports
from . import schemas
from .errors import BadRequestError, NotFoundError
from .metrics import size_class_label
from .sources import StateSource

__all__ = ["API_PREFIX", "Api"]

API_PREFIX = "/api/v1"

#: what the duplicates of a sample are counted by
_DUPLICATES = [name for name in SAMPLED_COUNTERS if name.startswith("duplicates:")]


class Api:
    """The endpoints over one state source; each reads the state for one answer."""

    def __init__(self, source: StateSource, window: float = 60.0) -> None:
        self.source = source
        #: seconds back that the growing clusters are counted over
        self.window = window

    def stats(self) -> schemas.Stats:
        with self.source.reading() as state:
            answer = reports.statistics(state, flush=False)
        return schemas.answer_of(answer, schemas.Stats)

    def similar_to_url(self, url: str, limit: int) -> schemas.SimilarToStored:
        with self.source.reading() as state:
            answer = _known(queries.similar_to_stored(state, url, limit), f"url {url!r}")
        return schemas.answer_of(answer, schemas.SimilarToStored)

    def similar_to_content(self, query: schemas.SimilarQuery) -> schemas.Similar:
        page = _page(query.url, query.content, query.content_type)
        with self.source.reading() as state:
            if query.containment is not None and not state.settings.containment_sample:
                raise BadRequestError(
                    "this state keeps no containment index (containment_sample 0): "
                    "leave out containment"
                )
            matches = reports.similar_to_content(
                state,
                page,
                int(query.limit),
                query.min_resemblance,
                query.containment,
                query.excerpts,
            )
        return schemas.answer_of({"matches": matches}, schemas.Similar)

    def cluster_of_url(self, url: str) -> schemas.ClusterOf:
        with self.source.reading() as state:
            answer = _known(queries.cluster_of_url(state, url), f"url {url!r}")
        return schemas.answer_of(answer, schemas.ClusterOf)

    def cluster(self, cluster: str, after: str | None, limit: int) -> schemas.Cluster:
        cluster_id = _id(cluster, "cluster id")
        after_id = None if after is None else _id(after, "after")
        with self.source.reading() as state:
            answer = queries.cluster_by_id(state, cluster_id, after_id, limit)
            labels = _labels(state)
            if labels is not None and answer["known"]:
                _label(answer, labels.cluster(queries.parse_id(answer["cluster"])))
                members = answer["members"]
                found = labels.items([queries.parse_id(member["id"]) for member in members])
                for member, label in zip(members, found, strict=True):
                    _label(member, label)
        known = _known(answer, f"cluster {cluster}")
        return schemas.answer_of(known, schemas.Cluster)

    def largest(self, limit: int) -> schemas.Largest:
        with self.source.reading() as state:
            largest = queries.largest_clusters(state, limit)
            answer = {"clusters": _labelled(_labels(state), largest)}
        return schemas.answer_of(answer, schemas.Largest)

    def growing(self, limit: int) -> schemas.Growing:
        with self.source.reading() as state:
            clusters = self._growing(state, limit, _labels(state))
        return schemas.Growing(self.window, clusters)

    def lost_and_found(self, url: str, limit: int) -> schemas.LostAndFound:
        with self.source.reading() as state:
            answer = _known(queries.lost_and_found(state, url, limit), f"url {url!r}")
        return schemas.answer_of(answer, schemas.LostAndFound)

    def history(self, url: str) -> schemas.History:
        with self.source.reading() as state:
            answer = _known(queries.history(state, url), f"url {url!r}")
        return schemas.answer_of(answer, schemas.History)

    def fold(self, query: schemas.FoldQuery) -> schemas.FoldAnswer:
        items: list[str | Page] = [
            item if isinstance(item, str) else _page(item.url, item.content, item.content_type)
            for item in query.items
        ]
        with self.source.reading() as state:
            threshold = state.settings.threshold if query.threshold is None else query.threshold
            groups = queries.fold(state, items, threshold)
        return schemas.answer_of({"groups": groups}, schemas.FoldAnswer)

    def similar_items(self, query: schemas.ItemQuery) -> schemas.SimilarItems:
        with self.source.reading() as state:
            schema = _item_schema(state)
            try:
                found = reports.similar_items_to(state, schema, query.record, int(query.limit))
            except BadRecordError as error:
                raise BadRequestError(f"the record is refused ({error.reason}): {error}") from None
        return schemas.answer_of({"matches": found}, schemas.SimilarItems)

    def merged(self, cluster: str) -> schemas.Merged:
        cluster_id = _id(cluster, "cluster id")
        with self.source.reading() as state:
            schema = _item_schema(state)
            view = state.view()
            if view.documents.ref(cluster_id) is None:
                raise NotFoundError(f"cluster {cluster} is not in the state")
            root = view.clusters.find(cluster_id)
            members = view.clusters.members_of(root)[0]
            answer = reports.merged_record(view, schema, root, members)
        return schemas.answer_of(answer, schemas.Merged)

    def merged_largest(self, limit: int) -> schemas.MergedList:
        with self.source.reading() as state:
            schema = _item_schema(state)
            view = state.view()
            answer = [
                reports.merged_record(view, schema, root, view.clusters.members_of(root)[0])
                for root, _ in view.clusters.largest(limit)
            ]
        return schemas.answer_of({"clusters": answer}, schemas.MergedList)

    def dashboard(self, since: float) -> schemas.Dashboard:
        """The samples the writer recorded after ``since``, then one of the state as it is
        now (the writer records a sample every few seconds of batches: the last batches of
        a burst may come after its last sample)."""
        now = time.time()
        with self.source.reading() as state:
            view = state.view()
            stored = view.timeline.samples(since)
            largest_now = view.clusters.largest(1)
            counters = {name: view.counters.get(name) for name in SAMPLED_COUNTERS}
            counters["largest_cluster"] = largest_now[0][1] if largest_now else 0
            live = [StoredSample(now, counters)] if now > since else []
            samples = [_sample(sample) for sample in [*stored, *live]]
            sizes = view.clusters.size_classes()
            labels = _labels(state)
            largest = _labelled(labels, queries.largest_clusters(state, 10))
            growing = self._growing(state, 10, labels)
        return schemas.Dashboard(
            now=round(now, 3),
            mode="pages" if labels is None else "items",
            samples=samples,
            size_distribution=[
                schemas.SizeClass(size_class_label(c), sizes[c]) for c in sorted(sizes)
            ],
            largest=[schemas.answer_of(c, schemas.ClusterSummary) for c in largest],
            growing=growing,
            window_seconds=self.window,
            label_field=msgspec.UNSET if labels is None or labels.field is None else labels.field,
        )

    def _growing(
        self, state: State, limit: int, labels: reports.ItemLabels | None
    ) -> list[schemas.GrowingCluster]:
        """The clusters that grew most in the last ``window`` seconds, from the samples the
        writer recorded: a retired cluster's growth is its survivor's (labelled in item mode:
        ``labels``)."""
        view = state.view()
        joined: Counter[int] = Counter()
        for sample in view.timeline.samples(time.time() - self.window):
            for cluster, documents in sample.grew:
                joined[view.clusters.find(cluster)] += documents
        answer = []
        for root, documents in sorted(joined.items(), key=lambda item: (-item[1], item[0])):
            ref = view.documents.ref(root)
            label = None if labels is None else labels.cluster(root)
            answer.append(
                schemas.GrowingCluster(
                    cluster=format_id(root),
                    joined=documents,
                    size=view.clusters.info(root).size,
                    first=schemas.Doc(
                        format_id(root),
                        ref.url if ref else None,
                        (ref.fetched_at or None) if ref else None,
                    ),
                    label=msgspec.UNSET if label is None else label,
                )
            )
            if len(answer) == limit:
                break
        return answer


def _sample(sample: StoredSample) -> schemas.Sample:
    counters = sample.counters
    return schemas.Sample(
        time=sample.time,
        documents=counters.get("documents", 0),
        clusters=counters.get("clusters", 0),
        documents_in_clusters=counters.get("documents_in_clusters", 0),
        merges=counters.get("cluster_merges", 0),
        splits=counters.get("cluster_splits", 0),
        duplicates={name.partition(":")[2]: counters.get(name, 0) for name in _DUPLICATES},
        contained=counters.get("contained", 0),
        largest_cluster=counters.get("largest_cluster", 0),
        dead_letters=counters.get("dead_letters", 0),
        changed=counters.get("pages_changed", 0),
        removed=counters.get("pages_removed", 0),
    )


def _labels(state: State) -> reports.ItemLabels | None:
    """Item mode's labels for the state's clusters and items; None for a state of pages."""
    schema = stored_schema(state.store)
    return None if schema is None else reports.ItemLabels(state.view(), schema)


def _labelled(
    labels: reports.ItemLabels | None, clusters: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Clusters of a listing, each with its label in item mode."""
    if labels is not None:
        for cluster in clusters:
            _label(cluster, labels.cluster(queries.parse_id(cluster["cluster"])))
    return clusters


def _label(answer: dict[str, Any], label: str | None) -> None:
    if label is not None:
        answer["label"] = label


def _item_schema(state: State) -> ItemSchema:
    schema = stored_schema(state.store)
    if schema is None:
        raise NotFoundError("this state holds pages: item queries are item mode's (--schema)")
    return schema


def _page(url: str, content: str, content_type: str) -> Page:
    """A posted page, held to the markup bound that input records are held to."""
    try:
        check_markup(content, content_type)
    except ValueError as error:
        raise BadRequestError(f"the page at {url!r} is refused: {error}") from None
    return Page(url=url, content=content, content_type=content_type)


def _known(answer: dict[str, object], what: str) -> dict[str, object]:
    if not answer.get("known", True):
        raise NotFoundError(f"{what} is not in the state")
    return answer


def _id(text: str, name: str) -> int:
    try:
        return queries.parse_id(text)
    except ValueError as error:
        raise BadRequestError(f"{name}: {error}") from None
