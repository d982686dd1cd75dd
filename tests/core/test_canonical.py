from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from neardup.core import Tokenizer, html_to_text, looks_like_html, to_canonical_text
from neardup.core.canonical import TokenBatch

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
