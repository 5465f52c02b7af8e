/**
 * Run records (plimsoll.md §5 and Appendix A): the digests a client
 * recomputes from what it sent and what it received. Nothing the daemon says
 * about a record is believed until these agree.
 *
 * Encoding: every value is an 8-byte big-endian length and its bytes; a
 * digest is the lowercase hex SHA-256 of the domain as a value, then each
 * field's name and content as values. Integers are decimal ASCII, booleans
 * `true`/`false`, strings UTF-8, output raw bytes; a repeated group is its
 * name with the decimal count, then its members' fields.
 */
import { createHash, type Hash } from "node:crypto";

export type Bytes = Uint8Array;

/** A run record as the daemon states it (proto3 JSON, already normalized). */
export interface RunRecord {
  version: number;
  requestSha256: string;
  resultSha256: string;
  provider: string;
  isolation: string;
  environment: string;
  policy: string;
  softwareIdentity: string;
  softwareRuleId: string;
  startedUnixMs: bigint;
  endedUnixMs: bigint;
  session: string;
  sequence: bigint;
  previousSha256: string;
  recordSha256: string;
  /** Version 3 only: the Connect code of a call that may have run. */
  unanswered: string;
}

/** What the request digest covers (the trace id and session id never enter). */
export interface RequestFields {
  protocol: number;
  minimumIsolation: string;
  /** As sent; 0 when omitted. */
  timeoutMs: number;
  softwareMode?: string;
  softwareIdentities?: string[];
  kind: "javascript" | "cell" | "project" | "";
  code?: string | Bytes;
  grantProfile?: string;
  language?: string;
  files?: { path: string; content: string | Bytes }[];
  /** A project's (plimsoll.md §5.2): its commands and the artifact paths asked for. */
  steps?: string[];
  artifacts?: string[];
}

/** What the result digest covers: a snippet's or a cell's, or a project's. */
export type ResultFields = ExecResultFields | ProjectResultFields;

export interface ExecResultFields {
  kind: "javascript" | "cell";
  exitCode: number;
  timedOut: boolean;
  stdout: Bytes;
  stderr: Bytes;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  interpreterStarted?: boolean;
  interpreterEnded?: boolean;
}

/** A project's result as digested (plimsoll.md §5.2); outcome by its enum number. */
export interface ProjectResultFields {
  kind: "project";
  outcomeNumber: number;
  outcomeDetail: string;
  artifactsTruncated: boolean;
  steps: {
    command: string;
    exitCode: number;
    timedOut: boolean;
    stdout: Bytes;
    stderr: Bytes;
    stdoutTruncated: boolean;
    stderrTruncated: boolean;
  }[];
  artifacts: { path: string; content: Bytes }[];
}

const utf8 = new TextEncoder();

function bytesOf(v: string | Bytes): Bytes {
  return typeof v === "string" ? utf8.encode(v) : v;
}

class Digest {
  private readonly h: Hash = createHash("sha256");
  constructor(domain: string) {
    this.value(bytesOf(domain));
  }
  private value(b: Bytes): void {
    const len = Buffer.alloc(8);
    len.writeBigUInt64BE(BigInt(b.length));
    this.h.update(len);
    if (b.length) this.h.update(b);
  }
  field(name: string, content: string | Bytes): this {
    this.value(bytesOf(name));
    this.value(bytesOf(content));
    return this;
  }
  int(name: string, v: number | bigint): this {
    return this.field(name, BigInt(v).toString(10));
  }
  bool(name: string, v: boolean): this {
    return this.field(name, v ? "true" : "false");
  }
  hex(): string {
    return this.h.digest("hex");
  }
}

export function requestDigest(r: RequestFields): string {
  const d = new Digest(r.protocol >= 2 ? "plimsoll.run-request.v2" : "plimsoll.run-request.v1");
  d.int("protocol", r.protocol).field("minimum_isolation", r.minimumIsolation).int("timeout_ms", r.timeoutMs);
  if (r.protocol >= 2) {
    const ids = r.softwareIdentities ?? [];
    d.field("software_mode", r.softwareMode ?? "").int("software_identities", ids.length);
    for (const id of ids) d.field("software_identity", id);
  }
  d.field("kind", r.kind);
  if (r.kind === "javascript") {
    d.field("code", r.code ?? "").field("grant_profile", r.grantProfile ?? "");
  } else if (r.kind === "cell") {
    const files = r.files ?? [];
    d.field("language", r.language ?? "").field("code", r.code ?? "").int("files", files.length);
    for (const f of files) d.field("file_path", f.path).field("file_content", f.content);
  } else if (r.kind === "project") {
    const files = r.files ?? [];
    const steps = r.steps ?? [];
    const artifacts = r.artifacts ?? [];
    d.field("grant_profile", r.grantProfile ?? "").int("files", files.length);
    for (const f of files) d.field("file_path", f.path).field("file_content", f.content);
    d.int("steps", steps.length);
    for (const c of steps) d.field("step_command", c);
    d.int("artifacts", artifacts.length);
    for (const a of artifacts) d.field("artifact_path", a);
  }
  return d.hex();
}

