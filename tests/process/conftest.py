"""Process tests: exit latencies go to `tests.figures.EXIT_SECONDS`, summarised at the end."""
