"""Every error neardup raises on purpose, in one tree.

    NeardupError
    ├── SettingsError            a Settings field is out of range (also a ValueError)
    ├── SchemaError              an item schema (TOML) or synonym table is invalid (also a
    │                            ValueError); the message names the line or field
    ├── SketchMismatchError      two sketches made with different parameters were compared
    ├── BadRecordError           an input record cannot become a document (also a ValueError);
    │                            ``reason`` is the short machine-readable cause
    ├── AbandonedError           a stop was asked for while work was in hand (a batch, a
    │                            fit): it was dropped, nothing of it kept
    ├── StateError               the state directory cannot be used
    │   └── IncompatibleStateError   the state was built with other sketch settings
    └── BrokerError              the Kafka broker cannot be reached or refused a request

Catch ``NeardupError`` to handle all of them.
"""

from __future__ import annotations

__all__ = [
    "AbandonedError",
    "BadRecordError",
    "BrokerError",
    "IncompatibleStateError",
    "NeardupError",
    "SchemaError",
    "SettingsError",
    "SketchMismatchError",
    "StateError",
]


class NeardupError(Exception):
    """Base class of every error neardup raises on purpose."""


class AbandonedError(NeardupError):
    """Work cut short by a stop (SIGTERM, SIGINT): the caller drops what it built, and the
    next run does it again."""


class SettingsError(NeardupError, ValueError):
    """A setting has a value neardup cannot work with; the message names the value and the fix."""


class SchemaError(NeardupError, ValueError):
    """An item schema or synonym table cannot be used; the message names the line or field
    and the fix."""


class SketchMismatchError(NeardupError, ValueError):
    """Two sketches made with different seeds, shingle sizes or sample sizes were compared."""


class BadRecordError(NeardupError, ValueError):
    """An input record cannot become a document.

    ``reason`` is a short stable code (``not_json``, ``missing_field``, ...) for dead-letter
    records and counters; the message explains it to a person.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class StateError(NeardupError):
    """The state directory cannot be opened or used."""


class IncompatibleStateError(StateError):
    """The state on disk was built with sketch settings that differ from the requested ones."""


class BrokerError(NeardupError):
    """The Kafka broker did not answer in time, or refused a request (publish, events)."""
