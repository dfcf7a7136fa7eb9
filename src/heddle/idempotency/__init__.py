"""Safe retries: `Idempotency-Key` on the POSTs that change something (see http.py)."""
