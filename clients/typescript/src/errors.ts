/**
 * Errors that keep the one distinction a caller retries on: whether anything
 * ran. Only a mark the daemon set on an answer bound to our request (or a
 * failure before a byte of the request left this process) says "Nothing
 * ran"; everything else says the code may have run.
 */
import type { RunRecord } from "./record.js";

export const MAY_HAVE_RUN = "The code may have run, and there is no checked answer for it: ";

/** plimsoll.v1.NotDispatchedReason, by wire number. */
export const REFUSAL_REASONS = ["unspecified", "request", "permission", "protocol", "unsupported", "isolation", "capacity", "environment"] as const;
export type RefusalReason = Exclude<(typeof REFUSAL_REASONS)[number], "unspecified">;

/** plimsoll.v1.SessionEnd, by wire number. */
export const SESSION_ENDS = [
  "SESSION_END_UNSPECIFIED",
  "SESSION_END_CLOSED",
  "SESSION_END_EXPIRED",
  "SESSION_END_DISK_EXCEEDED",
  "SESSION_END_MAIN_PROCESS_ENDED",
  "SESSION_END_BOUNDARY_FAILED",
  "SESSION_END_SANDBOX_CHANGED",
  "SESSION_END_SHUTDOWN",
  "SESSION_END_REPLACED",
  "SESSION_END_NOT_FOUND",
  "SESSION_END_UNCLAIMED",
] as const;
export type SessionEnd = (typeof SESSION_ENDS)[number];

export interface BulkheadErrorInit {
  code: string;
  /** Set only when nothing ran. */
  reason?: RefusalReason;
  sessionEnded?: SessionEnd;
  endDetail?: string;
  /** A checked version-3 record: the call may have run and keeps its place in the chain. */
  unanswered?: RunRecord;
  httpStatus?: number;
  cause?: unknown;
}

export class BulkheadError extends Error {
  /** The daemon's Connect code, or the client's own (`data_loss`, `unavailable` ...). */
  readonly code: string;
  readonly notDispatched: boolean;
  readonly reason?: RefusalReason;
  readonly sessionEnded?: SessionEnd;
  readonly endDetail: string;
  readonly unanswered?: RunRecord;
  readonly httpStatus: number;
  /** The words after the prefix. */
  readonly words: string;

  constructor(words: string, init: BulkheadErrorInit) {
    const prefix = init.reason ? `Nothing ran (${init.reason}): ` : MAY_HAVE_RUN;
    super(prefix + words, init.cause !== undefined ? { cause: init.cause } : undefined);
    this.name = "BulkheadError";
    this.code = init.code;
    this.notDispatched = !!init.reason;
    this.reason = init.reason;
    this.sessionEnded = init.sessionEnded;
    this.endDetail = init.endDetail ?? "";
    this.unanswered = init.unanswered;
    this.httpStatus = init.httpStatus ?? 0;
    this.words = words;
  }
}

/** Nothing ran. */
export function refused(code: string, reason: RefusalReason, words: string, extra: Partial<BulkheadErrorInit> = {}): BulkheadError {
  return new BulkheadError(words, { ...extra, code, reason });
}

/** The answer does not check: the code may have run. */
export function dataLoss(words: string, extra: Partial<BulkheadErrorInit> = {}): BulkheadError {
  return new BulkheadError(words, { ...extra, code: "data_loss", reason: undefined });
}

export function refusalByName(name: string): RefusalReason | undefined {
  const i = REFUSAL_REASONS.indexOf(name as RefusalReason);
  return i > 0 ? (REFUSAL_REASONS[i] as RefusalReason) : undefined;
}

// ---- protobuf details (binary, base64 in the Connect error JSON) ----

interface PbField {
  no: number;
  varint?: bigint;
  bytes?: Uint8Array;
}

function pbFields(buf: Uint8Array): PbField[] {
  const out: PbField[] = [];
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      if (i >= buf.length) throw new RangeError("truncated varint");
      const b = buf[i++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
      shift += 7n;
      if (shift > 63n) throw new RangeError("varint too long");
    }
  };
  while (i < buf.length) {
    const tag = varint();
    const no = Number(tag >> 3n);
    const wt = Number(tag & 7n);
    if (wt === 0) out.push({ no, varint: varint() });
    else if (wt === 2) {
      const n = Number(varint());
      if (i + n > buf.length) throw new RangeError("truncated field");
      out.push({ no, bytes: buf.subarray(i, i + n) });
      i += n;
    } else if (wt === 1) i += 8;
    else if (wt === 5) i += 4;
    else throw new RangeError(`wire type ${wt}`);
  }
  return out;
}

