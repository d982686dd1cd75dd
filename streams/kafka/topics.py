"""The topic names of a deployment, defined once: the defaults and the prepared log's rule."""

from __future__ import annotations

__all__ = ["DEAD_LETTER_TOPIC", "EVENTS_TOPIC", "PAGES_TOPIC", "prepared_topic", "service_topic"]

#: input pages, keyed by url
PAGES_TOPIC = "neardup.pages"
#: duplicate and cluster_merged events, keyed by cluster id
EVENTS_TOPIC = "neardup.events"
#: refused messages, with the reason and where they came from
DEAD_LETTER_TOPIC = "neardup.dead-letter"


def prepared_topic(app_id: str) -> str:
    """The one-partition log of prepared documents of an application: the detector's input
    and changelog."""
    return f"{app_id}-prepared"


def service_topic(app_id: str) -> str:
    """The one-partition topic where the worker holding the detector says where its HTTP
    service is (the other workers redirect requests there)."""
    return f"{app_id}-service"
