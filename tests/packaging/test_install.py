"""The user's top-level folders install as neardup.core / .state / .streams of one package."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECK = (
    "import importlib.util, json, neardup.core, neardup.state, neardup.streams;"
    "import neardup.streams.cli;"
    "print(json.dumps({'core': neardup.core.__file__, 'streams': neardup.streams.__file__,"
    " 'top_level_core': importlib.util.find_spec('core') is not None,"
    " 'top_level_state': importlib.util.find_spec('state') is not None}))"
)


def _check(
    python_args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> dict[str, object]:
    import json

    out = subprocess.run(
        [sys.executable, *python_args, "-c", CHECK],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_editable_install_imports_from_another_directory(tmp_path: Path) -> None:
    # the test environment itself is an editable install (`make test` runs `pip install -e`)
    found = _check([], cwd=tmp_path)
    assert found["core"] == str(REPO / "core" / "__init__.py")
    assert not found["top_level_core"] and not found["top_level_state"]


@pytest.mark.slow
def test_wheel_installs_subpackages_under_neardup_only(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(tmp_path / "dist"),
            str(REPO),
        ],
        check=True,
        timeout=300,
        capture_output=True,
    )
    wheels = list((tmp_path / "dist").glob("neardup-*.whl"))
    assert len(wheels) == 1
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(site),
            str(wheels[0]),
        ],
        check=True,
        timeout=300,
        capture_output=True,
    )
    assert sorted(p.name for p in site.iterdir() if not p.name.endswith((".dist-info", "bin"))) == [
        "neardup"
    ]
    assert sorted(p.name for p in (site / "neardup").iterdir()) == ["core", "state", "streams"]
    for layer in ("core", "state", "streams"):
        assert (site / "neardup" / layer / "py.typed").exists()
    # -S: no site-packages processing, so the editable finder of this venv cannot interfere
    dependencies = sysconfig.get_paths()["purelib"]
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{dependencies}"}
    found = _check(["-S"], cwd=tmp_path, env=env)
    assert found["core"] == str(site / "neardup" / "core" / "__init__.py")
    assert not found["top_level_core"]
