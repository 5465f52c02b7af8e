// ./ai-sdk: forConversation({userId, conversationId}) gives a plain AI SDK
// streamText app the executeCode tool; one sandbox per conversation.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { streamText, stepCountIs } from "ai";
import { startDaemon, countingFetch } from "./support/daemon.mjs";
import { scriptedModel } from "../examples/scripted-model.mjs";
import { createBulkheadSandboxes, Client } from "@bulkhead/client/ai-sdk";

let d;
before(async () => {
  d = await startDaemon();
});
after(async () => {
  await d?.stop();
});

async function ask(tools, model) {
  const r = streamText({ model, prompt: "go", tools, stopWhen: stepCountIs(5) });
  const steps = await r.steps;
  return steps.flatMap((s) => s.toolResults.map((t) => t.output));
}

test("forConversation: state kept across requests of one conversation, not across conversations", async () => {
  const counts = {};
  const sb = createBulkheadSandboxes({ client: () => new Client({ target: d.url, token: d.token, fetch: countingFetch(counts) }), minimumIsolation: d.tier });
  let calls = [];
  const model = scriptedModel(() => calls);
  const ada = { userId: "ada", conversationId: "c1" };
  calls = [{ code: "n = 5\nn * 2" }];
  const [a] = await ask({ executeCode: sb.forConversation(ada) }, model);
  assert.equal(a.stdout, "10\n");
  assert.equal(a.freshSandbox, true);
  calls = [{ code: "n + 1" }];
  const [b] = await ask({ executeCode: sb.forConversation(ada) }, model);
  assert.equal(b.stdout, "6\n");
  assert.equal(b.freshSandbox, false);
  calls = [{ code: "n" }];
  const [other] = await ask({ executeCode: sb.forConversation({ userId: "ada", conversationId: "c2" }) }, model);
  assert.equal(other.freshSandbox, true);
  assert.match(other.stderr, /NameError/);
  assert.equal(counts.OpenSession, 2);
  await sb.disposeAll();
  assert.equal(counts.CloseSession, 2);
});
