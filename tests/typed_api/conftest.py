"""The clients' tests reuse the real tool host of the hosted-runs tests (a `confirm` tool gives
the run an outcome to await)."""

from hosted_runs.conftest import TOOLS, ToolHost, toolhost  # noqa: F401  (fixture re-exported)

# An `interaction: approve` tool on the same host: the run asks before calling it.
APPROVE_TOOL = {"name": "pay", "description": "Pay a bill", "path": "/tools/balance", "connection": "bank",
                "interaction": "approve", "reliability": "idempotent"}
