// The client against a real `bulkhead serve`: over the unix socket and over
// TCP, every answer checked (request id, record digests, chain, tier).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { startDaemon, countingFetch } from "./support/daemon.mjs";
import { Client, BulkheadError, MAY_HAVE_RUN, fingerprintOf, verifyRecord } from "../dist/index.js";

let d;
before(async () => {
  d = await startDaemon();
});
after(async () => {
  await d?.stop();
});

const dec = (b) => Buffer.from(b).toString("utf8");

test("describe over the unix socket and over TCP", async () => {
  for (const target of [`unix:${d.socket}`, d.socket, d.url]) {
    const c = new Client({ target, token: d.token });
    const m = await c.describe();
    assert.equal(m.protocol, 3);
    assert.equal(m.isolation, d.tier);
    assert.ok(m.supportsSessions);
    assert.ok(m.sessionLanguages.includes("python"));
  }
});

test("a session keeps Python state and files, every record chains, close agrees", async () => {
  const counts = {};
  const c = new Client({ target: d.url, token: d.token, fetch: countingFetch(counts) });
  const s = await c.openSession({ minimumIsolation: d.tier, languages: ["python"] });
  assert.match(s.fingerprint, /^[0-9a-f]{64}$/);
  const a = await s.runCell({ language: "python", code: "rows = open('in.csv').read().splitlines()\nlen(rows)", files: [{ path: "in.csv", content: "a,1\nb,2\n" }] });
  assert.equal(dec(a.run.result.stdout), "2\n");
  assert.ok(a.run.result.interpreterStarted);
  assert.equal(a.run.record.sequence, 1n);
  assert.ok(verifyRecord(a.run.record));
  const b = await s.runCell({ language: "python", code: "rows[1]" });
  assert.equal(dec(b.run.result.stdout), "'b,2'\n");
  assert.equal(b.run.record.sequence, 2n);
  assert.equal(b.run.record.previousSha256, a.run.record.recordSha256);
  const e = await s.runCell({ language: "python", code: "1/0" });
  assert.equal(e.run.result.exitCode, 1);
  assert.match(dec(e.run.result.stderr), /ZeroDivisionError/);
  const j = await s.runCell({ language: "javascript", code: "let n = 40\nn + 2" });
  assert.equal(dec(j.run.result.stdout), "42\n");
  const closed = await s.close();
  assert.equal(closed.calls, 4n);
  assert.equal(closed.lastRecordSha256, j.run.record.recordSha256);
  assert.deepEqual(counts, { OpenSession: 1, SessionRun: 4, CloseSession: 1 });
});

test("a JavaScript snippet in a fresh sandbox (Run), checked", async () => {
  const c = new Client({ target: `unix:${d.socket}`, token: d.token });
  const r = await c.run("console.log(6 * 7)", { minimumIsolation: d.tier });
  assert.equal(dec(r.result.stdout), "42\n");
  assert.equal(r.record.session, "");
  assert.equal(r.isolation, d.tier);
});

test("a floor above the tier: Nothing ran (isolation)", async () => {
  const c = new Client({ target: d.url, token: d.token });
  await assert.rejects(c.openSession({ minimumIsolation: "vm" }), (e) => {
    assert.ok(e instanceof BulkheadError);
    assert.equal(e.reason, "isolation");
    assert.match(e.message, /^Nothing ran \(isolation\): /);
    return true;
  });
});

test("a wrong token: Nothing ran (permission); no daemon: Nothing ran (environment)", async () => {
  await assert.rejects(new Client({ target: d.url, token: "bh_wrong" }).openSession({}), /^BulkheadError: Nothing ran \(permission\): |Nothing ran \(permission\)/);
  await assert.rejects(new Client({ target: `unix:${d.dir}/nothing.sock`, token: d.token }).describe(), (e) => e.reason === "environment");
  const closedPort = await new Promise((res) => { const srv = createServer(); srv.listen(0, "127.0.0.1", () => { const { port } = srv.address(); srv.close(() => res(port)); }); });
  await assert.rejects(new Client({ target: `http://127.0.0.1:${closedPort}`, token: d.token }).describe(), (e) => e.reason === "environment");
});

test("cleartext only to loopback", () => {
  assert.throws(() => new Client({ target: "http://example.com:8746", token: "x" }), /loopback/);
});

// A fetch in between that changes the answer: the client must not believe it.
function tamperingFetch(change) {
  return async (url, init) => {
    const r = await fetch(url, init);
    if (!String(url).endsWith("/SessionRun")) return r;
    const body = change.body ? change.body(await r.text()) : await r.text();
    const headers = new Headers(r.headers);
    if (change.dropId) headers.delete("plimsoll-request-id");
    headers.delete("content-length");
    return new Response(body, { status: r.status, headers });
  };
}

test("an answer changed on the way is not believed (result digest)", async () => {
  const c = new Client({
    target: d.url,
    token: d.token,
    fetch: tamperingFetch({ body: (t) => { const j = JSON.parse(t); j.run.cell.stdout = Buffer.from("3\n").toString("base64"); return JSON.stringify(j); } }),
  });
  const s = await c.openSession({ minimumIsolation: d.tier });
  await assert.rejects(s.runCell({ language: "python", code: "1+1" }), (e) => {
    assert.equal(e.code, "data_loss");
    assert.ok(e.message.startsWith(MAY_HAVE_RUN));
    assert.match(e.message, /result digest/);
    return true;
  });
  // the session stops: nothing more is sent on it
  await assert.rejects(s.runCell({ language: "python", code: "2" }), /Nothing ran \(request\): an earlier call/);
  await s.close().catch(() => {});
});

test("an answer without this request's id is not believed", async () => {
  const c = new Client({ target: d.url, token: d.token, fetch: tamperingFetch({ dropId: true }) });
  const s = await c.openSession({ minimumIsolation: d.tier });
  await assert.rejects(s.runCell({ language: "python", code: "1" }), (e) => e.code === "data_loss" && e.message.startsWith(MAY_HAVE_RUN) && /request's id/.test(e.message));
  await s.close().catch(() => {});
});

test("a record whose isolation was rewritten fails its own digest or the tier check", async () => {
  const c = new Client({
    target: d.url,
    token: d.token,
    fetch: tamperingFetch({ body: (t) => { const j = JSON.parse(t); j.run.isolation = "vm"; j.run.record.isolation = "vm"; return JSON.stringify(j); } }),
  });
  const s = await c.openSession({ minimumIsolation: d.tier });
  await assert.rejects(s.runCell({ language: "python", code: "1" }), (e) => e.code === "data_loss" && /record digest|session opened/.test(e.message));
  await s.close().catch(() => {});
});