export function resultDigest(r: ResultFields): string {
  const d = new Digest("plimsoll.run-result.v1");
  if (r.kind === "project") {
    d.field("kind", "project")
      .int("outcome", r.outcomeNumber)
      .field("outcome_detail", r.outcomeDetail)
      .bool("artifacts_truncated", r.artifactsTruncated)
      .int("steps", r.steps.length);
    for (const st of r.steps)
      d.field("step_command", st.command)
        .int("step_exit_code", st.exitCode)
        .bool("step_timed_out", st.timedOut)
        .field("step_stdout", st.stdout)
        .field("step_stderr", st.stderr)
        .bool("step_stdout_truncated", st.stdoutTruncated)
        .bool("step_stderr_truncated", st.stderrTruncated);
    d.int("artifacts", r.artifacts.length);
    for (const a of r.artifacts) d.field("artifact_path", a.path).field("artifact_content", a.content);
    return d.hex();
  }
  d.field("kind", r.kind)
    .int("exit_code", r.exitCode)
    .bool("timed_out", r.timedOut)
    .field("stdout", r.stdout)
    .field("stderr", r.stderr)
    .bool("stdout_truncated", r.stdoutTruncated)
    .bool("stderr_truncated", r.stderrTruncated);
  if (r.kind === "cell") {
    d.bool("interpreter_started", !!r.interpreterStarted).bool("interpreter_ended", !!r.interpreterEnded);
  }
  return d.hex();
}

/** The digest a record's fields give (what `recordSha256` must be). */
export function recordDigest(r: RunRecord): string {
  const d = new Digest(`plimsoll.run-record.v${r.version}`);
  d.field("request_sha256", r.requestSha256).field("result_sha256", r.resultSha256);
  if (r.version === 3) d.field("unanswered", r.unanswered);
  d.field("provider", r.provider).field("isolation", r.isolation).field("environment", r.environment).field("policy", r.policy);
  if (r.version >= 2) d.field("software_identity", r.softwareIdentity).field("software_rule_id", r.softwareRuleId);
  d.int("started_unix_ms", r.startedUnixMs)
    .int("ended_unix_ms", r.endedUnixMs)
    .field("session", r.session)
    .int("sequence", r.sequence)
    .field("previous_sha256", r.previousSha256);
  return d.hex();
}

export function verifyRecord(r: RunRecord): boolean {
  return recordDigest(r) === r.recordSha256;
}

/** The session fingerprint: SHA-256 (hex) of the session id string. */
export function fingerprintOf(sessionId: string): string {
  return createHash("sha256").update(sessionId, "utf8").digest("hex");
}

/** The golden vector of plimsoll's record tests (Appendix A). */
export const GOLDEN_REQUEST: RequestFields = {
  protocol: 1,
  minimumIsolation: "container",
  timeoutMs: 5000,
  kind: "javascript",
  code: "console.log(1+1)",
  grantProfile: "",
};
export const GOLDEN_REQUEST_SHA256 = "585a1b46c55ebacc1dfdd4336e302328c32ed3e2e7e8a8b460d252d0454be8fc";

const asStr = (v: unknown): string => (typeof v === "string" ? v : v == null ? "" : String(v));
function asBig(v: unknown): bigint {
  if (v == null || v === "") return 0n;
  if (typeof v === "bigint") return v;
  if (typeof v === "number" && Number.isInteger(v)) return BigInt(v);
  if (typeof v === "string" && /^-?\d+$/.test(v)) return BigInt(v);
  throw new TypeError(`not an integer: ${JSON.stringify(v)}`);
}

/** A record from proto3 JSON (zero values omitted, 64-bit as strings). Throws on a bad shape. */
export function recordFromJson(o: unknown): RunRecord {
  if (!o || typeof o !== "object") throw new TypeError("the record is not an object");
  const j = o as Record<string, unknown>;
  const version = Number(j.version ?? 0);
  if (!Number.isInteger(version) || version < 0) throw new TypeError("the record's version is not a number");
  return {
    version,
    requestSha256: asStr(j.requestSha256),
    resultSha256: asStr(j.resultSha256),
    provider: asStr(j.provider),
    isolation: asStr(j.isolation),
    environment: asStr(j.environment),
    policy: asStr(j.policy),
    softwareIdentity: asStr(j.softwareIdentity),
    softwareRuleId: asStr(j.softwareRuleId),
    startedUnixMs: asBig(j.startedUnixMs),
    endedUnixMs: asBig(j.endedUnixMs),
    session: asStr(j.session),
    sequence: asBig(j.sequence),
    previousSha256: asStr(j.previousSha256),
    recordSha256: asStr(j.recordSha256),
    unanswered: asStr(j.unanswered),
  };
}
