// A scenario run by the official TypeScript SDK's streamable HTTP client (the remote-transport
// RFD) against `trellis serve`'s HTTP endpoint.
//
// Usage: node http_client.mjs SCENARIO.json
// The scenario: {"url": "http://HOST:PORT/acp", "token": "...", "permission": "allow_once",
// "steps": [...]}. A step is a request {"method", "params", "save": {"name": "result.path"}},
// optionally {"background": "name"} (sent, not waited for), or {"await": "name"} (waits for a
// background request), {"notify": "method", "params"}, or {"streaming": "$session"} (waits for
// the session's first agent_message_chunk). "$name" in params is a value saved earlier. Every
// message the SDK hands over is printed as one JSON line, as sdk_client.mjs prints them.
import { readFileSync } from "node:fs";
import { client } from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";

const scenario = JSON.parse(readFileSync(process.argv[2], "utf8"));
const saved = {};
const background = {};
const streamed = new Set();
const print = (line) => process.stdout.write(JSON.stringify(line) + "\n");

function substitute(value) {
  if (typeof value === "string" && value.startsWith("$") && value.slice(1) in saved) {
    return saved[value.slice(1)];
  }
  if (Array.isArray(value)) return value.map(substitute);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v)]));
  }
  return value;
}

function pick(value, path) {
  return path.split(".").reduce((at, key) => (at == null ? at : at[key]), value);
}

async function until(check) {
  for (let i = 0; i < 600; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("waited 30 s in vain");
}

const stream = createHttpStream(scenario.url, {
  headers: { Authorization: `Bearer ${scenario.token}` },
});

const app = client({ name: "trellis-tests" })
  .onNotification("*", ({ method, params }) => {
    if (params?.update?.sessionUpdate === "agent_message_chunk") streamed.add(params.sessionId);
    print({ kind: "notification", method, params });
  })
  .onRequest("session/request_permission", ({ params }) => {
    print({ kind: "request", method: "session/request_permission", params });
    const wanted = scenario.permission ?? "allow_once";
    const option = params.options.find((o) => o.kind === wanted);
    if (!option) return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  });

async function answered(method, pending) {
  try {
    const result = await pending;
    print({ kind: "response", method, result });
    return result;
  } catch (error) {
    print({ kind: "error", method, error: { code: error.code, message: error.message, data: error.data } });
    return undefined;
  }
}

let failed = false;
try {
  await app.connectWith(stream, async (ctx) => {
    for (const step of scenario.steps) {
      if (step.notify) {
        await ctx.notify(step.notify, substitute(step.params ?? {}));
      } else if (step.streaming) {
        const session = substitute(step.streaming);
        await until(() => streamed.has(session));
      } else if (step.await) {
        await background[step.await];
      } else if (step.background) {
        const pending = ctx.request(step.method, substitute(step.params ?? {}));
        background[step.background] = answered(step.method, pending);
      } else {
        const result = await answered(step.method, ctx.request(step.method, substitute(step.params ?? {})));
        for (const [name, path] of Object.entries(step.save ?? {})) saved[name] = pick(result, path);
      }
    }
  });
} catch (error) {
  failed = true;
  print({ kind: "sdk", error: String(error?.stack ?? error) });
}
process.exit(failed ? 1 : 0);
