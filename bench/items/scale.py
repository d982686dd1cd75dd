"""Item mode at scale: N generated listings through neardup embedded, and through splink.

    python -m bench.items.scale --n 1000000 --seed 1 --peer splink --out report.json
    python -m bench.items.scale --n 100000 --seed 1 --peer none

The listings (``listings.generate``, ground truth kept as one entity label a record) are
streamed to a JSON Lines file in a temporary directory. Each tool then runs in a child
process of its own, so that its peak resident memory (``wait4``'s ``ru_maxrss``) is its
own, bounded by a timeout and killed if this process dies:

- neardup: item mode embedded on a RocksDB state, as ``bench.items.real.measure`` runs it
  (``embedded.run(state, [path], items=schema, prepare="process")``: the default, items
  prepared in a child process). Items a second over
  ``run`` (and at each ``--every`` records: growth with N), state bytes an item after
  ``store.compact()``, candidates and pairs verified an item.
- splink (``--peer splink``): DuckDB backend, used as its documentation shows: the file
  read into DuckDB with light standardisation (lower case, phone digits), a ``Linker`` with
  blocking rules and comparisons for listings (name, address, city, phone, lat/lon),
  ``estimate_probability_two_random_records_match``, ``estimate_u_using_random_sampling``,
  EM on two blocking rules, ``predict`` and ``cluster_pairwise_predictions_at_threshold``
  at ``--splink-threshold`` (0.9). Wall seconds cover the read, the training, predicting and
  clustering.

Both are scored here with ``evaluate.pair_scores``: pairwise precision, recall and F1 of
"same cluster" against the truth, and the largest cluster. Timings on a shared machine are
noisy: compare them within one report, not across days.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import logging
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .evaluate import LISTINGS, load_corpus, pair_scores

__all__ = ["main"]

#: the project's root: children run ``python -m bench.items.scale`` from it
ROOT = Path(__file__).resolve().parents[2]
#: seconds each child process may take before it is killed
NEARDUP_TIMEOUT = 3 * 3600
PEER_TIMEOUT = 45 * 60
#: splink: pairs scored above this go to clustering; clusters join pairs at or above the other
SPLINK_PREDICT_FLOOR = 0.5
SPLINK_THRESHOLD = 0.9


# --- the corpus -----------------------------------------------------------------------------


def write_corpus(name: str, n: int, seed: int, path: Path) -> tuple[str, list[str], list[str]]:
    """Generate the corpus, stream its records to ``path`` (JSON Lines); (schema TOML, record
    ids, entity labels), both in line order. The records themselves are dropped here."""
    schema, corpus = load_corpus(name, n, seed)
    ids: list[str] = []
    truth: list[str] = []
    with path.open("w", encoding="utf-8") as out:
        for record, entity in corpus:
            out.write(json.dumps(record) + "\n")
            ids.append(str(record["id"]))
            truth.append(entity)
    del corpus
    return schema, ids, truth


# --- child processes --------------------------------------------------------------------------


def _die_with_parent() -> None:
    """In the child, before it runs: SIGKILL when the parent dies (Linux's PR_SET_PDEATHSIG)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1


def run_child(command: list[str], timeout: float, log: Path) -> dict[str, Any]:
    """Run ``command`` (its output to ``log``); its exit code, wall seconds, peak RSS in MB
    (its own: ``wait4``), whether the timeout killed it, and the end of its log if it
    failed."""
    started = time.perf_counter()
    timed_out = False
    with log.open("wb") as sink:
        child = subprocess.Popen(  # preexec_fn: a prctl call alone
            command, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
        )
    try:
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - started > timeout:
                timed_out = True
                child.kill()
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.2)
    except BaseException:
        child.kill()
        os.wait4(child.pid, 0)
        child.returncode = -signal.SIGKILL
        raise
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    child.returncode = code  # reaped here: Popen must not wait for it again
    # ru_maxrss: kilobytes on Linux, bytes on macOS
    peak = usage.ru_maxrss / (2**20 if sys.platform == "darwin" else 2**10)
    done: dict[str, Any] = {
        "exit_code": code,
        "wall_seconds": round(seconds, 1),
        "peak_rss_mb": round(peak, 1),
        "timed_out": timed_out,
    }
    if code != 0:
        done["log_tail"] = log.read_text(errors="replace")[-3000:]
    return done


