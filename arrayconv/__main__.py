"""Command line: ``arrayconv demo``, ``filter``, ``match``, ``info`` and ``bench``."""

from __future__ import annotations

import argparse
import sys

from ._cli import UsageError, add_commands, fail, run_deconvolve, run_filter, run_info, run_match
from ._demo import run_demo


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line and exit code 2, never a traceback."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (2 for usage and file errors)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:  # the benchmark parses its own options
        from .bench.run import main as bench

        return bench(argv[1:])
    parser = _Parser(prog="arrayconv", description="Fast, SciPy-exact convolution.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    demo = commands.add_parser("demo", help="filter a generated image with several kernels vs SciPy")
    demo.add_argument("--size", type=int, default=2048, help="image side in pixels (default 2048)")
    add_commands(commands)
    commands.add_parser("bench", help="benchmark against SciPy (and torch): arrayconv bench --help")
    try:
        args = parser.parse_args(argv)
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
    except UsageError as exc:
        return fail(str(exc))
    except (ValueError, TypeError, OSError, MemoryError) as exc:  # from the library: still one line
        return fail(f"{type(exc).__name__}: {exc}")
    return 0 if run_demo(args.size) else 1


if __name__ == "__main__":
    sys.exit(main())
