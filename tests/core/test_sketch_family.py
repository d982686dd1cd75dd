"""The sketch family is a stable hash: the same in every process, different per settings."""

from __future__ import annotations

import subprocess
import sys

from neardup.core import Settings, sketch_family

_PRINT_FAMILY = (
    "from neardup.core import Settings, sketch_family; "
    "print(sketch_family(Settings(shingle_size=7, token_unit='character')))"
)


def _family_in_a_process(hash_seed: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", _PRINT_FAMILY],
        env={"PYTHONHASHSEED": hash_seed, "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def test_the_family_is_the_same_in_processes_with_different_string_hashes() -> None:
    expected = sketch_family(Settings(shingle_size=7, token_unit="character"))
    assert _family_in_a_process("1") == expected
    assert _family_in_a_process("2") == expected


def test_each_sketch_shaping_setting_changes_the_family() -> None:
    base = Settings()
    changed = [
        base.replace(seed=base.seed + 1),
        base.replace(token_unit="character"),
        base.replace(shingle_size=6),
        base.replace(sample_size=128, short_limit=100),
    ]
    families = {sketch_family(s) for s in changed}
    assert sketch_family(base) not in families
    assert len(families) == len(changed)
    # settings that do not shape sketches keep the family
    assert sketch_family(base.replace(threshold=0.8, posting_cap=50)) == sketch_family(base)
