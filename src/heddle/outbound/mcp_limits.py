"""How much of an MCP server Heddle takes in: the bounds on every input, and their error codes.

A tenant's own server is untrusted input. Issue 40 showed one that paged `tools/list` 1,600
tools at a time for 50 pages (0.88 MB a page, under the response cap): four subjects took
Heddle from 273 to 814 MiB; and one that answered each request with a single SSE event (`id`,
`retry: 0`) and closed, which drew 1,900 resumptions in 7.8 s for one call. Each bound below
stops one such input; a refusal has its own code (a run's `error.code` when the list cannot
be read, a call's `error.code` when the call cannot finish) and counts in
`heddle_mcp_limits_total{limit}`.

| bound | setting | code |
|---|---|---|
| bytes of one tool list, all pages | `HEDDLE_MCP_MAX_LIST_BYTES` | `mcp_list_too_large` |
| pages of one tool list | `HEDDLE_MCP_MAX_PAGES` | `mcp_too_many_pages` |
| tools of one connection | `HEDDLE_MCP_MAX_TOOLS` | `mcp_too_many_tools` |
| one list or call, with its reconnects and resumptions | `HEDDLE_MCP_CALL_DEADLINE_SECONDS` | `mcp_deadline_exceeded` |
| resumptions (`Last-Event-ID`) of one request | `HEDDLE_MCP_MAX_RESUMPTIONS` | `mcp_too_many_resumptions` |
| bytes of the tool-list cache (all connections) | `HEDDLE_MCP_CACHE_BYTES` | (the oldest lists are dropped) |

A list refused at a bound is remembered for its connection (every subject) for
`HEDDLE_MCP_REFUSAL_SECONDS`: runs that ask again fail at once with the same code, so a server
that sends megabytes costs one fetch a minute, not one per turn (or per subject).

The tools and schema bytes one model turn offers are loom's (heddle/loom/tools/names.py,
`tools_over_turn_limit`); the size of one response is the outbound client's (`response_too_large`).
A resumption waits `backoff(n)` before it goes out, whatever `retry:` the server asked for.

The list's byte bound (512 KiB by default: 256 tools of 2 KB each) is also what keeps the event
loop free: the SDK parses a page in one call, and the issue's 0.88 MB page held the loop for 50
to 160 ms (measured), the victim's p99; a list over the bound is cut off while it is read,
before any parse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LIST_TOO_LARGE = "mcp_list_too_large"
TOO_MANY_PAGES = "mcp_too_many_pages"
TOO_MANY_TOOLS = "mcp_too_many_tools"
DEADLINE_EXCEEDED = "mcp_deadline_exceeded"
TOO_MANY_RESUMPTIONS = "mcp_too_many_resumptions"
LIMIT_CODES = (LIST_TOO_LARGE, TOO_MANY_PAGES, TOO_MANY_TOOLS, DEADLINE_EXCEEDED, TOO_MANY_RESUMPTIONS)


@dataclass(frozen=True, slots=True)
class McpLimits:
    max_list_bytes: int = 512 * 1024  # below one page of the list: it is cut off unparsed
    max_pages: int = 20
    max_tools: int = 256
    deadline_seconds: float = 30.0
    max_resumptions: int = 5
    cache_bytes: int = 64 * 1024 * 1024
    refusal_seconds: float = 60.0  # a connection whose list was refused at a bound is not asked again
    backoff_base: float = 0.25  # seconds before the first resumption; doubled each time
    backoff_cap: float = 4.0

    @classmethod
    def from_settings(cls, s: Any) -> McpLimits:
        return cls(
            max_list_bytes=s.mcp_max_list_bytes,
            max_pages=s.mcp_max_pages,
            max_tools=s.mcp_max_tools,
            deadline_seconds=s.mcp_call_deadline_seconds,
            max_resumptions=s.mcp_max_resumptions,
            cache_bytes=s.mcp_cache_bytes,
            refusal_seconds=s.mcp_refusal_seconds,
        )

    def backoff(self, resumption: int) -> float:
        """Seconds to wait before resumption number `resumption` (1, 2, …) of one request."""
        return min(self.backoff_cap, self.backoff_base * 2 ** max(0, resumption - 1))


# What one parsed tool weighs in memory beyond its JSON (measured with tracemalloc on lists of
# 1,600 tools: 0.84 to 0.92 KB whatever the schema's size; a list of small tools weighs 7 times
# its JSON, so a cache counted in wire bytes alone would hold several times its bound).
TOOL_OVERHEAD_BYTES = 1024


def weight(wire_bytes: int, tools: int) -> int:
    """A tool list's weight for the cache's byte bound: its JSON as the server sent it, plus
    `TOOL_OVERHEAD_BYTES` per tool."""
    return max(1, wire_bytes + TOOL_OVERHEAD_BYTES * tools)


def listed_size(listed: Any) -> int:
    """cachetools' `getsizeof` for a cached list (its `size`, from `weight`)."""
    return max(1, getattr(listed, "size", 1))
