"""The command table: environment variables read one way, bad values as clear errors,
settings flags treated alike by run and worker, and the README's usage block in step."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from neardup.core import Settings
from neardup.state import State
from neardup.streams.cli import main, parser
from neardup.streams.cli.commands import COMMANDS
from neardup.streams.cli.handlers import worker_config
from neardup.streams.cli.options import resolve_environment
from neardup.streams.cli.usage import readme_block
from neardup.streams.kafka.config import detector_dir

from tests.helpers import REPO, SAMPLE


def _worker_args(*argv: str, environ: dict[str, str] | None = None) -> object:
    args = parser().parse_args(["worker", *argv])
    resolve_environment(args.command.options, args, environ or {})
    return args


def test_the_readme_usage_block_is_the_command_table() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert readme_block() in readme, (
        "README.md's usage block is stale: python -m neardup.streams.cli.usage --write README.md"
    )


def test_every_option_is_in_its_command_help() -> None:
    for command in COMMANDS:
        shown = subprocess.run(
            [sys.executable, "-m", "neardup.streams", command.name, "--help"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for option in command.options:
            if option.hidden:
                continue
            assert (option.flags[0] if option.flags else option.metavar) in shown, option.dest
            if option.env:
                assert option.env in shown, option.env


def test_flags_win_over_the_environment_and_the_environment_over_defaults() -> None:
    environ = {"NEARDUP_BROKER": "env:1", "NEARDUP_PARTITIONS": "8", "NEARDUP_STATE": "/s"}
    args = _worker_args("--broker", "flag:2", environ=environ)
    assert (args.broker, args.partitions, args.state) == ("flag:2", 8, "/s")  # type: ignore[attr-defined]
    assert args.app_id == "neardup" and args.prepare == "process"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("NEARDUP_PARTITIONS", "abc", "$NEARDUP_PARTITIONS='abc': 'abc' is not an integer"),
        ("NEARDUP_PREPARE", "cluster", "$NEARDUP_PREPARE='cluster': use one of process, thread"),
        ("NEARDUP_THRESHOLD", "high", "$NEARDUP_THRESHOLD='high': 'high' is not a number"),
    ],
)
def test_a_bad_environment_value_is_a_clear_error(
    tmp_path: Path, variable: str, value: str, message: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "neardup.streams", "worker", "--state", str(tmp_path)],
        env={"NEARDUP_BROKER": "127.0.0.1:1", variable: value, "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert f"neardup: error: {message}" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_bad_setting_is_a_clear_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = str(tmp_path / "s")
    assert main(["run", "--quiet", "--state", state, "--threshold", "1.5", str(SAMPLE)]) == 2
    assert "threshold=1.5 is out of range" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # argparse's own exit: usage and message
        main(["run", "--quiet", "--state", state, "--shingle-size", "x", str(SAMPLE)])
    assert refused.value.code == 2
    assert "--shingle-size: 'x' is not an integer" in capsys.readouterr().err


def test_run_and_worker_keep_a_stored_setting_that_is_not_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "run-state"
    assert main(["run", "--quiet", "--state", str(state), "--threshold", "0.7", str(SAMPLE)]) == 0
    assert main(["run", "--quiet", "--state", str(state), str(SAMPLE)]) == 0  # kept, not 0.5
    assert main(["run", "--quiet", "--state", str(state), "--posting-cap", "50", str(SAMPLE)]) == 0
    with State.open(state) as opened:
        assert (opened.settings.threshold, opened.settings.posting_cap) == (0.7, 50)
    assert main(["run", "--quiet", "--state", str(state), "--threshold", "0.5", str(SAMPLE)]) == 2
    assert "threshold: stored 0.7, requested 0.5" in capsys.readouterr().err

    workdir = tmp_path / "worker-state"
    with State.open(detector_dir(workdir), Settings(threshold=0.7)):
        pass
    kept = worker_config(_worker_args("--broker", "h:1", "--state", str(workdir)))  # type: ignore[arg-type]
    assert kept.settings.threshold == 0.7
    changed = worker_config(
        _worker_args("--broker", "h:1", "--state", str(workdir), "--posting-cap", "9")  # type: ignore[arg-type]
    )
    assert (changed.settings.threshold, changed.settings.posting_cap) == (0.7, 9)
    fresh = worker_config(_worker_args("--broker", "h:1", "--state", str(tmp_path / "new")))  # type: ignore[arg-type]
    assert fresh.settings == Settings()


def test_a_worker_with_a_conflicting_setting_is_refused_before_any_broker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with State.open(detector_dir(tmp_path), Settings(threshold=0.7)):
        pass
    argv = ["worker", "--broker", "127.0.0.1:1", "--state", str(tmp_path), "--threshold", "0.5"]
    assert main(argv) == 2
    assert "threshold: stored 0.7, requested 0.5" in capsys.readouterr().err


def test_a_required_option_missing_names_its_flag_and_variable(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NEARDUP_BROKER", raising=False)
    assert main(["publish", str(SAMPLE)]) == 2
    assert "--broker HOST:PORT (or $NEARDUP_BROKER) is required" in capsys.readouterr().err


def test_clusters_of_a_state_ignore_a_broker_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state = str(tmp_path / "s")
    assert main(["run", "--quiet", "--state", state, str(SAMPLE)]) == 0
    capsys.readouterr()
    monkeypatch.setenv("NEARDUP_BROKER", "127.0.0.1:1")  # nothing listens: it must not be used
    assert main(["clusters", "--state", state]) == 0
    assert capsys.readouterr().out.count('"cluster"') > 1


def test_the_commands_that_do_not_serve_start_without_the_http_stack() -> None:
    # aiohttp and the metrics client are a tenth of a second or more of every start
    probe = (
        "import sys; from neardup.streams.cli import main; "
        "print(sorted({'aiohttp', 'prometheus_client'} & set(sys.modules)))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert shown.stdout.strip() == "[]"


@pytest.mark.parametrize("text", ["127.0.0.1", "host:http", "127.0.0.1:70000"])
def test_a_bad_http_address_is_refused_naming_the_form(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["serve", "--state", "x", "--http", text])
    assert f"--http {text!r}:" in capsys.readouterr().err
