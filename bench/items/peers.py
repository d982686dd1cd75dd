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

Values are normalised alike for both peers (``_normalise``): text lower-cased with its
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

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import math
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

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

KINDS = ("text", "category", "identifier", "geo", "longtext", "number")
#: splink: the comparison each kind gets (a text field of SPLINK_BAG_OF_WORDS words or more
#: on average is compared as the business rates demo compares names; otherwise one whose name
#: holds "name" gets NameComparison, as splink's Febrl demos give given_name and surname)
SPLINK_COMPARISONS = {
    "text": "bag of words: exact (tf), shared words' frequency product < 1e-10, 1e-8, 1e-6,"
    " 1e-4; else NameComparison (tf) for names, JaroWinklerAtThresholds([0.95, 0.88, 0.7]) (tf)",
    "category": "ExactMatch, term frequency adjustments",
    "identifier": "DamerauLevenshteinAtThresholds([1, 2])",
    "geo": "DistanceInKMAtThresholds([0.1, 0.5, 2.0])",
    "longtext": "CustomComparison: Jaccard of word sets at 0.8, 0.5, 0.25",
    "number": "CustomComparison: exact, PercentageDifferenceLevel 0.05, 0.2",
}
#: dedupe: the variable each kind gets
DEDUPE_VARIABLES = {
    "text": "String",
    "category": "Exact",
    "identifier": "String",
    "geo": "LatLong",
    "longtext": "Text",
    "number": "Price",
}
#: splink: pairs scored above this go to clustering (scale.py's floor)
SPLINK_PREDICT_FLOOR = 0.5
SPLINK_THRESHOLD = 0.9
#: splink: the recall assumed of the deterministic rules (the febrl4 demo's guess)
SPLINK_DETERMINISTIC_RECALL = 0.8
#: splink: a word rarer than this share of a field's words may be a blocking word (the
#: business rates demo's ``rel_freq < 0.01``)
SPLINK_RARE_TOKEN = 0.01
#: splink: a text field whose values hold this many distinct words on average is compared as
#: a bag of words (the business rates demo's comparison) rather than as a name
SPLINK_BAG_OF_WORDS = 3.0
#: splink: the business rates demo's levels of the product of shared words' frequencies
SPLINK_TF_PRODUCT = (1e-10, 1e-8, 1e-6, 1e-4)
#: seconds a child process may take, and the memory (MB of PSS, summed over its process
#: group: dedupe scores in worker processes) past which it is stopped
CHILD_TIMEOUT = 20 * 60
CHILD_MEMORY_MB = 16 * 1024


# --- input ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """A compared field: the record key (``name``), its kind, and a geo field's two keys."""

    name: str
    kind: str
    lat: str | None = None
    lon: str | None = None
    #: the schema's weight (1 when none is given): splink's rules start from the heaviest
    weight: float = 1.0


def _fields(fields: Sequence[Sequence[Any]]) -> list[Field]:
    out = []
    for entry in fields:
        name, kind, *rest = entry
        options: Mapping[str, Any] = rest[0] if rest else {}
        if kind not in KINDS:
            raise ValueError(f"field {name!r}: kind {kind!r} is not one of {', '.join(KINDS)}")
        weight = float(options.get("weight", 1.0))
        if kind == "geo":
            lat = str(options.get("lat", f"{name}_lat"))
            lon = str(options.get("lon", f"{name}_lon"))
            out.append(Field(str(name), kind, lat, lon, weight))
        else:
            out.append(Field(str(name), kind, weight=weight))
    if len({f.name for f in out}) != len(out):
        raise ValueError("field names repeat")
    return out


