"""Command line: ``arrayconv demo``, ``filter``, ``match``, ``deconvolve`` and ``info``."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from . import __version__
from ._cli import UsageError, add_commands, fail, in_flags, run_deconvolve, run_filter, run_info, run_match
from ._runtime.allocator import keep_freed_memory


class Stopped(BaseException):
    """SIGINT (Ctrl-C) or SIGTERM (a batch scheduler, ``timeout``, a closed terminal): the
    tile loop stops at once and the partial output is cleaned up. Not KeyboardInterrupt,
    which Python would turn into a death by SIGINT at exit whatever the exit code."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.name, self.code = signal.Signals(signum).name, 128 + signum


@contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Stopped` inside the block (on the main thread only:
    elsewhere Python keeps the handlers it has)."""
    def stop(signum: int, frame: object) -> None:
        raise Stopped(signum)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line and exit code 2, never a traceback."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (2 for usage and file errors)."""
    argv = sys.argv[1:] if argv is None else argv
    parser = _Parser(prog="arrayconv", description="Fast, SciPy-exact convolution and correlation of images.")
    parser.add_argument("--version", action="version", version=f"arrayconv {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    demo = commands.add_parser("demo", help="filter a generated image with several kernels vs SciPy")
    demo.add_argument("--size", type=int, default=2048, help="image side in pixels (default 2048)")
    add_commands(commands)
    command, kept = None, False
    keep_freed_memory()  # the command line owns its process: its calls reuse freed pages
    try:
        args = parser.parse_args(argv)
        command, kept = args.command, getattr(args, "resume", False)
        with _signals_raise():
            return _run(args)
    except BrokenPipeError:  # `arrayconv info | head`: the reader left; end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a shell reports a command ended by SIGPIPE
    except (KeyboardInterrupt, Stopped) as stop:  # KeyboardInterrupt: Ctrl-C before the handlers were in place
        name, code = (stop.name, stop.code) if isinstance(stop, Stopped) else ("SIGINT", 130)
        left = "its partial result kept for --resume" if kept else "no output written"
        print(f"arrayconv: stopped by {name}: {left}", file=sys.stderr)
        return code
    except UsageError as exc:
        return fail(str(exc))
    except (ValueError, TypeError, OSError, MemoryError) as exc:  # from the library: one line, in the command's words
        return fail(in_flags(f"{type(exc).__name__}: {exc}", command))


def _run(args: argparse.Namespace) -> int:
    """Run the parsed command; returns the exit code."""
    if args.command == "filter":
        return run_filter(args)
    if args.command == "match":
        return run_match(args)
    if args.command == "deconvolve":
        return run_deconvolve(args)
    if args.command == "info":
        return run_info()
    if args.size < 64:
        raise UsageError(f"--size must be at least 64, got {args.size}")
    from ._demo import run_demo  # imports scipy.signal: not for --help

    return 0 if run_demo(args.size) else 1


if __name__ == "__main__":
    sys.exit(main())
