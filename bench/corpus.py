"""Deterministic corpus of crawled pages with near-duplicate families, made of real prose.

Text: paragraphs of the Python standard library's docstrings and comments
(:mod:`bench.text_source`, PSF-2.0).  A *family* is one base document and its variants, the
changes a web crawl shows:

* ``template``  -- the same text served by another site, in another HTML template
* ``boilerplate`` -- the same text with a site's header/footer boilerplate added (that
  boilerplate is shared by many unrelated pages of the site: very common shingles)
* ``edit``      -- words inserted/deleted/substituted at 1, 3, 10, 25 or 40 %
* ``excerpt``   -- a contiguous 30-70 % slice (a containment case)
* ``exact``     -- the same bytes under another URL
* ``format``    -- case, punctuation, whitespace or entity changes only

Family sizes are 1 (an unrelated singleton) to ``max_family``.  Base lengths are lognormal,
median ``median_words`` words, capped at ``max_words``; a share ``short_share`` of families are
short (5-40 words).  Members of a family are spread over the stream (a base now, its variants
up to ``max_delay`` pages later), ``fetched_at`` strictly increases.

Determinism: the output is a pure function of (arguments, seed, text source fingerprint), and
a corpus of n pages is a prefix of a larger one with the same arguments.  Family labels are
how pages were *made*; ground truth for scoring is computed from the text by
:mod:`bench.truth`, since a 40 % edit or a 30 % excerpt may fall under a threshold and
unrelated short pages of one site may become near-duplicates through boilerplate.
"""

from __future__ import annotations

import dataclasses
import heapq
import html
import json
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from .text_source import paragraphs

__all__ = [
    "CORPORA",
    "EDIT_RATES",
    "VARIANT_KINDS",
    "Page",
    "generate",
    "iter_pages",
    "vocabulary",
    "write_jsonl",
]

EDIT_RATES = (0.01, 0.03, 0.10, 0.25, 0.40)
VARIANT_KINDS = ("template", "boilerplate", "edit", "excerpt", "exact", "format")
_VARIANT_CDF = np.cumsum([0.18, 0.14, 0.32, 0.12, 0.10, 0.14])[:-1]
_T0 = datetime(2024, 1, 1, tzinfo=UTC)
_PAR = "\n"  # paragraph separator inside a word list; never edited
_NAV_LABELS = (
    "Home",
    "About",
    "Contact",
    "Blog",
    "News",
    "Products",
    "Services",
    "Support",
    "Docs",
    "Pricing",
    "Careers",
    "Community",
    "Forum",
    "Events",
    "Press",
    "Login",
    "Search",
    "Help",
)
_CONTENT_TYPES = ("text/html; charset=utf-8", "text/html", "application/xhtml+xml")
Words = npt.NDArray[np.object_]

#: Named corpus kinds: keyword arguments of :func:`iter_pages` / :func:`generate` (``python -m
#: bench --corpus NAME``).  ``default`` is the corpus of the other benchmarks; ``dense`` has
#: fewer singletons and variants closer behind their base, as a recrawl of the same sites
#: shows (revisions, templates, syndicated copies).  Their measured density is in each
#: report (``density``) and in docs/benchmarks.md.
CORPORA: dict[str, dict[str, Any]] = {
    "default": {},
    "dense": {"singleton_share": 0.3, "max_delay": 2000},
}


@dataclasses.dataclass(frozen=True, slots=True)
class Page:
    """One fetched page, as the detector's input contract has it, plus its family label."""

    url: str
    content: str
    fetched_at: str
    content_type: str
    family: int


@dataclasses.dataclass(frozen=True, slots=True)
class _Site:
    number: int
    style: int
    name: str
    nav: tuple[str, ...]
    content_type: str
    header: str  # boilerplate text, shared by every page of the site that shows it
    footer: str
    boilerplate_rate: float
    script: str
    css: str


@dataclasses.dataclass(frozen=True, slots=True)
class _Doc:
    title: str
    words: list[str]  # body words with _PAR between paragraphs (a list: it joins faster)


