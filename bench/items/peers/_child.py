"""A peer run in a child process of its own, with time and memory limits."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._dedupe import run_dedupe
from ._splink import run_splink

#: seconds a child process may take, and the memory (MB of PSS, summed over its process
#: group: dedupe scores in worker processes) past which it is stopped
CHILD_TIMEOUT = 20 * 60
CHILD_MEMORY_MB = 16 * 1024


def _group_memory_mb(group: int) -> float:
    """The memory of the processes of a process group, in MB: the sum of their proportional
    set sizes (Linux's /proc/PID/smaps_rollup), so that pages a forked worker shares with its
    parent (dedupe's scoring processes) count once, not once a process as RSS would."""
    total_kb = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            # after the command's closing parenthesis: state, ppid, pgrp, ...
            if int(stat.rsplit(")", 1)[1].split()[2]) != group:
                continue
            for line in Path(f"/proc/{entry}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total_kb += int(line.split()[1])
                    break
        except (OSError, ValueError, IndexError):
            continue
    return total_kb / 2**10


def _run_child(command: list[str], timeout: float, memory_mb: float, log: Path) -> dict[str, Any]:
    """``scale.run_child`` with a memory limit: ``command`` runs in a process group of its
    own, whose memory (``_group_memory_mb``: summed PSS) is sampled each 0.5 s; the group is
    killed when it passes ``memory_mb`` or ``timeout`` seconds (and when the child ends:
    dedupe's worker processes go with it). Exit code, wall seconds, peak RSS (the child's
    own, ``wait4``), the group's peak memory (sampled: ``peak_group_mb``), ``timed_out``,
    ``memory_exceeded``, the end of the log on failure."""
    from ..scale import ROOT, _die_with_parent

    started = time.perf_counter()
    timed_out = over_memory = False
    group_peak = 0.0
    with log.open("wb") as sink:
        child = subprocess.Popen(
            command, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent, start_new_session=True,
        )  # fmt: skip

    def kill_group() -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)

    try:
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            group_peak = max(group_peak, _group_memory_mb(child.pid))
            if group_peak > memory_mb:
                over_memory = True
            elif time.perf_counter() - started > timeout:
                timed_out = True
            if over_memory or timed_out:
                kill_group()
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.5)
    except BaseException:
        kill_group()
        os.wait4(child.pid, 0)
        child.returncode = -signal.SIGKILL
        raise
    kill_group()  # what the child left running
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    child.returncode = code  # reaped here: Popen must not wait for it again
    peak = usage.ru_maxrss / (2**20 if sys.platform == "darwin" else 2**10)
    done: dict[str, Any] = {
        "exit_code": code,
        "wall_seconds": round(seconds, 1),
        "peak_rss_mb": round(peak, 1),
        "peak_group_mb": round(group_peak, 1),
        "timed_out": timed_out,
        "memory_exceeded": over_memory,
    }
    if timed_out:
        done["reason"] = f"stopped after {timeout:.0f} s (the time limit)"
    elif over_memory:
        done["reason"] = f"stopped at {group_peak:.0f} MB (PSS; the limit: {memory_mb:.0f} MB)"
    if code != 0:
        done["log_tail"] = log.read_text(errors="replace")[-3000:]
    return done


def run_in_child(
    peer: str,
    records: Sequence[Mapping[str, Any]],
    fields: Sequence[Sequence[Any]],
    truth: Mapping[str, str] | None = None,
    *,
    timeout: float = CHILD_TIMEOUT,
    memory_mb: float = CHILD_MEMORY_MB,
    **options: Any,
) -> dict[str, Any]:
    """``run_splink`` or ``run_dedupe`` in a child process (``python -m bench.items.peers``)
    in a process group of its own; the peer's result with the child's exit code, wall
    seconds, peak RSS in MB (the child's own; its process group's PSS, sampled) and whether
    the time or memory limit stopped it (``_run_child``). A child that failed or was stopped
    gives ``{"completed": False, "reason": ...}`` with the end of its log. The child's
    ``PYTHONHASHSEED`` is the seed: dedupe's runs repeat only under one hash seed."""
    with tempfile.TemporaryDirectory(prefix=f"peer-{peer}-") as tmp:
        scratch = Path(tmp)
        job = {
            "peer": peer,
            "records": list(records),
            "fields": [list(f) for f in fields],
            "truth": dict(truth or {}),
            "options": options,
        }
        (scratch / "job.json").write_text(json.dumps(job))
        del job
        # dedupe iterates sets of its predicates: their order, and so its questions and
        # blocking rules, follow the string hashes; the child's are seeded too
        hash_seed = f"PYTHONHASHSEED={int(options.get('seed', 0)) % 2**32}"
        command = [
            "env", hash_seed, sys.executable, "-m", "bench.items.peers", "--worker", str(scratch)
        ]  # fmt: skip
        child = _run_child(command, timeout, memory_mb, scratch / "log.txt")
        result_path = scratch / "result.json"
        if child["exit_code"] != 0 or not result_path.exists():
            if "reason" not in child:
                lines = child.get("log_tail", "").strip().splitlines()
                child["reason"] = f"exited with code {child['exit_code']}" + (
                    f": {lines[-1]}" if lines else ""
                )
            return {"completed": False, "peer": peer, **child}
        result: dict[str, Any] = json.loads(result_path.read_text())
        return {"completed": True, **result, "child": child}


def worker(scratch: Path) -> None:
    job = json.loads((scratch / "job.json").read_text())
    options = job["options"]
    if job["peer"] == "splink":
        result = run_splink(job["records"], job["fields"], **options)
    elif job["peer"] == "dedupe":
        result = run_dedupe(job["records"], job["fields"], job["truth"], **options)
    else:
        raise SystemExit(f"unknown peer {job['peer']!r}")
    (scratch / "result.json").write_text(json.dumps(result))
