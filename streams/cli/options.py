"""Options of the command line as data, each read from its flag or environment one way."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from neardup.core import NeardupError

from ..detection.retention import MAX_WINDOW

__all__ = [
    "Option",
    "resolve_environment",
    "to_duration",
    "to_float",
    "to_fraction",
    "to_int",
    "to_on_off",
    "with_flags",
]


# Converters raise ArgumentTypeError: argparse prints its message as it is
def to_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def to_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def to_fraction(text: str) -> float:
    """A number in (0, 1]: a resemblance or a containment."""
    value = to_float(text)
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not in (0, 1]: use e.g. 0.5")
    return value


def to_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` or ``PORT`` (loopback); port 0 picks a free one."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--http {text!r}: give HOST:PORT, e.g. 127.0.0.1:8080"
        ) from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"--http {text!r}: the port must be from 0 to 65535")
    return host, number


_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"([0-9]+)([smhd])")


def to_duration(text: str) -> timedelta:
    """A whole number and a unit, ``s``, ``m``, ``h`` or ``d`` (``30d``, ``12h``): more than
    nothing, at most ``MAX_WINDOW``."""
    found = _DURATION.fullmatch(text.strip())
    if found is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration: give a whole number and a unit, s, m, h or d "
            "(e.g. 30d, 12h, 90m)"
        )
    seconds = int(found[1]) * _SECONDS[found[2]]
    if not 0 < seconds <= MAX_WINDOW.total_seconds():
        raise argparse.ArgumentTypeError(
            f"{text!r} is out of range: give more than 0 and at most {MAX_WINDOW.days}d"
        )
    return timedelta(seconds=seconds)


def to_on_off(text: str) -> bool:
    """``on`` or ``off`` (also true/false, yes/no, 1/0)."""
    lowered = text.strip().lower()
    if lowered in ("on", "true", "yes", "1"):
        return True
    if lowered in ("off", "false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is neither on nor off")


@dataclass(frozen=True, slots=True)
class Option:
    """One command-line option (or positional argument, when ``flags`` is empty).

    ``default`` is what the command uses when neither the flag nor ``env`` is given; ``None``
    means "not given" (the command decides, e.g. keeps a stored setting), and ``shown`` is
    what the help says then. A value from ``env`` goes through ``convert`` like the flag's."""

    dest: str
    help: str
    flags: tuple[str, ...] = ()
    convert: Callable[[str], Any] = str
    default: Any = None
    env: str | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    #: a switch: present or not (``store_true``)
    switch: bool = False
    #: for a positional argument: "+" for one or more
    nargs: str | None = None
    required: bool = False
    #: what the help prints as the default when ``default`` is None
    shown: str | None = None
    hidden: bool = False
    #: the heading the option is listed under in --help
    group: str | None = None

    @property
    def positional(self) -> bool:
        return not self.flags

    def help_text(self) -> str:
        if self.hidden:
            return argparse.SUPPRESS
        notes = []
        if self.env:
            notes.append(f"env {self.env}")
        if self.shown is not None:
            notes.append(f"default {self.shown}")
        elif self.default is not None and not self.switch:
            notes.append(f"default {self.default}")
        # argparse formats help with %: a literal percent sign must be doubled
        text = self.help.replace("%", "%%")
        return f"{text} ({'; '.join(notes)})" if notes else text

    def add_to(self, parser: argparse.ArgumentParser | Any) -> None:
        """Declare the option on an argparse parser or group. Options with an environment
        variable or a default of None parse to None when absent: ``resolve_environment``
        fills them in afterwards."""
        if self.positional:
            parser.add_argument(
                self.dest, nargs=self.nargs, metavar=self.metavar, help=self.help_text()
            )
            return
        if self.switch:
            parser.add_argument(
                *self.flags, dest=self.dest, action="store_true", help=self.help_text()
            )
            return
        parser.add_argument(
            *self.flags,
            dest=self.dest,
            type=self.convert,
            default=None,
            metavar=self.metavar,
            choices=self.choices,
            help=self.help_text(),
        )

    def usage(self) -> str:
        """How the option reads in a one-line synopsis."""
        if self.positional:
            name = self.metavar or self.dest.upper()
            return f"{name}..." if self.nargs == "+" else name
        if self.switch:
            shown = self.flags[0]
        else:
            value = self.metavar or ("|".join(self.choices) if self.choices else "VALUE")
            shown = f"{self.flags[0]} {value}"
        return shown if self.required else f"[{shown}]"


def with_flags(option: Option, *flags: str, **changes: Any) -> Option:
    """The same option under other flags (its environment variable stays declared once)."""
    return replace(option, flags=flags, **changes)


def resolve_environment(
    options: Sequence[Option], values: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> None:
    """Fill in what the command line left out, in place: the environment variable first (its
    value converted like the flag's; a bad one is a NeardupError naming it), then the default.
    A required option still missing is a NeardupError naming its flag and variable."""
    environ = os.environ if environ is None else environ
    for option in options:
        if option.positional or option.switch:
            continue
        value = getattr(values, option.dest, None)
        if value is None and option.env and environ.get(option.env):
            raw = environ[option.env]
            try:
                value = option.convert(raw)
            except (ValueError, argparse.ArgumentTypeError) as error:
                raise NeardupError(f"${option.env}={raw!r}: {error}") from None
            if option.choices is not None and value not in option.choices:
                raise NeardupError(f"${option.env}={raw!r}: use one of {', '.join(option.choices)}")
        if value is None:
            value = option.default
        if value is None and option.required:
            where = f" (or ${option.env})" if option.env else ""
            raise NeardupError(f"{option.flags[0]} {option.metavar or 'VALUE'}{where} is required")
        setattr(values, option.dest, value)
