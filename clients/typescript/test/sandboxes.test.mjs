// The conversation manager against a real `bulkhead serve` (plimsoll §4.5, §4.6).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startDaemon, countingFetch, operator } from "./support/daemon.mjs";
import { Client, CodeSandboxes } from "../dist/index.js";

let d;
before(async () => {
  d = await startDaemon();
});
after(async () => {
  await d?.stop();
});

function manager(counts, o = {}) {
  return new CodeSandboxes({
    client: () => new Client({ target: d.url, token: d.token, fetch: countingFetch(counts) }),
    minimumIsolation: d.tier,
    ...o,
  });
}

async function liveSessions() {
  const { sessions = [] } = await operator(d, "ListSessions", {});
  return sessions.filter((s) => s.state !== "ended");
}

test("warm does not wait; the call reuses the warmed sandbox; dispose then run gets a fresh sandbox", async () => {
  const counts = {};
  const m = manager(counts);
  const t0 = performance.now();
  assert.equal(m.warm("run-1", "alice"), undefined);
  const warmMs = performance.now() - t0;
  assert.equal(m.size, 1);
  assert.ok(warmMs < 250, `warm returned at once (${warmMs} ms)`);
  const a = await m.run("run-1", { code: "x = 41\nx + 1" });
  assert.equal(a.stdout, "42\n");
  assert.equal(a.freshSandbox, true);
  assert.equal(a.freshInterpreter, true);
  assert.equal(a.stateKept, true);
  assert.equal(a.isolation, d.tier);
  assert.match(a.recordSha256, /^[0-9a-f]{64}$/);
  const b = await m.run("run-1", { code: "x" });
  assert.equal(b.stdout, "41\n");
  assert.equal(b.freshSandbox, false);
  assert.equal(counts.OpenSession, 1);
  await m.dispose("run-1");
  assert.equal(counts.CloseSession, 1);
  const c = await m.run("run-1", { code: "x" });
  assert.equal(c.freshSandbox, true);
  assert.equal(c.exitCode, 1);
  assert.match(c.stderr, /NameError/);
  await m.disposeAll();
  assert.equal(counts.OpenSession, 2);
  assert.equal(counts.CloseSession, 2);
});

test("the owner digest reaches the daemon, never the owner", async () => {
  const m = manager({});
  await m.run({ owner: "alice@example.com", conversation: "c1" }, { code: "1" });
  const live = (await liveSessions()).filter((x) => x.owner);
  assert.equal(live.length, 1);
  assert.match(live[0].owner, /^[0-9a-f]{64}$/);
  assert.ok(!JSON.stringify(live).includes("alice"));
  await m.disposeAll();
});

test("a cap of 2 per owner with three keys closes the least recently used idle sandbox", async () => {
  const counts = {};
  const m = manager(counts, { maxSessionsPerOwner: 2 });
  await m.run({ owner: "bob", conversation: "a" }, { code: "a = 1" });
  await m.run({ owner: "bob", conversation: "b" }, { code: "b = 2" });
  await m.run({ owner: "bob", conversation: "a" }, { code: "a" }); // a is now the most recently used
  const c = await m.run({ owner: "bob", conversation: "c" }, { code: "3" });
  assert.equal(c.freshSandbox, true);
  assert.ok(m.has({ owner: "bob", conversation: "a" }));
  assert.ok(!m.has({ owner: "bob", conversation: "b" }), "b was the least recently used");
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(counts.CloseSession, 1);
  const again = await m.run({ owner: "bob", conversation: "b" }, { code: "b" });
  assert.equal(again.freshSandbox, true);
  assert.match(again.stderr, /NameError/);
  // warm never closes another sandbox: at the cap it does nothing
  m.warm({ owner: "bob", conversation: "d" });
  assert.ok(!m.has({ owner: "bob", conversation: "d" }));
  await m.disposeAll();
});

test("one retry in a new sandbox after a not-dispatched session-ended refusal, and only then", async () => {
  const counts = {};
  const calls = [];
  const m = manager(counts, { onCall: (e) => calls.push(e) });
  await m.run("run-r", { code: "v = 7" });
  const [s] = await liveSessions();
  await operator(d, "Close", { session: s.session }); // ended behind the manager's back
  const r = await m.run("run-r", { code: "v" });
  assert.equal(r.freshSandbox, true);
  assert.match(r.stderr, /NameError/);
  assert.equal(calls.at(-1).retried, true);
  assert.equal(counts.OpenSession, 2);
  assert.equal(counts.SessionRun, 3);
  // a guest error is an answer, never retried
  const g = await m.run("run-r", { code: "1/0" });
  assert.equal(g.exitCode, 1);
  assert.equal(calls.at(-1).retried, false);
  await m.disposeAll();
});

test("idle close: a sandbox unused for idleCloseMs is closed; the next call opens a new one", async () => {
  const counts = {};
  const m = manager(counts, { idleCloseMs: 300 });
  await m.run("run-i", { code: "1" });
  await new Promise((r) => setTimeout(r, 900));
  assert.equal(m.size, 0);
  assert.equal(counts.CloseSession, 1);
  const b = await m.run("run-i", { code: "2" });
  assert.equal(b.freshSandbox, true);
  await m.disposeAll();
});

test("a floor above the tier: Nothing ran (isolation), and the key is not kept", async () => {
  const m = manager({}, { minimumIsolation: "vm" });
  await assert.rejects(m.run("run-f", { code: "1" }), /^BulkheadError: Nothing ran \(isolation\): |Nothing ran \(isolation\)/);
  assert.equal(m.size, 0);
});

test("output is cut at maxOutputChars and says so", async () => {
  const m = manager({}, { maxOutputChars: 10 });
  const r = await m.run("run-o", { code: "print('x' * 100)" });
  assert.equal(r.stdout, "x".repeat(10));
  assert.equal(r.truncated, true);
  await m.disposeAll();
});
