"""The CLI asks glibc for two malloc arenas, unless the environment says otherwise."""

from __future__ import annotations

import ctypes

import pytest
from neardup.streams.cli.malloc import limit_malloc_arenas


def test_the_environment_has_the_last_word(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False


def test_glibc_takes_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    glibc = hasattr(ctypes.CDLL(None), "gnu_get_libc_version")
    assert limit_malloc_arenas() is glibc
