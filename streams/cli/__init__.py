"""The ``neardup`` command: the table of commands (``commands.py``) made into a parser."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from neardup.core import NeardupError

from ..running.stopping import Stopped, StopSignals
from .commands import COMMANDS, Command
from .malloc import limit_malloc_arenas
from .options import resolve_environment

__all__ = ["main", "parser"]


def _add_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], command: Command
) -> None:
    sub = commands.add_parser(command.name, help=command.help, description=command.description)
    groups: dict[str, argparse._ArgumentGroup] = {}
    exclusive = sub.add_mutually_exclusive_group() if command.exclusive else None
    for option in command.options:
        target: argparse.ArgumentParser | argparse._ArgumentGroup = sub
        if exclusive is not None and option.dest in command.exclusive:
            target = exclusive
        elif option.group is not None:
            if option.group not in groups:
                groups[option.group] = sub.add_argument_group(option.group)
            target = groups[option.group]
        option.add_to(target)
    sub.set_defaults(command=command)


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser(
        prog="neardup",
        description="Streaming near-duplicate detection for crawled web pages.",
    )
    commands = made.add_subparsers(dest="command_name", required=True, metavar="COMMAND")
    for command in COMMANDS:
        _add_command(commands, command)
    return made


def main(argv: Sequence[str] | None = None) -> int:
    limit_malloc_arenas()  # before any thread of this process starts
    args = parser().parse_args(argv)
    command: Command = args.command
    try:
        with StopSignals():
            resolve_environment(command.options, args)
            return command.run(args)
    except NeardupError as error:
        print(f"neardup: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except Stopped as stop:  # SIGTERM or SIGINT: no traceback, the shell's status
        return stop.exit_status
