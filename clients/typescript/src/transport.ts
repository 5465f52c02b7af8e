/**
 * One Connect unary exchange: POST a JSON body, get the status, the body and
 * the two headers that matter (the request id echoed back and the
 * not-dispatched mark). TCP goes through fetch (replaceable, so a caller can
 * count or trace calls); a unix socket goes through node:http.
 */
import { request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { randomBytes } from "node:crypto";

export const MAX_ANSWER_BYTES = 32 << 20;

export interface Exchange {
  /** 0 when no answer arrived. */
  status: number;
  body: string;
  /** Exactly one Plimsoll-Request-Id came back, equal to the one sent. */
  bound: boolean;
  /** The Plimsoll-Not-Dispatched header, "" when none. */
  mark: string;
  /** Failed before a byte of the request left this process. */
  unsent: boolean;
  timedOut: boolean;
  tooLarge: boolean;
  transportError: string;
}

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface TransportOptions {
  /** `https://HOST:PORT` (any host: `serve --tls-cert`), `http://127.0.0.1:PORT` (loopback only),
   *  `unix:/path/to.sock`, or `/path/to.sock`. */
  target: string;
  token?: string;
  /** Over http:// only (https:// goes through node:https, which takes a CA). */
  fetch?: FetchLike;
  callTimeoutMs?: number;
  /** https://: the CAs the daemon's certificate is checked against (PEM); default Node's. */
  ca?: string | Buffer;
  /** https://: a client certificate and its key (PEM), for `serve --tls-client-ca`. */
  cert?: string | Buffer;
  key?: string | Buffer;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);

export function newRequestId(): string {
  return randomBytes(16).toString("hex");
}

/** Errors whose code says the connection never opened: nothing was sent. */
const NOT_CONNECTED = new Set(["ECONNREFUSED", "ENOENT", "EACCES", "ENOTDIR", "EADDRNOTAVAIL", "ENETUNREACH", "EHOSTUNREACH"]);

function errCode(e: unknown): string {
  let cur: unknown = e;
  for (let i = 0; i < 4 && cur && typeof cur === "object"; i++) {
    const c = (cur as { code?: unknown }).code;
    if (typeof c === "string") return c;
    cur = (cur as { cause?: unknown }).cause;
  }
  return "";
}

function errWords(e: unknown): string {
  const code = errCode(e);
  const msg = e instanceof Error ? e.message : String(e);
  const cause = e instanceof Error && e.cause instanceof Error ? `: ${e.cause.message}` : "";
  return code && !msg.includes(code) ? `${msg}${cause} (${code})` : `${msg}${cause}`;
}

export class Transport {
  readonly target: string;
  private readonly base?: string;
  private readonly socketPath?: string;
  private readonly token: string;
  private readonly fetchFn: FetchLike;
  private readonly timeoutMs: number;
  private readonly agent?: HttpsAgent;
  private readonly url?: URL;

  constructor(o: TransportOptions) {
    this.target = o.target;
    this.token = o.token ?? "";
    this.fetchFn = o.fetch ?? ((i, init) => fetch(i, init));
    this.timeoutMs = o.callTimeoutMs ?? 6 * 60_000;
    if (o.target.startsWith("unix:")) this.socketPath = o.target.slice(5);
    else if (o.target.startsWith("/")) this.socketPath = o.target;
    else {
      const u = new URL(o.target);
      if (u.protocol === "https:") {
        if (u.pathname !== "/" || u.search || u.username) throw new TypeError(`bulkhead: ${o.target}: give the daemon's address without a path, query or user`);
        if (!o.cert !== !o.key) throw new TypeError("bulkhead: a client certificate needs its key (and a key its certificate)");
        this.url = u;
        // TLS 1.2 or newer, verified: the daemon serves nothing older.
        this.agent = new HttpsAgent({ keepAlive: true, ca: o.ca, cert: o.cert, key: o.key, minVersion: "TLSv1.2" });
        return;
      }
      if (u.protocol !== "http:") throw new TypeError(`bulkhead: ${o.target}: only https://, http:// to a loopback address or a unix socket`);
      if (!LOOPBACK.has(u.hostname) && !/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(u.hostname)) throw new TypeError(`bulkhead: ${o.target}: cleartext is accepted only to a loopback host`);
      this.base = `${u.protocol}//${u.host}`;
    }
  }

  private headers(requestId: string, len: number): Record<string, string> {
    const h: Record<string, string> = {
      "Content-Type": "application/json",
      "Connect-Protocol-Version": "1",
      "Plimsoll-Request-Id": requestId,
      "Content-Length": String(len),
    };
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    return h;
  }

  async call(path: string, json: string, signal?: AbortSignal): Promise<Exchange> {
    const requestId = newRequestId();
    const body = Buffer.from(json, "utf8");
    return this.socketPath || this.agent ? this.viaSocket(path, body, requestId, signal) : this.viaFetch(path, body, requestId, signal);
  }

  /** Closes the kept-alive TLS connections (the process may then exit at once). */
  close(): void {
    this.agent?.destroy();
  }

  private async viaFetch(path: string, body: Buffer, requestId: string, signal?: AbortSignal): Promise<Exchange> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    let sig = timeout;
    if (signal) {
      // AbortSignal.any is Node >= 20.3; Debian 12's node is 18
      const both = new AbortController();
      const stop = (s: AbortSignal) => both.abort(s.reason);
      if (signal.aborted) stop(signal);
      else {
        signal.addEventListener("abort", () => stop(signal), { once: true });
        timeout.addEventListener("abort", () => stop(timeout), { once: true });
      }
      sig = both.signal;
    }
    let res: Response;
    try {
      res = await this.fetchFn(`${this.base}/${path}`, {
        method: "POST",
        headers: this.headers(requestId, body.length),
        body,
        redirect: "manual",
        signal: sig,
      });
    } catch (e) {
      const code = errCode(e);
      // A TLS port answers cleartext by closing: say what that likely means.
      const closed = code === "UND_ERR_SOCKET" || code === "ECONNRESET" || code === "UND_ERR_CLOSED";
      const hint = closed && !timeout.aborted ? ` (${new URL(this.base!).host} closed the connection without an HTTP answer: if it serves TLS, use https://)` : "";
      return fail(NOT_CONNECTED.has(code), timeout.aborted, errWords(e) + hint);
    }
    try {
      const reader = res.body?.getReader();
      const parts: Uint8Array[] = [];
      let n = 0;
      if (reader) {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          n += value.length;
          if (n > MAX_ANSWER_BYTES) {
            await reader.cancel().catch(() => {});
            return { ...fail(false, false, "answer too large"), tooLarge: true };
          }
          parts.push(value);
        }
      }
      const ids = res.headers.get("plimsoll-request-id");
      return {
        status: res.status,
        body: Buffer.concat(parts).toString("utf8"),
        bound: ids === requestId,
        mark: res.headers.get("plimsoll-not-dispatched") ?? "",
        unsent: false,
        timedOut: false,
        tooLarge: false,
        transportError: "",
      };
    } catch (e) {
      return fail(false, timeout.aborted, errWords(e));
    }
  }

  private viaSocket(path: string, body: Buffer, requestId: string, signal?: AbortSignal): Promise<Exchange> {
    return new Promise((resolve) => {
      let connected = false;
      let settled = false;
      const done = (x: Exchange) => {
        if (!settled) {
          settled = true;
          clearTimeout(timer);
          resolve(x);
        }
      };
      const u = this.url;
      const req = u
        ? httpsRequest({
            host: u.hostname.replace(/^\[|\]$/g, ""),
            port: u.port || 443,
            servername: /^[\d.]+$|:/.test(u.hostname) ? undefined : u.hostname,
            path: `/${path}`,
            method: "POST",
            headers: this.headers(requestId, body.length),
            agent: this.agent,
            signal,
          })
        : httpRequest({
            socketPath: this.socketPath,
            path: `/${path}`,
            method: "POST",
            headers: { ...this.headers(requestId, body.length), Host: "localhost" },
            signal,
          });
      const timer = setTimeout(() => {
        done(fail(!connected, true, `no whole answer within ${this.timeoutMs} ms`));
        req.destroy();
      }, this.timeoutMs);
      // Over TLS a byte of the request can leave only after the handshake.
      const ready = u ? "secureConnect" : "connect";
      req.on("socket", (s) => {
        if (!s.connecting && (!u || (s as { encrypted?: boolean; authorized?: boolean }).authorized)) connected = true;
        else s.once(ready, () => (connected = true));
      });
      req.on("error", (e) => done(fail(!connected || NOT_CONNECTED.has(errCode(e)), false, u ? tlsWords(u, e) : errWords(e))));
      req.on("response", (res) => {
        const parts: Buffer[] = [];
        let n = 0;
        res.on("data", (c: Buffer) => {
          n += c.length;
          if (n > MAX_ANSWER_BYTES) {
            done({ ...fail(false, false, "answer too large"), tooLarge: true });
            req.destroy();
            return;
          }
          parts.push(c);
        });
        res.on("error", (e) => done(fail(false, false, errWords(e))));
        res.on("end", () => {
          const raw = res.headersDistinct["plimsoll-request-id"] ?? [];
          const mark = res.headers["plimsoll-not-dispatched"];
          done({
            status: res.statusCode ?? 0,
            body: Buffer.concat(parts).toString("utf8"),
            bound: raw.length === 1 && raw[0] === requestId,
            mark: typeof mark === "string" ? mark : "",
            unsent: false,
            timedOut: false,
            tooLarge: false,
            transportError: "",
          });
        });
      });
      req.end(body);
    });
  }
}

/** Node's certificate errors (their codes), named with the host. */
const CERT_CODES = /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ERR_TLS|HOSTNAME|ALTNAME|EPROTO|ERR_SSL/;

function tlsWords(u: URL, e: unknown): string {
  const code = errCode(e);
  if (!CERT_CODES.test(code)) return errWords(e);
  const what = /CERT|SELF_SIGNED|UNABLE_TO|ALTNAME|HOSTNAME/.test(code) ? `the TLS certificate of ${u.host} does not verify` : `TLS with ${u.host} failed`;
  return `${what}: ${errWords(e)}`;
}

function fail(unsent: boolean, timedOut: boolean, words: string): Exchange {
  return { status: 0, body: "", bound: false, mark: "", unsent, timedOut, tooLarge: false, transportError: words };
}
