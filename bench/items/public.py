"""Public labelled corpora of real records, as item records with ground truth.

The tables are committed in ``bench/items/data/`` (gzipped, byte for byte; where each came
from: ``data/SOURCES.md``):

* the Leipzig benchmark (Köpcke, Thor & Rahm, VLDB 2010): ``dblp-acm``, ``dblp-scholar`` and
  ``amazon-google``, two tables and the complete mapping of their matches (Scholar's table
  is rebuilt from a Parquet export of it: SOURCES.md);
* the Magellan benchmark (DeepMatcher's "Structured" tables): ``walmart-amazon``,
  ``itunes-amazon`` and ``beer``, two tables and labelled pairs; only the records that
  appear in a labelled pair are taken (the tables hold tens of thousands of records whose
  matches were never labelled; iTunes-Amazon's second table is rebuilt from the pairs), and
  their scores count the labelled pairs alone (``labelled_pairs``): pairs never labelled
  include true matches. The Leipzig corpora are scored on every pair and on the pairs
  across their two tables, which their mapping covers (``mapped``).

Each record gets ``id`` (``a:ID`` or ``b:ID``) and ``source`` (``a`` or ``b``); columns are
renamed where the two tables name one field differently. The truth: the connected parts of
the matched pairs (a record matched to two others is one entity with both); a record
without a match is an entity of its own. Schemas, written as a user would from
docs/items.md, are in ``schemas/``.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from .peers._input import UnionFind

__all__ = ["CORPORA", "labelled_pairs", "load", "mapped", "schema_text"]

DATA = Path(str(files("bench.items").joinpath("data")))
SCHEMAS = Path(str(files("bench.items").joinpath("schemas")))


@dataclass(frozen=True)
class _Corpus:
    folder: str
    tables: tuple[str, str]
    #: of each table
    encodings: tuple[str, str]
    #: the Leipzig mapping file, or None for Magellan's labelled pairs
    mapping: str | None = None
    #: column renames of the second table (to the first table's names)
    rename_b: tuple[tuple[str, str], ...] = ()


_CORPORA = {
    "dblp-acm": _Corpus(
        "dblp-acm",
        ("DBLP2.csv", "ACM.csv"),
        ("latin-1", "latin-1"),
        "DBLP-ACM_perfectMapping.csv",
    ),
    "dblp-scholar": _Corpus(
        "dblp-scholar",
        ("DBLP1.csv", "Scholar-from-parquet.csv"),
        ("latin-1", "utf-8"),
        "DBLP-Scholar_perfectMapping.csv",
    ),
    "amazon-google": _Corpus(
        "amazon-google",
        ("Amazon.csv", "GoogleProducts.csv"),
        ("latin-1", "latin-1"),
        "Amzon_GoogleProducts_perfectMapping.csv",
        (("name", "title"),),
    ),
    "walmart-amazon": _Corpus("walmart-amazon", ("tableA.csv", "tableB.csv"), ("utf-8", "utf-8")),
    "itunes-amazon": _Corpus(
        "itunes-amazon", ("tableA.csv", "tableB-from-pairs.csv"), ("utf-8", "utf-8")
    ),
    "beer": _Corpus("beer", ("tableA.csv", "tableB.csv"), ("utf-8-sig", "utf-8-sig")),
}
CORPORA = tuple(_CORPORA)


def _rows(path: Path, encoding: str) -> list[dict[str, str]]:
    with gzip.open(path, "rb") as raw:
        text = raw.read().decode(encoding)
    return list(csv.DictReader(io.StringIO(text, newline="")))


def _components(ids: Iterable[str], pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Each id's component under the pairs, named by its smallest id."""
    joined = UnionFind()
    for a, b in pairs:
        joined.union(a, b)
    return {key: joined.find(key) for key in ids}


def _record(row: dict[str, str], side: str, rename: dict[str, str]) -> dict[str, Any]:
    record: dict[str, Any] = {"id": f"{side}:{row['id']}", "source": side}
    for column, value in row.items():
        if column == "id" or value is None:
            continue
        value = value.strip()
        if value:
            record[rename.get(column, column)] = value
    return record


def load(name: str) -> list[tuple[dict[str, Any], str]]:
    """(record, entity) pairs of a corpus: the first table's records, then the second's."""
    corpus = _CORPORA[name]
    folder = DATA / corpus.folder
    left, right = (
        _rows(folder / f"{table}.gz", encoding)
        for table, encoding in zip(corpus.tables, corpus.encodings, strict=True)
    )
    rename = dict(corpus.rename_b)
    if corpus.mapping is not None:
        mapping = _rows(folder / f"{corpus.mapping}.gz", "utf-8")
        columns = list(mapping[0])
        pairs = [("a:" + row[columns[0]], "b:" + row[columns[1]]) for row in mapping]
        records = [_record(row, "a", {}) for row in left]
        records += [_record(row, "b", rename) for row in right]
    else:
        labelled = [
            row
            for split in ("train", "valid", "test")
            for row in _rows(folder / f"{split}.csv.gz", "utf-8")
        ]
        wanted_a = {row["ltable_id"] for row in labelled}
        wanted_b = {row["rtable_id"] for row in labelled}
        pairs = [
            ("a:" + row["ltable_id"], "b:" + row["rtable_id"])
            for row in labelled
            if row["label"] == "1"
        ]
        records = [_record(row, "a", {}) for row in left if row["id"] in wanted_a]
        records += [_record(row, "b", rename) for row in right if row["id"] in wanted_b]
    entity = _components((record["id"] for record in records), pairs)
    return [(record, entity[record["id"]]) for record in records]


def labelled_pairs(name: str) -> dict[tuple[str, str], bool] | None:
    """Magellan corpora: the labelled pairs (record ids, in either order) and whether they
    match; their scores count only these pairs (its tables hold matches never labelled).
    None for a corpus whose truth is complete."""
    corpus = _CORPORA[name]
    if corpus.mapping is not None:
        return None
    labels: dict[tuple[str, str], bool] = {}
    for split in ("train", "valid", "test"):
        for row in _rows(DATA / corpus.folder / f"{split}.csv.gz", "utf-8"):
            a, b = "a:" + row["ltable_id"], "b:" + row["rtable_id"]
            labels[(a, b)] = labels[(b, a)] = row["label"] == "1"
    return labels


def mapped(name: str) -> bool:
    """Whether the corpus's truth is a mapping between its two tables (Leipzig): complete
    for the pairs across the tables, silent on a table's own repeats (Scholar lists a paper
    several times; where DBLP lacks the paper, nothing says the listings are one). Such a
    corpus is scored on the pairs across its tables too (``evaluate.across_scores``)."""
    return _CORPORA[name].mapping is not None


def schema_text(name: str) -> str:
    """The corpus's schema (TOML)."""
    return (SCHEMAS / f"{name}.toml").read_text()
