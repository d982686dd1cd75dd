"""Peers of item mode on labelled corpora: splink (unsupervised) and dedupe (active learning).

    run_splink(records, fields, *, seed, link_across=False) -> dict
    run_dedupe(records, fields, truth, *, labels=50, seed, link_across=False) -> dict
    run_in_child("splink" | "dedupe", records, fields, truth, seed=..., ...) -> dict

    python -m bench.items.peers --corpus febrl3 --peer both --seed 1
    python -m bench.items.peers --corpus febrl4 --seed 1 --configs bench/items/peer_configs

Input, the same for both:

- ``records``: flat dicts; each has ``"id"`` (str, unique) and may have ``"source"`` (str).
- ``fields``: ``(name, kind)`` or ``(name, kind, options)``, kind one of ``KINDS``. A geo field
  reads two record keys, ``options["lat"]`` and ``options["lon"]`` (as item schemas name
  them: ``lat = "latitude"``), by default ``"<name>_lat"`` and ``"<name>_lon"``;
  ``fields_from_schema`` turns an item schema into this list.
- A value is missing when its key is absent, or it is None, NaN or blank.
- ``link_across``: the corpus links records of different sources only (two files of one
  population, as febrl4); otherwise any two records may match (``"dedupe_only"``).

Output of both: ``{"labels": {id: cluster id}, "seconds": wall seconds from receiving the
records to the clusters (training included), "config": JSON-able configuration, ...}``; every
record has a label, a record alone is its own cluster.

Values are normalised alike for both peers (``normalise``): text lower-cased with its
whitespace collapsed, identifiers to their letters and digits, numbers and coordinates to
floats; each peer then compares them with its own functions.

splink 5 (DuckDB), configured as its documentation has a user configure it, from the field
list alone (``peer_configs/README.md`` cites the page behind each choice): each text field
gets its words with their frequencies and its two rarest words (the business rates demo's
feature engineering); a comparison from ``splink.comparison_library`` per field by kind
(``SPLINK_COMPARISONS``; a text field of several words is compared as the business rates
demo compares names, by the frequencies of the words two values share), term frequency
adjustments on exact matches of text and category fields; blocking rules ``block_on`` each
field, each text field's two rarest words, and any one of them (``arrays_to_explode``), a
rule bringing more than ``block_budget`` comparisons dropped and tried in pairs;
``estimate_probability_two_random_records_match`` on deterministic rules (each identifier;
the heaviest text field equal, or its two rarest words equal, or a name-like one with each
other text field) at recall 0.8 as the febrl4 demo guesses, with fallbacks when they find
nothing; ``estimate_u_using_random_sampling``; EM sessions in a round robin until every
comparison has been estimated (two at least), a failed session recorded and skipped;
``predict`` above ``predict_floor``, ``cluster_pairwise_predictions_at_threshold`` at match
probability ``threshold`` (0.9). link_across gives link type ``"link_only"``: splink's docs
define it as links between the input tables and none within them, and use it for febrl4;
``"link_and_dedupe"`` would also link within each file.

dedupe 3 (``dedupe.Dedupe``, or ``dedupe.RecordLink`` with link_across): a variable per
field by kind (``DEDUPE_VARIABLES``), ``has_missing`` where any record lacks the field;
``prepare_training``, then ``labels`` times the first pair of ``uncertain_pairs()`` answered
from the truth and ``mark_pairs``; ``train()``; every blocked pair scored once, then clusters
(``cluster``, as ``partition`` does; ``one_to_one``, as ``join`` does by default) at two
thresholds: 0.5 (the default of both, and what dedupe-examples' csv_example uses) and the
threshold that maximises the expected F1 over the blocked pairs' own scores: dedupe's
documentation ("how it works / Choosing a good threshold") describes that estimate;
dedupe 1.x computed it with ``threshold(data, recall_weight=1)`` (``thresholdBlocks``),
dropped in 2.0 (CHANGELOG: "Dropped threshold methods"); ``expected_f_threshold`` is that
computation. dedupe draws from ``random``, from numpy's global state and from
``numpy.random.default_rng()`` without a seed: all three are seeded from ``seed`` here (the
last by handing dedupe seeded generators while it trains). It also iterates sets of its
predicates, whose order follows Python's string hashes: a run repeats (the same questions,
rules and clusters) only under one ``PYTHONHASHSEED``, which ``run_in_child`` sets to the
seed; called in a process of its own choosing, ``run_dedupe`` varies with that process's.

One departure from a stock dedupe (``exists_predicates=False``): a variable with
``has_missing`` also offers the blocking learner an ``ExistsPredicate`` (two blocks: has the
field, lacks it), and ``prepare_training`` materialises every pair each candidate predicate
covers in its sample of 5,000 records (4,000 a side linking): such a predicate covers nearly
all of them. On Febrl, whose fields are missing in 2 to 14% of the records, those alone are
about 100 million pairs: febrl3 took 16 GB and 267 s in ``prepare_training``, febrl4 passed
23 GB and was stopped (dedupe issues #899 and #920 report the same memory). They are
dropped from the candidates; the ``has_missing`` features of the classifier stay.
"""

from ._child import run_in_child
from ._cli import load_labelled, main, score
from ._dedupe import DEDUPE_VARIABLES, expected_f_threshold, run_dedupe
from ._input import KINDS, fields_from_schema
from ._splink import SPLINK_COMPARISONS, run_splink

__all__ = [
    "DEDUPE_VARIABLES",
    "KINDS",
    "SPLINK_COMPARISONS",
    "expected_f_threshold",
    "fields_from_schema",
    "load_labelled",
    "main",
    "run_dedupe",
    "run_in_child",
    "run_splink",
    "score",
]
