// The add-on over https (issue 19, acceptance 1): `serve --listen
// 127.0.0.2:PORT --tls-cert --tls-key` with a test CA made here by the
// openssl CLI; a session with the CA given, and a wrong CA, an expired
// certificate and plain HTTP refused with words naming the host and why.
// One daemon; the expired pair is swapped in by SIGHUP at the end.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { startDaemon } from "./support/daemon.mjs";
import { Client, BulkheadError } from "../dist/index.js";

const pki = mkdtempSync(join(process.env.BULKHEAD_TEST_ROOT ?? tmpdir(), "bhts-tls-"));
const ssl = (...args) => execFileSync("openssl", args, { cwd: pki, stdio: ["ignore", "ignore", "pipe"] });

function ca(name) {
  ssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.pem`, "-days", "2", "-subj", `/CN=${name}`,
    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign");
}
function cert(name, days) {
  writeFileSync(join(pki, `${name}.ext`), "subjectAltName=IP:127.0.0.2\nextendedKeyUsage=serverAuth\n");
  ssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`);
  ssl("x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", String(days), "-extfile", `${name}.ext`, "-out", `${name}.pem`);
}

let d;
before(async () => {
  ca("ca");
  ca("other");
  cert("server", 2);
  cert("expired", -1); // its validity ended a day before it began
  writeFileSync(join(pki, "live.pem"), readFileSync(join(pki, "server.pem")));
  writeFileSync(join(pki, "live.key"), readFileSync(join(pki, "server.key")));
  d = await startDaemon({ host: "127.0.0.2", tls: true, args: ["--tls-cert", join(pki, "live.pem"), "--tls-key", join(pki, "live.key")] });
});
after(async () => {
  await d?.stop();
  rmSync(pki, { recursive: true, force: true });
});

const dec = (b) => Buffer.from(b).toString("utf8");
const caPem = () => readFileSync(join(pki, "ca.pem"));

async function refusal(c) {
  try {
    await c.describe();
  } catch (e) {
    assert.ok(e instanceof BulkheadError, String(e));
    return e.message;
  }
  assert.fail("the call was answered");
}

test("a session over https with the daemon's CA", async () => {
  const c = new Client({ target: d.url, token: d.token, ca: caPem() });
  const s = await c.openSession({ minimumIsolation: d.tier, languages: ["python"] });
  const a = await s.runCell({ language: "python", code: "print(6 * 7)" });
  assert.equal(dec(a.run.result.stdout), "42\n");
  const closed = await s.close();
  assert.equal(closed.calls, 1n);
  c.transport.close();
});

test("a wrong CA and plain HTTP are refused, naming the host and the reason", async () => {
  const host = `127.0.0.2:${d.port}`;
  const wrong = await refusal(new Client({ target: d.url, token: d.token, ca: readFileSync(join(pki, "other.pem")) }));
  assert.match(wrong, new RegExp(`cannot reach the daemon: the TLS certificate of ${host} does not verify: .*(self.signed|issuer|verify)`, "i"));
  const none = await refusal(new Client({ target: d.url, token: d.token })); // Node's own CAs
  assert.match(none, new RegExp(`the TLS certificate of ${host} does not verify`));
  // Cleartext to a host off loopback is refused before anything is sent ...
  assert.throws(() => new Client({ target: `http://192.0.2.1:${d.port}`, token: d.token }), /cleartext is accepted only to a loopback host/);
  // ... and plain HTTP to the TLS port is answered, in cleartext, with where to go.
  try {
    await new Client({ target: `http://127.0.0.2:${d.port}`, token: d.token }).describe();
    assert.fail("plain HTTP was answered");
  } catch (e) {
    assert.ok(e instanceof BulkheadError, String(e));
    assert.match(e.message, new RegExp(`this port speaks TLS: call https://127.0.0.2:${d.port}/`));
    assert.equal(e.notDispatched, true);
  }
});

test("an expired certificate (swapped in by SIGHUP) is refused as expired", async () => {
  writeFileSync(join(pki, "live.pem"), readFileSync(join(pki, "expired.pem")));
  writeFileSync(join(pki, "live.key"), readFileSync(join(pki, "expired.key")));
  process.kill(d.pid, "SIGHUP");
  const deadline = Date.now() + 10_000; // the reload is the daemon's next loop turn
  let m = "";
  while (Date.now() < deadline) {
    const c = new Client({ target: d.url, token: d.token, ca: caPem() });
    try {
      await c.describe();
    } catch (e) {
      m = e.message;
      break;
    } finally {
      c.transport.close();
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.match(m, new RegExp(`the TLS certificate of 127.0.0.2:${d.port} does not verify: certificate has expired`));
});
