"""The ACP bridge (Agent Client Protocol v1): a protocol without I/O (`app.acp.protocol`), the
session handlers (`app.acp.handlers`), and the connection that drives both on the event loop
(`app.acp.connection`) for each transport: stdio (`trellis acp`) and WebSocket (`trellis serve`)."""