def _worker_command(worker: str, scratch: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "bench.items.scale", "--worker", worker,
        "--input", str(scratch / "records.jsonl"), "--scratch", str(scratch), *extra,
    ]  # fmt: skip


# --- neardup (in its child) -------------------------------------------------------------------


class _Checkpoints:
    """A ``RunObserver``: the run's totals each time it passes a multiple of ``every``
    records, for throughput and work per item by stretch."""

    def __init__(self, every: int, state_bytes: Any, log: Path) -> None:
        self.every = every
        self.next = every
        self.state_bytes = state_bytes
        self.started = time.perf_counter()
        self.lines: list[dict[str, Any]] = []
        self.log = log  # each line as it is taken: a run the timeout stops still has them

    def _line(self, summary: Any) -> None:
        line = {
            "records": summary.records,
            "seconds": time.perf_counter() - self.started,
            "candidates": summary.candidates,
            "pairs_estimated": summary.pairs_estimated,
            "duplicates": summary.duplicates,
            "rss_mb": _resident_mb(),
            "state_bytes_uncompacted": self.state_bytes(),
        }
        self.lines.append(line)
        with self.log.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")

    def update(self, summary: Any) -> None:
        if summary.records >= self.next:
            self._line(summary)
            self.next = (summary.records // self.every + 1) * self.every

    def finish(self, summary: Any) -> None:
        if not self.lines or self.lines[-1]["records"] != summary.records:
            self._line(summary)


def _resident_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as statm:
        pages = int(statm.read().split()[1])
    return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)


