"""Builds samples/pages.jsonl, the demo corpus: real text, real kinds of near-duplicates.

Text: docstrings and comments of the Python standard library (PSF-2.0), via bench.text_source.
Run `python samples/build.py` from the repo root; the output is committed so that the demo
does not depend on the local Python version.
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.text_source import paragraphs

TEMPLATES = {
    "news": "<!DOCTYPE html><html><head><title>{title} | Daily Python News</title>"
    "<style>nav{{float:left}}</style>"
    '<script>window.analytics = {{"id": 42}};</script></head><body><nav><a href="/">Home</a> '
    '<a href="/topics">Topics</a>'
    "</nav><main><h1>{title}</h1>{body}</main><footer>Copyright 2026 Daily Python News. "
    "All rights reserved.</footer></body></html>",
    "mirror": "<html><head><meta charset=utf-8><title>{title}</title></head><body>"
    "<div class=wrap><div id=c>"
    "<h2>{title}</h2>{body}</div><div class=side>Mirror of the Python documentation</div>"
    "</div></body></html>",
}
BOILERPLATE = (
    "Welcome to the community archive. Sign in to comment, subscribe to the newsletter, and "
    "follow us for updates. Cookies help us deliver our services; by using them you agree to "
    "our use of cookies. "
)


def _html(template: str, title: str, text: str) -> str:
    body = "".join(f"<p>{p}</p>" for p in text.split("\n\n"))
    return TEMPLATES[template].format(title=title, body=body)


def _edit(text: str, rate: float, rng: random.Random, vocabulary: list[str]) -> str:
    words = text.split(" ")
    out = []
    for word in words:
        roll = rng.random()
        if roll < rate / 3:
            continue
        if roll < 2 * rate / 3:
            out.append(rng.choice(vocabulary))
        elif roll < rate:
            out.extend([word, rng.choice(vocabulary)])
        else:
            out.append(word)
    return " ".join(out)


def build(seed: int = 2026) -> list[dict[str, str]]:
    rng = random.Random(seed)
    pool = [p for p in paragraphs() if 40 <= len(p.split()) <= 200]
    rng.shuffle(pool)
    vocabulary = sorted({w for p in pool[:300] for w in p.split() if w.isalpha()})
    records: list[dict[str, str]] = []
    day = 0

    def add(url: str, content: str, content_type: str = "text/html") -> None:
        nonlocal day
        day += 1
        records.append(
            {
                "url": url,
                "content": content,
                "content_type": content_type,
                "fetched_at": f"2026-0{1 + day // 28 % 9}-{1 + day % 28:02d}T{day % 24:02d}:00:00Z",
            }
        )

    cursor = 0
    for family in range(14):
        count = rng.randint(3, 7)
        text = "\n\n".join(pool[cursor : cursor + count])
        cursor += count
        title = re.sub(r"[^A-Za-z ]", "", text.split(".")[0])[:60].strip() or f"Article {family}"
        slug = f"article-{family}"
        add(f"https://news.example/{slug}", _html("news", title, text))
        add(f"https://mirror.example/{slug}", _html("mirror", title, text))  # another template
        add(f"https://copies.example/{slug}", _html("news", title, text))  # exact copy
        amp = _html("news", title, text).replace("<p>", '<p class="amp">\n  ')
        add(f"https://news.example/{slug}?amp=1", amp)  # other markup, same text: canonical twin
        add(
            f"https://news.example/{slug}?print=1", text.upper().replace(".", " ."), "text/plain"
        )  # case/punct
        add(
            f"https://blog.example/{slug}-revised", _edit(text, 0.03, rng, vocabulary), "text/plain"
        )
        add(
            f"https://forum.example/{slug}-quoted",
            BOILERPLATE + _edit(text, 0.10, rng, vocabulary) + " " + BOILERPLATE,
            "text/plain",
        )
        paras = text.split("\n\n")
        add(
            f"https://digest.example/{slug}-excerpt",
            "\n\n".join(paras[: max(1, len(paras) * 3 // 5)]),
            "text/plain",
        )
    for single in range(20):  # unrelated pages
        text = "\n\n".join(pool[cursor : cursor + 3])
        cursor += 3
        add(f"https://misc.example/page-{single}", _html("news", f"Page {single}", text))
    for family in range(8):  # short documents: one sentence, lightly edited
        words = pool[cursor].split()[: rng.randint(12, 30)]
        cursor += 1
        sentence = " ".join(words)
        add(f"https://status.example/post-{family}", sentence, "text/plain")
        add(
            f"https://status.example/post-{family}-repost",
            _edit(sentence, 0.05, rng, vocabulary),
            "text/plain",
        )
    return records


def main() -> None:
    out = Path(__file__).with_name("pages.jsonl")
    with out.open("w", encoding="utf-8") as stream:
        for record in build():
            stream.write(json.dumps(record, ensure_ascii=False) + "\n")
        # bad records the demo must survive and report as dead letters
        stream.write("this line is not JSON\n")
        stream.write(json.dumps({"url": "https://bad.example/no-content"}) + "\n")
        stream.write(
            json.dumps({"url": "https://bad.example/binary", "content": "\x00\x01\x02PNG"}) + "\n"
        )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