@cache
def _text() -> tuple[Words, npt.NDArray[np.int64], Words]:
    """Paragraphs, their word counts and the flat vocabulary (real word frequencies)."""
    pars = paragraphs()
    counts = np.fromiter((p.count(" ") + 1 for p in pars), dtype=np.int64, count=len(pars))
    vocab = np.array(" ".join(pars).split(" "), dtype=object)
    return np.array(pars, dtype=object), counts, vocab


def vocabulary() -> Words:
    """Every word of the text, as often as the text has it: what edits draw new words from."""
    return _text()[2]


@cache
def _par_list() -> list[str]:
    return paragraphs()


def _make_site(seed: int, number: int) -> _Site:
    # A site's looks depend only on (seed, number), so sites need no global table.
    rng = np.random.default_rng([seed, 0x5173, number])
    pars, _, _ = _text()
    labels = rng.permutation(len(_NAV_LABELS))[: int(rng.integers(3, 8))]
    head_par, foot_par = (str(pars[i]).split(" ") for i in rng.integers(0, len(pars), size=2))
    rate = float(rng.choice([0.0, 0.0, 0.3, 0.6, 1.0]))
    ident = int(rng.integers(10**6, 10**7))
    return _Site(
        number=number,
        style=int(rng.integers(0, 6)),
        name=f"Site {number}",
        nav=tuple(_NAV_LABELS[i] for i in labels),
        content_type=_CONTENT_TYPES[int(rng.choice(3, p=[0.7, 0.25, 0.05]))],
        header=" ".join(head_par[: int(rng.integers(10, 40))]),
        footer=" ".join(foot_par[: int(rng.integers(20, 80))]),
        boilerplate_rate=rate,
        script=(
            f"window.dataLayer = window.dataLayer || []; function track(event) "
            f"{{ dataLayer.push({{site: 'UA-{ident}', event: event, page: location.href}}); }} "
            f"track('pageview'); // analytics for site number {number}"
        ),
        css=f"body {{ font-family: sans-serif; margin: {number % 7}em; }} .nav a {{ color: #"
        f"{ident % 0xFFFFFF:06x}; }}",
    )


def _render(doc: _Doc, site: _Site, boilerplate: bool, plain: bool) -> tuple[str, str]:
    """(content, content_type) of a document served by a site."""
    text = " ".join(doc.words)
    sep = f" {_PAR} "
    if plain:
        parts = [doc.title, text.replace(sep, "\n\n")]
        if boilerplate:
            parts = [site.header, *parts, site.footer]
        return "\n\n".join(parts) + "\n", "text/plain; charset=utf-8"
    # One escape and one replace for the whole body: no Python work per paragraph.
    body = "<p>" + html.escape(text, quote=False).replace(sep, "</p>\n<p>") + "</p>"
    title = html.escape(doc.title, quote=False)
    if boilerplate:
        body = (
            f'<div class="site-header">{html.escape(site.header, quote=False)}</div>\n{body}\n'
            f'<div class="site-footer">{html.escape(site.footer, quote=False)}</div>'
        )
    links = "".join(f'<li><a href="/{n.lower()}">{n}</a></li>' for n in site.nav)
    head = (
        f'<head><meta charset="utf-8"><title>{title} | {site.name}</title>'
        f"<script>{site.script}</script><style>{site.css}</style></head>"
    )
    noscript = "<noscript>Please enable JavaScript to use all features of this site.</noscript>"
    s = site.style
    if s == 0:
        page = (
            f'<header><nav class="nav"><ul>{links}</ul></nav></header><main><article>'
            f"<h1>{title}</h1>\n{body}\n</article></main>"
            f"<footer><p>&copy; 2024 {site.name}</p></footer>"
        )
    elif s == 1:
        nav = "<br>".join(f'<a href="/{n.lower()}">{n}</a>' for n in site.nav)
        page = (
            f'<table width="100%"><tr><td class="nav" valign="top">{nav}</td>'
            f"<td><h2>{title}</h2>\n{body}\n</td></tr></table>"
        )
    elif s == 2:
        page = (
            f'<div id="wrap"><div class="top">{site.name}</div><div class="side"><ul>{links}'
            f'</ul></div><div class="content"><h1>{title}</h1>\n{body}\n</div>'
            f'<div class="bottom">{site.name}</div></div>'
        )
    elif s == 3:
        page = f"<h1>{title}</h1>\n{body}\n"
    elif s == 4:
        page = (
            f'<header class="nav"><ul>{links}</ul></header><div class="post"><h2>{title}</h2>'
            f'<div class="meta">Posted in {site.nav[0]}</div>\n{body}\n</div>'
            f"<footer>{site.name}</footer>"
        )
    else:
        page = (
            f'<nav class="breadcrumb"><a href="/">{site.nav[0]}</a> &rsaquo; '
            f'<a href="/docs">{site.nav[-1]}</a></nav><section><h1>{title}</h1>\n{body}\n'
            f"</section>"
        )
    content = (
        f'<!DOCTYPE html>\n<html lang="en">{head}\n<body>{noscript}\n{page}\n'
        f'<script src="/static/{site.style}.js"></script></body></html>\n'
    )
    return content, site.content_type


