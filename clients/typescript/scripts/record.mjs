// npm run record: plays every Trigger.dev scenario through mockChatAgent
// against a real bulkhead serve (started here unless BULKHEAD_URL and
// BULKHEAD_TOKEN name one) and writes data/scenarios/NAME.json in the
// format of docs/scenarios.md.
import { writeFileSync, readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { startDaemon, packageDir, bulkheadBin } from "../test/support/daemon.mjs";
import { playConversation } from "./conversation.mjs";
import { scenarios } from "./scenarios.mjs";

const outDir = resolve(packageDir, "../../data/scenarios");
const version = (p) => JSON.parse(readFileSync(resolve(packageDir, "node_modules", p, "package.json"), "utf8")).version;
const only = process.argv.slice(2);

let d;
let external = false;
if (process.env.BULKHEAD_URL && process.env.BULKHEAD_TOKEN) {
  external = true;
  const r = await fetch(`${process.env.BULKHEAD_URL}/plimsoll.v1.SandboxService/Describe`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${process.env.BULKHEAD_TOKEN}` },
    body: "{}",
  });
  d = { url: process.env.BULKHEAD_URL, token: process.env.BULKHEAD_TOKEN, tier: (await r.json()).isolation, stop: async () => {} };
} else {
  d = await startDaemon();
}
const bulkheadVersion = (() => {
  try {
    return execFileSync(bulkheadBin, ["--version"], { encoding: "utf8" }).trim().replace(/^bulkhead\s+/, "");
  } catch {
    return "unknown";
  }
})();
const runtime = d.tier === "kernel" ? "gVisor runsc" : d.tier === "container" ? "crun" : d.tier;

try {
  for (const s of scenarios(d.tier)) {
    if (only.length && !only.includes(s.name)) continue;
    const recordedAt = new Date().toISOString();
    const r = await playConversation({ ...s, daemon: d });
    const scenario = {
      format: "bulkhead-scenario/1",
      name: s.name,
      title: s.title,
      teaches: s.teaches,
      tier: d.tier,
      floor: s.floor,
      idle_window_ms: s.segments.some((g) => g.suspendAfter) ? s.idleSeconds * 1000 : 0,
      source: {
        recorder: "clients/typescript npm run record (Trigger.dev mockChatAgent)",
        recorded_at: recordedAt,
        script: "clients/typescript/scripts/scenarios.mjs",
        daemon: `bulkhead serve ${bulkheadVersion} on loopback TCP, tier ${d.tier} (${runtime})${external ? ", already running" : ", started by the recorder"}`,
        fixtures: s.fixtures,
        versions: {
          bulkhead: bulkheadVersion,
          "@bulkhead/client": JSON.parse(readFileSync(resolve(packageDir, "package.json"), "utf8")).version,
          "@trigger.dev/sdk": version("@trigger.dev/sdk"),
          ai: version("ai"),
          zod: version("zod"),
          node: process.versions.node,
        },
        how:
          `Trigger.dev's offline harness mockChatAgent (@trigger.dev/sdk/ai/test) drove the real chat.agent of ` +
          `clients/typescript/examples/agent.mjs, whose model was the AI SDK's MockLanguageModelV3 scripted to emit one ` +
          `executeCode tool call per scripted call and text otherwise (no model API). The agent used ` +
          `bulkheadCodeSandbox from @bulkhead/client/trigger (warm in onTurnStart, dispose in onChatSuspend and onComplete, ` +
          `the run id through chat.local) against the daemon; a fetch wrapper counted the daemon procedures by URL suffix. ` +
          `Answers are the tool's return values, as the chat stream carried them. The offline harness cannot wake a ` +
          `suspended run, so the turn after a suspend boots the same run id in the harness's continuation mode; it runs ` +
          `no task lifecycle hooks, so the recorder called the agent's own onComplete at the end.`,
      },
      steps: r.steps,
    };
    const file = resolve(outDir, `${s.name}.json`);
    writeFileSync(file, JSON.stringify(scenario, null, 2) + "\n");
    console.log(`${file}: ${r.steps.length} steps, ${JSON.stringify(r.counts)}, ${r.durationMs} ms`);
  }
} finally {
  await d.stop();
}
