"""The ``neardup`` command line as one table: every command and its options.

Defaults come from the code that uses them (``Settings``, ``WorkerConfig``, the runner);
each environment variable is declared once, on its option, and read by ``resolve_environment``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

from neardup.core import DEFAULT_MAX_RECORD_BYTES, Settings
from neardup.state import KEY_FILTER_BYTES

from ..kafka.config import WorkerConfig
from ..kafka.topics import DEAD_LETTER_TOPIC, EVENTS_TOPIC, PAGES_TOPIC
from ..running.embedded import DEFAULT_BATCH_SIZE
from ..running.prepare_work import DEFAULT_BATCH_BYTES, PREPARE_MODES
from ..running.progress import DEFAULT_STATS_EVERY
from . import handlers
from .options import (
    Option,
    to_address,
    to_duration,
    to_float,
    to_fraction,
    to_int,
    to_on_off,
    with_flags,
)

__all__ = ["COMMANDS", "SETTINGS_GROUP", "SETTING_OPTIONS", "Command"]

_SETTINGS = Settings()
#: the heading of the detection settings' options (the usage shows them as [SETTINGS])
SETTINGS_GROUP = "settings (stored with the state; an omitted one keeps the stored value)"
_WORKER_DEFAULTS = {f.name: f.default for f in fields(WorkerConfig)}


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    help: str
    options: tuple[Option, ...]
    run: Callable[[argparse.Namespace], int]
    description: str | None = None
    #: options of which at most one may be given on the command line
    exclusive: tuple[str, ...] = ()


def _setting(
    name: str,
    metavar: str,
    help: str,
    convert: Callable[[str], object] = str,
    choices: tuple[str, ...] | None = None,
) -> Option:
    """A detection setting's option (``choices``: one of these words, as given)."""
    return Option(
        name,
        help,
        flags=("--" + name.replace("_", "-"),),
        convert=convert,
        env="NEARDUP_" + name.upper(),
        choices=choices,
        metavar=metavar,
        shown=f"the stored value; {getattr(_SETTINGS, name)} for a new state",
        group=SETTINGS_GROUP,
    )


#: the detection settings a command may set (``neardup.core.Settings`` fields)
SETTING_OPTIONS = (
    _setting("shingle_size", "W", "tokens per shingle", to_int),
    _setting("sketch", "minhash|simhash", "sketch: bottom-s min-hash, or a 64-bit SimHash", str),
    _setting("threshold", "T", "resemblance that joins clusters", to_float),
    _setting("sample_size", "S", "bottom-s sample per document", to_int),
    _setting("num_bins", "K", "min-hash bins that super-shingles are cut from", to_int),
    _setting(
        "token_unit",
        "word|character",
        "token unit: word (runs of letters/digits) or character",
        choices=("word", "character"),
    ),
    _setting("short_limit", "N", "fewer shingles than this: a short document", to_int),
    _setting("posting_cap", "N", "documents per posting list before it is a stop key", to_int),
    _setting(
        "split_clusters",
        "on|off",
        "cut loose clusters into communities (keeps every match as an edge)",
        to_on_off,
    ),
    _setting(
        "versions",
        "all|latest",
        "all: every fetch of a url is a document (an archive); latest: a url's latest fetch "
        'is what clusters hold, and {"url": U, "deleted": true} removes it',
        choices=("all", "latest"),
    ),
    _setting(
        "keep_versions",
        "N",
        "with versions latest: departed versions of a url kept for history and lost and found",
        to_int,
    ),
    _setting(
        "keep_versions_days",
        "DAYS",
        "with versions latest: days of event time a departed version is kept (0: no limit)",
        to_int,
    ),
    _setting(
        "containment_sample",
        "P",
        "shingles per document in the containment index (0: no index)",
        to_int,
    ),
    _setting(
        "containment_cap", "N", "documents per containment posting list before a stop key", to_int
    ),
    Option(
        "containment_threshold",
        "emit a contained event for each earlier document holding at least C of a new one, or "
        "held in it at least C (a run setting: it may change between runs)",
        flags=("--containment-threshold",),
        convert=to_fraction,
        env="NEARDUP_CONTAINMENT_THRESHOLD",
        metavar="C",
        shown="the stored value; none for a new state",
        group=SETTINGS_GROUP,
    ),
)