class _Generator:
    """Makes families; all randomness flows from one seed through spawned generators."""

    def __init__(
        self,
        seed: int,
        short_share: float,
        n_sites: int,
        singleton_share: float,
        max_family: int,
        median_words: int,
        sigma: float,
        max_words: int,
    ) -> None:
        self.seed = seed
        self.rng = np.random.default_rng([seed, 0xC0])
        self.short_share = short_share
        self.singleton_share = singleton_share
        self.max_family = max_family
        self.mu = float(np.log(median_words))
        self.sigma = sigma
        self.max_words = max_words
        weights = 1.0 / (np.arange(n_sites) + 5.0) ** 1.2  # a few big sites, a long tail
        self.site_cdf = np.cumsum(weights / weights.sum())
        # Sizes 2..max_family of non-singleton families, P(size) ~ (size - 1) ** -1.6.
        sizes = np.arange(1, max_family) ** -1.6
        self.size_cdf = np.cumsum(sizes / sizes.sum())[:-1]
        self.sites: dict[int, _Site] = {}
        self.next_url = 0

    def site(self) -> _Site:
        n = min(int(np.searchsorted(self.site_cdf, self.rng.random())), len(self.site_cdf) - 1)
        if n not in self.sites:
            self.sites[n] = _make_site(self.seed, n)
        return self.sites[n]

    def url(self, site: _Site) -> str:
        self.next_url += 1
        return f"https://site{site.number}.example/path/{self.next_url}"

    def base(self, short: bool) -> _Doc:
        pars, counts, _ = _text()
        rng = self.rng
        if short:
            i = int(rng.integers(0, len(pars)))
            words = f"{pars[i]} {pars[(i + 1) % len(pars)]}".split(" ")
            n = int(rng.integers(5, 41))
            start = int(rng.integers(0, len(words) - n + 1))
            body = words[start : start + n]
            return _Doc(" ".join(body[: min(6, n)]), body)
        target = int(min(self.max_words, max(41, rng.lognormal(self.mu, self.sigma))))
        # Runs of 1-3 consecutive paragraphs from random places: coherent locally, and
        # unrelated documents rarely share more than a paragraph.  Drawn in bulk (numpy).
        chosen = np.zeros(0, dtype=np.int64)
        while counts[chosen].sum() < target:
            k = target // 50 + 4
            starts = rng.integers(0, len(pars), size=k)
            runs = rng.integers(1, 4, size=k)
            offsets = np.arange(runs.sum()) - np.repeat(np.cumsum(runs) - runs, runs)
            more = np.repeat(starts, runs) + offsets
            chosen = np.concatenate([chosen, more[more < len(pars)]])
        cum = np.cumsum(counts[chosen])
        last = int(np.searchsorted(cum, target))  # first paragraph reaching the target
        keep = target - (int(cum[last - 1]) if last else 0)
        tail = " ".join(str(pars[chosen[last]]).split(" ")[:keep])
        plist = _par_list()
        text = f" {_PAR} ".join([*(plist[i] for i in chosen[:last].tolist()), tail])
        body = text.split(" ")
        return _Doc(" ".join(w for w in body[:10] if w != _PAR), body)

    def edit(self, doc: _Doc, rate: float) -> _Doc:
        _, _, vocab = _text()
        rng = self.rng
        words = np.array(doc.words, dtype=object)
        editable = np.flatnonzero(words != _PAR)
        m = int(rng.binomial(len(editable), rate))
        if m == 0:
            return doc
        pos = rng.choice(editable, size=m, replace=False)
        op = rng.integers(0, 3, size=m)
        new = vocab[rng.integers(0, len(vocab), size=m)]
        words[pos[op == 0]] = new[op == 0]  # substitute
        words[pos[op == 1]] = ""  # delete (after the insertions, which shift indices)
        words = np.insert(words, np.sort(pos[op == 2]), new[op == 2])  # insert before
        return _Doc(doc.title, words[words != ""].tolist())

    def excerpt(self, doc: _Doc) -> _Doc:
        rng = self.rng
        n = len(doc.words)
        k = max(1, round(n * float(rng.uniform(0.3, 0.7))))
        start = int(rng.integers(0, n - k + 1))
        words = doc.words[start : start + k]
        while len(words) > 1 and words[0] == _PAR:
            words = words[1:]
        return _Doc(doc.title, words)

    def reformat(self, doc: _Doc, site: _Site, boilerplate: bool, plain: bool) -> str:
        """The page again with changes that leave its canonical token sequence as it was."""
        rng = self.rng
        kind = int(rng.integers(0, 4))
        if kind == 0:  # case, of the text only (entity names in markup are case-sensitive)
            change = str.upper if rng.random() < 0.5 else str.lower
            words = change(" ".join(doc.words)).split(" ")
            recased = _Doc(change(doc.title), words)
            return _render(recased, site, boilerplate, plain)[0]
        content = _render(doc, site, boilerplate, plain)[0]
        if kind == 1:  # punctuation next to white space only, so no tokens merge
            content = re.sub(r"[,;:](?=\s)", "", content)
            return content.replace(". ", "! ") if rng.random() < 0.5 else content
        if kind == 2:  # white space
            return re.sub(r" (?=[A-Za-z]{6})", "\n   ", content).replace(". ", ".\t\t")
        if not plain:  # character references instead of characters
            return content.replace("'", "&#39;").replace(" the ", " &#116;he ")
        return content.replace(" ", "  ")

    def family(self, family_id: int) -> list[tuple[str, str, str, int]]:
        """(url, content, content_type, family) of each member, the base first."""
        rng = self.rng
        short = rng.random() < self.short_share
        size = 1
        if rng.random() >= self.singleton_share:
            size = 2 + int(np.searchsorted(self.size_cdf, rng.random()))
        doc = self.base(short)
        site = self.site()
        bp_rate = site.boilerplate_rate / 4 if short else site.boilerplate_rate
        plain = rng.random() < 0.04
        with_bp = bool(rng.random() < bp_rate)
        content, ctype = _render(doc, site, with_bp, plain)
        out = [(self.url(site), content, ctype, family_id)]
        kinds = np.searchsorted(_VARIANT_CDF, rng.random(size - 1))
        for kind in (VARIANT_KINDS[k] for k in kinds):
            other = self.site()
            if kind == "template":
                out.append((self.url(other), *_render(doc, other, False, False), family_id))
            elif kind == "boilerplate":
                out.append((self.url(other), *_render(doc, other, True, plain), family_id))
            elif kind == "edit":
                rate = EDIT_RATES[int(rng.integers(0, len(EDIT_RATES)))]
                out.append(
                    (self.url(site), *_render(self.edit(doc, rate), site, False, plain), family_id)
                )
            elif kind == "excerpt":
                out.append(
                    (self.url(site), *_render(self.excerpt(doc), site, False, plain), family_id)
                )
            elif kind == "exact":
                out.append((self.url(other), content, ctype, family_id))
            else:
                changed = self.reformat(doc, site, with_bp, plain)
                out.append((self.url(site), changed, ctype, family_id))
        return out


