"""Agent-facing interfaces to a built site: the MCP server (``mcp_server``) and its tools (``tools``)."""