const dec = new TextDecoder("utf-8", { fatal: false });

function pbRecord(buf: Uint8Array): RunRecord {
  const r: RunRecord = {
    version: 0,
    requestSha256: "",
    resultSha256: "",
    provider: "",
    isolation: "",
    environment: "",
    policy: "",
    softwareIdentity: "",
    softwareRuleId: "",
    startedUnixMs: 0n,
    endedUnixMs: 0n,
    session: "",
    sequence: 0n,
    previousSha256: "",
    recordSha256: "",
    unanswered: "",
  };
  const strs: Record<number, keyof RunRecord> = {
    2: "requestSha256",
    3: "resultSha256",
    4: "provider",
    5: "isolation",
    6: "environment",
    7: "policy",
    10: "session",
    12: "previousSha256",
    13: "recordSha256",
    14: "softwareIdentity",
    15: "softwareRuleId",
    16: "unanswered",
  };
  for (const f of pbFields(buf)) {
    if (f.no === 1 && f.varint !== undefined) r.version = Number(f.varint);
    else if ((f.no === 8 || f.no === 9) && f.varint !== undefined) {
      const v = BigInt.asIntN(64, f.varint);
      if (f.no === 8) r.startedUnixMs = v;
      else r.endedUnixMs = v;
    } else if (f.no === 11 && f.varint !== undefined) r.sequence = f.varint;
    else if (f.bytes && strs[f.no]) (r as unknown as Record<string, unknown>)[strs[f.no]!] = dec.decode(f.bytes);
  }
  return r;
}

export interface DecodedDetails {
  reason?: RefusalReason;
  sessionEnded?: SessionEnd;
  endDetail?: string;
  unanswered?: RunRecord;
}

function b64(s: string): Uint8Array {
  return new Uint8Array(Buffer.from(s, "base64"));
}

/** The details of a Connect error JSON body; details that do not parse are ignored. */
export function decodeDetails(details: unknown): DecodedDetails {
  const out: DecodedDetails = {};
  if (!Array.isArray(details)) return out;
  for (const d of details) {
    if (!d || typeof d !== "object") continue;
    const { type, value } = d as { type?: unknown; value?: unknown };
    if (typeof type !== "string" || typeof value !== "string") continue;
    try {
      const buf = b64(value);
      if (type === "plimsoll.v1.NotDispatched") {
        const f = pbFields(buf).find((x) => x.no === 1 && x.varint !== undefined);
        const n = f ? Number(f.varint) : 0;
        if (n > 0 && n < REFUSAL_REASONS.length) out.reason = REFUSAL_REASONS[n] as RefusalReason;
      } else if (type === "plimsoll.v1.SessionEnded") {
        const fs = pbFields(buf);
        const e = fs.find((x) => x.no === 1 && x.varint !== undefined);
        const n = e ? Number(e.varint) : 0;
        out.sessionEnded = SESSION_ENDS[n] ?? "SESSION_END_UNSPECIFIED";
        const det = fs.find((x) => x.no === 2 && x.bytes);
        out.endDetail = det?.bytes ? dec.decode(det.bytes) : "";
      } else if (type === "plimsoll.v1.UnansweredCall") {
        const rec = pbFields(buf).find((x) => x.no === 1 && x.bytes);
        if (rec?.bytes) out.unanswered = pbRecord(rec.bytes);
      }
    } catch {
      /* a detail that does not parse says nothing */
    }
  }
  return out;
}

/** SessionEnd from proto3 JSON (a name or a number). */
export function sessionEndOf(v: unknown): SessionEnd {
  if (typeof v === "number") return SESSION_ENDS[v] ?? "SESSION_END_UNSPECIFIED";
  if (typeof v === "string" && (SESSION_ENDS as readonly string[]).includes(v)) return v as SessionEnd;
  return "SESSION_END_UNSPECIFIED";
}
