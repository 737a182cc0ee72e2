// The official TypeScript SDK's client against `trellis serve`: over WebSocket (its
// `experimental/ws-client` stream, with the `ws` package's socket, as Node 20 has no global
// WebSocket) or over its streamable HTTP client (`experimental/http-client`, the remote-transport
// RFD), by the URL's scheme; it runs a scenario (see scenario.mjs).
//
// Usage: node serve_client.mjs SCENARIO.json
// The scenario's own fields: {"url": "ws://HOST:PORT/acp" or "http://HOST:PORT/acp", "token"}.
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { WebSocket } from "ws";
import { runScenario, scenarioFile } from "./scenario.mjs";

const scenario = scenarioFile();
const headers = { Authorization: `Bearer ${scenario.token}` };
const stream = scenario.url.startsWith("ws")
  ? createWebSocketStream(scenario.url, { WebSocket, headers })
  : createHttpStream(scenario.url, { headers });
const ok = await runScenario(scenario, stream);
process.exit(ok ? 0 : 1);
