"""An MCP server (the official SDK's MCPServer, formerly FastMCP) that Heddle can call as a
connection of kind `mcp`, verifying Heddle's `Service-Signature` and the user's session token.
See docs/tool-hosts.md, "MCP servers"."""
