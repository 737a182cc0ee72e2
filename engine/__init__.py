"""The Trellis engine: messages, events, context areas, orchestrator, agent loop, tools, store."""
