"""The ACP bridge (Agent Client Protocol v1): one sans-I/O protocol core (`app.acp.core`) that the
stdio transport (`trellis acp`) and the WebSocket transport (`trellis serve`) both drive."""
