"""The detector: batches of prepared pages in, one typed result out, one transaction each."""

from __future__ import annotations

from functools import cached_property

from neardup.core import Page, PreparedDoc, Preparer
from neardup.state import State, StateView

from .result import BatchResult
from .stages import ingest_batch

__all__ = ["Detector"]


class Detector:
    """Detection over one state: ``ingest`` commits each batch; ``stage`` leaves the commit to
    a caller that must act on the events first (the Kafka detector sends them)."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.settings = state.settings

    @cached_property
    def preparer(self) -> Preparer:
        """Made when first used: the embedded runner and the Kafka worker prepare pages
        elsewhere (a thread or a child process) and only ``ingest`` here."""
        return Preparer(self.settings)

    def process(self, pages: list[Page]) -> BatchResult:
        return self.ingest(self.preparer.prepare(pages))

    def ingest(self, prepared: list[PreparedDoc]) -> BatchResult:
        """The second half of ``process``, for pages prepared elsewhere (another thread)."""
        view, result = self.stage(prepared)
        view.commit()
        return result

    def stage(self, prepared: list[PreparedDoc]) -> tuple[StateView, BatchResult]:
        """``ingest`` without the commit: the caller may act on the events (send them) and
        add writes of its own before ``view.commit()`` makes the batch durable, or drop the
        view to forget the batch."""
        view = self.state.view()
        return view, ingest_batch(view, prepared, self.settings)
