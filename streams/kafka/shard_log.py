"""A detection shard as a fold over the prepared log: every shard applies every message.

Like the single detector (``log_detector.py``), a shard's state is a function of the prefix
of the prepared log it has applied, and stores the next offset to apply in the same atomic
write as each run of messages. For every message it applies it sends one findings message
(``findings_codec``), which the union stage joins with the other shards' (``union_log.py``);
a shard that restarts, or that another worker takes over with a fresh state, applies the log
again from its state's offset and sends those findings again: the union stage keeps the
first copy of each (shard, offset).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from neardup.core import BadRecordError
from neardup.state import State, StateView

from ..detection.shard import Ownership, shard_stage
from ..detection.union import DocHead
from .findings_codec import ShardMessage
from .log_detector import SettingsCheck, unapplied
from .prepared_codec import decode_batch

__all__ = ["ShardLog", "ShardStaged"]


@dataclass(frozen=True, slots=True)
class ShardStaged:
    """A run of applied messages, not yet durable (``ShardLog.commit``)."""

    view: StateView
    next_offset: int
    #: one per message applied, in offset order; a rejected message has empty findings
    messages: tuple[ShardMessage, ...]
    #: messages that could not be applied (every shard rejects the same ones)
    rejected: tuple[tuple[int, BadRecordError], ...] = ()


class ShardLog:
    """Shard ``ownership`` over ``state``, applying the log named ``log``."""

    def __init__(self, state: State, ownership: Ownership, log: str) -> None:
        self.state = state
        self.ownership = ownership
        self.log = log
        self._settings = SettingsCheck(state.settings)

    @property
    def next_offset(self) -> int:
        return self.state.view().log_offsets.get(self.log)

    def stage(self, messages: Sequence[tuple[int, bytes]]) -> ShardStaged:
        """Apply (offset, value) messages in ascending offset order in one transaction; those
        below ``next_offset`` are skipped."""
        view = self.state.view()
        start = view.log_offsets.get(self.log)
        settings = self.state.settings
        out: list[ShardMessage] = []
        rejected: list[tuple[int, BadRecordError]] = []
        last = start - 1
        for offset, value in unapplied(messages, start):
            last = offset
            try:
                docs = decode_batch(value, self._settings.check(value))
            except BadRecordError as error:
                rejected.append((offset, error))
                docs = []
            findings = shard_stage(view, docs, settings, self.ownership)
            heads = tuple(DocHead.of(doc) for doc in docs) if self.ownership.index == 0 else None
            previous = out[-1].offset if out else start - 1
            out.append(ShardMessage(self.ownership.index, offset, previous, findings, heads))
        view.log_offsets.set(self.log, last + 1)
        return ShardStaged(view, last + 1, tuple(out), tuple(rejected))

    def commit(self, staged: ShardStaged) -> None:
        staged.view.commit()
