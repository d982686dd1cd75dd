"""dedupe 3 trained on labels an oracle answers from the truth (the package docstring)."""

from __future__ import annotations

import contextlib
import itertools
import random
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ._input import (
    Field,
    Stages,
    UnionFind,
    check_ids,
    normalise,
    parse_fields,
    sources_of,
    version_of,
)

#: dedupe: the variable each kind gets
DEDUPE_VARIABLES = {
    "text": "String",
    "category": "Exact",
    "identifier": "String",
    "geo": "LatLong",
    "longtext": "Text",
    "number": "Price",
}


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

    stage = Stages()
    started, stages = stage.started, stage.seconds

    random.seed(seed)
    numpy.random.seed(seed)
    specs = parse_fields(fields)
    ids = check_ids(records)
    sources = sources_of(records) if link_across else []
    if link_across and len(sources) != 2:
        raise ValueError("dedupe.RecordLink links two sources: found " + ", ".join(sources))
    for f in specs:
        if f.name == _ID:
            raise ValueError(f"a field may not be named {_ID}")
    data: dict[str, dict[str, Any]] = {}
    for record_id, record in zip(ids, records, strict=True):
        row: dict[str, Any] = {f.name: normalise(record, f) for f in specs}
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
        union = UnionFind()
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
        "dedupe_version": version_of("dedupe"),
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