_STATE = Option(
    "state", "state directory (RocksDB)", flags=("--state",), metavar="DIR", required=True
)
_BROKER = Option(
    "broker",
    "Kafka bootstrap server",
    flags=("--broker",),
    env="NEARDUP_BROKER",
    metavar="HOST:PORT",
    required=True,
)
_MAX_RECORD_BYTES = Option(
    "max_record_bytes",
    "larger records are refused (dead letters)",
    flags=("--max-record-bytes",),
    convert=to_int,
    default=DEFAULT_MAX_RECORD_BYTES,
    metavar="N",
)
_KEY_FILTER_MB = Option(
    "key_filter_mb",
    "memory the posting indexes' key filters may take (about 80 MB a million pages); past "
    "it, an index's lookups go to RocksDB (slower); 0: no key filters",
    flags=("--key-filter-mb",),
    convert=to_int,
    env="NEARDUP_KEY_FILTER_MB",
    default=KEY_FILTER_BYTES >> 20,
    metavar="MB",
)
_EXPIRE_AFTER = Option(
    "expire_after",
    "with versions latest: remove the urls last fetched more than DURATION (e.g. 30d, 12h) "
    "before the latest fetched_at applied, as deletions; event time, never the clock, so a "
    "replay removes the same; a run option, not stored: give it to every run (every worker "
    "of a deployment the same)",
    flags=("--expire-after",),
    convert=to_duration,
    env="NEARDUP_EXPIRE_AFTER",
    metavar="DURATION",
    shown="none: a url stays until deleted",
)
_INPUTS = Option(
    "inputs", "JSON Lines file, - for stdin, or a .warc[.gz] file", metavar="INPUT", nargs="+"
)


def _topic(what: str, default: str) -> Option:
    name = what.replace("-", "_")
    return Option(
        f"{name}_topic",
        f"{what} topic",
        flags=(f"--{what}-topic",),
        env=f"NEARDUP_{name.upper()}_TOPIC",
        default=default,
        metavar="NAME",
    )


_PAGES_TOPIC = _topic("pages", PAGES_TOPIC)
_EVENTS_TOPIC = _topic("events", EVENTS_TOPIC)
_DEAD_LETTER_TOPIC = _topic("dead-letter", DEAD_LETTER_TOPIC)
_PREPARE = Option(
    "prepare",
    "prepare pages in a child process (a second core) or in a thread of this process",
    flags=("--prepare",),
    env="NEARDUP_PREPARE",
    choices=PREPARE_MODES,
    default=_WORKER_DEFAULTS["prepare"],
    metavar="|".join(PREPARE_MODES),
)
_BATCH_SIZE = Option(
    "batch_size",
    "pages per batch",
    flags=("--batch-size",),
    convert=to_int,
    default=DEFAULT_BATCH_SIZE,
    metavar="N",
)
_BATCH_BYTES = Option(
    "batch_bytes",
    "content characters per batch, at most (a larger page is a batch of its own): bounds "
    "the memory preparing a batch takes",
    flags=("--batch-bytes",),
    convert=to_int,
    default=DEFAULT_BATCH_BYTES,
    metavar="N",
)


_SCHEMA = Option(
    "schema",
    "item mode: the input is records of this TOML schema, matched field by field "
    "(docs/items.md); stored with the state",
    flags=("--schema",),
    env="NEARDUP_SCHEMA",
    metavar="SCHEMA.toml",
    shown="the stored one; none (pages) for a new state",
)


