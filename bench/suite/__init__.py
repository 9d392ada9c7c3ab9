"""bench/run: the server benchmark suite."""
