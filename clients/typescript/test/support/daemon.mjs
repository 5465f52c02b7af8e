// Starts a real `bulkhead serve` for a test file: a temp state directory, a
// clients file with one token (code:run,operator), a unix socket and a
// loopback TCP port. stop() kills it by pid and removes the directory; it
// also runs at process exit, so a failed test leaves nothing behind.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, chmodSync, rmSync, existsSync } from "node:fs";
import { createServer } from "node:net";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const packageDir = resolve(here, "../..");
export const bulkheadBin = resolve(packageDir, process.env.BULKHEAD_BIN ?? "../../build/bulkhead");

function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

function readyz(socketPath) {
  return new Promise((res) => {
    const req = request({ socketPath, path: "/readyz", method: "GET", headers: { Host: "localhost" } }, (r) => {
      let body = "";
      r.on("data", (c) => (body += c));
      r.on("end", () => res({ status: r.statusCode, body }));
    });
    req.on("error", (e) => res({ status: 0, body: String(e) }));
    req.end();
  });
}

/**
 * @param {{ args?: string[], readyMs?: number, host?: string, tls?: boolean }} [o]
 *   host: the --listen address (default 127.0.0.1); tls: the args hold
 *   --tls-cert/--tls-key, so url is https://
 */
export async function startDaemon(o = {}) {
  if (!existsSync(bulkheadBin)) throw new Error(`no bulkhead binary at ${bulkheadBin} (build it, or set BULKHEAD_BIN)`);
  const dir = mkdtempSync(join(process.env.BULKHEAD_TEST_ROOT ?? tmpdir(), "bhts-"));
  chmodSync(dir, 0o711); // sandboxes run as other uids and walk through it
  const clients = join(dir, "clients");
  const token = execFileSync(bulkheadBin, ["token", "create", "ts-tests", "--scope", "code:run,operator", "--clients", clients], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  })
    .split("\n")[0]
    .trim();
  const socket = join(dir, "bulkhead.sock");
  const port = await freePort();
  const host = o.host ?? "127.0.0.1";
  const log = [];
  const child = spawn(
    bulkheadBin,
    ["serve", "--state", join(dir, "state"), "--socket", socket, "--listen", `${host}:${port}`, "--clients", clients, "--audit", join(dir, "audit.log"), ...(o.args ?? [])],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  child.stdout.on("data", (c) => log.push(String(c)));
  child.stderr.on("data", (c) => log.push(String(c)));
  let exited = false;
  const exitP = new Promise((res) => child.once("exit", () => ((exited = true), res())));
  let stopped = false;
  const cleanupSync = () => {
    if (!exited) {
      try {
        process.kill(child.pid, "SIGKILL");
      } catch {}
    }
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {}
  };
  process.once("exit", cleanupSync);
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (!exited) {
      process.kill(child.pid, "SIGTERM");
      const t = setTimeout(() => !exited && process.kill(child.pid, "SIGKILL"), 15_000);
      await exitP;
      clearTimeout(t);
    }
    rmSync(dir, { recursive: true, force: true });
    process.removeListener("exit", cleanupSync);
  };
  const deadline = Date.now() + (o.readyMs ?? 120_000);
  let last = { status: 0, body: "" };
  while (Date.now() < deadline) {
    if (exited) break;
    last = await readyz(socket);
    if (last.status === 200) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  if (last.status !== 200) {
    await stop();
    throw new Error(`bulkhead serve did not become ready: ${last.status} ${last.body}\n${log.join("")}`);
  }
  const tier = /ready: (\w+) tier/.exec(last.body)?.[1] ?? "";
  return { dir, socket, url: `${o.tls ? "https" : "http"}://${host}:${port}`, port, token, tier, pid: child.pid, log, stop };
}

/** A fetch that counts daemon procedures by URL suffix. */
export function countingFetch(counts = {}) {
  const f = async (url, init) => {
    const m = /\/([A-Za-z]+)$/.exec(String(url));
    if (m) counts[m[1]] = (counts[m[1]] ?? 0) + 1;
    return fetch(url, init);
  };
  f.counts = counts;
  return f;
}

/** One operator call (bulkhead.v1.OperatorService) over TCP. */
export async function operator(d, method, body) {
  const r = await fetch(`${d.url}/bulkhead.v1.OperatorService/${method}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${d.token}` },
    body: JSON.stringify(body ?? {}),
  });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${method}: HTTP ${r.status} ${text}`);
  return JSON.parse(text);
}
