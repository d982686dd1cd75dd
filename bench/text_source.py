"""Real English prose that exists on any machine with CPython 3.11 and nothing downloaded.

Where the text comes from: the docstrings and comments of the Python standard library, the
``.py`` files under ``sysconfig.get_paths()["stdlib"]``.  Test suites (``test``, ``tests``,
``idle_test``), ``site-packages``, build configuration (``config-*``), codec tables
(``encodings``), ``lib2to3`` and ``turtledemo`` are skipped.  Files are visited in sorted path
order.  Docstrings are taken with :mod:`ast` (module, class and function docstrings, in
``ast.walk`` order); comments are runs of consecutive full-line ``#`` comments (a line regex:
:mod:`tokenize` is much slower).  ``pydoc_data/topics.py`` holds the language reference as
string constants rather than docstrings; being the largest block of prose in the stdlib, its
string values are taken too.  Each block is split into paragraphs at blank lines, white space
is normalised, and only prose is kept: at least ``MIN_WORDS`` words, at least 80 % of
non-space characters letters, at least 70 % of words purely alphabetic (drops code, tables,
doctest sessions).  Exact duplicate paragraphs are dropped (first occurrence wins).

License: the Python standard library, docstrings and comments included, is distributed under
the Python Software Foundation License Version 2 (PSF-2.0), see ``LICENSE.txt`` in the stdlib
directory.  The text is read at run time; nothing of it is copied into this repository.

``python -m bench.text_source`` prints the yield (paragraphs, words, median words a
paragraph, fingerprint).  Extraction is slow (an ``ast`` parse of the whole stdlib); the
result is cached on disk in the temp directory, keyed by interpreter build.  The set depends
on the CPython patch release installed, so a corpus is reproducible for a given seed *and*
Python build; :func:`fingerprint` identifies the text.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import itertools
import json
import os
import re
import sys
import sysconfig
import tempfile
from collections.abc import Iterator

MIN_WORDS = 20
_EXTRACTOR_VERSION = 2
# Directory names never walked into: tests (not prose, and huge), third-party code, build data,
# codec tables (long tables of characters).
_SKIP_DIRS = frozenset(
    {
        "test",
        "tests",
        "idle_test",
        "site-packages",
        "dist-packages",
        "__pycache__",
        "encodings",
        "lib2to3",  # mostly fixer tests and grammar data
        "turtledemo",
    }
)
_WS = re.compile(r"\s+")
_BLANK = re.compile(r"\n\s*\n")
_ALPHA_WORD = re.compile(r"^[A-Za-z][a-z]*[,.;:]?$")
_COMMENT_LINE = re.compile(r"^\s*#+(.*)$")
# pydoc_data/topics.py is the language reference as string constants, not docstrings: the
# largest block of prose in the stdlib, so its string values are taken too.
_DOC_STRING_FILES = frozenset({"topics.py"})


def _stdlib_files() -> list[str]:
    root = sysconfig.get_paths()["stdlib"]
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        # Pruning in place keeps os.walk from descending; sorting makes the walk deterministic.
        dirnames[:] = sorted(
            d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("config-")
        )
        out.extend(os.path.join(dirpath, f) for f in filenames if f.endswith(".py"))
    out.sort()
    return out


def _docstrings(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                yield doc


def _comment_blocks(source: str) -> Iterator[str]:
    # Full-line comments only, found by a line regex: tokenize is much slower, and trailing
    # comments are rarely prose.  Consecutive comment lines form one block.
    block: list[str] = []
    for line in source.splitlines():
        m = _COMMENT_LINE.match(line)
        if m:
            block.append(m.group(1).strip())
        elif block:
            yield "\n".join(block)
            block = []
    if block:
        yield "\n".join(block)


def _string_constants(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def _is_prose(par: str) -> bool:
    words = par.split(" ")
    if len(words) < MIN_WORDS:
        return False
    chars = par.replace(" ", "")
    letters = sum(c.isalpha() for c in chars)
    if letters < 0.8 * len(chars):
        return False
    alpha_words = sum(1 for w in words if _ALPHA_WORD.match(w))
    return alpha_words >= 0.7 * len(words)


def _paragraphs_of(block: str) -> Iterator[str]:
    for raw in _BLANK.split(block):
        par = _WS.sub(" ", raw).strip()
        if par and _is_prose(par):
            yield par


def _extract() -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for path in _stdlib_files():
        try:
            with open(path, encoding="utf-8") as fh:
                source = fh.read()
            tree = ast.parse(source, filename=path)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        if os.path.basename(path) in _DOC_STRING_FILES:
            blocks: Iterator[str] = _string_constants(tree)
        else:
            blocks = itertools.chain(_docstrings(tree), _comment_blocks(source))
        for block in blocks:
            for par in _paragraphs_of(block):
                if par not in seen:
                    seen.add(par)
                    out.append(par)
    return out


def _cache_path() -> str:
    # Keyed by interpreter build and extractor version: another CPython gives another text.
    key = f"{_EXTRACTOR_VERSION}|{sys.version}|{sysconfig.get_paths()['stdlib']}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"neardup-bench-text-{digest}.json")


@functools.cache
def paragraphs() -> list[str]:
    """All prose paragraphs of the installed stdlib, in deterministic order.

    Cached in-process and on disk (parsing the stdlib with ``ast`` is slow, reading the cache
    file is not).
    """
    path = _cache_path()
    try:
        with open(path, encoding="utf-8") as fh:
            cached = json.load(fh)
        if isinstance(cached, list) and all(isinstance(x, str) for x in cached):
            return cached
    except (OSError, ValueError):
        pass
    out = _extract()
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(out, fh)
        os.replace(tmp, path)  # atomic: concurrent processes never read a partial file
    except OSError:
        pass
    return out


def fingerprint() -> str:
    """Short hash identifying the paragraph list (differs between CPython builds)."""
    h = hashlib.sha256()
    for par in paragraphs():
        h.update(par.encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def stats() -> dict[str, int | float | str]:
    """Counts used to check the source is large enough for the benchmark corpora."""
    pars = paragraphs()
    lengths = sorted(len(p.split(" ")) for p in pars)
    return {
        "paragraphs": len(pars),
        "words": sum(lengths),
        "median_words_per_paragraph": lengths[len(lengths) // 2] if lengths else 0,
        "max_words_per_paragraph": lengths[-1] if lengths else 0,
        "fingerprint": fingerprint(),
    }


if __name__ == "__main__":
    import time

    t0 = time.perf_counter()
    s = stats()
    s["seconds"] = round(time.perf_counter() - t0, 2)
    print(json.dumps(s))
