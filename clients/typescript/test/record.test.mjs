// The record encoding (plimsoll Appendix A), error details and words, and the owner digest: no daemon needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  requestDigest, resultDigest, recordDigest, verifyRecord, fingerprintOf, recordFromJson,
  GOLDEN_REQUEST, GOLDEN_REQUEST_SHA256, BulkheadError, MAY_HAVE_RUN, ownerDigest, errorOf,
} from "../dist/index.js";
import { decodeDetails } from "../dist/errors.js";

test("the golden vector", () => {
  assert.equal(requestDigest(GOLDEN_REQUEST), GOLDEN_REQUEST_SHA256);
  assert.equal(GOLDEN_REQUEST_SHA256, "585a1b46c55ebacc1dfdd4336e302328c32ed3e2e7e8a8b460d252d0454be8fc");
});

test("the golden vector, field by field by hand", () => {
  const v = (s) => {
    const b = Buffer.from(s, "utf8");
    const len = Buffer.alloc(8);
    len.writeBigUInt64BE(BigInt(b.length));
    return Buffer.concat([len, b]);
  };
  const parts = ["plimsoll.run-request.v1", "protocol", "1", "minimum_isolation", "container", "timeout_ms", "5000",
    "kind", "javascript", "code", "console.log(1+1)", "grant_profile", ""];
  const h = createHash("sha256").update(Buffer.concat(parts.map(v))).digest("hex");
  assert.equal(h, GOLDEN_REQUEST_SHA256);
});

test("request v2 and a cell with files", () => {
  const a = requestDigest({ protocol: 3, minimumIsolation: "kernel", timeoutMs: 0, kind: "cell", language: "python", code: "1", files: [] });
  const b = requestDigest({ protocol: 3, minimumIsolation: "kernel", timeoutMs: 0, kind: "cell", language: "python", code: "1", files: [{ path: "a", content: "" }] });
  const c = requestDigest({ protocol: 3, minimumIsolation: "", timeoutMs: 0, kind: "cell", language: "python", code: "1", files: [] });
  assert.notEqual(a, b);
  assert.notEqual(a, c);
  assert.match(a, /^[0-9a-f]{64}$/);
});

test("the result digest covers every flag and byte", () => {
  const base = { kind: "cell", exitCode: 0, timedOut: false, stdout: new Uint8Array([50, 10]), stderr: new Uint8Array(), stdoutTruncated: false, stderrTruncated: false, interpreterStarted: true, interpreterEnded: false };
  const d = resultDigest(base);
  for (const change of [{ exitCode: 1 }, { timedOut: true }, { stdout: new Uint8Array([51, 10]) }, { stderrTruncated: true }, { interpreterStarted: false }, { interpreterEnded: true }])
    assert.notEqual(resultDigest({ ...base, ...change }), d, JSON.stringify(Object.keys(change)));
  // a javascript result leaves the interpreter fields out
  assert.equal(resultDigest({ ...base, kind: "javascript", interpreterStarted: false }), resultDigest({ ...base, kind: "javascript" }));
});

test("a record's digest recomputes, and any field changed breaks it", () => {
  const rec = recordFromJson({
    version: 2, requestSha256: "a".repeat(64), resultSha256: "b".repeat(64), provider: "bulkhead-runsc", isolation: "kernel",
    environment: "bulkhead-sandbox:sha256:00", startedUnixMs: "1795973397655", endedUnixMs: "1795973398020",
    session: "c".repeat(64), sequence: "2", previousSha256: "d".repeat(64),
  });
  rec.recordSha256 = recordDigest(rec);
  assert.ok(verifyRecord(rec));
  for (const [k, v] of [["isolation", "container"], ["sequence", 3n], ["previousSha256", "e".repeat(64)], ["startedUnixMs", 1n], ["provider", "x"]])
    assert.equal(verifyRecord({ ...rec, [k]: v }), false, k);
  // version 3 adds `unanswered`
  const v3 = { ...rec, version: 3, resultSha256: "", unanswered: "unknown" };
  assert.notEqual(recordDigest(v3), recordDigest({ ...v3, unanswered: "deadline_exceeded" }));
});

test("the fingerprint is the SHA-256 of the id", () => {
  assert.equal(fingerprintOf("abc"), createHash("sha256").update("abc").digest("hex"));
});

test("Connect error details decode (NotDispatched, SessionEnded)", () => {
  // NotDispatched{reason: ISOLATION(5)} is 08 05; SessionEnded{reason: REPLACED(8), detail: "replaced"}
  const nd = Buffer.from([0x08, 0x05]).toString("base64").replace(/=+$/, "");
  const se = Buffer.concat([Buffer.from([0x08, 0x08, 0x12, 0x08]), Buffer.from("replaced")]).toString("base64");
  const d = decodeDetails([{ type: "plimsoll.v1.NotDispatched", value: nd }, { type: "plimsoll.v1.SessionEnded", value: se }]);
  assert.equal(d.reason, "isolation");
  assert.equal(d.sessionEnded, "SESSION_END_REPLACED");
  assert.equal(d.endDetail, "replaced");
});

test("errors: only a bound, marked answer says Nothing ran", () => {
  const body = JSON.stringify({ code: "failed_precondition", message: "the floor vm is above the kernel tier", details: [{ type: "plimsoll.v1.NotDispatched", value: "CAU" }] });
  const bound = errorOf({ status: 400, body, bound: true, mark: "", unsent: false, timedOut: false, tooLarge: false, transportError: "" });
  assert.ok(bound instanceof BulkheadError);
  assert.equal(bound.message, "Nothing ran (isolation): the floor vm is above the kernel tier");
  const unbound = errorOf({ status: 400, body, bound: false, mark: "", unsent: false, timedOut: false, tooLarge: false, transportError: "" });
  assert.ok(unbound.message.startsWith(MAY_HAVE_RUN));
  assert.equal(unbound.notDispatched, false);
  const header = errorOf({ status: 404, body: "", bound: true, mark: "unsupported", unsent: false, timedOut: false, tooLarge: false, transportError: "" });
  assert.match(header.message, /^Nothing ran \(unsupported\): /);
  const unsent = errorOf({ status: 0, body: "", bound: false, mark: "", unsent: true, timedOut: false, tooLarge: false, transportError: "ECONNREFUSED" });
  assert.match(unsent.message, /^Nothing ran \(environment\): cannot reach the daemon/);
  const broke = errorOf({ status: 0, body: "", bound: false, mark: "", unsent: false, timedOut: false, tooLarge: false, transportError: "socket hang up" });
  assert.ok(broke.message.startsWith(MAY_HAVE_RUN));
  const ok200 = errorOf({ status: 200, body: "{}", bound: false, mark: "", unsent: false, timedOut: false, tooLarge: false, transportError: "" });
  assert.equal(ok200.code, "data_loss");
});

test("the owner digest is keyed from the token", () => {
  const a = ownerDigest("token-1", "alice");
  assert.match(a, /^[0-9a-f]{64}$/);
  assert.equal(a, ownerDigest("token-1", "alice"));
  assert.notEqual(a, ownerDigest("token-2", "alice"));
  assert.notEqual(a, ownerDigest("token-1", "bob"));
  assert.notEqual(a, createHash("sha256").update("alice").digest("hex"));
  // the C manager's definition (src/client/manager.c bh_owner_digest), computed with Python's hmac
  assert.equal(a, "54e1b0679df3ad254022ff1e231d3b170391bf5253704fba5b635e20b128fc92");
});
