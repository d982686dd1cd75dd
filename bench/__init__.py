"""Benchmark harness for neardup: real-text corpus generator, peer pipelines, brute-force truth.

Nothing here is imported by the library itself; it runs from the repository root
(`python -m bench.peers.datasketch_peer ...`).
"""
