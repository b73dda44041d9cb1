"""Benchmarks run by ``make bench`` (``python -m benchmarks``): each figure is printed next to a
baseline measured in the same run, so a number never stands alone."""
