"""A headless Chromium driven through selenium (Debian's chromium and chromium-driver, which
`make browser` installs): the dashboard tests open the page in it. The browser and its
driver end with the context, and the context checks that they did."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.support.processes import HAS_PROC, descendants, gone

__all__ = ["CHROMEDRIVER", "CHROMIUM", "chromium"]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@contextmanager
def chromium(width: int = 1400, height: int = 1300) -> Iterator[Any]:
    """A selenium driver of a headless Chromium with a window of ``width`` by ``height``."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*_FLAGS, f"--window-size={width},{height}"):
        options.add_argument(flag)
    service = DriverService(CHROMEDRIVER)
    driver = webdriver.Chrome(service=service, options=options)
    pid = service.process.pid
    try:
        yield driver
    finally:
        started = [pid, *descendants(pid)] if HAS_PROC else []
        driver.quit()
        left = [process for process in started if not gone(process, 10.0)]
        assert not left, f"the browser's processes {left} outlived it"
