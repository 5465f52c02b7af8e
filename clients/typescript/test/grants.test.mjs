// Naming an egress profile (issue 18) against a real `bulkhead serve --profiles`:
// Describe lists this token's profiles; Run's grantProfile and OpenSession's are
// sent (and enter the request digest); the manager asks for a profile per
// conversation; the Trigger.dev add-on's warm passes one through. Without a
// broker the daemon refuses a grant it would otherwise hold, saying nothing ran.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync, chmodSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { startDaemon, countingFetch } from "./support/daemon.mjs";
import { Client, BulkheadError, CodeSandboxes } from "../dist/index.js";
import { bulkheadCodeSandbox } from "../dist/trigger.js";

const NOT_AVAILABLE = (n) => `grant profile ${n} is unknown or not available to this caller`;
const NOT_FOR_SESSIONS = (n) => `grant profile ${n} may not be used in sessions`;

let d, dir, broker;
before(async () => {
  dir = mkdtempSync(join(process.env.BULKHEAD_TEST_ROOT ?? tmpdir(), "bhts-profiles-"));
  const profiles = join(dir, "profiles");
  writeFileSync(
    profiles,
    [
      "profile sessions-ok",
      "  description  Reaches nothing; may be held by a session",
      "  principals   ts-tests",
      "  allow-in-sessions yes",
      "profile per-call",
      "  origin       https://127.0.0.1:9",
      "  route        GET /v1/*",
      "  principals   *",
      "profile someone-elses",
      "  principals   another-client",
      "",
    ].join("\n"),
  );
  chmodSync(profiles, 0o600);
  d = await startDaemon({ args: ["--profiles", profiles] });
  broker = (await new Client({ target: d.url, token: d.token }).describe()).supportsJavascriptGrants;
});
after(async () => {
  await d?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function refusal(p) {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof BulkheadError, String(e));
    return e;
  }
  assert.fail("the call was not refused");
}

function assertNothingRan(e, words) {
  assert.equal(e.code, "permission_denied", e.message);
  assert.equal(e.notDispatched, true);
  assert.equal(e.reason, "permission");
  assert.ok(e.message.startsWith("Nothing ran (permission): "), e.message);
  assert.ok(e.words.includes(words), `${e.words} lacks: ${words}`);
}

test("describe lists the profiles this token may name, never another client's", async () => {
  const m = await new Client({ target: d.url, token: d.token }).describe();
  assert.deepEqual(
    m.grantProfiles.map((p) => p.name),
    ["sessions-ok", "per-call"],
  );
  assert.deepEqual(m.grantProfiles[0], { name: "sessions-ok", description: "Reaches nothing; may be held by a session", allowInSessions: true, origins: [] });
  assert.deepEqual(m.grantProfiles[1].origins, ["https://127.0.0.1:9"]);
  assert.equal(m.grantProfiles[1].allowInSessions, false);
});

test("a Run's grant: unknown and another client's read the same; an allowed one needs a broker", async () => {
  const c = new Client({ target: d.url, token: d.token });
  assertNothingRan(await refusal(c.run("console.log(1)", { minimumIsolation: d.tier, grantProfile: "someone-elses" })), NOT_AVAILABLE("someone-elses"));
  assertNothingRan(await refusal(c.run("console.log(1)", { minimumIsolation: d.tier, grantProfile: "no-such" })), NOT_AVAILABLE("no-such"));
  const allowed = c.run("console.log(6 * 7)", { minimumIsolation: d.tier, grantProfile: "per-call" });
  if (broker) {
    // the record's request digest covers the grant: the client checked it
    const r = await allowed;
    assert.equal(Buffer.from(r.result.stdout).toString(), "42\n");
  } else {
    assertNothingRan(await refusal(allowed), "grant profile per-call cannot be held: this daemon runs no broker");
  }
  await assert.rejects(c.run("1", { grantProfile: "x".repeat(65) }), /at most 64 bytes/);
});

test("OpenSession's grantProfile: a per-call profile is refused for a session", async () => {
  const counts = {};
  const c = new Client({ target: d.url, token: d.token, fetch: countingFetch(counts) });
  assertNothingRan(await refusal(c.openSession({ minimumIsolation: d.tier, grantProfile: "per-call" })), NOT_FOR_SESSIONS("per-call"));
  assertNothingRan(await refusal(c.openSession({ minimumIsolation: d.tier, grantProfile: "someone-elses" })), NOT_AVAILABLE("someone-elses"));
  assert.deepEqual(counts, { OpenSession: 2 });
});

test("the manager names a profile per conversation, asked once per open", async () => {
  const asked = [];
  const m = new CodeSandboxes({
    client: () => new Client({ target: d.url, token: d.token }),
    minimumIsolation: d.tier,
    languages: ["python"],
    grantProfile: (key, owner) => {
      asked.push([key, owner]);
      return key.conversation === "conv-per-call" ? "per-call" : undefined;
    },
  });
  try {
    assertNothingRan(await refusal(m.run({ owner: "alice", conversation: "conv-per-call" }, { code: "1" })), NOT_FOR_SESSIONS("per-call"));
    const a = await m.run({ owner: "alice", conversation: "conv-plain" }, { code: "print(6*7)" });
    assert.equal(a.stdout, "42\n");
    await m.run({ owner: "alice", conversation: "conv-plain" }, { code: "print(1)" });
    assert.deepEqual(asked, [
      [{ owner: "alice", conversation: "conv-per-call" }, "alice"],
      [{ owner: "alice", conversation: "conv-plain" }, "alice"],
    ]);
  } finally {
    await m.disposeAll();
  }
});

test("the Trigger.dev add-on's warm passes the run's profile through", async () => {
  const sandbox = bulkheadCodeSandbox({ client: () => new Client({ target: d.url, token: d.token }), minimumIsolation: d.tier, languages: ["python"] });
  try {
    sandbox.warm("run-granted", "user-1", "per-call"); // outside a run: only the sandbox opens
    assertNothingRan(await refusal(sandbox.sandboxes.run("run-granted", { code: "1" })), NOT_FOR_SESSIONS("per-call"));
    // the options' profile is every run's
    const withOption = bulkheadCodeSandbox({ client: () => new Client({ target: d.url, token: d.token }), minimumIsolation: d.tier, grantProfile: "someone-elses" });
    assertNothingRan(await refusal(withOption.sandboxes.run("run-2", { code: "1" })), NOT_AVAILABLE("someone-elses"));
    await withOption.sandboxes.disposeAll();
  } finally {
    await sandbox.sandboxes.disposeAll();
  }
});
