"""Detection settings: one frozen dataclass, validated on construction, stored with the state."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from .exceptions import SettingsError

__all__ = [
    "DEFAULT_SEED",
    "RUN_SETTINGS",
    "SIMHASH_FLOOR",
    "SIMHASH_SAMPLE",
    "Settings",
    "SketchKind",
    "candidate_probability",
    "choose_bands",
]

#: The default seed ("neardup" in ASCII). Every hash constant is derived from the seed with
#: splitmix64, so the same seed gives the same fingerprints, sketches and super-shingles on
#: every machine and in every release that keeps ``SKETCH_FORMAT``.
DEFAULT_SEED = 0x6E6561726475_70

TokenUnit = Literal["word", "character"]
#: "minhash": the bottom-s sketch, super-shingles and the containment index; "simhash": a
#: 64-bit SimHash of the page's words, found within Hamming distance k through Manku's tables
SketchKind = Literal["minhash", "simhash"]
#: "all": every fetch a document; "latest": a url's latest fetch counts (``Settings.versions``)
Versions = Literal["all", "latest"]

#: The SimHash mode's check of the pairs its distance finds (bench/simhash_study.py,
#: docs/simhash.md): word unigrams also bring edits of 10-25 % within distance 3, so each
#: page keeps the 16 smallest of its shingle fingerprints, and a pair within the distance
#: joins only at an estimated resemblance of 0.7 or more from them. Fixed by the name
#: "simhash": another sample or floor is another sketch kind, not a setting.
SIMHASH_SAMPLE = 16
SIMHASH_FLOOR = 0.7
_DEFAULT_THRESHOLD = 0.5
#: the containment index's size by default: in SimHash mode it is off, and only another
#: value than this (or 0) is a request for it
_DEFAULT_CONTAINMENT_SAMPLE = 64


def candidate_probability(resemblance: float, bands: int, rows: int, min_shared: int = 1) -> float:
    """Probability that two documents of this resemblance share at least ``min_shared`` of
    their super-shingles.

    Each band agrees with probability p = J**rows, so the number of shared bands is binomial
    (bands, p); with one band needed this is the S-curve 1 - (1 - J**rows)**bands.
    """
    hit = resemblance**rows
    if min_shared <= 0:
        return 1.0
    if hit >= 1.0:
        return 1.0 if min_shared <= bands else 0.0
    below = sum(
        math.comb(bands, shared) * hit**shared * (1.0 - hit) ** (bands - shared)
        for shared in range(min(min_shared, bands + 1))
    )
    return max(0.0, 1.0 - below)


@lru_cache(maxsize=64)
def choose_bands(
    num_bins: int, threshold: float, max_false_negative: float, min_shared: int = 1
) -> tuple[int, int]:
    """Pick (bands, rows) for a threshold: the most rows (fewest spurious candidates) for which
    some number of bands within ``num_bins`` keeps the probability that a pair at the threshold
    shares fewer than ``min_shared`` bands within ``max_false_negative``, and for those rows the
    fewest bands that do (each band is one index entry per document: more bands cost time and
    disk, not accuracy). When nothing fits, every bin is a band of one row."""
    for rows in range(num_bins, 0, -1):
        for bands in range(min_shared, num_bins // rows + 1):
            missed = 1.0 - candidate_probability(threshold, bands, rows, min_shared)
            if missed <= max_false_negative:
                return bands, rows
    return num_bins, 1


#: the settings that shape no stored data: a state may be reopened with other values
RUN_SETTINGS = frozenset(
    {"posting_cap", "max_false_negative", "containment_cap", "containment_threshold"}
)


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise SettingsError(message)


@dataclass(frozen=True, slots=True)
class Settings:
    """How documents are reduced to sketches and when two of them are near-duplicates.

    Every field but the run settings (``RUN_SETTINGS``: caps, the containment events'
    threshold) shapes what is stored, so a state directory keeps the settings it was built
    with and refuses to be reopened with other ones.
    """

    #: w, the number of tokens in a shingle. Broder used 10; 5 suits shorter web pages.
    shingle_size: int = 5
    #: "word" (maximal runs of letters/digits) or "character" (each letter/digit; for scripts
    #: written without spaces).
    token_unit: TokenUnit = "word"
    #: Resemblance at or above which two documents are joined into one cluster.
    threshold: float = _DEFAULT_THRESHOLD
    #: s, the size of the bottom-s (MIN_s) sample of shingle fingerprints kept per document.
    #: Resemblance is estimated with standard deviation about sqrt(J(1-J)/s); documents with at
    #: most s shingles keep their whole set, so they are compared exactly.
    sample_size: int = 256
    #: k, the number of one-permutation min-hash bins that super-shingles are cut from.
    num_bins: int = 128
    #: b and r of the banding; ``None`` chooses them from the threshold (see ``choose_bands``).
    bands: int | None = None
    rows: int | None = None
    #: The largest false-negative probability at the threshold that ``choose_bands`` accepts.
    max_false_negative: float = 0.05
    #: Documents with fewer shingles than this are "short": they are compared with each other
    #: exactly, through an index of their individual shingles (see ``super_shingle_limit``).
    short_limit: int = 100
    #: A posting list (super-shingle or short-document shingle) stops growing at this many
    #: documents and its key is recorded as a stop key (Broder's "very common shingles").
    posting_cap: int = 1000
    #: Seed of every hash; see ``DEFAULT_SEED``.
    seed: int = DEFAULT_SEED
    #: Cut loose clusters: keep every verified match as an edge, and cut a cluster that a
    #: merge made larger than 20 pages, or that one page holds together, into communities
    #: (Leiden, as item mode does: docs/items.md). Off, clusters only join (union-find).
    #: Fixed when the state is made: a state without the edges cannot be cut.
    split_clusters: bool = False
    #: m, the super-shingles two documents must share to become candidates. Pairs far below
    #: the threshold share one band by chance far more often than two, and their number per
    #: document grows with the corpus; with m = 2 the bands are chosen so that a pair at the
    #: threshold still shares two with probability 1 - ``max_false_negative``.
    min_shared_bands: int = 2
    #: P, about how many shingles of a document the containment index keeps: a document of n
    #: shingles keeps those whose sample value is 0 modulo m, the smallest power of two with
    #: n / m <= P (Broder's MOD_m sample, m chosen by size); a document of at most P shingles
    #: keeps all of them. More finds smaller excerpts and estimates containment closer, at
    #: about 15 bytes on disk per kept shingle. 0 keeps no containment index.
    containment_sample: int = _DEFAULT_CONTAINMENT_SAMPLE
    #: A containment posting list stops growing at this many documents and its shingle is a
    #: stop key: a shingle that many pages share (a site's header, a licence) says nothing
    #: about where an excerpt came from, and each new page would rewrite its whole list.
    #: Stop keys count on neither side of an estimate. May change between runs.
    containment_cap: int = 64
    #: C: a new document contained at C or more in an earlier one, or containing one at C or
    #: more, emits a ``contained`` event; None emits none. Events only: it may change between
    #: runs of one state (from then on).
    containment_threshold: float | None = None
    #: "minhash" (the default) or "simhash" (see ``SketchKind`` and docs/simhash.md). SimHash
    #: mode keeps the exact shortcuts and ``shingle_size`` (the shingle-set fingerprint and
    #: the verifier's sample are of shingles); it has no threshold of its own to set (pairs
    #: within Hamming distance 3 whose 16-value sample estimates resemblance 0.7 or more
    #: join) and no containment index. ``sample_size``, ``num_bins``, the bands and
    #: ``short_limit`` shape nothing in it.
    sketch: SketchKind = "minhash"
    #: "all": every fetch of a url is a document of its own (an archive: the history and
    #: lost and found see each). "latest": a url's latest fetch is the page clusters hold;
    #: an earlier one leaves them when a later one comes, and a deletion record removes the
    #: url (docs/versions.md). States made before this setting keep "all".
    versions: Versions = "latest"
    #: With ``versions = "latest"``: the sketches of this many departed versions of a url
    #: are kept (not clustered, not indexed), for its history and lost and found; the
    #: oldest go first. 0 keeps none.
    keep_versions: int = 3
    #: With ``versions = "latest"``: a departed version is kept at most this many days of
    #: event time (the latest fetched_at a batch holds), never of the clock; 0: no limit.
    #: States made before this setting keep 0.
    keep_versions_days: int = 90
    _bands_rows: tuple[int, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _require(
            isinstance(self.shingle_size, int) and 1 <= self.shingle_size <= 64,
            f"shingle_size={self.shingle_size!r} is out of range: use an integer from 1 to 64 "
            "(5 is the default, Broder used 10)",
        )
        _require(
            self.token_unit in ("word", "character"),
            f"token_unit={self.token_unit!r} is unknown: use 'word' or 'character'",
        )
        _require(
            isinstance(self.threshold, (int, float)) and 0.0 < self.threshold <= 1.0,
            f"threshold={self.threshold!r} is out of range: use a resemblance in (0, 1], "
            "such as 0.5",
        )
        _require(
            self.sketch in ("minhash", "simhash"),
            f"sketch={self.sketch!r} is unknown: use 'minhash' (the default) or 'simhash'",
        )
        if self.sketch == "simhash":
            self._check_simhash()
        _require(
            isinstance(self.sample_size, int) and 16 <= self.sample_size <= 65536,
            f"sample_size={self.sample_size!r} is out of range: use an integer from 16 to 65536 "
            "(256 gives a standard deviation of about 0.03 at resemblance 0.5)",
        )
        _require(
            isinstance(self.num_bins, int)
            and 8 <= self.num_bins <= 4096
            and self.num_bins & (self.num_bins - 1) == 0,
            f"num_bins={self.num_bins!r} is not a power of two from 8 to 4096: use 128, 256 ...",
        )
        _require(
            isinstance(self.max_false_negative, float) and 0.0 < self.max_false_negative < 1.0,
            f"max_false_negative={self.max_false_negative!r} is out of range: use a probability "
            "in (0, 1), such as 0.05",
        )
        _require(
            isinstance(self.short_limit, int) and 1 <= self.short_limit <= self.sample_size,
            f"short_limit={self.short_limit!r} is out of range: use an integer from 1 to "
            f"sample_size ({self.sample_size}) so that short documents are compared exactly",
        )
        _require(
            self.versions in ("all", "latest"),
            f"versions={self.versions!r} is unknown: use 'all' (every fetch a document) or "
            "'latest' (a url's latest fetch counts)",
        )
        _require(
            isinstance(self.keep_versions, int) and 0 <= self.keep_versions <= 64,
            f"keep_versions={self.keep_versions!r} is out of range: use an integer from 0 (keep "
            "no departed version) to 64",
        )
        _require(
            isinstance(self.keep_versions_days, int) and 0 <= self.keep_versions_days <= 36500,
            f"keep_versions_days={self.keep_versions_days!r} is out of range: use an integer "
            "from 1 to 36500, or 0 to keep departed versions whatever their age",
        )
        _require(
            isinstance(self.split_clusters, bool),
            f"split_clusters={self.split_clusters!r} is not a boolean: use true or false",
        )
        _require(
            isinstance(self.posting_cap, int) and self.posting_cap >= 2,
            f"posting_cap={self.posting_cap!r} is too small: use an integer of at least 2",
        )
        _require(
            isinstance(self.seed, int) and 0 <= self.seed < 2**64,
            f"seed={self.seed!r} is out of range: use an integer from 0 to 2**64 - 1",
        )
        _require(
            isinstance(self.min_shared_bands, int) and 1 <= self.min_shared_bands <= self.num_bins,
            f"min_shared_bands={self.min_shared_bands!r} is out of range: use an integer from 1 "
            f"to num_bins ({self.num_bins}); 2, the default, drops pairs that meet under one "
            "band by chance",
        )
        _require(
            isinstance(self.containment_sample, int) and 0 <= self.containment_sample <= 65536,
            f"containment_sample={self.containment_sample!r} is out of range: use an integer "
            "from 8 to 65536 (64 is the default), or 0 for no containment index",
        )
        _require(
            self.containment_sample == 0 or self.containment_sample >= 8,
            f"containment_sample={self.containment_sample!r} is too small to estimate "
            "containment: use at least 8, or 0 for no containment index",
        )
        _require(
            isinstance(self.containment_cap, int) and self.containment_cap >= 2,
            f"containment_cap={self.containment_cap!r} is too small: use an integer of at "
            "least 2 (64 is the default)",
        )
        _require(
            self.containment_threshold is None
            or (
                isinstance(self.containment_threshold, (int, float))
                and 0.0 < self.containment_threshold <= 1.0
            ),
            f"containment_threshold={self.containment_threshold!r} is out of range: use a "
            "containment in (0, 1], such as 0.5, or None for no contained events",
        )
        _require(
            self.containment_threshold is None or self.containment_sample > 0,
            "containment_threshold needs the containment index: containment_sample is 0, "
            "so this state keeps none (build a state with containment_sample > 0)",
        )
        if self.bands is None and self.rows is None:
            chosen = choose_bands(
                self.num_bins,
                float(self.threshold),
                self.max_false_negative,
                self.min_shared_bands,
            )
        else:
            _require(
                isinstance(self.bands, int)
                and isinstance(self.rows, int)
                and self.bands >= 1
                and self.rows >= 1
                and self.bands * self.rows <= self.num_bins,
                f"bands={self.bands!r}, rows={self.rows!r} do not fit: give both, as positive "
                f"integers with bands * rows <= num_bins ({self.num_bins}), or neither to "
                "choose them from the threshold",
            )
            chosen = (int(self.bands or 0), int(self.rows or 0))
            _require(
                self.min_shared_bands <= chosen[0],
                f"min_shared_bands={self.min_shared_bands!r} is more than bands={self.bands!r}: "
                "no pair could ever share that many; lower min_shared_bands or add bands",
            )
        object.__setattr__(self, "_bands_rows", chosen)

    def _check_simhash(self) -> None:
        """What SimHash mode refuses, and its containment index switched off."""
        _require(
            self.threshold == _DEFAULT_THRESHOLD,
            f"threshold={self.threshold!r} does not apply with sketch='simhash': its pairs are "
            f"those within Hamming distance 3 whose {SIMHASH_SAMPLE}-value sample estimates a "
            f"resemblance of {SIMHASH_FLOOR} or more; omit --threshold, or use "
            "--sketch minhash to join at another resemblance",
        )
        _require(
            self.containment_threshold is None,
            f"containment_threshold={self.containment_threshold!r} needs the containment "
            "index, which sketch='simhash' does not keep: omit --containment-threshold, or "
            "use --sketch minhash",
        )
        _require(
            self.containment_sample in (0, _DEFAULT_CONTAINMENT_SAMPLE),
            f"containment_sample={self.containment_sample!r}: sketch='simhash' keeps no "
            "containment index; omit --containment-sample (or give 0), or use --sketch minhash",
        )
        object.__setattr__(self, "containment_sample", 0)

    @property
    def keeps_edges(self) -> bool:
        """Whether the verified matches are kept as edges: for clusters that are cut, and
        for clusters a page leaves (a superseded or deleted version)."""
        return self.split_clusters or self.versions == "latest"

    @property
    def sample_kept(self) -> int:
        """Values of the bottom-s sample each document keeps: ``sample_size``, or in SimHash
        mode the verifier's ``SIMHASH_SAMPLE``."""
        return SIMHASH_SAMPLE if self.sketch == "simhash" else self.sample_size

    @property
    def join_floor(self) -> float:
        """The estimated resemblance at which a verified pair joins: the threshold, or in
        SimHash mode the verifier's ``SIMHASH_FLOOR``."""
        return SIMHASH_FLOOR if self.sketch == "simhash" else float(self.threshold)

    @property
    def band_count(self) -> int:
        """b, the number of super-shingles per (non-short) document."""
        return self._bands_rows[0]

    @property
    def rows_per_band(self) -> int:
        """r, the number of min-hash bins combined into one super-shingle."""
        return self._bands_rows[1]

    @property
    def super_shingle_limit(self) -> int:
        """Documents with at least this many shingles get super-shingles.

        A short document of n < short_limit shingles can resemble one of short_limit or more
        only when n >= T * short_limit, so the documents from there up are banded; pairs of
        two short documents are left to the exact short-document index.
        """
        return max(1, math.ceil(self.threshold * self.short_limit - 1e-9))

    def short_index_prefix(self, shingle_count: int) -> int:
        """How many of a short document's shingles (smallest fingerprints first) it indexes.

        Prefix filtering (as in the AllPairs and PPJoin set-similarity joins): if J(A, B) >= T
        then A and B share at least ceil(T * max(|A|, |B|)) shingles, so in one global order the
        first |A| - ceil(T|A|) + 1 of A and the first |B| - ceil(T|B|) + 1 of B share one. No
        pair at or above T is lost, and the index holds about (1 - T) of the shingles.
        """
        if shingle_count <= 0:
            return 0
        # the epsilon keeps float rounding (0.7 * 10 = 7.000000000000001) from shortening it
        overlap = math.ceil(self.threshold * shingle_count - 1e-9)
        return min(shingle_count, shingle_count - max(overlap, 1) + 1)

    def containment_level(self, shingle_count: int) -> int:
        """log2 of m, the modulus of a document's containment sample (see
        ``containment_sample``): 0 (every shingle) up to ``containment_sample`` shingles."""
        target = self.containment_sample
        level = 0
        while target and shingle_count > target << level:
            level += 1
        return min(level, 32)

    def replace(self, **changes: Any) -> Settings:
        """A copy with some fields changed (validated again). A containment sample asked for
        by name is refused in SimHash mode, even the default one (which the mode otherwise
        sets to 0 by itself)."""
        changed = dataclasses.replace(self, **changes)
        _require(
            changed.sketch != "simhash" or not changes.get("containment_sample"),
            f"containment_sample={changes.get('containment_sample')!r}: sketch='simhash' "
            "keeps no containment index; omit --containment-sample (or give 0), or use "
            "--sketch minhash",
        )
        return changed

    def to_json(self) -> str:
        """The fields as JSON, with the bands actually used."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}
        data["bands"], data["rows"] = self._bands_rows
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Settings:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise SettingsError(f"stored settings {text!r} are not a JSON object")
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        data.setdefault("versions", "all")  # stored before the setting was: every fetch kept
        data.setdefault("keep_versions_days", 0)  # departed versions kept whatever their age
        unknown = sorted(set(data) - names)
        if unknown:
            raise SettingsError(f"stored settings have unknown fields {unknown}: upgrade neardup")
        return cls(**data)

    def incompatibilities(self, other: Settings) -> list[str]:
        """The fields that make state built with ``other`` unusable with these settings."""
        mine = json.loads(self.to_json())
        theirs = json.loads(other.to_json())
        return [
            f"{name}: stored {theirs[name]!r}, requested {mine[name]!r}"
            for name in sorted(mine)
            if name not in RUN_SETTINGS and mine[name] != theirs[name]
        ]
