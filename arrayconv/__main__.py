"""Command line: ``arrayconv demo [--size N]`` and ``arrayconv bench [options]``."""

from __future__ import annotations

import argparse
import sys

from ._demo import run_demo


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:  # the benchmark parses its own options
        from .bench.run import main as bench

        return bench(argv[1:])
    parser = argparse.ArgumentParser(prog="arrayconv", description="Fast, SciPy-exact convolution.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="filter a generated image with several kernels vs SciPy")
    demo.add_argument("--size", type=int, default=2048, help="image side in pixels (default 2048)")
    commands.add_parser("bench", help="benchmark against SciPy (and torch): arrayconv bench --help")
    args = parser.parse_args(argv)
    if args.size < 64:
        parser.error(f"--size must be at least 64, got {args.size}")
    return 0 if run_demo(args.size) else 1


if __name__ == "__main__":
    sys.exit(main())
