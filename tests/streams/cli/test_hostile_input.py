"""What a hostile user meets: no record stops a run, no input holds a core or gigabytes for
long, the read commands never write a state, and every error is one line with status 2."""

from __future__ import annotations

import json
import random
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from neardup.core.markup import MAX_MARKUP_DEPTH
from neardup.state import State

from tests.streams.cli.test_commands import SAMPLE, neardup

GOOD = [
    json.dumps({"url": f"https://ok.example/{n}", "content": f"a fine page number {n} " * 20})
    for n in range(3)
]
HUGE_INTEGER = '{"url": "https://x/", "content": "text", "views": ' + "7" * 100_000 + "}"


def _file(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _dead_letters(state: Path) -> list[dict[str, str]]:
    text = (state / "dead-letters.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def _documents(state: Path) -> int:
    with State.follow(state) as opened:
        return opened.view().counters.get("documents")


def test_a_huge_integer_in_any_field_is_a_dead_letter_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    inputs = _file(tmp_path, "in.jsonl", [GOOD[0], HUGE_INTEGER, GOOD[1]])
    result = neardup("run", "--state", str(tmp_path / "s"), str(inputs))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert [d["reason"] for d in _dead_letters(tmp_path / "s")] == ["bad_number"]
    assert _documents(tmp_path / "s") == 2


def test_fold_leaves_out_a_bad_item_with_its_reason(tmp_path: Path) -> None:
    run = neardup("run", "--state", str(tmp_path / "s"), str(SAMPLE))
    assert run.returncode == 0
    ranked = _file(
        tmp_path, "ranked.txt", ["https://news.example/article-12", HUGE_INTEGER, GOOD[0]]
    )
    result = neardup("fold", "--state", str(tmp_path / "s"), str(ranked))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stderr)["reason"] == "bad_number"
    assert len(result.stdout.splitlines()) == 2  # the known URL's group and the inline page


def test_deep_markup_is_a_dead_letter_naming_the_bound(tmp_path: Path) -> None:
    deep = [
        json.dumps({"url": f"https://deep/{n}", "content": "<html><body>" + tag * 100_000})
        for n, tag in enumerate(["<div>", "<ul><li>", "<blockquote>"])
    ]
    inputs = _file(tmp_path, "in.jsonl", [GOOD[0], *deep, GOOD[1]])
    result = neardup("run", "--state", str(tmp_path / "s"), str(inputs))
    assert result.returncode == 0, result.stderr
    letters = _dead_letters(tmp_path / "s")
    assert [d["reason"] for d in letters] == ["markup_too_deep"] * 3
    assert str(MAX_MARKUP_DEPTH) in letters[0]["error"]
    assert "3 dead letters (markup_too_deep 3)" in result.stderr


@pytest.mark.slow
def test_large_records_are_prepared_in_batches_bounded_by_bytes(tmp_path: Path) -> None:
    """Ten records of 8 MB, each under the record limit, in one process: its peak memory
    stays under 1.5 GB (far more when batches were bounded by records alone: docs/limits.md)."""
    words = [f"w{n:x}" for n in range(20_000)]
    inputs = tmp_path / "big.jsonl"
    with inputs.open("w") as out:
        for n in range(10):
            text = " ".join(words[(n * 7919 + k * 104_729) % len(words)] for k in range(1_300_000))
            out.write(json.dumps({"url": f"https://big/{n}", "content": text[:8_000_000]}) + "\n")
    command = ["run", "--state", str(tmp_path / "s"), "--prepare", "thread", str(inputs)]
    result = subprocess.run(
        [sys.executable, "-m", "neardup.streams", *command],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "10 new documents" in result.stderr
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    assert peak_mb < 1536, f"peak RSS {peak_mb:.0f} MB"


def test_missing_or_directory_inputs_are_refused_before_anything_is_read(tmp_path: Path) -> None:
    for bad, says in [(tmp_path / "nothing.jsonl", "no such file"), (tmp_path, "a directory")]:
        result = neardup("run", "--state", str(tmp_path / "s"), str(SAMPLE), str(bad))
        assert result.returncode == 2
        assert result.stderr.startswith("neardup: error: ") and says in result.stderr
        assert not (tmp_path / "s").exists()  # nothing processed, not even a state made


@pytest.mark.parametrize("command", ["stats", "clusters", "history", "query", "fold"])
def test_read_commands_create_nothing_in_an_empty_directory(tmp_path: Path, command: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    ranked = _file(tmp_path, "ranked.txt", ["https://a/", "https://b/"])
    target = {"history": ["https://a/"], "query": [str(SAMPLE)], "fold": [str(ranked)]}
    result = neardup(command, "--state", str(empty), *target.get(command, []))
    assert result.returncode == 2
    assert result.stderr.startswith("neardup: error: there is no state in")
    assert list(empty.iterdir()) == []


def _listing(directory: Path) -> dict[str, tuple[int, int]]:
    return {
        path.name: (path.stat().st_size, path.stat().st_mtime_ns) for path in directory.iterdir()
    }


def test_read_commands_change_nothing_and_read_beside_a_writer(tmp_path: Path) -> None:
    state = tmp_path / "s"
    assert neardup("run", "--state", str(state), str(SAMPLE)).returncode == 0
    before = _listing(state)
    for args in (["stats"], ["clusters"], ["history", "https://news.example/article-12"]):
        result = neardup(args[0], "--state", str(state), *args[1:])
        assert result.returncode == 0, result.stderr
    assert _listing(state) == before  # not a file created, rewritten or touched
    with State.open(state):  # a writer holds the state (and its lock)
        result = neardup("stats", "--state", str(state))
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["documents"] == 148


def test_read_commands_find_a_worker_s_detector_state(tmp_path: Path) -> None:
    worker = tmp_path / "w1"  # a worker keeps its detector's state in DIR/detector
    assert neardup("run", "--state", str(worker / "detector"), str(SAMPLE)).returncode == 0
    result = neardup("stats", "--state", str(worker))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["documents"] == 148


def _in_namespace(script: str) -> subprocess.CompletedProcess[str]:
    """``script`` in a mount namespace of its own (mounts there vanish with it)."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux) for a private mount namespace")
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"user and mount namespaces are not allowed here: {probe.stderr!r}")
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_read_commands_read_a_copy_on_read_only_media(tmp_path: Path) -> None:
    state, mounted = tmp_path / "s", tmp_path / "ro"
    assert neardup("run", "--state", str(state), str(SAMPLE)).returncode == 0
    mounted.mkdir()
    command = f"{sys.executable} -m neardup.streams"
    result = _in_namespace(
        f"mount --bind {state} {mounted} && mount -o remount,bind,ro {mounted} && "
        f"{command} stats --state {mounted} && {command} clusters --state {mounted} && "
        f"{command} query --state {mounted} {SAMPLE}"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[0])["documents"] == 148


def test_a_full_disk_is_one_error_and_a_rerun_with_room_recovers(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    words = random.Random(5).choices([f"w{n:x}" for n in range(5000)], k=3000 * 300)
    lines = [
        json.dumps({"url": f"https://m/{n}", "content": " ".join(words[n * 300 : n * 300 + 300])})
        for n in range(3000)
    ]
    inputs = _file(tmp_path, "in.jsonl", lines)
    command = f"{sys.executable} -m neardup.streams run --quiet --state {disk}/s {inputs}"
    stats = f"{sys.executable} -m neardup.streams stats --state {disk}/s"
    result = _in_namespace(
        f"mount -t tmpfs -o size=4m tmpfs {disk} && {{ {command}; echo status=$?; }} && "
        f"mount -o remount,size=256m {disk} && {command} && {stats}"
    )
    assert result.returncode == 0, result.stderr
    first = result.stderr.partition("\n")[0]
    assert first.startswith("neardup: error: the disk holding the state in")
    assert "is full" in first and "Traceback" not in result.stderr
    assert "status=2" in result.stdout
    assert json.loads(result.stdout.splitlines()[-1])["documents"] == 3000
