"""neardup.core: the pure part, from pages to canonical tokens, shingles, sketches and estimates.

Nothing here does I/O; everything works on whole batches with numpy.
"""

from .canonical import Tokenizer, html_to_text, looks_like_html, to_canonical_text
from .containment import containment_keys, kept_at_levels, level_counts, sampled_at
from .exceptions import (
    AbandonedError,
    BadRecordError,
    BrokerError,
    IncompatibleStateError,
    NeardupError,
    SchemaError,
    SettingsError,
    SketchMismatchError,
    StateError,
)
from .length_filter import may_resemble, size_class
from .prefix_filter import short_pairs_kept
from .prepare import FINER_LOOKUP, Fingerprints, PreparedDoc, Preparer
from .records import (
    DEFAULT_MAX_RECORD_BYTES,
    Page,
    PageStatus,
    normalise_fetched_at,
    page_from_json,
    page_from_mapping,
    record_from_json,
)
from .settings import DEFAULT_SEED, RUN_SETTINGS, Settings, candidate_probability, choose_bands
from .shingles import shingle_sets
from .sketch import (
    Estimate,
    ExtraSample,
    Samples,
    Sketch,
    estimate,
    estimate_columns,
    estimate_pairs,
    sketch_family,
)
from .supershingles import super_shingles

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "DEFAULT_SEED",
    "FINER_LOOKUP",
    "RUN_SETTINGS",
    "AbandonedError",
    "BadRecordError",
    "BrokerError",
    "Estimate",
    "ExtraSample",
    "Fingerprints",
    "IncompatibleStateError",
    "NeardupError",
    "Page",
    "PageStatus",
    "PreparedDoc",
    "Preparer",
    "Samples",
    "SchemaError",
    "Settings",
    "SettingsError",
    "Sketch",
    "SketchMismatchError",
    "StateError",
    "Tokenizer",
    "candidate_probability",
    "choose_bands",
    "containment_keys",
    "estimate",
    "estimate_columns",
    "estimate_pairs",
    "html_to_text",
    "kept_at_levels",
    "level_counts",
    "looks_like_html",
    "may_resemble",
    "normalise_fetched_at",
    "page_from_json",
    "page_from_mapping",
    "record_from_json",
    "sampled_at",
    "shingle_sets",
    "short_pairs_kept",
    "size_class",
    "sketch_family",
    "super_shingles",
    "to_canonical_text",
]
