// A scenario run by the official TypeScript SDK's client over a transport its caller opens
// (stdio_client.mjs spawns `trellis acp`; serve_client.mjs connects to `trellis serve` by
// WebSocket or streamable HTTP): one runner, so every transport is driven the same way.
//
// The scenario file: {"permission": "allow_once", "steps": [...], ...the transport's fields}.
// A step is one of
//   {"method", "params", "save": {"name": "result.path"}}  a request, waited for;
//     with "background": "name" it is sent and not waited for (see "await", "cancel");
//   {"await": "name"}          waits for a background request's answer;
//   {"cancel": "name"}         aborts a background request's signal: the SDK sends
//                              `$/cancel_request` for it;
//   {"notify": "method", "params"};
//   {"streaming": "$session"}  waits for the session's first agent_message_chunk;
//   {"exists": "/a/path"}      waits until the file exists (a side effect of the agent's).
// "$name" anywhere in params is replaced by a value saved earlier. Every message the SDK hands
// over is printed as one JSON line: responses, errors, notifications and the agent's own
// requests. The SDK parses each against its schema, so an invalid message fails the step that
// received it; a failure of the SDK itself is printed with kind "sdk" and exits 1.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { client } from "@agentclientprotocol/sdk";

export const print = (line) => process.stdout.write(JSON.stringify(line) + "\n");

/** The scenario named by the command line. */
export const scenarioFile = () => JSON.parse(readFileSync(process.argv[2], "utf8"));

export function substitute(value, saved) {
  if (typeof value === "string" && value.startsWith("$") && value.slice(1) in saved) {
    return saved[value.slice(1)];
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, saved));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, saved)]));
  }
  return value;
}

export function pick(value, path) {
  return path.split(".").reduce((at, key) => (at == null ? at : at[key]), value);
}

async function until(check) {
  for (let i = 0; i < 600; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("waited 30 s in vain");
}

function clientApp(scenario, streamed) {
  return client({ name: "trellis-tests" })
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
}

async function answered(method, pending) {
  try {
    const result = await pending;
    print({ kind: "response", method, result });
    return result;
  } catch (error) {
    const { code, message, data } = error;
    print({ kind: "error", method, error: { code, message, data } });
    return undefined;
  }
}

/** Runs the scenario's steps over `stream` (an SDK Stream); true if the SDK did not fail. */
export async function runScenario(scenario, stream) {
  const saved = {};
  const background = {};
  const aborts = {};
  const streamed = new Set();
  try {
    await clientApp(scenario, streamed).connectWith(stream, async (ctx) => {
      for (const step of scenario.steps) {
        if (step.notify) {
          await ctx.notify(step.notify, substitute(step.params ?? {}, saved));
        } else if (step.streaming) {
          const session = substitute(step.streaming, saved);
          await until(() => streamed.has(session));
        } else if (step.exists) {
          await until(() => existsSync(step.exists));
        } else if (step.await) {
          await background[step.await];
        } else if (step.cancel) {
          aborts[step.cancel].abort();
        } else {
          const abort = new AbortController();
          const params = substitute(step.params ?? {}, saved);
          const options = { cancellationSignal: abort.signal };
          const pending = answered(step.method, ctx.request(step.method, params, options));
          if (step.background) {
            background[step.background] = pending;
            aborts[step.background] = abort;
          } else {
            const result = await pending;
            for (const [name, path] of Object.entries(step.save ?? {})) {
              saved[name] = pick(result, path);
            }
          }
        }
      }
    });
    return true;
  } catch (error) {
    print({ kind: "sdk", error: String(error?.stack ?? error) });
    return false;
  }
}
