"""splink 5 (DuckDB), configured as its documentation shows (the package docstring)."""

from __future__ import annotations

import itertools
import logging
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._input import WORD, Field, Stages, check_ids, normalise, parse_fields, sources_of

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
    split = [None if v is None else WORD.findall(v) for v in values]
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

    stage = Stages()
    started, stages = stage.started, stage.seconds

    specs = parse_fields(fields)
    ids = check_ids(records)
    sources = sources_of(records) if link_across else []
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
        values = [normalise(r, f) for r in records]
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
                None if v is None else (sorted(set(WORD.findall(v))) or None) for v in values
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
