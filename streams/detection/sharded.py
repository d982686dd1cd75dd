"""Detection shards and the union stage in one process, each over a state of its own.

What a sharded deployment computes (``docs/architecture.md``, "Detection shards"), batch by
batch: every shard looks at every document and keeps those it owns, then the union stage
joins what they found. It is the reference a sharded Kafka deployment is tested against, and
shows the split in the small: ``ShardedDetector([one], union)`` with one shard finds what
the embedded ``Detector`` finds.
"""

from __future__ import annotations

from collections.abc import Sequence

from neardup.core import IncompatibleStateError, PreparedDoc
from neardup.state import State

from .result import BatchResult
from .shard import Ownership, shard_records
from .union import DocHead, union_records

__all__ = ["ShardedDetector"]


class ShardedDetector:
    """``shards[i]`` keeps the documents of ``Ownership(i, len(shards))``; ``union`` keeps the
    clusters, the URL history and each document's url and fetched_at."""

    def __init__(self, shards: Sequence[State], union: State) -> None:
        if not shards:
            raise ValueError("a sharded detector needs at least one shard state")
        self.shards = list(shards)
        self.union = union
        self.settings = union.settings
        for index, shard in enumerate(self.shards):
            differences = self.settings.incompatibilities(shard.settings)
            if differences:
                raise IncompatibleStateError(
                    f"shard {index} was built with other settings than the union stage's ("
                    + "; ".join(differences)
                    + "): every stage of a deployment needs the same settings"
                )
        self.ownerships = [Ownership(i, len(self.shards)) for i in range(len(self.shards))]

    def ingest(self, docs: Sequence[PreparedDoc]) -> BatchResult:
        """One batch through every shard, then the union stage. Each state commits its part
        (the shards first): a crash between two commits leaves a shard ahead of the union
        stage, which a log-driven deployment replays and this class does not."""
        views = [shard.view() for shard in self.shards]
        findings = [
            shard_records(view, docs, self.settings, ownership)
            for view, ownership in zip(views, self.ownerships, strict=True)
        ]
        union_view = self.union.view()
        result = union_records(union_view, [DocHead.of(doc) for doc in docs], findings)
        for view in views:
            view.commit()
        union_view.commit()
        return result
