"""Fast checks of the benchmark harness (run: python -m pytest bench/tests -q)."""
