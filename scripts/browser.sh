#!/usr/bin/env bash
# Debian's Chromium and its ChromeDriver, which the dashboard test drives
# (tests/streams/kafka/test_worker_service.py): installed with apt-get when either is missing,
# through sudo when not root. `make unit` (and so `make test`) runs this first; no test is
# skipped for a missing browser, so without one the suite fails instead.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi
if ! command -v apt-get >/dev/null; then
    echo "make test: the dashboard test needs chromium and chromedriver on the PATH;" \
        "this is not a Debian machine: install them, then run make test again" >&2
    exit 1
fi
as_root=()
[ "$(id -u)" = 0 ] || as_root=(sudo)
"${as_root[@]}" apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver
