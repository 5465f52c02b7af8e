// Trigger.dev's own offline harness (mockChatAgent) drives a real chat.agent
// (examples/agent.mjs) whose model is the AI SDK's MockLanguageModelV3
// emitting executeCode tool calls; the agent uses the ./trigger add-on
// against a real bulkhead serve. Daemon procedures are counted by a fetch
// wrapper, by URL suffix.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startDaemon } from "./support/daemon.mjs";
import { playConversation } from "../scripts/conversation.mjs";
import { scenarios } from "../scripts/scenarios.mjs";

let d;
let all;
before(async () => {
  d = await startDaemon();
  all = Object.fromEntries(scenarios(d.tier).map((s) => [s.name, s]));
});
after(async () => {
  await d?.stop();
});

const calls = (r) => r.steps.filter((s) => s.kind === "call");
// docs/scenarios.md's rules for a path: the down leg is exactly the step's
// hops, then the up leg climbs back; a call's path ends at the model.
function assertPaths(r) {
  for (const [i, s] of r.steps.entries()) {
    if (!s.hops.length) continue;
    assert.ok(s.path?.length, `step ${i + 1} lights hops with no path`);
    assert.deepEqual(s.path.filter((v) => v.leg === "down").map((v) => v.hop), s.hops, `step ${i + 1}'s down leg is its hops`);
    for (const v of s.path) assert.doesNotMatch(JSON.stringify(v.wire ?? {}), /"sessionId":"[^(]/, "session ids are redacted");
    if (s.kind === "call") {
      assert.equal(s.path.at(-1).hop, "model", `step ${i + 1}'s path comes back to the model`);
      assert.ok(s.sent_ms >= 0 && s.answered_ms >= s.sent_ms, `step ${i + 1}'s call times`);
    }
  }
}

const toolChunks = (r, type) => r.chunks.flatMap((t) => t.chunks).filter((c) => c.type === type);

test("two turns: one OpenSession, state kept across turns, no CloseSession during turns, one at completion", async () => {
  const r = await playConversation({ ...all.trigger_two_turns, daemon: d });
  const [a, b] = calls(r);
  assert.equal(a.outcome, "answered");
  assert.equal(a.answer.stdout, "2\n");
  assert.equal(a.answer.freshSandbox, true);
  assert.equal(a.answer.isolation, d.tier);
  assert.equal(b.turn, 2);
  assert.equal(b.answer.stdout, "199.75\n", "the second turn saw the first turn's rows");
  assert.equal(b.answer.stateKept, true);
  assert.equal(b.answer.freshSandbox, false);
  assert.equal(b.answer.freshInterpreter, false);
  assert.deepEqual(b.daemon_calls, { OpenSession: 1, SessionRun: 2, CloseSession: 0 }, "no CloseSession during the turns");
  assert.deepEqual(r.counts, { OpenSession: 1, SessionRun: 2, CloseSession: 1 });
  // what the chat stream carried is exactly what the tool returned
  assert.deepEqual(toolChunks(r, "tool-output-available").map((c) => c.output), [a.answer, b.answer]);
  assert.equal(toolChunks(r, "tool-output-error").length, 0);
  assertPaths(r);
  const first = r.steps.find((s) => s.kind === "call");
  assert.equal(first.path.find((v) => v.hop === "daemon" && v.leg === "down").wire.what, "plimsoll.v1 SessionRun request");
  assert.equal(first.path.find((v) => v.hop === "daemon" && v.leg === "up").wire.what, "SessionRun answer (HTTP 200)");
});

test("suspend: one CloseSession after the idle window, then a new sandbox with freshSandbox", async () => {
  const r = await playConversation({ ...all.trigger_suspend, daemon: d });
  const kinds = r.steps.map((s) => s.hook ?? s.kind);
  assert.deepEqual(kinds, ["turn_start", "call", "wait", "suspend", "turn_start", "call", "complete"]);
  const wait = r.steps[2];
  assert.ok(wait.ms >= 2000, `waited the idle window (${wait.ms} ms)`);
  assert.deepEqual(wait.daemon_calls, { OpenSession: 1, SessionRun: 1, CloseSession: 0 });
  assert.deepEqual(r.steps[3].daemon_calls, { OpenSession: 1, SessionRun: 1, CloseSession: 1 });
  const [before, afterSuspend] = calls(r);
  assert.equal(before.answer.stdout, "41\n");
  assert.equal(afterSuspend.answer.freshSandbox, true);
  assert.equal(afterSuspend.answer.freshInterpreter, true);
  assert.equal(afterSuspend.answer.exitCode, 1);
  assert.match(afterSuspend.answer.stderr, /NameError/);
  assert.deepEqual(r.counts, { OpenSession: 2, SessionRun: 2, CloseSession: 2 });
  assertPaths(r);
  assert.equal(r.steps[3].path.find((v) => v.hop === "daemon" && v.leg === "down").wire.what, "plimsoll.v1 CloseSession request");
});

test("a guest error is returned as a result, and the sandbox lives on", async () => {
  const r = await playConversation({ ...all.trigger_guest_error, daemon: d });
  const [err, fixed] = calls(r);
  assert.equal(err.outcome, "answered");
  assert.equal(err.error, null);
  assert.equal(err.answer.exitCode, 1);
  assert.match(err.answer.stderr, /ZeroDivisionError/);
  assert.equal(err.answer.stateKept, true);
  assert.equal(fixed.answer.exitCode, 0);
  assert.equal(fixed.answer.stdout, "0.0\n");
  assert.equal(fixed.answer.freshSandbox, false);
  assert.equal(toolChunks(r, "tool-output-error").length, 0);
  assert.equal(toolChunks(r, "tool-output-available").length, 2);
  assert.deepEqual(r.counts, { OpenSession: 1, SessionRun: 2, CloseSession: 1 });
});

test("a floor above the tier: the tool call fails with Nothing ran (isolation), stopped at the daemon", async () => {
  const r = await playConversation({ ...all.trigger_floor_refused, daemon: d });
  const [c] = calls(r);
  assert.equal(c.outcome, "refused");
  assert.equal(c.stopped_at, "daemon");
  assert.match(c.error, /^Nothing ran \(isolation\): /);
  assert.deepEqual(r.counts, { OpenSession: 1, SessionRun: 0, CloseSession: 0 });
  const errs = toolChunks(r, "tool-output-error");
  assert.equal(errs.length, 1);
  assert.match(errs[0].errorText, /Nothing ran \(isolation\)/);
  assertPaths(r);
  // the refused warm-up: no sandbox, the daemon's refusal on the wire, back up to the agent
  const warm = r.steps[0];
  assert.deepEqual(warm.hops, ["agent", "manager", "daemon"]);
  assert.equal(warm.stopped_at, "daemon");
  assert.equal(warm.path.find((v) => v.hop === "daemon").wire.what, "plimsoll.v1 OpenSession request");
  assert.match(warm.path.find((v) => v.hop === "manager" && v.leg === "up").wire.what, /^OpenSession answer \(HTTP 4\d\d\)$/);
  assert.ok(!c.hops.includes("sandbox"));
});
