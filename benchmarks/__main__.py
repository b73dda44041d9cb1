"""``python -m benchmarks [--jobs N] [--minutes N] [--seed N]``: run every benchmark."""

from __future__ import annotations

import argparse

from benchmarks import expansion


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--jobs", type=int, default=10_000, help="jobs per tick (10000)")
    parser.add_argument("--minutes", type=int, default=60, help="consecutive ticks (60)")
    parser.add_argument("--seed", type=int, default=20260601, help="seed of the job mix")
    args = parser.parse_args(argv)
    return expansion.main(jobs=args.jobs, minutes=args.minutes, seed=args.seed)


if __name__ == "__main__":
    raise SystemExit(main())
