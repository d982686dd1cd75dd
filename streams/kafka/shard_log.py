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
from types import MappingProxyType

from neardup.core import BadRecordError, PreparedDoc
from neardup.core.prepared_codec import decode_batch
from neardup.state import State, StateView

from ..detection.shard import Ownership, ShardFindings, shard_records
from ..detection.union import DocHead
from .findings_codec import ShardMessage
from .log_detector import SettingsCheck, unapplied

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
    def one_message_a_batch(self) -> bool:
        """Where only a url's latest version counts, each message is a batch of its own:
        the versions a batch supersedes depart before it is detected, so a message's
        verdicts depend on the batch it is in, and a shard's runs of messages are its own
        while the union stage decides a message at a time."""
        return self.state.settings.versions == "latest"

    @property
    def next_offset(self) -> int:
        return self.state.view().log_offsets.get(self.log)

    def stage(self, messages: Sequence[tuple[int, bytes]]) -> ShardStaged:
        """Apply (offset, value) messages in ascending offset order in one transaction; those
        below ``next_offset`` are skipped.

        The documents of all the messages are one batch, as the single detector's
        (``LogDetector.stage``), and the findings are split per message after: a batch's
        fixed costs (its posting-log record and fold, the numpy passes over it) are paid
        once a run, not once a message (docs/capacity.md has a shard's costs)."""
        view = self.state.view()
        start = view.log_offsets.get(self.log)
        rejected: list[tuple[int, BadRecordError]] = []
        applied: list[tuple[int, list[PreparedDoc]]] = []
        for offset, value in unapplied(messages, start):
            try:
                docs = decode_batch(value, self._settings.check(value))
            except BadRecordError as error:
                rejected.append((offset, error))
                docs = []
            applied.append((offset, docs))
        if self.one_message_a_batch and len(applied) > 1:
            raise ValueError("this shard applies one message at a time (versions = latest)")
        batch = [doc for _, docs in applied for doc in docs]
        findings = shard_records(view, batch, self.state.settings, self.ownership)
        out: list[ShardMessage] = []
        at = 0
        for offset, docs in applied:
            # the documents detected: where versions depart, the one message's chosen ones
            detected = len(findings.verdicts) if len(applied) == 1 else len(docs)
            part = _part(findings, at, at + detected, first=not out)
            at += detected
            heads = tuple(DocHead.of(doc) for doc in docs) if self.ownership.index == 0 else None
            previous = out[-1].offset if out else start - 1
            out.append(ShardMessage(self.ownership.index, offset, previous, part, heads))
        next_offset = applied[-1][0] + 1 if applied else start
        view.log_offsets.set(self.log, next_offset)
        return ShardStaged(view, next_offset, tuple(out), tuple(rejected))

    def commit(self, staged: ShardStaged) -> None:
        staged.view.commit()


def _part(findings: ShardFindings, start: int, end: int, first: bool) -> ShardFindings:
    """The findings of documents ``start`` to ``end`` of a batch; the batch's counts and
    times go with its first message (the union stage sums them)."""
    return ShardFindings(
        findings.verdicts[start:end],
        findings.near[start:end],
        findings.contained[start:end],
        findings.candidates if first else 0,
        findings.pairs_estimated if first else 0,
        findings.stage_seconds if first else MappingProxyType({}),
    )
