"""The topic names of a deployment, defined once: the defaults and the prepared log's rule."""

from __future__ import annotations

__all__ = [
    "DEAD_LETTER_TOPIC",
    "EVENTS_TOPIC",
    "PAGES_TOPIC",
    "findings_topic",
    "prepared_topic",
    "shards_topic",
]

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


def findings_topic(app_id: str) -> str:
    """The one-partition topic where detection shards send what they found for each prepared
    message, and the union stage its markers: the union stage's input and changelog."""
    return f"{app_id}-findings"


def shards_topic(app_id: str) -> str:
    """A topic with a partition per detection shard and no messages: the consumer group
    assigns its partitions, and the worker assigned partition s runs shard s."""
    return f"{app_id}-shards"