_SERVICE_GROUP = "service (over HTTP; docs/service.md)"
_HTTP = Option(
    "http",
    "serve /metrics and /healthz on this address while running (the query API and the "
    "dashboard are `neardup serve`'s); port 0 picks a free one (printed on stderr)",
    flags=("--http",),
    convert=to_address,
    env="NEARDUP_HTTP",
    metavar="HOST:PORT",
    shown="no server; a HOST omitted is 127.0.0.1",
    group=_SERVICE_GROUP,
)
_API_TOKEN = Option(
    "api_token",
    "require this bearer token on every path but /healthz",
    flags=("--api-token",),
    env="NEARDUP_API_TOKEN",
    metavar="TOKEN",
    shown="none",
    group=_SERVICE_GROUP,
)


def _output(dest: str, help: str, shown: str | None = None) -> Option:
    """A file the command writes to."""
    flag = "--" + dest.replace("_", "-")
    return Option(dest, help, flags=(flag,), metavar="FILE", shown=shown)


def _idle_timeout(default: float | None) -> Option:
    return Option(
        "idle_timeout",
        "stop when no event arrived for S seconds",
        flags=("--idle-timeout",),
        convert=to_float,
        default=default,
        metavar="S",
        shown="never" if default is None else None,
    )


COMMANDS = (
    Command(
        "run",
        "process JSON Lines or WARC files into the state (embedded mode)",
        (
            with_flags(_STATE, "--state", help="state directory (RocksDB); created if missing"),
            _INPUTS,
            _output("events", "append events as JSON Lines here (- for stdout)"),
            _output("dead_letters", "append refused records here", shown="DIR/dead-letters.jsonl"),
            _output(
                "clusters",
                "when done, write the clusters here as `neardup clusters` prints them "
                "(- for stdout)",
            ),
            _PREPARE,
            _SCHEMA,
            _output(
                "stats",
                "append a JSON line of statistics here every --stats-every records and at the "
                "end: totals, the stretch's docs/s, memory, state size (- for stdout)",
            ),
            Option(
                "stats_every",
                "records between two lines of --stats",
                flags=("--stats-every",),
                convert=to_int,
                default=DEFAULT_STATS_EVERY,
                metavar="N",
            ),
            _BATCH_SIZE,
            _BATCH_BYTES,
            _MAX_RECORD_BYTES,
            _KEY_FILTER_MB,
            _EXPIRE_AFTER,
            Option("quiet", "no progress and no summary", flags=("--quiet",), switch=True),
            _HTTP,
            _API_TOKEN,
            *SETTING_OPTIONS,
        ),
        handlers.run,
    ),
    Command(
        "serve",
        "serve a state directory over HTTP: metrics, dashboard, query API",
        (
            with_flags(
                _STATE,
                "--state",
                help="a state directory of `neardup run`, a worker's (its detector/), or one "
                "holding the directories of a deployment's workers (the detector written "
                "last is followed); it may be being written",
            ),
            with_flags(
                _HTTP,
                "--http",
                help="serve the query API (/api/v1/), the dashboard (/), /metrics and /healthz on "
                "this address; port 0 picks a free one (printed on stderr)",
                required=True,
                shown=None,
            ),
            _API_TOKEN,
        ),
        handlers.serve,
        "Reads the state as a follower (a RocksDB secondary instance, caught up with each write "
        "of the writer), so it answers while `neardup run` or a worker writes the directory, and "
        "draws the dashboard from the history the writer keeps in the state. Runs until "
        "SIGTERM/SIGINT.",
    ),
    Command(
        "clusters",
        "print clusters as JSON Lines, largest first",
        (
            with_flags(_STATE, "--state", required=False),
            with_flags(_BROKER, "--broker", required=False),
            Option("all", "include single documents (--state only)", flags=("--all",), switch=True),
            with_flags(_EVENTS_TOPIC, "--topic"),
            _idle_timeout(3.0),
        ),
        handlers.clusters,
        "From a state directory (--state), or rebuilt from the events topic of a Kafka "
        "deployment (--broker, or $NEARDUP_BROKER when --state is not given).",
        exclusive=("state", "broker"),
    ),
    Command(
        "query",
        "documents similar to a file, stdin, or a known URL (lost and found)",
        (
            _STATE,
            Option(
                "target", "a file, - for stdin, or a URL the state has seen", metavar="FILE|-|URL"
            ),
            Option(
                "limit",
                "at most N results",
                flags=("--limit",),
                convert=to_int,
                default=10,
                metavar="N",
            ),
            Option(
                "min_resemblance",
                "hide matches below this resemblance and containment",
                flags=("--min-resemblance",),
                convert=to_float,
                default=0.0,
                metavar="F",
            ),
            Option(
                "containment",
                "only the documents containing at least C of the file (its sources, for an "
                "excerpt), most containing first",
                flags=("--containment",),
                convert=to_fraction,
                metavar="C",
                shown="resemblance and containment matches, most resembling first",
            ),
            Option(
                "excerpts",
                "also the documents at least half (or C) inside the file: its excerpts (a slower "
                "query)",
                flags=("--excerpts",),
                switch=True,
            ),
            Option(
                "content_type",
                "content type of the file",
                flags=("--content-type",),
                default="",
                metavar="TYPE",
                shown="sniffed",
            ),
        ),
        handlers.query,
    ),
    Command(
        "history",
        "how a URL's page changed: its versions, each with its resemblance to the one before",
        (_STATE, Option("url", "a URL the state has seen", metavar="URL")),
        handlers.history,
    ),
    Command(
        "fold",
        "fold near-duplicates out of a ranked result list, keeping the order of the heads",
        (
            _STATE,
            Option(
                "ranked",
                "one item a line, best first: a URL the state has seen, or an inline page as "
                "an input record (JSON object); - for stdin",
                metavar="FILE|-",
            ),
            Option(
                "threshold",
                "resemblance at which a later item folds under a head",
                flags=("--threshold",),
                convert=to_float,
                metavar="T",
                shown="the state's threshold",
            ),
            Option(
                "max_items",
                "refuse longer lists",
                flags=("--max-items",),
                convert=to_int,
                default=1000,
                metavar="N",
            ),
        ),
        handlers.fold,
        "Prints one group a line: its head (the highest-ranked member) and the near-duplicates "
        "folded under it (same cluster, or estimated resemblance at or above the threshold).",
    ),
    Command(
        "stats",
        "documents, clusters, largest clusters, stop keys, disk use",
        (_STATE,),
        handlers.stats,
    ),
    Command(
        "expire",
        "remove the urls last fetched before a date, as deletions (versions = latest)",
        (
            _STATE,
            Option(
                "before",
                "urls whose last fetch is older than this ISO-8601 date are removed",
                flags=("--before",),
                metavar="DATE",
                required=True,
            ),
            _output("events", "write the events (page_removed, cluster_split) here"),
        ),
        handlers.expire,
        "Event time, not the clock: a replay expires the same urls. Urls fetched without a "
        "fetched_at stay. Compacts the state afterwards and prints one JSON object.",
    ),
    Command(
        "merged",
        "item mode: one merged record per cluster, with its members and their urls",
        (_STATE,),
        handlers.merged,
        "JSON Lines, largest cluster first: {cluster, size, members, record, urls}; the record "
        "is made from the members as they are now (docs/items.md).",
    ),
    Command(
        "fit",
        "item mode: fit the model to the state's items and score every item again",
        (_STATE, _output("events", "write the events (cluster_merged, cluster_split) here")),
        handlers.fit,
        "Learns the model from a sample of the stored items (docs/items.md#the-model) and "
        "matches every item again under it, in one transaction; a run does it by itself when "
        "the state has outgrown its model. Prints what changed as one JSON object.",
    ),
    Command(
        "worker",
        "run a Kafka worker of the detection topology (until SIGTERM/SIGINT)",
        (
            _BROKER,
            with_flags(
                _STATE, "--state", help="this worker's state directory", env="NEARDUP_STATE"
            ),
            Option(
                "partitions",
                "partitions of the pages and events topics",
                flags=("--partitions",),
                convert=to_int,
                env="NEARDUP_PARTITIONS",
                default=_WORKER_DEFAULTS["partitions"],
                metavar="N",
            ),
            _PAGES_TOPIC,
            _EVENTS_TOPIC,
            _DEAD_LETTER_TOPIC,
            Option(
                "app_id",
                "consumer group and internal topic prefix",
                flags=("--app-id",),
                env="NEARDUP_APP_ID",
                default=_WORKER_DEFAULTS["app_id"],
                metavar="NAME",
            ),
            _PREPARE,
            with_flags(_BATCH_SIZE, "--batch-size", help="pages prepared together"),
            _BATCH_BYTES,
            _SCHEMA,
            _MAX_RECORD_BYTES,
            _KEY_FILTER_MB,
            _EXPIRE_AFTER,
            Option(
                "loglevel",
                "log level",
                flags=("--loglevel",),
                choices=("debug", "info", "warning", "error"),
                default="warning",
                metavar="LEVEL",
            ),
            Option(
                "shards",
                "split detection over N shards, run by whichever workers the group assigns "
                "them to, and a union stage (without it, one worker detects)",
                flags=("--shards",),
                convert=to_int,
                env="NEARDUP_SHARDS",
                metavar="N",
            ),
            Option(
                "checkpoints",
                "with --shards: keep checkpoints of the shard and union states here (a directory "
                "the workers may share), and start a state this worker lacks from the newest",
                flags=("--checkpoints",),
                convert=Path,
                env="NEARDUP_CHECKPOINTS",
                metavar="DIR",
            ),
            Option(
                "checkpoint_every",
                "log messages between two checkpoints of a state",
                flags=("--checkpoint-every",),
                convert=to_int,
                env="NEARDUP_CHECKPOINT_EVERY",
                default=_WORKER_DEFAULTS["checkpoint_every"],
                metavar="N",
            ),
            Option(
                "session_timeout",
                "seconds the consumer group waits for a silent worker before it hands the "
                "worker's partitions to the others (Kafka's session.timeout.ms)",
                flags=("--session-timeout",),
                convert=to_float,
                env="NEARDUP_SESSION_TIMEOUT",
                default=_WORKER_DEFAULTS["session_timeout"],
                metavar="S",
            ),
            _HTTP,
            _API_TOKEN,
            *SETTING_OPTIONS,
        ),
        handlers.worker,
        "Every worker of a deployment must use the same partitions, topics, app id and settings.",
    ),
    Command(
        "publish",
        "send pages to the pages topic (the crawler side of Kafka mode)",
        (
            _BROKER,
            with_flags(_PAGES_TOPIC, "--topic"),
            _MAX_RECORD_BYTES,
            Option(
                "key",
                "item mode: send each JSON Lines line as it is, keyed by this field (the "
                "schema's id: an item's versions and its deletion keep their order)",
                flags=("--key",),
                metavar="FIELD",
                shown="pages: validated, keyed by url",
            ),
            _INPUTS,
        ),
        handlers.publish,
        "Valid pages are sent as the input contract, keyed by url; JSON Lines lines that fail "
        "validation are sent unchanged, so that the worker puts them in its dead-letter topic; "
        "what cannot be sent (oversized records, WARC records that are not text) is listed on "
        "stderr. Prints a summary as JSON.",
    ),
    Command(
        "events",
        "print the events of a Kafka deployment as JSON Lines",
        (
            _BROKER,
            with_flags(_EVENTS_TOPIC, "--topic"),
            _idle_timeout(None),
            Option(
                "from_beginning",
                "from the oldest event (default: new ones)",
                flags=("--from-beginning",),
                switch=True,
            ),
            Option(
                "dead_letters",
                "follow the dead-letter topic (--dead-letter-topic) instead",
                flags=("--dead-letters",),
                switch=True,
            ),
            _DEAD_LETTER_TOPIC,
        ),
        handlers.events,
        "Reads without a consumer group (it never moves a deployment's offsets).",
    ),
)
