// Project runs (plimsoll's ProjectRun) against a real `bulkhead serve`: the
// files land in /work, the steps run in order and stop at the first that
// fails, the artifacts come back, and every answer is checked (request and
// result digests in plimsoll's project encoding, the record's own digest).
// A project with no step is refused before anything is sent; an answer
// changed on the way is not believed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startDaemon, countingFetch } from "./support/daemon.mjs";
import { Client, BulkheadError, verifyRecord } from "../dist/index.js";

let d;
before(async () => {
  d = await startDaemon();
});
after(async () => {
  await d?.stop();
});

const dec = (b) => Buffer.from(b).toString("utf8");

test("a project's files, steps and artifacts, checked; a failing step stops the run", async () => {
  const c = new Client({ target: d.url, token: d.token });
  const a = await c.runProject({
    files: [{ path: "src/n.txt", content: "21" }],
    steps: ["cat src/n.txt > out.txt", "echo built; cat out.txt", "exit 3", "touch never"],
    artifacts: ["out.txt", "never"],
    minimumIsolation: d.tier,
  });
  assert.equal(a.result.outcome, "PROJECT_OUTCOME_COMPLETED", a.result.outcomeDetail);
  assert.equal(a.result.steps.length, 3, "the step after the failure ran");
  assert.equal(dec(a.result.steps[1].stdout), "built\n21");
  assert.equal(a.result.steps[2].exitCode, 3);
  assert.deepEqual(
    a.result.artifacts.map((x) => [x.path, dec(x.content)]),
    [["out.txt", "21"]],
  );
  assert.equal(a.isolation, d.tier);
  assert.equal(a.record.version, 2);
  assert.equal(a.record.session, "");
  assert.ok(verifyRecord(a.record));
});

test("a project with no step is refused before it is sent", async () => {
  const counts = {};
  const c = new Client({ target: d.url, token: d.token, fetch: countingFetch(counts) });
  await assert.rejects(c.runProject({ steps: [] }), (e) => {
    assert.ok(e instanceof BulkheadError);
    assert.equal(e.code, "invalid_argument");
    assert.equal(e.notDispatched, true);
    assert.match(e.message, /a project needs at least one step/);
    return true;
  });
  assert.equal(counts.Run ?? 0, 0);
});

test("a project's answer changed on the way is not believed", async () => {
  const tampering = async (url, init) => {
    const r = await fetch(url, init);
    if (!String(url).endsWith("/Run")) return r;
    const j = JSON.parse(await r.text());
    j.project.steps[0].stdout = Buffer.from("forged\n").toString("base64");
    const headers = new Headers(r.headers);
    headers.delete("content-length");
    return new Response(JSON.stringify(j), { status: r.status, headers });
  };
  const c = new Client({ target: d.url, token: d.token, fetch: tampering });
  await assert.rejects(c.runProject({ steps: ["echo real"] }), (e) => {
    assert.ok(e instanceof BulkheadError);
    assert.equal(e.code, "data_loss");
    assert.match(e.message, /result digest/);
    return true;
  });
});