def iter_pages(
    n_docs: int,
    seed: int,
    short_share: float = 0.15,
    *,
    n_sites: int = 2000,
    singleton_share: float = 0.6,
    max_family: int = 20,
    max_delay: int = 5000,
    median_words: int = 600,
    sigma: float = 0.85,
    max_words: int = 10_000,
) -> Iterator[Page]:
    """Yield ``n_docs`` pages in fetch order, holding only pages not yet due (streaming).

    A family's base is due when the family is made, each variant 1 to ``max_delay`` pages
    later (exponential, mean ``max_delay / 8``); families are made when nothing is due.
    """
    if n_docs < 0 or not 0.0 <= short_share <= 1.0:
        raise ValueError("n_docs must be >= 0 and short_share in [0, 1]")
    gen = _Generator(
        seed, short_share, n_sites, singleton_share, max_family, median_words, sigma, max_words
    )
    sched = np.random.default_rng([seed, 0x5C])
    clock = np.random.default_rng([seed, 0x71])
    pending: list[tuple[int, int, tuple[str, str, str, int]]] = []
    seq = 0
    families = 0
    now = _T0
    gaps: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
    for pos in range(n_docs):
        while not pending or pending[0][0] > pos:
            members = gen.family(families)
            families += 1
            delays = np.minimum(max_delay, 1 + sched.exponential(max_delay / 8, len(members)))
            for i, member in enumerate(members):
                due = pos if i == 0 else pos + int(delays[i])
                heapq.heappush(pending, (due, seq, member))
                seq += 1
        _, _, (url, content, ctype, family) = heapq.heappop(pending)
        if pos % 4096 == 0:  # gaps in blocks: one vectorised draw per 4096 pages
            gaps = 1 + clock.exponential(1500.0, 4096).astype(np.int64)
        now += timedelta(milliseconds=int(gaps[pos % 4096]))
        stamp = now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        yield Page(url, content, stamp, ctype, family)


