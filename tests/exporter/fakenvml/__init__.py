"""A fake libnvidia-ml.so.1 (C) and the state files that drive it."""
