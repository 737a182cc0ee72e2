// A scenario run by the official TypeScript SDK's client against an agent it spawns over stdio.
//
// Usage: node sdk_client.mjs SCENARIO.json
// The scenario: {"agent": [argv...], "env": {...}, "cwd": "...", "permission": "allow_once",
// "steps": [{"method": "...", "params": {...}, "save": {"name": "result.path"}}]}.
// "$name" anywhere in a step's params is replaced by a value saved earlier. Every message the
// SDK hands over is printed as one JSON line: responses, errors, notifications, and the
// agent's own requests. The SDK parses each against its schema, so an invalid message fails the
// step that received it (printed as an error of kind "sdk").
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk";

const scenario = JSON.parse(readFileSync(process.argv[2], "utf8"));
const saved = {};
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

const child = spawn(scenario.agent[0], scenario.agent.slice(1), {
  cwd: scenario.cwd,
  env: { ...process.env, ...(scenario.env ?? {}) },
  stdio: ["pipe", "pipe", "inherit"],
});
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const app = client({ name: "trellis-tests" })
  .onNotification("*", ({ method, params }) => print({ kind: "notification", method, params }))
  .onRequest("session/request_permission", ({ params }) => {
    print({ kind: "request", method: "session/request_permission", params });
    const wanted = scenario.permission ?? "allow_once";
    const option = params.options.find((o) => o.kind === wanted);
    if (!option) return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest("fs/read_text_file", ({ params }) => {
    print({ kind: "request", method: "fs/read_text_file", params });
    return { content: readFileSync(params.path, "utf8") };
  })
  .onRequest("fs/write_text_file", ({ params }) => {
    print({ kind: "request", method: "fs/write_text_file", params });
    writeFileSync(params.path, params.content);
    return {};
  });

let failed = false;
try {
  await app.connectWith(stream, async (ctx) => {
    for (const step of scenario.steps) {
      try {
        const result = await ctx.request(step.method, substitute(step.params ?? {}));
        print({ kind: "response", method: step.method, result });
        for (const [name, path] of Object.entries(step.save ?? {})) saved[name] = pick(result, path);
      } catch (error) {
        print({
          kind: "error",
          method: step.method,
          error: { code: error.code, message: error.message, data: error.data },
        });
      }
    }
  });
} catch (error) {
  failed = true;
  print({ kind: "sdk", error: String(error?.stack ?? error) });
}
child.stdin.end();
child.kill("SIGTERM");
process.exit(failed ? 1 : 0);
