"""The union stage as a fold over the findings topic.

Every shard sends one findings message per prepared message (``shard_log.py``), to one
partition, where the shards' messages interleave. The union stage buffers them by log offset
and applies an offset once every shard has reported it and nothing can come before it, in
log order, so that its clusters and events are those of one detector.

Its state keeps, in the same atomic write as each run of applied offsets, the next log
offset to apply and the findings-topic position from which to read again after a restart
(the earliest message it holds but has not applied): what it buffered is in the topic, not
in the state. After applying offsets and sending their events, the union stage writes a
marker (``applied_marker``) to the findings topic; a stage that must rebuild its state from
the topic applies the offsets below the last marker without sending their events again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
from neardup.core import BadRecordError, StateError
from neardup.state import State, StateView

from ..detection.result import BatchResult
from ..detection.union import union_records
from .findings_codec import ShardMessage, decode_findings

__all__ = ["MARKER_KEY", "UnionLog", "UnionStaged", "applied_marker", "read_marker"]

#: the key of the union stage's markers in the findings topic
MARKER_KEY = b"union"


def applied_marker(next_offset: int) -> bytes:
    """The marker saying that the log before ``next_offset`` is applied and its events sent."""
    return msgspec.json.encode({"applied": next_offset})


def read_marker(value: bytes) -> int:
    try:
        return int(msgspec.json.decode(value)["applied"])
    except (msgspec.DecodeError, KeyError, TypeError, ValueError) as error:
        raise BadRecordError("bad_findings", f"a union marker cannot be read: {error}") from error


@dataclass(frozen=True, slots=True)
class UnionStaged:
    """Applied offsets, not yet durable (``UnionLog.commit``)."""

    view: StateView
    #: the first log offset applied, and the next one to apply
    first_offset: int
    next_offset: int
    resume: int
    #: the applied offsets' events in order, and their counts together
    result: BatchResult


class UnionLog:
    """The union stage of ``shards`` shards over ``state``, applying the log named ``log``
    from the findings of the topic named ``findings``."""

    def __init__(self, state: State, shards: int, log: str, findings: str) -> None:
        if shards < 1:
            raise ValueError(f"shards={shards}: a deployment has at least one shard")
        self.state = state
        self.shards = shards
        self.log = log
        self.findings = findings
        view = state.view()
        self._next = view.log_offsets.get(log)
        self._seen = view.log_offsets.get(findings) - 1  # the last position read
        self._pending: dict[int, dict[int, tuple[int, ShardMessage]]] = {}

    @property
    def next_offset(self) -> int:
        """The first log offset not applied."""
        return self._next

    @property
    def seen(self) -> int:
        """The last position of the findings topic read (or before where reading resumes)."""
        return self._seen

    @property
    def resume(self) -> int:
        """Where reading the findings topic must start again, for a state as committed."""
        return self.state.view().log_offsets.get(self.findings)

    def add(self, position: int, value: bytes) -> None:
        """A findings message read at ``position`` of the findings topic; a copy of one held
        already, or of an offset applied, is dropped."""
        self._seen = max(self._seen, position)
        message = decode_findings(value)
        if not 0 <= message.shard < self.shards:
            raise BadRecordError(
                "bad_findings",
                f"findings of shard {message.shard}, but the deployment has {self.shards} shards",
            )
        if message.offset < self._next:
            return
        self._pending.setdefault(message.offset, {}).setdefault(message.shard, (position, message))

    def passed(self, position: int) -> None:
        """A message of the findings topic that is not findings (a marker) was read."""
        self._seen = max(self._seen, position)

    def stage(self) -> UnionStaged | None:
        """Apply every offset that is ready, in log order, in one transaction; None when
        none is."""
        view: StateView | None = None
        first = self._next
        results: list[BatchResult] = []
        while (offset := self._ready()) is not None:
            group = self._pending.pop(offset)
            heads = group[0][1].heads
            if heads is None:
                raise StateError(f"shard 0 sent no documents with its findings of offset {offset}")
            view = view or self.state.view()
            findings = [group[shard][1].findings for shard in range(self.shards)]
            results.append(union_records(view, heads, findings))
            self._next = offset + 1
        if view is None:
            return None
        for offset in [o for o in self._pending if o < self._next]:  # copies of applied ones
            del self._pending[offset]
        waiting = [p for group in self._pending.values() for p, _ in group.values()]
        resume = min(waiting) if waiting else self._seen + 1
        view.log_offsets.set(self.log, self._next)
        view.log_offsets.set(self.findings, resume)
        return UnionStaged(view, first, self._next, resume, _combined(results))

    def commit(self, staged: UnionStaged) -> None:
        staged.view.commit()

    def _ready(self) -> int | None:
        """The next offset to apply: the smallest pending one, once every shard reported it
        and said that nothing lies between it and what is applied."""
        if not self._pending:
            return None
        offset = min(self._pending)
        group = self._pending[offset]
        if len(group) < self.shards:
            return None
        if any(message.previous >= self._next for _, message in group.values()):
            return None  # an earlier message exists and has not been applied
        return offset


def _combined(results: Sequence[BatchResult]) -> BatchResult:
    if len(results) == 1:
        return results[0]
    duplicates = {
        method: sum(r.duplicates_by_method[method] for r in results)
        for method in results[0].duplicates_by_method
    }
    seconds: dict[str, float] = {}
    for result in results:
        for stage, spent in result.stage_seconds.items():
            seconds[stage] = seconds.get(stage, 0.0) + spent
    return BatchResult(
        events=tuple(event for r in results for event in r.events),
        documents=sum(r.documents for r in results),
        repeats=sum(r.repeats for r in results),
        duplicates_by_method=duplicates,
        merges=sum(r.merges for r in results),
        contained=sum(r.contained for r in results),
        candidates=sum(r.candidates for r in results),
        pairs_estimated=sum(r.pairs_estimated for r in results),
        stage_seconds=seconds,  # type: ignore[arg-type]
    )
