/**
 * One Connect unary exchange: POST a JSON body, get the status, the body and
 * the two headers that matter (the request id echoed back and the
 * not-dispatched mark). TCP goes through fetch (replaceable, so a caller can
 * count or trace calls); a unix socket goes through node:http.
 */
import { request as httpRequest } from "node:http";
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
  /** `http://127.0.0.1:PORT` (loopback only), `unix:/path/to.sock`, or `/path/to.sock`. */
  target: string;
  token?: string;
  fetch?: FetchLike;
  callTimeoutMs?: number;
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

  constructor(o: TransportOptions) {
    this.target = o.target;
    this.token = o.token ?? "";
    this.fetchFn = o.fetch ?? ((i, init) => fetch(i, init));
    this.timeoutMs = o.callTimeoutMs ?? 6 * 60_000;
    if (o.target.startsWith("unix:")) this.socketPath = o.target.slice(5);
    else if (o.target.startsWith("/")) this.socketPath = o.target;
    else {
      const u = new URL(o.target);
      if (u.protocol !== "http:") throw new TypeError(`bulkhead: ${o.target}: only http:// to a loopback address or a unix socket`);
      if (!LOOPBACK.has(u.hostname)) throw new TypeError(`bulkhead: ${o.target}: cleartext is accepted only to a loopback host`);
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
    return this.socketPath ? this.viaSocket(path, body, requestId, signal) : this.viaFetch(path, body, requestId, signal);
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
      return fail(NOT_CONNECTED.has(code), timeout.aborted, errWords(e));
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
      const req = httpRequest({
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
      req.on("socket", (s) => {
        if (!s.connecting) connected = true;
        else s.once("connect", () => (connected = true));
      });
      req.on("error", (e) => done(fail(!connected || NOT_CONNECTED.has(errCode(e)), false, errWords(e))));
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

function fail(unsent: boolean, timedOut: boolean, words: string): Exchange {
  return { status: 0, body: "", bound: false, mark: "", unsent, timedOut, tooLarge: false, transportError: words };
}