def stretches(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per stretch between checkpoints: items, items a second, candidates and pairs verified
    an item in it (from the totals' differences), RSS and state bytes an item at its end."""
    out: list[dict[str, Any]] = []
    before: dict[str, Any] = {"records": 0, "seconds": 0.0, "candidates": 0, "pairs_estimated": 0}
    for line in lines:
        items = line["records"] - before["records"]
        seconds = line["seconds"] - before["seconds"]
        if items <= 0:
            continue
        out.append(
            {
                "through": line["records"],
                "items": items,
                "items_per_second": round(items / seconds, 1) if seconds > 0 else None,
                "candidates_per_item": round(
                    (line["candidates"] - before["candidates"]) / items, 2
                ),
                "pairs_verified_per_item": round(
                    (line["pairs_estimated"] - before["pairs_estimated"]) / items, 2
                ),
                "rss_mb": line["rss_mb"],
                "state_bytes_per_item_uncompacted": round(
                    line["state_bytes_uncompacted"] / line["records"], 1
                ),
            }
        )
        before = line
    return out


def neardup_worker(
    inputs: Path, scratch: Path, every: int, posting_cap: int | None
) -> dict[str, Any]:
    """Item mode embedded on a RocksDB state, timed; writes ``neardup.labels`` (doc id, root
    of every item in a cluster of two or more) for the parent to score."""
    from neardup.core import Settings
    from neardup.core.items.schema import ItemSchema
    from neardup.state import State
    from neardup.state.items import check_or_store_schema
    from neardup.streams.running.embedded import run

    schema = ItemSchema.from_toml((scratch / "schema.toml").read_text())
    settings = Settings() if posting_cap is None else Settings(posting_cap=posting_cap)
    with State.open(scratch / "state", settings) as state:
        check_or_store_schema(state.store, schema)
        checkpoints = _Checkpoints(
            every,
            lambda: state.store.disk_bytes(flush=False),
            scratch / "neardup.checkpoints.jsonl",
        )
        started = time.perf_counter()
        summary = run(
            state, [str(inputs)], items=schema, prepare="process", observers=[checkpoints]
        )
        seconds = time.perf_counter() - started
        view = state.view()
        with (scratch / "neardup.labels").open("w", encoding="ascii") as out:
            for root, members in view.clusters.members().items():
                out.writelines(f"{member}\t{root}\n" for member in members)
        stopped = view.counters.get("item_stop_keys_met")
        compacting = time.perf_counter()
        state.store.compact()
        disk = state.store.disk_bytes()
        compact_seconds = time.perf_counter() - compacting
    items = summary.documents
    parts = stretches(checkpoints.lines)
    first, last = parts[0]["items_per_second"], parts[-1]["items_per_second"]
    return {
        "items": items,
        "records": summary.records,
        "dead_letters": sum(summary.dead_letters.values()),
        "seconds": round(seconds, 1),
        "items_per_second": round(items / seconds, 1),
        "state_bytes": disk,
        "state_bytes_per_item": round(disk / max(1, items), 1),
        "compact_seconds": round(compact_seconds, 1),
        "candidates_per_item": round(summary.candidates / max(1, items), 2),
        "pairs_verified_per_item": round(summary.pairs_estimated / max(1, items), 2),
        "stop_keys_met": stopped,
        "stretches": parts,
        "last_stretch_over_first_items_per_second": (
            round(last / first, 2) if first and last else None
        ),
    }


# --- splink (in its child) --------------------------------------------------------------------

#: the records as DuckDB reads them (absent keys are NULL), standardised as splink's
#: documentation asks of its input: lower case, trimmed, a phone as its digits (no leading 1),
#: and one derived column, the numbers of the address (house, suite)
_SPLINK_LOAD = """
CREATE TABLE listings AS
WITH raw AS (
    SELECT * FROM read_json(?, format = 'newline_delimited', columns = {
        'id': 'VARCHAR', 'name': 'VARCHAR', 'address': 'VARCHAR', 'city': 'VARCHAR',
        'latitude': 'DOUBLE', 'longitude': 'DOUBLE', 'phone': 'VARCHAR'})
), cleaned AS (
    SELECT id,
        nullif(trim(lower(name)), '') AS name,
        nullif(trim(lower(address)), '') AS address,
        nullif(trim(lower(city)), '') AS city,
        latitude, longitude,
        nullif(regexp_replace(phone, '[^0-9]', '', 'g'), '') AS phone
    FROM raw
)
SELECT id, name, address, city, latitude, longitude,
    CASE WHEN length(phone) = 11 AND starts_with(phone, '1') THEN phone[2:] ELSE phone END
        AS phone,
    -- the house and suite numbers: "12 main st suite 200" -> "12 200"
    nullif(array_to_string(regexp_extract_all(address, '[0-9]+'), ' '), '') AS address_numbers
FROM cleaned
"""


def splink_worker(
    inputs: Path, scratch: Path, seed: int, threshold: float, u_pairs: float
) -> dict[str, Any]:
    """splink 5 on DuckDB over the records; writes ``splink.labels`` (record id, cluster id of
    every record) for the parent to score."""
    import duckdb
    import splink
    import splink.comparison_library as cl
    from splink import DuckDBAPI, Linker, SettingsCreator, block_on

    stages: dict[str, float] = {}
    clock = time.perf_counter()
    started = clock

    def stage(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        stages[name] = round(now - clock, 1)
        clock = now

    con = duckdb.connect()
    con.execute(f"SET temp_directory = '{scratch / 'duckdb-spill'}'")
    con.execute(_SPLINK_LOAD, [str(inputs)])
    stage("load")
    db_api = DuckDBAPI(connection=con)
    records = db_api.register("listings")
    settings = SettingsCreator(
        link_type="dedupe_only",
        unique_id_column_name="id",
        comparisons=[
            cl.JaroWinklerAtThresholds("name", [0.95, 0.88, 0.7]).configure(
                term_frequency_adjustments=True
            ),
            cl.JaroWinklerAtThresholds("address", [0.95, 0.88, 0.7]),
            cl.ExactMatch("address_numbers"),
            cl.ExactMatch("city").configure(term_frequency_adjustments=True),
            cl.ExactMatch("phone"),
            cl.DistanceInKMAtThresholds("latitude", "longitude", [0.1, 0.5, 2.0]),
        ],
        # pairs scored: the same phone; the same name in a city; the same house number in a
        # city; the same ~100 m cell of latitude and longitude
        blocking_rules_to_generate_predictions=[
            block_on("phone"),
            block_on("name", "city"),
            block_on("split_part(address, ' ', 1)", "city"),
            block_on("round(latitude, 3)", "round(longitude, 3)"),
        ],
        retain_intermediate_calculation_columns=False,
        retain_matching_columns=False,
    )
    linker = Linker(records, settings, log_level=logging.INFO)
    # a phone is seen on 70% of a business's records: about half its pairs share one
    linker.training.estimate_probability_two_random_records_match([block_on("phone")], recall=0.5)
    linker.training.estimate_u_using_random_sampling(max_pairs=u_pairs, seed=seed)
    stage("estimate_u")
    # EM on blocks mostly of true pairs (the m of the phone from the second); a block on name
    # and city instead is mostly a chain's branches, and taught EM that phones differ in a
    # match (at 3,000 records, pairwise precision of the clusters 0.27, with this one 0.65)
    linker.training.estimate_parameters_using_expectation_maximisation(block_on("phone"))
    linker.training.estimate_parameters_using_expectation_maximisation(
        block_on("address_numbers", "city")
    )
    stage("em")
    predictions = linker.inference.predict(threshold_match_probability=SPLINK_PREDICT_FLOOR)
    pairs = con.execute(f"SELECT count(*) FROM {predictions.physical_name}").fetchall()[0][0]
    stage("predict")
    clusters = linker.clustering.cluster_pairwise_predictions_at_threshold(
        predictions, threshold_match_probability=threshold
    )
    labels = scratch / "splink.labels"
    con.execute(
        f"COPY (SELECT id, cluster_id FROM {clusters.physical_name}) "
        f"TO '{labels}' (FORMAT csv, DELIMITER '\\t', HEADER false)"
    )
    stage("cluster")
    seconds = time.perf_counter() - started
    items = int(con.execute("SELECT count(*) FROM listings").fetchall()[0][0])
    return {
        "version": splink.__version__,
        "duckdb_version": duckdb.__version__,
        "items": items,
        "seconds": round(seconds, 1),
        "items_per_second": round(items / seconds, 1),
        "stage_seconds": stages,
        "pairs_predicted_above_floor": int(pairs),
        "predict_floor": SPLINK_PREDICT_FLOOR,
        "threshold_match_probability": threshold,
        "u_max_pairs": u_pairs,
    }


# --- scoring (in the parent) ------------------------------------------------------------------


def _label_lines(path: Path) -> Iterator[tuple[str, str]]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            member, _, root = line.rstrip("\n").partition("\t")
            yield member, root


def neardup_labels(path: Path, ids: Sequence[str]) -> list[int]:
    """A cluster label per record (line order): its root, or its own doc id alone."""
    from neardup.state.items import item_doc_id

    roots = {int(member): int(root) for member, root in _label_lines(path)}
    return [roots.get(doc, doc) for doc in (item_doc_id(i) for i in ids)]


def splink_labels(path: Path, ids: Sequence[str]) -> list[int]:
    """A cluster label per record (line order): the line of its cluster id's record."""
    line = {record_id: n for n, record_id in enumerate(ids)}
    cluster = dict(_label_lines(path))
    return [line[cluster.get(record_id, record_id)] for record_id in ids]


def score(predicted: Sequence[int], truth: Sequence[str]) -> dict[str, Any]:
    scores = pair_scores(predicted, truth)
    return {
        **{name: round(value, 4) for name, value in scores.items()},
        "largest_cluster": max(Counter(predicted).values(), default=0),
        "largest_true_cluster": max(Counter(truth).values(), default=0),
    }


# --- the benchmark ----------------------------------------------------------------------------


def _machine() -> dict[str, Any]:
    load = os.getloadavg()
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "load_average_at_start": [round(x, 2) for x in load],
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def benchmark(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {
        "corpus": args.corpus,
        "n": args.n,
        "seed": args.seed,
        "posting_cap": args.posting_cap,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": _machine(),
    }
    with tempfile.TemporaryDirectory(prefix="neardup-scale-", dir=args.tmp) as tmp:
        scratch = Path(tmp)
        started = time.perf_counter()
        schema, ids, truth = write_corpus(args.corpus, args.n, args.seed, scratch / "records.jsonl")
        (scratch / "schema.toml").write_text(schema)
        report["generate_seconds"] = round(time.perf_counter() - started, 1)
        report["records"] = len(ids)
        report["true_entities"] = len(set(truth))
        every = args.every or max(1, len(ids) // 10)
        if args.neardup:
            cap = () if args.posting_cap is None else ("--posting-cap", str(args.posting_cap))
            child = run_child(
                _worker_command("neardup", scratch, "--every", str(every), *cap),
                args.neardup_timeout,
                scratch / "neardup.log",
            )
            report["neardup"] = _collect(child, scratch, "neardup", ids, truth)
        if args.peer == "splink":
            child = run_child(
                _worker_command(
                    "splink", scratch, "--seed", str(args.seed),
                    "--splink-threshold", str(args.splink_threshold),
                    "--u-pairs", str(args.u_pairs),
                ),
                args.timeout,
                scratch / "splink.log",
            )  # fmt: skip
            report["splink"] = _collect(child, scratch, "splink", ids, truth)
    report["parent_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return report


def _collect(
    child: dict[str, Any], scratch: Path, tool: str, ids: Sequence[str], truth: Sequence[str]
) -> dict[str, Any]:
    result_path = scratch / f"{tool}.json"
    if child["exit_code"] != 0 or not result_path.exists():
        partial: dict[str, Any] = {"completed": False, **child}
        checkpoints = scratch / f"{tool}.checkpoints.jsonl"
        if checkpoints.exists():  # how far it got, and how fast, before it was stopped
            lines = [json.loads(x) for x in checkpoints.read_text().splitlines() if x]
            if lines:
                partial["items_done"] = lines[-1]["records"]
                partial["seconds_to_last_checkpoint"] = round(lines[-1]["seconds"], 1)
                partial["items_per_second_to_last_checkpoint"] = round(
                    lines[-1]["records"] / lines[-1]["seconds"], 1
                )
                partial["candidates_per_item_to_last_checkpoint"] = round(
                    lines[-1]["candidates"] / lines[-1]["records"], 2
                )
                partial["stretches"] = stretches(lines)
        return partial
    result = json.loads(result_path.read_text())
    labels = scratch / f"{tool}.labels"
    predicted = neardup_labels(labels, ids) if tool == "neardup" else splink_labels(labels, ids)
    return {"completed": True, **result, **child, **score(predicted, truth)}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.items.scale", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--n", type=int, default=1_000_000, help="generated listings")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--corpus", default="listings", choices=LISTINGS)
    parser.add_argument("--peer", choices=("splink", "none"), default="splink")
    parser.add_argument("--out", type=Path, help="also write the JSON report here")
    parser.add_argument(
        "--no-neardup", dest="neardup", action="store_false", help="run the peer alone"
    )
    parser.add_argument(
        "--posting-cap", type=int, help="neardup's posting_cap (items a key keeps; default 1000)"
    )
    parser.add_argument("--every", type=int, help="records between checkpoints (N/10)")
    parser.add_argument("--timeout", type=float, default=PEER_TIMEOUT, help="peer seconds")
    parser.add_argument("--neardup-timeout", type=float, default=NEARDUP_TIMEOUT)
    parser.add_argument("--splink-threshold", type=float, default=SPLINK_THRESHOLD)
    parser.add_argument(
        "--u-pairs", type=float, default=1e7, help="splink's max_pairs estimating u"
    )
    parser.add_argument("--tmp", type=Path, help="where the temporary directory goes")
    # a child's side: one tool over the file the parent wrote
    parser.add_argument("--worker", choices=("neardup", "splink"), help=argparse.SUPPRESS)
    parser.add_argument("--input", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.worker is not None:
        if args.worker == "neardup":
            result = neardup_worker(args.input, args.scratch, args.every, args.posting_cap)
        else:
            result = splink_worker(
                args.input, args.scratch, args.seed, args.splink_threshold, args.u_pairs
            )
        (args.scratch / f"{args.worker}.json").write_text(json.dumps(result))
        return 0
    if args.n < 1:
        raise SystemExit("--n: at least 1")
    report = benchmark(args)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    failed = [t for t in ("neardup", "splink") if t in report and not report[t]["completed"]]
    return 1 if failed else 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
