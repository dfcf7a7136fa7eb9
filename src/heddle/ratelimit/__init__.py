"""Per-key and per-subject rate limits (the `limits` library; see limiter.py)."""
