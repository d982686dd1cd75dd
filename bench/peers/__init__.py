"""Peer near-duplicate pipelines (datasketch, rensa, gaoya), each run as its own process.

They need the packages of the benchmark venv: ``python3 -m venv /tmp/benchvenv &&
/tmp/benchvenv/bin/pip install numpy xxhash selectolax datasketch rensa gaoya psutil``.
"""
