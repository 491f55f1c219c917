"""Command line: ``arrayconv demo [--size N]``."""

from __future__ import annotations

import argparse
import sys

from ._demo import run_demo


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = argparse.ArgumentParser(prog="arrayconv", description="Fast, SciPy-exact convolution.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="filter a generated image with several kernels vs SciPy")
    demo.add_argument("--size", type=int, default=2048, help="image side in pixels (default 2048)")
    args = parser.parse_args(argv)
    if args.size < 64:
        parser.error(f"--size must be at least 64, got {args.size}")
    return 0 if run_demo(args.size) else 1


if __name__ == "__main__":
    sys.exit(main())