def fields_from_schema(schema: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """The ``fields`` of an item schema (``ItemSchema`` or its TOML text), each with its
    weight (and a geo field's two keys)."""
    if isinstance(schema, str):
        from neardup.core.items.schema import ItemSchema

        schema = ItemSchema.from_toml(schema)
    out: list[tuple[str, str, dict[str, Any]]] = []
    for spec in schema.fields:
        options: dict[str, Any] = {"weight": float(spec.weight)}
        if spec.type == "geo":
            options.update(lat=spec.lat, lon=spec.lon)
        out.append((spec.name, spec.type, options))
    return out


_SPACE = re.compile(r"\s+")
_NOT_ALNUM = re.compile(r"[\W_]+")
_WORD = re.compile(r"[^\W_]+")
_NUMBER = re.compile(r"[^0-9.eE+-]")


def _text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = _SPACE.sub(" ", str(value)).strip().lower()
    return text or None


def _float(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    else:
        try:
            number = float(_NUMBER.sub("", str(value)))
        except ValueError:
            return None
    return None if math.isnan(number) or math.isinf(number) else number


def _normalise(record: Mapping[str, Any], field: Field) -> Any:
    """A field's value as both peers get it; None when missing."""
    if field.kind == "geo":
        lat, lon = _float(record.get(field.lat or "")), _float(record.get(field.lon or ""))
        if lat is None or lon is None or not (-90 <= lat <= 90 and -180 <= lon <= 180):
            return None
        return (lat, lon)
    if field.kind == "number":
        return _float(record.get(field.name))
    text = _text(record.get(field.name))
    if text is not None and field.kind == "identifier":
        text = _NOT_ALNUM.sub("", text) or None
    return text


def _sources(records: Sequence[Mapping[str, Any]]) -> list[str]:
    sources = sorted({str(r["source"]) for r in records if r.get("source") not in (None, "")})
    if len(sources) < 2 or any(r.get("source") in (None, "") for r in records):
        raise ValueError("link_across needs a source on every record, and two sources or more")
    return sources


def _check_ids(records: Sequence[Mapping[str, Any]]) -> list[str]:
    ids = [str(r["id"]) for r in records]
    if len(set(ids)) != len(ids):
        raise ValueError("record ids repeat")
    return ids


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        parent = self.parent
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while x != root:
            parent[x], x = root, parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


# --- splink -----------------------------------------------------------------------------------


def _column(name: str, taken: set[str]) -> str:
    """A SQL identifier for a field (lower case letters, digits, underscores), unique."""
    base = re.sub(r"[^a-z0-9_]", "_", name.lower()) or "field"
    if base[0].isdigit():
        base = "f_" + base
    column, n = base, 1
    while column in taken:
        n += 1
        column = f"{base}_{n}"
    taken.add(column)
    return column


@dataclass(frozen=True)
class _Words:
    """A text field's derived columns (splink's business rates demo, "Feature engineering"):
    ``tokens``, its distinct words each with its relative frequency among all the words of
    the field (all sources together); ``rare``, its two rarest words below
    ``SPLINK_RARE_TOKEN`` (None when it has none); ``bag``: its values hold
    ``SPLINK_BAG_OF_WORDS`` words or more on average, so it is compared as a bag of words."""

    tokens: str
    rare: str
    bag: bool
    mean_words: float


def _words(values: Sequence[str | None]) -> tuple[list[Any], list[Any], float]:
    """(tokens column, rare column, mean distinct words of a present value)."""
    split = [None if v is None else _WORD.findall(v) for v in values]
    counts = Counter(w for words in split if words for w in words)
    total = sum(counts.values()) or 1
    frequency = {w: c / total for w, c in counts.items()}
    tokens: list[Any] = []
    rare: list[Any] = []
    sizes: list[int] = []
    for words in split:
        if not words:
            tokens.append(None)
            rare.append(None)
            continue
        distinct = list(dict.fromkeys(words))
        sizes.append(len(distinct))
        tokens.append([{"token": w, "rel_freq": frequency[w]} for w in distinct])
        rarest = sorted((frequency[w], w) for w in distinct if frequency[w] < SPLINK_RARE_TOKEN)
        rare.append([w for _, w in rarest[:2]] or None)
    return tokens, rare, (sum(sizes) / len(sizes) if sizes else 0.0)


def _tf_product(column: str) -> str:
    """The business rates demo's name similarity: the product of the relative frequencies
    of the words two values share (1 when they share none): the rarer and the more shared
    words, the smaller. DuckDB 2 wants ``lambda x: ...`` where the demo writes ``x -> ...``."""
    return (
        f"list_reduce(list_concat(list_transform(list_intersect({column}_l, {column}_r),"
        " lambda x: x.rel_freq), [1.0::DOUBLE]), lambda p, q: p * q)"
    )


def _splink_comparison(
    field: Field, columns: Mapping[str, Any], words: Mapping[str, _Words]
) -> tuple[Any, str]:
    import splink.comparison_level_library as cll
    import splink.comparison_library as cl

    column = columns[field.name]
    if field.kind == "text":
        derived = words[field.name]
        if derived.bag:
            product = _tf_product(derived.tokens)
            levels: list[Any] = [
                cll.NullLevel(derived.tokens),
                cll.ExactMatchLevel(column, term_frequency_adjustments=True),
            ]
            levels += [
                cll.CustomLevel(
                    f"{product} < {t:g}", label_for_charts=f"shared words' tf product < {t:g}"
                )
                for t in SPLINK_TF_PRODUCT
            ]
            levels.append(cll.ElseLevel())
            return (
                cl.CustomComparison(levels, output_column_name=column),
                "bag of words: exact (tf), shared words' tf product < "
                + ", ".join(f"{t:g}" for t in SPLINK_TF_PRODUCT),
            )
        if "name" in field.name.lower():
            return (
                cl.NameComparison(column).configure(term_frequency_adjustments=True),
                "NameComparison (tf)",
            )
        return (
            cl.JaroWinklerAtThresholds(column, [0.95, 0.88, 0.7]).configure(
                term_frequency_adjustments=True
            ),
            "JaroWinklerAtThresholds([0.95, 0.88, 0.7]) (tf)",
        )
    if field.kind == "category":
        return (
            cl.ExactMatch(column).configure(term_frequency_adjustments=True),
            "ExactMatch (tf)",
        )
    if field.kind == "identifier":
        return (
            cl.DamerauLevenshteinAtThresholds(column, [1, 2]),
            "DamerauLevenshteinAtThresholds([1, 2])",
        )
    if field.kind == "geo":
        lat, lon = column
        return (
            cl.DistanceInKMAtThresholds(lat, lon, [0.1, 0.5, 2.0]),
            "DistanceInKMAtThresholds([0.1, 0.5, 2.0])",
        )
    if field.kind == "longtext":
        jaccard = (
            f"len(list_intersect({column}_l, {column}_r)) * 1.0"
            f" / len(list_distinct(list_concat({column}_l, {column}_r)))"
        )
        levels = [cll.NullLevel(column)]
        levels += [
            cll.CustomLevel(f"{jaccard} >= {t}", label_for_charts=f"word Jaccard >= {t}")
            for t in (0.8, 0.5, 0.25)
        ]
        levels.append(cll.ElseLevel())
        return (
            cl.CustomComparison(levels, output_column_name=column),
            "word-set Jaccard at 0.8, 0.5, 0.25 (CustomLevel)",
        )
    # number
    return (
        cl.CustomComparison(
            [
                cll.NullLevel(column),
                cll.ExactMatchLevel(column),
                cll.PercentageDifferenceLevel(column, 0.05),
                cll.PercentageDifferenceLevel(column, 0.2),
                cll.ElseLevel(),
            ],
            output_column_name=column,
        ),
        "exact, PercentageDifferenceLevel 0.05, 0.2",
    )


def _count_comparisons(
    con: Any, expressions: Sequence[str], link_only: bool, explode: Sequence[str] = ()
) -> int:
    """Pairs a blocking rule of equal ``expressions`` brings (nulls never equal). With an
    array column in ``explode`` (one at most), a pair sharing two of its elements counts
    twice: an upper bound (splink counts that pair once)."""
    if len(explode) > 1:
        raise ValueError("one exploded array a rule at most")
    table = "peer_records"
    if explode:
        table = f"(SELECT * REPLACE (unnest({explode[0]}) AS {explode[0]}) FROM peer_records)"
    keys = ", ".join(f"{e} AS k{i}" for i, e in enumerate(expressions))
    names = ", ".join(f"k{i}" for i in range(len(expressions)))
    present = " AND ".join(f"({e}) IS NOT NULL" for e in expressions)
    if link_only:  # pairs across sources only: (C² - Σ c_s²) / 2 a block
        sql = f"""
            SELECT coalesce(sum((total * total - squares) / 2), 0) FROM (
                SELECT sum(c) AS total, sum(c * c) AS squares FROM (
                    SELECT {keys}, source, count(*)::HUGEINT AS c FROM {table}
                    WHERE {present} GROUP BY ALL
                ) GROUP BY {names}
            )"""
    else:
        sql = f"""
            SELECT coalesce(sum(c * (c - 1) / 2), 0) FROM (
                SELECT {keys}, count(*)::HUGEINT AS c FROM {table}
                WHERE {present} GROUP BY ALL
            )"""
    return int(con.execute(sql).fetchall()[0][0])


def _blocking_plan(
    con: Any, candidates: Sequence[dict[str, Any]], link_only: bool, budget: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(kept rules, dropped rules), each ``{"fields", "key", "expressions", "explode",
    "comparisons"}``. A candidate is kept when it brings 1 to ``budget`` comparisons;
    candidates over it are tried in pairs of different fields (one exploded array at most),
    kept likewise. A field's "both rarest words" rule is dropped as implied when its "a rarest
    word" rule is kept (equal non-empty lists share a word)."""
    kept: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    over: list[dict[str, Any]] = []
    for candidate in candidates:
        rule = {
            **candidate,
            "comparisons": _count_comparisons(
                con, candidate["expressions"], link_only, candidate["explode"]
            ),
        }
        if 0 < rule["comparisons"] <= budget:
            kept.append(rule)
        elif rule["comparisons"] > budget:
            over.append(rule)
            dropped.append({**rule, "why": "over the budget"})
    for a, b in itertools.combinations(over, 2):
        if set(a["fields"]) & set(b["fields"]) or (a["explode"] and b["explode"]):
            continue
        expressions = a["expressions"] + b["expressions"]
        explode = a["explode"] + b["explode"]
        rule = {
            "fields": a["fields"] + b["fields"],
            "key": f"{a['key']} & {b['key']}",
            "expressions": expressions,
            "explode": explode,
            "comparisons": _count_comparisons(con, expressions, link_only, explode),
        }
        if 0 < rule["comparisons"] <= budget:
            kept.append(rule)
        elif rule["comparisons"] > budget:
            dropped.append({**rule, "why": "over the budget"})
    loosest = {tuple(r["fields"]) for r in kept if r["explode"] and len(r["fields"]) == 1}
    implied = [
        r
        for r in kept
        if r["key"].endswith("both rarest words") and len(r["fields"]) == 1
        and tuple(r["fields"]) in loosest
    ]  # fmt: skip
    kept = [r for r in kept if r not in implied]
    dropped += [{**r, "why": "implied by its field's 'a rarest word' rule"} for r in implied]
    kept.sort(key=lambda r: r["comparisons"])
    return kept, dropped


def _block_on(rule: Mapping[str, Any]) -> Any:
    from splink import block_on

    if rule["explode"]:
        return block_on(*rule["expressions"], arrays_to_explode=list(rule["explode"]))
    return block_on(*rule["expressions"])


def _em_rule(rule: Mapping[str, Any], guards: Sequence[str]) -> Any:
    """An EM training rule: the blocking rule, and for each text field it blocks on by a
    derived column (its rarest words), ``length(column) * 0`` equal on both sides (true
    whenever both have the field, as they do when they share a word of it). That names the
    field's own column in the rule: splink estimates no m in a session for a comparison whose
    columns the rule uses ("parameter estimates will be made for all comparison except those
    which use first_name in their sql_condition", ``estimate_parameters_using_expectation_
    maximisation``); blocking on the derived column alone would estimate that field's m from
    pairs chosen for agreeing on it."""
    return _block_on(
        {**rule, "expressions": [*rule["expressions"], *(f"length({c}) * 0" for c in guards)]}
    )


def run_splink(
    records: Sequence[Mapping[str, Any]],
    fields: Sequence[Sequence[Any]],
    *,
    seed: int,
    link_across: bool = False,
    threshold: float = SPLINK_THRESHOLD,
    predict_floor: float = SPLINK_PREDICT_FLOOR,
    u_max_pairs: float = 1e7,
    block_budget: int | None = None,
    deterministic_recall: float = SPLINK_DETERMINISTIC_RECALL,
    em_sessions: int = 4,
    log_level: int = logging.WARNING,
) -> dict[str, Any]:
    """splink 5 on DuckDB over ``records``, unsupervised (see the module's docstring and
    ``peer_configs/README.md``).

    ``block_budget``: the comparisons a blocking rule may bring, by default 20 per record
    (at least 100,000). ``em_sessions``: the most EM sessions (two at least when two rules
    on different fields are kept). Returns labels, seconds, config (the trained model as
    splink saves it, how its rules were chosen, which training steps fell back and why),
    stage seconds and the pairs predicted."""
    # imported before the clock starts: the seconds are the work on the records
    import duckdb
    import pyarrow as pa
    import splink
    from splink import DuckDBAPI, Linker, SettingsCreator, block_on

    started = time.perf_counter()
    clock = started
    stages: dict[str, float] = {}

    def stage(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        stages[name] = round(now - clock, 2)
        clock = now

    specs = _fields(fields)
    ids = _check_ids(records)
    sources = _sources(records) if link_across else []
    link_type: Literal["link_only", "dedupe_only"] = "link_only" if link_across else "dedupe_only"
    n = len(records)
    budget = block_budget if block_budget is not None else max(20 * n, 100_000)
    weight = {f.name: f.weight for f in specs}

    # the columns: one a field (a geo field two; a text field two more, derived), for SQL
    taken = {"unique_id", "source"}
    columns: dict[str, Any] = {}
    for f in specs:
        if f.kind == "geo":
            columns[f.name] = (_column(f"{f.name}_lat", taken), _column(f"{f.name}_lon", taken))
        else:
            columns[f.name] = _column(f.name, taken)
    data: dict[str, list[Any]] = {"unique_id": ids}
    if link_across:
        data["source"] = [str(r["source"]) for r in records]
    token_type = pa.list_(pa.struct([("token", pa.string()), ("rel_freq", pa.float64())]))
    types: dict[str, Any] = {"unique_id": pa.string(), "source": pa.string()}
    words: dict[str, _Words] = {}
    for f in specs:
        values = [_normalise(r, f) for r in records]
        if f.kind == "geo":
            lat, lon = columns[f.name]
            data[lat] = [None if v is None else v[0] for v in values]
            data[lon] = [None if v is None else v[1] for v in values]
            types[lat] = types[lon] = pa.float64()
        elif f.kind == "number":
            data[columns[f.name]] = values
            types[columns[f.name]] = pa.float64()
        elif f.kind == "longtext":
            data[columns[f.name]] = [
                None if v is None else (sorted(set(_WORD.findall(v))) or None) for v in values
            ]
            types[columns[f.name]] = pa.list_(pa.string())
        else:
            data[columns[f.name]] = values
            types[columns[f.name]] = pa.string()
        if f.kind == "text":
            tokens, rare, mean = _words(values)
            derived = _Words(
                _column(f"{f.name}_tokens", taken),
                _column(f"{f.name}_rare", taken),
                mean >= SPLINK_BAG_OF_WORDS,
                round(mean, 2),
            )
            words[f.name] = derived
            data[derived.tokens], types[derived.tokens] = tokens, token_type
            data[derived.rare], types[derived.rare] = rare, pa.list_(pa.string())
    table = pa.table({k: pa.array(v, type=types[k]) for k, v in data.items()})
    con = duckdb.connect()
    con.register("peer_arrow", table)
    con.execute("CREATE TABLE peer_records AS SELECT * FROM peer_arrow")
    con.unregister("peer_arrow")
    del table, data
    stage("load")

    # blocking candidates: equal values of each text, category and identifier field; a text
    # field's two rarest words both equal, and any one of them shared (exploded); ~100 m cells
    candidates: list[dict[str, Any]] = []
    for f in specs:
        column = columns[f.name]
        if f.kind in ("text", "category", "identifier"):
            candidates.append(
                {"fields": [f.name], "key": f"{f.name}", "expressions": [column], "explode": []}
            )
        if f.kind == "text":
            rare_column = words[f.name].rare
            candidates.append(
                {"fields": [f.name], "key": f"{f.name}: both rarest words",
                 "expressions": [rare_column], "explode": []}
            )  # fmt: skip
            candidates.append(
                {"fields": [f.name], "key": f"{f.name}: a rarest word",
                 "expressions": [rare_column], "explode": [rare_column]}
            )  # fmt: skip
        elif f.kind == "geo":
            lat, lon = column
            candidates.append(
                {"fields": [f.name], "key": f"{f.name}: 0.001° cell",
                 "expressions": [f"round({lat}, 3)", f"round({lon}, 3)"], "explode": []}
            )  # fmt: skip
    kept, dropped = _blocking_plan(con, candidates, link_across, budget)
    if not kept:
        raise ValueError(f"no blocking rule brings 1 to {budget} comparisons")
    stage("blocking_plan")

    db_api = DuckDBAPI(connection=con)
    sizes: list[int] = []
    if link_across:
        inputs: Any = []
        for number, source in enumerate(sources):
            con.execute(
                f"CREATE TABLE peer_source_{number} AS "
                "SELECT * EXCLUDE (source) FROM peer_records WHERE source = ?",
                [source],
            )
            sizes.append(
                int(con.execute(f"SELECT count(*) FROM peer_source_{number}").fetchall()[0][0])
            )
            inputs.append(db_api.register(f"peer_source_{number}", dataset_display_name=source))
    else:
        inputs = db_api.register("peer_records")
    comparisons, chosen = [], {}
    for f in specs:
        comparison, name = _splink_comparison(f, columns, words)
        comparisons.append(comparison)
        chosen[f.name] = name
    settings = SettingsCreator(
        link_type=link_type,
        unique_id_column_name="unique_id",
        comparisons=comparisons,
        blocking_rules_to_generate_predictions=[_block_on(r) for r in kept],
        retain_intermediate_calculation_columns=False,
        retain_matching_columns=False,
    )
    linker = Linker(inputs, settings, log_level=log_level)
    stage("linker")

    # probability_two_random_records_match: deterministic rules at a guessed recall; when
    # they find no pair (or more than the recall allows), a looser rule; then the docs'
    # known value of a one-to-one link (1 / the larger table), or splink's default. The
    # rules: each identifier alone (the Febrl demos' soc_sec_id); the heaviest text field
    # equal, or, a bag of words, its two rarest words equal (real titles seldom agree to
    # the character: a fuzzy rule, as tutorial 04's "first_name equal and levenshtein(surname)
    # <= 2"); a name-like heaviest field together with each other text or identifier field
    # (the demos' given_name, surname and date_of_birth together)
    texts = sorted((f for f in specs if f.kind == "text"), key=lambda f: -f.weight)
    exact_kept = {
        r["fields"][0] for r in kept if len(r["fields"]) == 1 and r["key"] == r["fields"][0]
    }

    def deterministic_rule(key: str, *expressions: str) -> dict[str, Any]:
        return {"key": key, "expressions": list(expressions)}

    deterministic = [
        deterministic_rule(f.name, columns[f.name])
        for f in specs
        if f.kind == "identifier" and f.name in exact_kept
    ]
    alone = []
    if texts:
        h = texts[0]
        alone = [deterministic_rule(h.name, columns[h.name])]
        if words[h.name].bag:
            deterministic += [
                *alone,
                deterministic_rule(f"{h.name}: both rarest words", words[h.name].rare),
            ]
        else:
            partners = [f for f in specs if f is not h and f.kind in ("text", "identifier")]
            deterministic += [
                deterministic_rule(f"{h.name} & {p.name}", columns[h.name], columns[p.name])
                for p in partners
            ] or alone
    attempts: list[tuple[str, list[dict[str, Any]]]] = []
    if deterministic:
        attempts.append(("deterministic rules", deterministic))
    if alone and alone[0] not in deterministic:
        attempts.append(("the heaviest text field alone", alone))
    if not attempts:
        attempts.append(
            (
                "the tightest blocking rule",
                [deterministic_rule(kept[0]["key"], *kept[0]["expressions"])],
            )
        )
    prior: dict[str, Any] = {"recall": deterministic_recall, "attempts": []}
    for label, rules in attempts:
        attempt: dict[str, Any] = {"what": label, "rules": [r["key"] for r in rules]}
        try:
            linker.training.estimate_probability_two_random_records_match(
                [block_on(*r["expressions"]) for r in rules],
                recall=deterministic_recall,
            )
            value = float(linker._settings_obj._probability_two_random_records_match)
        except Exception as error:  # recorded, then the next way
            attempt["failed"] = f"{type(error).__name__}: {error}"
            prior["attempts"].append(attempt)
            continue
        attempt["estimate"] = value
        prior["attempts"].append(attempt)
        if 0 < value < 1:
            prior.update(source=label, value=value)
            break
        attempt["failed"] = "no pair found" if value == 0 else "every pair a match"
    else:
        if link_across:
            value = 1 / max(sizes)
            source = "1 / the larger table (a one-to-one link, tutorial 04)"
        else:
            value = 0.0001
            source = "splink's default (SettingsCreator)"
        linker._settings_obj._probability_two_random_records_match = value
        prior.update(source=source, value=value)
    stage("estimate_lambda")
    linker.training.estimate_u_using_random_sampling(max_pairs=u_max_pairs, seed=seed)
    stage("estimate_u")

    # EM round robin: each session on a blocking rule (splink's EM takes no exploding rule:
    # a field's "both rarest words" rule stands for its "a rarest word"); next the rule that
    # lets the most comparisons not yet estimated be estimated, the heaviest field's first,
    # the loosest (most pairs, so most matches) first; two sessions at least. A session that
    # fails leaves the model as it was before it (splink 5 drops the comparisons the rule
    # uses from the linker's model as a session starts, and a failed one does not put them
    # back: the model is copied before each session and restored)
    em_candidates = [r for r in kept if not r["explode"]]  # EM takes no exploding rule
    em_candidates += [{**r, "why": None} for r in dropped if r["why"].startswith("implied")]
    estimated: set[str] = set()
    em: list[dict[str, Any]] = []
    tried: set[int] = set()
    while sum(1 for s in em if "failed" not in s) < em_sessions:
        done = sum(1 for s in em if "failed" not in s)
        missing = [f.name for f in specs if f.name not in estimated]
        if not missing and done >= 2:
            break

        def gain(rule: Mapping[str, Any], missing: list[str] = missing) -> int:
            return sum(1 for m in missing if m not in rule["fields"])

        options = [
            (i, r)
            for i, r in enumerate(em_candidates)
            if i not in tried and (gain(r) or not missing)
        ]
        if not options:
            break
        i, rule = max(
            options,
            key=lambda o: (gain(o[1]), max(weight[x] for x in o[1]["fields"]), o[1]["comparisons"]),
        )
        tried.add(i)
        guards = [
            columns[x]
            for x in rule["fields"]
            if x in words and words[x].rare in rule["expressions"]
        ]
        session: dict[str, Any] = {
            "fields": rule["fields"],
            "key": rule["key"],
            "comparisons": rule["comparisons"],
        }
        training_rule = _em_rule(rule, guards)
        session["sql"] = training_rule.get_blocking_rule("duckdb").blocking_rule_sql
        before = linker._settings_obj.core_model_settings.copy()  # type: ignore[no-untyped-call]
        try:
            linker.training.estimate_parameters_using_expectation_maximisation(
                training_rule, estimate_without_term_frequencies=True
            )
        except Exception as error:  # recorded, then the next rule
            session["failed"] = f"{type(error).__name__}: {error}"[:500]
            linker._settings_obj.core_model_settings = before
        else:
            session["estimated"] = [f.name for f in specs if f.name not in rule["fields"]]
            estimated.update(session["estimated"])
        em.append(session)
    not_estimated = [f.name for f in specs if f.name not in estimated]
    stage("em")
    predictions = linker.inference.predict(threshold_match_probability=predict_floor)
    pairs = int(con.execute(f"SELECT count(*) FROM {predictions.physical_name}").fetchall()[0][0])
    stage("predict")
    clusters = linker.clustering.cluster_pairwise_predictions_at_threshold(
        predictions, threshold_match_probability=threshold
    )

    def read_labels(table: Any) -> dict[str, str]:
        rows = con.execute(f"SELECT unique_id, cluster_id FROM {table.physical_name}").fetchall()
        found = {str(record_id): str(cluster) for record_id, cluster in rows}
        for record_id in ids:  # every record is in splink's clusters; a guard all the same
            found.setdefault(record_id, record_id)
        return found

    labels = read_labels(clusters)
    stage("cluster")
    seconds = time.perf_counter() - started
    # linking across: also splink's one-to-one clustering (CHANGELOG 4.0: "Support for 'one
    # to one' linking and clustering"), at most one record of each source a cluster, as
    # dedupe's RecordLink joins one to one by default
    one_to_one: dict[str, Any] | None = None
    if link_across:
        began = time.perf_counter()
        single = linker.clustering.cluster_using_single_best_links(
            predictions, duplicate_free_datasets=sources, threshold_match_probability=threshold
        )
        one_to_one = {
            "labels": read_labels(single),
            "seconds": round(seconds - stages["cluster"] + time.perf_counter() - began, 3),
        }
        stage("cluster_single_best_links")
    model = linker.misc.save_model_to_json()
    config = {
        "peer": "splink",
        "splink_version": splink.__version__,
        "duckdb_version": duckdb.__version__,
        "link_type": link_type,
        "sources": sources,
        "source_sizes": sizes,
        "fields": [[f.name, f.kind, f.weight] for f in specs],
        "columns": columns,
        "words": {
            name: {
                "tokens": w.tokens,
                "rare": w.rare,
                "bag_of_words": w.bag,
                "mean_words": w.mean_words,
            }
            for name, w in words.items()
        },
        "rare_token_share": SPLINK_RARE_TOKEN,
        "comparisons": chosen,
        "block_budget": budget,
        "blocking_rules": [_rule_json(r) for r in kept],
        "blocking_rules_dropped": [_rule_json(r) for r in dropped],
        "probability_two_random_records_match": prior,
        "u_max_pairs": u_max_pairs,
        "seed": seed,
        "em_sessions": em,
        "em_not_estimated": not_estimated,
        "em_estimate_without_term_frequencies": True,
        "predict_floor": predict_floor,
        "threshold_match_probability": threshold,
        "clustering": "cluster_pairwise_predictions_at_threshold"
        + (
            "; and cluster_using_single_best_links (both sources duplicate free)"
            if link_across
            else ""
        ),
        "model": model,
    }
    con.close()
    out = {
        "peer": "splink",
        "labels": labels,
        "seconds": round(seconds, 3),
        "config": config,
        "stage_seconds": stages,
        "pairs_predicted_above_floor": pairs,
    }
    if one_to_one is not None:
        out["one_to_one"] = one_to_one
    return out


def _rule_json(rule: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("key", "fields", "expressions", "explode", "comparisons", "why")
    return {k: rule[k] for k in keys if k in rule and rule[k] != []}


# --- dedupe -----------------------------------------------------------------------------------

_ID = "__peer_id"  # each record dict given to dedupe carries its id: the oracle reads it


def expected_f_threshold(
    scores: Sequence[float] | Any, recall_weight: float = 1.0
) -> dict[str, float]:
    """The threshold maximising the expected F score over pair probabilities, as dedupe
    1.x's ``thresholdBlocks`` computed it (and its docs' "Choosing a good threshold"
    describes): the pairs sorted by probability, the expected matches above each one are the
    sum of their probabilities, expected precision = that / pairs above, expected recall =
    that / the sum over all pairs; maximise recall·precision / (recall + w²·precision)."""
    import numpy

    probability = numpy.sort(numpy.asarray(scores, dtype=numpy.float64))[::-1]
    if probability.size == 0 or probability.sum() <= 0:
        return {"threshold": 0.5, "expected_precision": 0.0, "expected_recall": 0.0}
    expected = numpy.cumsum(probability)
    recall = expected / expected[-1]
    precision = expected / numpy.arange(1, len(expected) + 1)
    score = recall * precision / (recall + recall_weight**2 * precision)
    i = int(numpy.argmax(score))
    return {
        "threshold": float(probability[i]),
        "expected_precision": float(precision[i]),
        "expected_recall": float(recall[i]),
        "recall_weight": recall_weight,
    }


@contextlib.contextmanager
def _seeded_default_rng(seed: int) -> Iterator[None]:
    """While dedupe trains, ``numpy.random.default_rng()`` without a seed (its labeler's
    sampling and choices) gets generators seeded from ``seed`` and a counter."""
    import numpy

    original = numpy.random.default_rng
    counter = itertools.count()

    def seeded(*args: Any, **kwargs: Any) -> Any:
        if not args and kwargs.get("seed") is None:
            kwargs["seed"] = [seed, next(counter)]
        return original(*args, **kwargs)

    numpy.random.default_rng = seeded
    try:
        yield
    finally:
        numpy.random.default_rng = original


def _dedupe_variables(
    specs: Sequence[Field], data: Mapping[str, Mapping[str, Any]], exists_predicates: bool
) -> tuple[list[Any], list[dict[str, Any]]]:
    import dedupe
    import dedupe.variables

    variables, described = [], []
    for f in specs:
        has_missing = any(record[f.name] is None for record in data.values())
        kind = DEDUPE_VARIABLES[f.kind]
        if f.kind == "longtext":
            corpus = [r[f.name] for r in data.values() if r[f.name] is not None]
            variable = dedupe.variables.Text(f.name, corpus=corpus, has_missing=has_missing)
        else:
            variable = getattr(dedupe.variables, kind)(f.name, has_missing=has_missing)
        if not exists_predicates:  # see run_dedupe's exists_predicates
            variable.predicates = [
                p
                for p in variable.predicates
                if not isinstance(p, dedupe.predicates.ExistsPredicate)
            ]
        variables.append(variable)
        described.append(
            {"field": f.name, "kind": f.kind, "variable": kind, "has_missing": has_missing}
        )
    return variables, described


def run_dedupe(
    records: Sequence[Mapping[str, Any]],
    fields: Sequence[Sequence[Any]],
    truth: Mapping[str, str],
    *,
    labels: int = 50,
    seed: int,
    link_across: bool = False,
    recall_weight: float = 1.0,
    num_cores: int | None = None,
    exists_predicates: bool = False,
) -> dict[str, Any]:
    """dedupe 3 over ``records`` with ``labels`` answers from ``truth`` (id -> entity) to
    its active learning (see the module's docstring).

    Returns ``labels`` and ``seconds`` at threshold 0.5, ``best`` (the same at the expected-F
    threshold, with the threshold and dedupe's own expected precision and recall), the
    questions asked and how many were matches, ``config`` and stage seconds. ``seconds`` of
    each label set: everything before the clustering (training, blocking, scoring, and for
    ``best`` finding its threshold) plus its own clustering.

    ``recall_weight``: the w of the expected F score (1: F1). ``num_cores``: dedupe's
    scoring processes (None: all cores, its default). ``exists_predicates``: keep the
    ``ExistsPredicate`` blocking candidates of ``has_missing`` variables (the module's
    docstring says why they are dropped)."""
    # imported before the clock starts: the seconds are the work on the records
    import dedupe
    import dedupe.variables
    import numpy
    from dedupe.api import _cleanup_scores

    started = time.perf_counter()
    clock = started
    stages: dict[str, float] = {}

    def stage(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        stages[name] = round(now - clock, 2)
        clock = now

    random.seed(seed)
    numpy.random.seed(seed)
    specs = _fields(fields)
    ids = _check_ids(records)
    sources = _sources(records) if link_across else []
    if link_across and len(sources) != 2:
        raise ValueError("dedupe.RecordLink links two sources: found " + ", ".join(sources))
    for f in specs:
        if f.name == _ID:
            raise ValueError(f"a field may not be named {_ID}")
    data: dict[str, dict[str, Any]] = {}
    for record_id, record in zip(ids, records, strict=True):
        row: dict[str, Any] = {f.name: _normalise(record, f) for f in specs}
        for f in specs:  # dedupe's Price compares logarithms: a price of 0 or less is none
            if f.kind == "number" and row[f.name] is not None and row[f.name] <= 0:
                row[f.name] = None
        row[_ID] = record_id
        data[record_id] = row
    variables, described = _dedupe_variables(specs, data, exists_predicates)
    if link_across:
        source_of = {str(r["id"]): str(r["source"]) for r in records}
        parts = [{k: v for k, v in data.items() if source_of[k] == s} for s in sources]
        matcher: Any = dedupe.RecordLink(variables, num_cores=num_cores)
    else:
        matcher = dedupe.Dedupe(variables, num_cores=num_cores)
    stage("load")

    asked: list[list[Any]] = []
    with _seeded_default_rng(seed):
        if link_across:
            matcher.prepare_training(parts[0], parts[1])
        else:
            matcher.prepare_training(data)
        stage("prepare_training")
        for _ in range(labels):
            try:
                (pair,) = matcher.uncertain_pairs()
            except IndexError:  # nothing left to ask
                break
            a, b = pair[0][_ID], pair[1][_ID]
            same = truth.get(a) is not None and truth.get(a) == truth.get(b)
            matcher.mark_pairs(
                {"match": [pair] if same else [], "distinct": [] if same else [pair]}
            )
            asked.append([a, b, int(same)])
        stage("active_learning")
        matcher.train()
        stage("train")

    # every blocked pair scored once; then clusters at both thresholds
    try:
        pairs = matcher.pairs(parts[0], parts[1]) if link_across else matcher.pairs(data)
        scored = matcher.score(pairs)
        scores = numpy.array(scored)  # in memory: clustering sorts what it is given
        _cleanup_scores(scored)
    except dedupe.core.BlockingError:
        scores = numpy.zeros(0, dtype=[("pairs", "U1", 2), ("score", "f4")])
    stage("block_and_score")
    before = time.perf_counter() - started
    best = expected_f_threshold(scores["score"], recall_weight)
    best_seconds = time.perf_counter() - started - before
    stage("expected_f_threshold")

    def cluster(threshold: float) -> tuple[dict[str, str], float]:
        began = time.perf_counter()
        union = _UnionFind()
        if len(scores):
            if link_across:
                for (a, b), _score in matcher.one_to_one(scores.copy(), threshold):
                    union.union(str(a), str(b))
            else:
                for members, _confidence in matcher.cluster(scores.copy(), threshold):
                    for other in members[1:]:
                        union.union(str(members[0]), str(other))
        return {record_id: union.find(record_id) for record_id in ids}, time.perf_counter() - began

    at_half, half_seconds = cluster(0.5)
    stage("cluster_0.5")
    at_best, cluster_best_seconds = cluster(best["threshold"])
    stage("cluster_best")

    matches = sum(answer for _, _, answer in asked)
    classifier = matcher.classifier
    estimator = getattr(classifier, "best_estimator_", classifier)
    config = {
        "peer": "dedupe",
        "dedupe_version": _version("dedupe"),
        "matcher": "RecordLink" if link_across else "Dedupe",
        "sources": sources,
        "variables": described,
        "labels": labels,
        "seed": seed,
        "num_cores": num_cores,
        "exists_predicates": exists_predicates,
        "training_answers": asked,
        "train": {"recall": 1.0, "index_predicates": True},
        "predicates": [str(p) for p in matcher.predicates],
        "classifier": {
            "params": getattr(classifier, "best_params_", None),
            "coef": numpy.asarray(estimator.coef_).ravel().tolist(),
            "intercept": numpy.asarray(estimator.intercept_).ravel().tolist(),
        },
        "clustering": "one_to_one (join's default)" if link_across else "cluster (partition's)",
        "thresholds": {"default": 0.5, "expected_f": best},
    }
    return {
        "peer": "dedupe",
        "labels": at_half,
        "seconds": round(before + half_seconds, 3),
        "threshold": 0.5,
        "best": {
            **best,
            "labels": at_best,
            "seconds": round(before + best_seconds + cluster_best_seconds, 3),
        },
        "questions": {"asked": len(asked), "matches": matches, "distinct": len(asked) - matches},
        "pairs_scored": len(scores),
        "config": config,
        "stage_seconds": stages,
    }


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


# --- in a child process -----------------------------------------------------------------------


def _group_memory_mb(group: int) -> float:
    """The memory of the processes of a process group, in MB: the sum of their proportional
    set sizes (Linux's /proc/PID/smaps_rollup), so that pages a forked worker shares with its
    parent (dedupe's scoring processes) count once, not once a process as RSS would."""
    total_kb = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            # after the command's closing parenthesis: state, ppid, pgrp, ...
            if int(stat.rsplit(")", 1)[1].split()[2]) != group:
                continue
            for line in Path(f"/proc/{entry}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total_kb += int(line.split()[1])
                    break
        except (OSError, ValueError, IndexError):
            continue
    return total_kb / 2**10


def _run_child(command: list[str], timeout: float, memory_mb: float, log: Path) -> dict[str, Any]:
    """``scale.run_child`` with a memory limit: ``command`` runs in a process group of its
    own, whose memory (``_group_memory_mb``: summed PSS) is sampled each 0.5 s; the group is
    killed when it passes ``memory_mb`` or ``timeout`` seconds (and when the child ends:
    dedupe's worker processes go with it). Exit code, wall seconds, peak RSS (the child's
    own, ``wait4``), the group's peak memory (sampled: ``peak_group_mb``), ``timed_out``,
    ``memory_exceeded``, the end of the log on failure."""
    from .scale import ROOT, _die_with_parent

    started = time.perf_counter()
    timed_out = over_memory = False
    group_peak = 0.0
    with log.open("wb") as sink:
        child = subprocess.Popen(
            command, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent, start_new_session=True,
        )  # fmt: skip

    def kill_group() -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)

    try:
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            group_peak = max(group_peak, _group_memory_mb(child.pid))
            if group_peak > memory_mb:
                over_memory = True
            elif time.perf_counter() - started > timeout:
                timed_out = True
            if over_memory or timed_out:
                kill_group()
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.5)
    except BaseException:
        kill_group()
        os.wait4(child.pid, 0)
        child.returncode = -signal.SIGKILL
        raise
    kill_group()  # what the child left running
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    child.returncode = code  # reaped here: Popen must not wait for it again
    peak = usage.ru_maxrss / (2**20 if sys.platform == "darwin" else 2**10)
    done: dict[str, Any] = {
        "exit_code": code,
        "wall_seconds": round(seconds, 1),
        "peak_rss_mb": round(peak, 1),
        "peak_group_mb": round(group_peak, 1),
        "timed_out": timed_out,
        "memory_exceeded": over_memory,
    }
    if timed_out:
        done["reason"] = f"stopped after {timeout:.0f} s (the time limit)"
    elif over_memory:
        done["reason"] = f"stopped at {group_peak:.0f} MB (PSS; the limit: {memory_mb:.0f} MB)"
    if code != 0:
        done["log_tail"] = log.read_text(errors="replace")[-3000:]
    return done


def run_in_child(
    peer: str,
    records: Sequence[Mapping[str, Any]],
    fields: Sequence[Sequence[Any]],
    truth: Mapping[str, str] | None = None,
    *,
    timeout: float = CHILD_TIMEOUT,
    memory_mb: float = CHILD_MEMORY_MB,
    **options: Any,
) -> dict[str, Any]:
    """``run_splink`` or ``run_dedupe`` in a child process (``python -m bench.items.peers``)
    in a process group of its own; the peer's result with the child's exit code, wall
    seconds, peak RSS in MB (the child's own; its process group's PSS, sampled) and whether
    the time or memory limit stopped it (``_run_child``). A child that failed or was stopped
    gives ``{"completed": False, "reason": ...}`` with the end of its log. The child's
    ``PYTHONHASHSEED`` is the seed: dedupe's runs repeat only under one hash seed."""
    with tempfile.TemporaryDirectory(prefix=f"peer-{peer}-") as tmp:
        scratch = Path(tmp)
        job = {
            "peer": peer,
            "records": list(records),
            "fields": [list(f) for f in fields],
            "truth": dict(truth or {}),
            "options": options,
        }
        (scratch / "job.json").write_text(json.dumps(job))
        del job
        # dedupe iterates sets of its predicates: their order, and so its questions and
        # blocking rules, follow the string hashes; the child's are seeded too
        hash_seed = f"PYTHONHASHSEED={int(options.get('seed', 0)) % 2**32}"
        command = [
            "env", hash_seed, sys.executable, "-m", "bench.items.peers", "--worker", str(scratch)
        ]  # fmt: skip
        child = _run_child(command, timeout, memory_mb, scratch / "log.txt")
        result_path = scratch / "result.json"
        if child["exit_code"] != 0 or not result_path.exists():
            if "reason" not in child:
                lines = child.get("log_tail", "").strip().splitlines()
                child["reason"] = f"exited with code {child['exit_code']}" + (
                    f": {lines[-1]}" if lines else ""
                )
            return {"completed": False, "peer": peer, **child}
        result: dict[str, Any] = json.loads(result_path.read_text())
        return {"completed": True, **result, "child": child}


def _worker(scratch: Path) -> None:
    job = json.loads((scratch / "job.json").read_text())
    options = job["options"]
    if job["peer"] == "splink":
        result = run_splink(job["records"], job["fields"], **options)
    elif job["peer"] == "dedupe":
        result = run_dedupe(job["records"], job["fields"], job["truth"], **options)
    else:
        raise SystemExit(f"unknown peer {job['peer']!r}")
    (scratch / "result.json").write_text(json.dumps(result))


# --- labelled corpora and scores --------------------------------------------------------------


def load_labelled(
    name: str, n: int = 20000, seed: int = 1
) -> tuple[list[dict[str, Any]], list[Any], dict[str, str], bool]:
    """(records, fields, truth, link_across) of a corpus ``evaluate.load_corpus`` knows;
    febrl4's records get their file as ``source`` ("a", "b") and link across."""
    from .evaluate import load_corpus

    schema_text, corpus = load_corpus(name, n, seed)
    from neardup.core.items.schema import ItemSchema

    schema = ItemSchema.from_toml(schema_text)
    fields = fields_from_schema(schema)
    records: list[dict[str, Any]] = []
    truth: dict[str, str] = {}
    for record, entity in corpus:
        item = dict(record)
        item["id"] = str(record[schema.id_field])
        if schema.source_field and schema.source_field in record:
            item["source"] = str(record[schema.source_field])
        records.append(item)
        truth[item["id"]] = entity
    link_across = schema.link == "across"
    if name == "febrl4":  # febrl.load puts file A's 5,000 records first, then file B's
        half = len(records) // 2
        for number, item in enumerate(records):
            item["source"] = "a" if number < half else "b"
        link_across = True
    return records, fields, truth, link_across


def score(
    labels: Mapping[str, str],
    truth: Mapping[str, str],
    labelled: Mapping[tuple[str, str], bool] | None = None,
) -> dict[str, Any]:
    """Pairwise precision, recall and F1 of "same cluster" (``evaluate.pair_scores``), or
    over the labelled pairs alone (``evaluate.labelled_scores``) when the corpus has them."""
    from .evaluate import labelled_scores, pair_scores

    ids = list(truth)
    predicted = [labels[i] for i in ids]
    if labelled is not None:
        scores: dict[str, Any] = labelled_scores(labels, labelled)
    else:
        scores = pair_scores(predicted, [truth[i] for i in ids])  # type: ignore[arg-type]
    out = {k: round(v, 4) if isinstance(v, float) else v for k, v in scores.items()}
    out["largest_cluster"] = max(Counter(predicted).values(), default=0)
    out["largest_true_cluster"] = max(Counter(truth.values()).values(), default=0)
    return out


def _summary(
    result: dict[str, Any],
    truth: Mapping[str, str],
    labelled: Mapping[tuple[str, str], bool] | None = None,
) -> dict[str, Any]:
    if not result.get("completed", True):
        return result
    out = {"seconds": result["seconds"], **score(result["labels"], truth, labelled)}
    if "child" in result:
        out["peak_rss_mb"] = result["child"]["peak_rss_mb"]
        out["peak_group_mb"] = result["child"]["peak_group_mb"]
        out["child_wall_seconds"] = result["child"]["wall_seconds"]
    out["stage_seconds"] = result["stage_seconds"]
    if result["peer"] == "splink":
        out["pairs_predicted_above_floor"] = result["pairs_predicted_above_floor"]
        out["threshold_match_probability"] = result["config"]["threshold_match_probability"]
        config = result["config"]
        out["blocking_rules"] = [[r["key"], r["comparisons"]] for r in config["blocking_rules"]]
        prior = config["probability_two_random_records_match"]
        out["probability_two_random_records_match"] = {
            "value": prior["value"],
            "source": prior["source"],
            "failed": [a for a in prior["attempts"] if "failed" in a],
        }
        out["em_sessions"] = [
            {k: s[k] for k in ("key", "comparisons", "failed") if k in s}
            for s in config["em_sessions"]
        ]
        out["em_not_estimated"] = config["em_not_estimated"]
        out["comparisons"] = config["comparisons"]
        if "one_to_one" in result:
            out["one_to_one"] = {
                "clustering": "cluster_using_single_best_links",
                "seconds": result["one_to_one"]["seconds"],
                **score(result["one_to_one"]["labels"], truth, labelled),
            }
    else:
        best = result["best"]
        out["threshold"] = result["threshold"]
        out["best"] = {
            "threshold": round(best["threshold"], 4),
            "expected_precision": round(best["expected_precision"], 4),
            "expected_recall": round(best["expected_recall"], 4),
            "seconds": best["seconds"],
            **score(best["labels"], truth, labelled),
        }
        out["questions"] = result["questions"]
        out["pairs_scored"] = result["pairs_scored"]
        out["predicates"] = result["config"]["predicates"]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.items.peers", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--corpus", default="febrl3", help="febrl1..4, listings... (evaluate)")
    parser.add_argument("--n", type=int, default=20000, help="items (generated corpora)")
    parser.add_argument("--peer", choices=("splink", "dedupe", "both"), default="both")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--labels", type=int, default=50, help="dedupe's oracle answers")
    parser.add_argument("--timeout", type=float, default=CHILD_TIMEOUT, help="seconds a peer")
    parser.add_argument(
        "--memory-mb", type=float, default=CHILD_MEMORY_MB, help="MB (PSS) a peer may use"
    )
    parser.add_argument("--configs", type=Path, help="write each peer's config here as JSON")
    parser.add_argument("--out", type=Path, help="also write the JSON report here")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        _worker(args.worker)
        return 0
    records, fields, truth, link_across = load_labelled(args.corpus, args.n, args.seed)
    from . import public

    labelled = public.labelled_pairs(args.corpus) if args.corpus in public.CORPORA else None
    report: dict[str, Any] = {
        "corpus": args.corpus,
        "records": len(records),
        "true_entities": len(set(truth.values())),
        "link_across": link_across,
        "seed": args.seed,
    }
    peers = ("splink", "dedupe") if args.peer == "both" else (args.peer,)
    for peer in peers:
        options: dict[str, Any] = {"seed": args.seed, "link_across": link_across}
        if peer == "dedupe":
            options["labels"] = args.labels
        result = run_in_child(
            peer, records, fields, truth if peer == "dedupe" else None,
            timeout=args.timeout, memory_mb=args.memory_mb, **options,
        )  # fmt: skip
        report[peer] = _summary(result, truth, labelled)
        if args.configs is not None and result.get("completed"):
            args.configs.mkdir(parents=True, exist_ok=True)
            path = args.configs / f"{args.corpus}.{peer}.json"
            path.write_text(json.dumps(result["config"], indent=1) + "\n")
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0 if all(report[p].get("completed", True) for p in peers) else 1


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
