// The official TypeScript SDK's client over stdio: it spawns the agent (`trellis acp`) and runs
// a scenario (see scenario.mjs) on the agent's stdin and stdout.
//
// Usage: node stdio_client.mjs SCENARIO.json
// The scenario's own fields: {"agent": [argv...], "env": {...}, "cwd": "..."}.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { ndJsonStream } from "@agentclientprotocol/sdk";
import { runScenario, scenarioFile } from "./scenario.mjs";

const scenario = scenarioFile();
const child = spawn(scenario.agent[0], scenario.agent.slice(1), {
  cwd: scenario.cwd,
  env: { ...process.env, ...(scenario.env ?? {}) },
  stdio: ["pipe", "pipe", "inherit"],
});
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const ok = await runScenario(scenario, stream);
child.stdin.end();
child.kill("SIGTERM");
process.exit(ok ? 0 : 1);
