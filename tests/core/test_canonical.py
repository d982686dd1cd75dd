"""The canonical form: markup, case, punctuation and white space left out."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from neardup.core import Tokenizer, canonical, html_to_text, looks_like_html, to_canonical_text
from neardup.core._hashing import seeded_constant
from neardup.core.canonical import _EXPANDS, TokenBatch, _token_table

HTML = """<!DOCTYPE html><html><head><title>Caf&eacute; news</title>
<style>body { color: red }</style><script>var tracking = "secret words";</script></head>
<body><nav>Home | About</nav><p>The caf&eacute; opens&nbsp;today.</p>
<noscript>enable javascript</noscript><template>hidden template</template></body></html>"""


def test_html_is_reduced_to_visible_text() -> None:
    text = html_to_text(HTML)
    assert "Café" in text and "opens" in text and "today" in text
    for hidden in ("secret", "color", "enable javascript", "hidden template", "<p>"):
        assert hidden not in text


def test_html_detection() -> None:
    assert looks_like_html(HTML)
    assert looks_like_html("<p>hello</p>")
    assert looks_like_html("x < y", "text/html")
    assert not looks_like_html("if a < b and c > d then")
    assert not looks_like_html("<p>markup shown as text</p>", "text/plain")


def _token_strings(text: str, unit: str = "word") -> TokenBatch:
    return Tokenizer(1, unit).hash_batch([to_canonical_text(text)])  # type: ignore[arg-type]


def test_case_punctuation_and_space_are_ignored() -> None:
    a = _token_strings("Hello, WORLD!  It's   fine...")
    b = _token_strings("hello world it s fine")
    assert np.array_equal(a.hashes, b.hashes)


def test_tokens_are_runs_of_letters_and_digits_in_any_script() -> None:
    batch = _token_strings("Straße 42 — Ωμέγα_δέλτα 東京")
    # straße, 42, ωμέγα, δέλτα, 東京 (the underscore separates)
    assert len(batch.hashes) == 5
    assert np.array_equal(_token_strings("STRASSE").hashes, _token_strings("straße").hashes)


def test_character_unit_makes_one_token_per_letter() -> None:
    assert len(_token_strings("東京 タワー", "character").hashes) == 5


@given(st.lists(st.text(max_size=40), min_size=1, max_size=8))
def test_batch_equals_documents_one_by_one(texts: list[str]) -> None:
    tokenizer = Tokenizer(7)
    batch = tokenizer.hash_batch(texts)
    for index, text in enumerate(texts):
        assert np.array_equal(batch.of(index), tokenizer.hash_batch([text]).hashes)


@given(
    st.lists(st.sampled_from(["alpha", "beta", "gamma", "x", "yy", "42"]), min_size=1, max_size=30)
)
def test_equal_words_hash_equal_and_distinct_words_differ(words: list[str]) -> None:
    hashes = Tokenizer(3).hash_batch([" ".join(words)]).hashes
    assert len(hashes) == len(words)
    by_word: dict[str, int] = {}
    for word, value in zip(words, hashes.tolist(), strict=True):
        assert by_word.setdefault(word, value) == value
    assert len(set(by_word.values())) == len(by_word)


_MASK = (1 << 64) - 1


def _fmix64(x: int) -> int:
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & _MASK
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & _MASK
    return x ^ (x >> 33)


def _defined_hashes(text: str, seed: int, unit: str) -> list[int]:
    """The token hashes by their definition, one token at a time in Python: runs of ``[^\\W_]``
    in ``text.casefold()`` (single characters in character mode), each a polynomial of its
    code points, mixed."""
    base, mix = seeded_constant(seed, 1, odd=True), seeded_constant(seed, 2)
    folded = text.casefold()
    if unit == "character":
        return [_fmix64(ord(char) ^ mix) for char in re.findall(r"[^\W_]", folded)]
    hashes = []
    for token in re.findall(r"[^\W_]+", folded):
        polynomial = sum((ord(c) + 1) * pow(base, i, 1 << 64) for i, c in enumerate(token))
        tag = len(token) * 0x9E3779B97F4A7C15 & _MASK
        hashes.append(_fmix64((polynomial & _MASK) ^ tag ^ mix))
    return hashes


# text with the characters folding needs care with: ß -> ss, İ -> i + a combining dot (not a
# letter), U+0345 (a combining mark) -> iota (a letter), ligatures, final sigma, lone surrogates
_TRICKY = st.text(
    alphabet=st.one_of(
        st.characters(codec=None, categories=None),
        st.sampled_from("ßẞİıﬁﬃͅΣσςǅǄǰ\ud800\udfff_ \x00"),
    ),
    max_size=40,
)


@given(st.lists(_TRICKY, min_size=1, max_size=6), st.sampled_from(["word", "character"]))
def test_token_hashes_equal_their_definition(texts: list[str], unit: str) -> None:
    """The batch tokenizer folds case with a table over code points, in numpy; the hashes are
    those of ``str.casefold`` and a regex, whether or not the texts were folded before."""
    tokenizer = Tokenizer(11, unit)  # type: ignore[arg-type]
    batch = tokenizer.hash_batch(texts)
    folded = tokenizer.hash_batch([text.casefold() for text in texts])
    assert np.array_equal(batch.offsets, folded.offsets)
    assert np.array_equal(batch.hashes, folded.hashes)
    for index, text in enumerate(texts):
        assert batch.of(index).tolist() == _defined_hashes(text, 11, unit)


def test_fold_table_is_casefold_of_every_code_point() -> None:
    table = _token_table()
    for code in range(0x110000):
        folded = chr(code).casefold()
        if len(folded) > 1:
            assert table[code] == _EXPANDS
        elif re.fullmatch(r"[^\W_]", folded):
            assert table[code] == ord(folded) + 1
        else:
            assert table[code] == 0


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_html_text_is_the_same_from_text_and_from_its_bytes(fragment: str) -> None:
    html = f"<html><body><p>{fragment}</p><script>x</script>{fragment}</body></html>"
    assert html_to_text(html) == html_to_text(html.encode("utf-8"))


@given(st.lists(st.text(alphabet="abcdeéß1 .", max_size=400), max_size=8), st.integers(1, 64))
def test_hashing_in_chunks_gives_the_hashes_of_one_pass(texts: list[str], chunk: int) -> None:
    """Tokens are hashed a chunk of characters at a time (bounded memory); the hashes are
    those of one prefix sum over the batch, long tokens included."""
    whole = Tokenizer(5).hash_batch(texts)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(canonical, "_CHUNK", chunk)
        chunked = Tokenizer(5).hash_batch(texts)
    assert np.array_equal(whole.hashes, chunked.hashes)
    assert np.array_equal(whole.offsets, chunked.offsets)