def generate(
    n_docs: int,
    seed: int,
    short_share: float = 0.15,
    *,
    n_sites: int = 2000,
    singleton_share: float = 0.6,
    max_family: int = 20,
    max_delay: int = 5000,
    median_words: int = 600,
    sigma: float = 0.85,
    max_words: int = 10_000,
) -> list[Page]:
    """All pages of :func:`iter_pages` as a list."""
    return list(
        iter_pages(
            n_docs,
            seed,
            short_share,
            n_sites=n_sites,
            singleton_share=singleton_share,
            max_family=max_family,
            max_delay=max_delay,
            median_words=median_words,
            sigma=sigma,
            max_words=max_words,
        )
    )


def write_jsonl(pages: Iterable[Page], path: str) -> int:
    """Write the detector's input contract, one JSON object a line; returns the page count."""
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for p in pages:
            record = {
                "url": p.url,
                "content": p.content,
                "fetched_at": p.fetched_at,
                "content_type": p.content_type,
            }
            fh.write(json.dumps(record, ensure_ascii=False))
            fh.write("\n")
            n += 1
    return n


if __name__ == "__main__":
    import argparse
    import time

    ap = argparse.ArgumentParser(description="Write a benchmark corpus as JSON Lines.")
    ap.add_argument("n_docs", type=int)
    ap.add_argument("output")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--short-share", type=float, default=0.15)
    args = ap.parse_args()
    t0 = time.perf_counter()
    count = write_jsonl(iter_pages(args.n_docs, args.seed, args.short_share), args.output)
    dt = time.perf_counter() - t0
    print(json.dumps({"docs": count, "seconds": round(dt, 2), "docs_per_s": round(count / dt)}))
