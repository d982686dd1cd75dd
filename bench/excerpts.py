"""Sources and excerpts of real prose, for containment: what a plagiarism or quotation check
is asked.

Sources are runs of consecutive paragraphs of :mod:`bench.text_source` (the standard
library's prose), each 300 to 3,000 words (log-uniform), no paragraph in two sources.
Queries are excerpts of them: a contiguous slice of 5 to 60 % of a source's words, lightly
edited (2 % of the words substituted: a cut-and-paste with touch-ups) or heavily (6 %
substituted, 2 % inserted, 2 % deleted: a paraphrase in places). Unrelated queries are
runs of paragraphs no source holds, 30 to 600 words. Substitutes and insertions are words of
other paragraphs, so an edit reads like prose, not noise.

The labels say how a query was made; the truth for scoring is exact containment computed
from the shingle sets (an excerpt may hold passages of another source too, and a heavy edit
of a short excerpt may fall under any threshold).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from .text_source import paragraphs

__all__ = ["Edit", "Query", "Source", "excerpt_corpus"]

Edit = Literal["light", "heavy", "unrelated"]


@dataclass(frozen=True, slots=True)
class Source:
    url: str
    text: str


@dataclass(frozen=True, slots=True)
class Query:
    url: str
    text: str
    #: the source it was cut from ("" for an unrelated query), and the share of it cut
    source: str
    fraction: float
    edit: Edit


def _runs(words_wanted: list[int], pars: list[str], start: int) -> tuple[list[str], int]:
    """Runs of consecutive paragraphs of about the wanted word counts, from ``start`` on."""
    runs = []
    at = start
    for wanted in words_wanted:
        taken: list[str] = []
        count = 0
        while count < wanted and at < len(pars):
            taken.append(pars[at])
            count += len(pars[at].split())
            at += 1
        runs.append("\n\n".join(taken))
    return runs, at


def _edited(words: list[str], rng: np.random.Generator, vocabulary: list[str], edit: Edit) -> str:
    substitute, insert, delete = (0.02, 0.0, 0.0) if edit == "light" else (0.06, 0.02, 0.02)
    out: list[str] = []
    for word in words:
        roll = rng.random(3)
        if roll[0] < delete:
            continue
        out.append(vocabulary[rng.integers(len(vocabulary))] if roll[1] < substitute else word)
        if roll[2] < insert:
            out.append(vocabulary[rng.integers(len(vocabulary))])
    return " ".join(out)


def excerpt_corpus(
    sources: int = 60, per_source: int = 4, unrelated: int = 60, seed: int = 1
) -> tuple[list[Source], list[Query]]:
    """``sources`` sources, ``per_source`` excerpts of each (light and heavy edits in turn),
    and ``unrelated`` queries cut from none of them."""
    rng = np.random.default_rng(seed)
    pars = paragraphs()
    # the paragraphs are in the library's file order: start somewhere, keep them consecutive
    start = int(rng.integers(len(pars) // 4))
    lengths = np.exp(rng.uniform(np.log(300), np.log(3000), sources)).astype(int).tolist()
    texts, at = _runs(lengths, pars, start)
    made = [Source(f"https://source.example/{n}", text) for n, text in enumerate(texts)]
    vocabulary = " ".join(pars[:start]).split()
    queries: list[Query] = []
    for number, source in enumerate(made):
        words = source.text.split()
        for k in range(per_source):
            fraction = float(rng.uniform(0.05, 0.6))
            size = max(5, round(len(words) * fraction))
            first = int(rng.integers(len(words) - size + 1))
            edit: Edit = "light" if k % 2 == 0 else "heavy"
            queries.append(
                Query(
                    f"https://query.example/{number}-{k}",
                    _edited(words[first : first + size], rng, vocabulary, edit),
                    source.url,
                    fraction,
                    edit,
                )
            )
    lengths = np.exp(rng.uniform(np.log(30), np.log(600), unrelated)).astype(int).tolist()
    others, _ = _runs(lengths, pars, at)
    queries += [
        Query(f"https://unrelated.example/{n}", text, "", 0.0, "unrelated")
        for n, text in enumerate(others)
    ]
    return made, queries
