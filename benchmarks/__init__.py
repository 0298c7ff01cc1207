"""The benchmark suite: ``python -m benchmarks`` (or ``make bench``) regenerates docs/performance.md."""
