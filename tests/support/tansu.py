"""Moved to ``bench.tansu`` (the tests may use bench/, not bench/ the tests): this name stays
only until ``bench.kafka_run`` imports ``bench.tansu`` itself. Import ``bench.tansu``."""

from bench.tansu import answers, broker_for_bench, start, stop, wait_until_answers

__all__ = ["answers", "broker_for_bench", "start", "stop", "wait_until_answers"]
