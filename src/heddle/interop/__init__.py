"""Heddle's agents over open agent protocols: AG-UI (`agui_*.py`, `POST /v1/agui/{agent_id}`) and
A2A (`a2a_*.py`, `/v1/a2a/{agent_id}`).

Both are surfaces over loom: a request becomes a posted message, an answer, an approval or an
outcome of a Heddle run (loom/service.py, approvals.py), started with its own `origin`
(`agui`, `a2a`), and the reply is read from the run's stored event log as the Loom event stream
reads it (loom/sse.py). Nothing here runs a model or stores a run's state itself.
See docs/interop.md for the mapping tables.
"""
