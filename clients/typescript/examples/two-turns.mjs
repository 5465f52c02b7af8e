// npm run example: the example agent (examples/agent.mjs, a Trigger.dev
// chat.agent using @bulkhead/client/trigger) has a two-turn conversation,
// driven offline by Trigger.dev's mockChatAgent with a scripted model, and
// prints the executeCode answers.
//
// Against your daemon: BULKHEAD_URL=http://127.0.0.1:8746 (or
// BULKHEAD_SOCKET=/run/bulkhead/bulkhead.sock) and BULKHEAD_TOKEN=...;
// without them a daemon is started for the example (../../build/bulkhead,
// or BULKHEAD_BIN) and stopped at the end. BULKHEAD_FLOOR sets the floor
// (default: the tier the daemon offers).
import { mockChatAgent } from "@trigger.dev/sdk/ai/test";
import { Client } from "@bulkhead/client";
import { createAnalystAgent } from "./agent.mjs";
import { scriptedModel } from "./scripted-model.mjs";

const turns = [
  {
    user: "Load orders.csv and count the orders.",
    calls: [{ language: "python", code: "import csv\nrows = list(csv.DictReader(open('orders.csv')))\nlen(rows)", files: [{ path: "orders.csv", content: "order,amount\nA-1,120.50\nA-2,79.25\nA-3,10.00\n" }] }],
  },
  {
    user: "And the total?",
    calls: [
      { language: "python", code: "total = sum(float(r['amount']) for r in rows)\ntotal" },
      { language: "javascript", code: "const fs = require('fs'); fs.readFileSync('orders.csv', 'utf8').trim().split('\\n').length - 1" },
    ],
  },
];

let daemon;
let target = process.env.BULKHEAD_URL ?? (process.env.BULKHEAD_SOCKET ? `unix:${process.env.BULKHEAD_SOCKET}` : undefined);
let token = process.env.BULKHEAD_TOKEN ?? "";
if (!target) {
  const { startDaemon } = await import("../test/support/daemon.mjs");
  console.log("starting a bulkhead serve for the example ...");
  daemon = await startDaemon();
  target = daemon.url;
  token = daemon.token;
}
try {
  const client = () => new Client({ target, token });
  const floor = process.env.BULKHEAD_FLOOR ?? (await client().describe()).isolation;
  let calls = [];
  const { hooks } = createAnalystAgent({
    id: "bulkhead-example-analyst",
    model: scriptedModel(() => calls),
    client,
    minimumIsolation: floor,
    userId: () => "example-user",
  });
  const runId = "run_example";
  const harness = mockChatAgent({ id: "bulkhead-example-analyst" }, { chatId: "example", taskContext: { ctx: { run: { id: runId } } } });
  try {
    for (const [i, t] of turns.entries()) {
      calls = t.calls;
      console.log(`\nturn ${i + 1} · user: ${t.user}`);
      const { chunks } = await harness.sendMessage({ id: `m${i}`, role: "user", parts: [{ type: "text", text: t.user }] });
      const inputs = new Map(chunks.filter((c) => c.type === "tool-input-available").map((c) => [c.toolCallId, c.input]));
      for (const c of chunks) {
        if (c.type === "tool-output-available") {
          console.log(`executeCode ${JSON.stringify(inputs.get(c.toolCallId)?.code)}`);
          console.log(JSON.stringify(c.output, null, 2));
        } else if (c.type === "tool-output-error") console.log(`executeCode failed: ${c.errorText}`);
      }
    }
  } finally {
    await harness.close();
    await hooks.onComplete({ ctx: { run: { id: runId } } });
  }
} finally {
  await daemon?.stop();
}
