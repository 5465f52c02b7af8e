/**
 * A client of bulkhead serve's plimsoll.v1.SandboxService (protocol 3).
 *
 * Every answer is checked the way plimsoll's clients check it: it must carry
 * back the request id sent with it; each run record is recomputed from what
 * was sent and what was received; the tier must meet the floor; a session's
 * records must continue the chain this client has seen. An error's message
 * begins `Nothing ran (REASON): ` only when the daemon marked it not
 * dispatched (or nothing left this process), and `The code may have run,
 * and there is no checked answer for it: ` otherwise.
 */
import { readFileSync } from "node:fs";
import { BulkheadError, dataLoss, decodeDetails, refused, refusalByName, sessionEndOf, type SessionEnd } from "./errors.js";
import { fingerprintOf, recordFromJson, requestDigest, resultDigest, verifyRecord, type RequestFields, type ResultFields, type RunRecord } from "./record.js";
import { Transport, type Exchange, type FetchLike } from "./transport.js";
import { ownerDigestWith, ownerKey } from "./owner.js";

export const PROTOCOL = 3;
const SERVICE = "plimsoll.v1.SandboxService";

export const TIERS = ["none", "process", "container", "kernel", "vm"] as const;
export type Tier = (typeof TIERS)[number];
export type Language = "python" | "javascript";

/** True when `isolation` meets `floor` (an empty or "none" floor is met by anything). */
export function tierMeets(isolation: string, floor: string | undefined): boolean {
  if (!floor || floor === "none") return true;
  const have = TIERS.indexOf(isolation as Tier);
  const want = TIERS.indexOf(floor as Tier);
  return have >= 0 && want >= 0 && have >= want;
}

function higherFloor(a: string, b: string | undefined): string {
  if (!b) return a;
  if (!a) return b;
  return TIERS.indexOf(b as Tier) > TIERS.indexOf(a as Tier) ? b : a;
}

export interface ClientOptions {
  /** `http://127.0.0.1:PORT`, `unix:/run/bulkhead/bulkhead.sock` or a socket path.
   *  Default: $BULKHEAD_URL, else $BULKHEAD_SOCKET, else /run/bulkhead/bulkhead.sock. */
  target?: string;
  /** Bearer token; default $BULKHEAD_TOKEN; "" for an --open daemon. */
  token?: string;
  /** The fetch used over TCP (for tracing or counting calls). */
  fetch?: FetchLike;
  /** One whole exchange; default 6 minutes. */
  callTimeoutMs?: number;
  /** https://: the daemon's CA (PEM text); default the file named by $BULKHEAD_CACERT, else Node's CAs. */
  ca?: string | Buffer;
  /** https://: a client certificate and its key (PEM text), for `serve --tls-client-ca`. */
  cert?: string | Buffer;
  key?: string | Buffer;
}

export interface CellFile {
  path: string;
  /** UTF-8 text. */
  content: string;
}

export interface ExecResult {
  kind: "javascript" | "cell";
  stdout: Uint8Array;
  stderr: Uint8Array;
  exitCode: number;
  timedOut: boolean;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  interpreterStarted: boolean;
  interpreterEnded: boolean;
}

export interface RunAnswer {
  sandbox: string;
  isolation: string;
  environment: string;
  softwareIdentity: string;
  durationMs: number;
  record: RunRecord;
  result: ExecResult;
}

/* ---- egress: project runs (plimsoll's ProjectRun; the C client's bh_client_run_project) ---- */

/** proto3 JSON names a project's outcome; the digest takes its number. */
export const PROJECT_OUTCOMES = [
  "PROJECT_OUTCOME_UNSPECIFIED",
  "PROJECT_OUTCOME_COMPLETED",
  "PROJECT_OUTCOME_SETUP_FAILED",
  "PROJECT_OUTCOME_TIMED_OUT",
  "PROJECT_OUTCOME_PROTOCOL_ERROR",
] as const;
export type ProjectOutcome = (typeof PROJECT_OUTCOMES)[number];

export interface ProjectStep {
  command: string;
  stdout: Uint8Array;
  stderr: Uint8Array;
  /** 124 at the deadline. */
  exitCode: number;
  timedOut: boolean;
  durationMs: number;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
}

export interface ProjectArtifact {
  path: string;
  content: Uint8Array;
}

export interface ProjectResult {
  kind: "project";
  /** How the run concluded: a failing step is still COMPLETED (its exitCode says it failed). */
  outcome: ProjectOutcome;
  outcomeNumber: number;
  outcomeDetail: string;
  artifactsTruncated: boolean;
  steps: ProjectStep[];
  artifacts: ProjectArtifact[];
}

export interface ProjectAnswer {
  sandbox: string;
  isolation: string;
  environment: string;
  softwareIdentity: string;
  durationMs: number;
  record: RunRecord;
  result: ProjectResult;
}

export interface ProjectOptions {
  /** Written into /work before the first step (UTF-8 text, paths relative). */
  files?: CellFile[];
  /** 1 to 20 shell commands, run in order by /bin/sh in /work, stopping after the first that fails. */
  steps: string[];
  /** Paths under /work read back once the steps end. */
  artifacts?: string[];
  /** An egress profile held for this run only (Describe's supportsProjectGrants). */
  grantProfile?: string;
  minimumIsolation?: Tier;
  /** The whole run's budget (the daemon's default 30 s, at most 120 s). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface CellAnswer {
  run: RunAnswer;
  /** Set when this call ended the session. */
  ended?: SessionEnd;
  endDetail: string;
}

/** A profile this caller may name (bulkhead's Describe extension `grantProfiles`). */
export interface GrantProfile {
  name: string;
  description: string;
  /** A session may hold it (OpenSession's grantProfile, a session call's grant). */
  allowInSessions: boolean;
  /** The upstreams it reaches, `https://host:port`. */
  origins: string[];
}

export interface Describe {
  sandbox: string;
  isolation: string;
  protocol: number;
  supportsSessions: boolean;
  sessionLanguages: string[];
  /** A broker runs: a grant can be held (plimsoll's supportsJavascriptGrants). */
  supportsJavascriptGrants: boolean;
  /** The profiles this token may name; [] from a daemon without any (or a plimsoll one). */
  grantProfiles: GrantProfile[];
  raw: Record<string, unknown>;
}

export interface OpenOptions {
  /** Also every call's floor unless a call asks for more. */
  minimumIsolation?: Tier;
  languages?: Language[];
  lifetimeMs?: number;
  idleTimeoutMs?: number;
  /** A keyed digest of the end user (see ownerDigest). */
  owner?: string;
  traceId?: string;
  /** The egress profile the session holds from open to close (bulkhead's OpenSession
   *  extension; Describe lists the ones this token may name). The server picks it, never the model. */
  grantProfile?: string;
  signal?: AbortSignal;
}

export interface CloseAnswer {
  session: string;
  calls: bigint;
  lastRecordSha256: string;
  ended: SessionEnd;
}

/** A grant profile's name as sent: at most 64 bytes ("" or undefined: none). Whether it exists
 *  and is this caller's is the daemon's to say, with one answer for both. */
function validGrant(name: string | undefined): string {
  if (name === undefined || name === "") return "";
  if (typeof name !== "string" || Buffer.byteLength(name) > 64)
    throw refused("invalid_argument", "request", "a grant profile's name is at most 64 bytes");
  return name;
}

/** Describe's grantProfiles, read strictly: a malformed list is the daemon's fault. */
function grantProfilesOf(v: unknown): GrantProfile[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw dataLoss("Describe's grantProfiles is not a list");
  return v.map((p, i) => {
    if (!p || typeof p !== "object" || Array.isArray(p)) throw dataLoss(`Describe's grantProfiles[${i}] is not an object`);
    const o = p as Record<string, unknown>;
    const origins = o.origins ?? [];
    if (typeof o.name !== "string" || !o.name) throw dataLoss(`Describe's grantProfiles[${i}] has no name`);
    if (!Array.isArray(origins) || origins.some((x) => typeof x !== "string"))
      throw dataLoss(`Describe's grantProfiles[${i}].origins is not a list of strings`);
    return { name: o.name, description: str(o.description), allowInSessions: bool(o.allowInSessions), origins: origins as string[] };
  });
}

/** The error an exchange that is not a bound 200 stands for, or null. */
export function errorOf(a: Exchange): BulkheadError | null {
  if (a.status === 0) {
    if (a.unsent) return refused("unavailable", "environment", `cannot reach the daemon: ${a.transportError}`);
    if (a.tooLarge) return new BulkheadError("the daemon's answer is too large", { code: "resource_exhausted" });
    if (a.timedOut) return new BulkheadError(`no whole answer in time: ${a.transportError}`, { code: "deadline_exceeded" });
    return new BulkheadError(`the exchange broke after the request was sent: ${a.transportError}`, { code: "unavailable" });
  }
  if (a.status === 200) {
    if (a.bound) return null;
    return dataLoss(
      "the answer does not carry this request's id back (a daemon older than protocol 3, or something in between " +
        "answered with another request's answer or dropped the header), so nothing it says about the call is believed",
    );
  }
  if (a.status >= 300 && a.status < 400)
    return new BulkheadError(`the call was answered with a redirect (HTTP ${a.status}), which this client never follows`, {
      code: "unknown",
      httpStatus: a.status,
    });
  let code = "unknown";
  let message = `HTTP ${a.status}`;
  let details: unknown;
  try {
    const j = JSON.parse(a.body) as { code?: unknown; message?: unknown; details?: unknown };
    if (typeof j.code === "string") code = j.code;
    if (typeof j.message === "string") message = j.message;
    details = j.details;
  } catch {
    if (a.body) message = `HTTP ${a.status}: ${a.body.slice(0, 200)}`;
  }
  if (!a.bound)
    return new BulkheadError(
      `${message} (this answer does not carry the request's id back, so what it says about the call is ignored)`,
      { code, httpStatus: a.status },
    );
  const d = decodeDetails(details);
  const reason = d.reason ?? (a.mark ? refusalByName(a.mark) : undefined);
  return new BulkheadError(message, {
    code,
    reason,
    httpStatus: a.status,
    sessionEnded: d.sessionEnded,
    endDetail: d.endDetail,
    unanswered: d.unanswered,
  });
}

function bytesOfB64(v: unknown): Uint8Array {
  if (v == null || v === "") return new Uint8Array(0);
  if (typeof v !== "string") throw new TypeError("bytes are not a base64 string");
  return new Uint8Array(Buffer.from(v, "base64"));
}

const num = (v: unknown): number => (v == null || v === "" ? 0 : Number(v));
const str = (v: unknown): string => (typeof v === "string" ? v : "");
const bool = (v: unknown): boolean => v === true;

/** An answered run's object, holding a record and exactly the result kind asked for. */
function answeredRun(o: unknown, kind: "javascript" | "cell" | "project"): Record<string, unknown> {
  if (!o || typeof o !== "object") throw new TypeError("the answer carries no run");
  const j = o as Record<string, unknown>;
  if (!j.record) throw new TypeError("the answer carries no run record");
  const kinds = ["javascript", "project", "module", "cell"].filter((k) => j[k] !== undefined);
  if (kinds.length !== 1 || kinds[0] !== kind)
    throw new TypeError(`the answer's result is ${kinds.join("+") || "missing"}, the request was a ${kind}`);
  return j;
}

/* What every answered run carries besides its result: one reading for a
 * snippet's, a cell's and a project's answer. */
function runEnvelope(j: Record<string, unknown>) {
  return {
    sandbox: str(j.sandbox),
    isolation: str(j.isolation),
    environment: str(j.environment),
    softwareIdentity: str(j.softwareIdentity),
    durationMs: num(j.durationMs),
    record: recordFromJson(j.record),
  };
}

function parseRun(o: unknown, kind: "javascript" | "cell"): RunAnswer {
  const j = answeredRun(o, kind);
  const r = j[kind] as Record<string, unknown>;
  return {
    ...runEnvelope(j),
    result: {
      kind,
      stdout: bytesOfB64(r.stdout),
      stderr: bytesOfB64(r.stderr),
      exitCode: num(r.exitCode),
      timedOut: bool(r.timedOut),
      stdoutTruncated: bool(r.stdoutTruncated),
      stderrTruncated: bool(r.stderrTruncated),
      interpreterStarted: bool(r.interpreterStarted),
      interpreterEnded: bool(r.interpreterEnded),
    },
  };
}

/** What checkAnswered looks at: a snippet's, a cell's or a project's answer. */
interface AnsweredRun {
  sandbox: string;
  isolation: string;
  environment: string;
  softwareIdentity: string;
  record: RunRecord;
  result: ResultFields;
}

/** A ProjectResult read strictly: a malformed one is the daemon's fault (thrown as TypeError). */
function parseProjectResult(o: unknown): ProjectResult {
  if (!o || typeof o !== "object" || Array.isArray(o)) throw new TypeError("the project result is not an object");
  const r = o as Record<string, unknown>;
  const outcome = r.outcome === undefined ? "PROJECT_OUTCOME_UNSPECIFIED" : r.outcome;
  const outcomeNumber = PROJECT_OUTCOMES.indexOf(outcome as ProjectOutcome);
  if (outcomeNumber < 0) throw new TypeError(`the project's outcome ${JSON.stringify(outcome)} is not one plimsoll names`);
  const list = (v: unknown, what: string): Record<string, unknown>[] => {
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.some((x) => !x || typeof x !== "object" || Array.isArray(x))) throw new TypeError(`the project's ${what} is not a list of objects`);
    return v as Record<string, unknown>[];
  };
  return {
    kind: "project",
    outcome: outcome as ProjectOutcome,
    outcomeNumber,
    outcomeDetail: str(r.outcomeDetail),
    artifactsTruncated: bool(r.artifactsTruncated),
    steps: list(r.steps, "steps").map((st) => ({
      command: str(st.command),
      stdout: bytesOfB64(st.stdout),
      stderr: bytesOfB64(st.stderr),
      exitCode: num(st.exitCode),
      timedOut: bool(st.timedOut),
      durationMs: num(st.durationMs),
      stdoutTruncated: bool(st.stdoutTruncated),
      stderrTruncated: bool(st.stderrTruncated),
    })),
    artifacts: list(r.artifacts, "artifacts").map((a) => ({ path: str(a.path), content: bytesOfB64(a.content) })),
  };
}

function parseProject(o: unknown): ProjectAnswer {
  const j = answeredRun(o, "project");
  return {
    ...runEnvelope(j),
    result: parseProjectResult(j.project),
  };
}

/** Why an answered run does not hold against what was sent, or null. */
export function checkAnswered(sent: RequestFields, run: AnsweredRun): string | null {
  const r = run.record;
  if (r.version !== 2) return `protocol ${PROTOCOL} requires record version 2, the record is version ${r.version}`;
  const want = requestDigest(sent);
  if (r.requestSha256 !== want) return `request digest ${r.requestSha256}, the request sent digests to ${want}`;
  const got = resultDigest(run.result);
  if (r.resultSha256 !== got) return `result digest ${r.resultSha256}, the result received digests to ${got}`;
  if (r.provider !== run.sandbox || r.isolation !== run.isolation)
    return `the record names ${r.provider} at "${r.isolation}", the answer ${run.sandbox} at "${run.isolation}"`;
  if (r.environment !== run.environment) return "the record's environment differs from the answer's";
  if (r.softwareIdentity !== run.softwareIdentity || r.softwareRuleId)
    return "the record's software or admission rule differs from the request and the answer";
  if (!verifyRecord(r)) return `record digest ${r.recordSha256} does not match its fields`;
  if (!tierMeets(run.isolation, sent.minimumIsolation))
    return `the answer's isolation ${run.isolation || "(none)"} is below the requested ${sent.minimumIsolation}`;
  return null;
}

/** Why a version-3 (unanswered) record does not hold, or null. */
export function checkUnanswered(sent: RequestFields, r: RunRecord): string | null {
  if (r.version !== 3) return `an unanswered call's record is version ${r.version}`;
  if (r.resultSha256 || !r.unanswered || r.unanswered === "ok") return "an unanswered call's record states a result or no error code";
  const want = requestDigest(sent);
  if (r.requestSha256 !== want) return `request digest ${r.requestSha256}, the request sent digests to ${want}`;
  if (r.softwareRuleId) return "the record's software rule is not the request's";
  if (!verifyRecord(r)) return `record digest ${r.recordSha256} does not match its fields`;
  return null;
}

/** A single Run's answer, parsed and checked against what was sent; it carries no session fields. */
function checkedSingle<T extends AnsweredRun>(sent: RequestFields, parse: () => T): T {
  let run: T;
  try {
    run = parse();
  } catch (e) {
    throw dataLoss((e as Error).message);
  }
  const problem = checkAnswered(sent, run);
  if (problem) throw dataLoss(problem);
  const r = run.record;
  if (r.session || r.sequence !== 0n || r.previousSha256) throw dataLoss("a single run's record carries session fields");
  return run;
}

function validFloor(f: string | undefined): string {
  if (!f) return "";
  if (!(TIERS as readonly string[]).includes(f) || f === "none") throw refused("invalid_argument", "request", `unknown floor "${f}"`);
  return f;
}

export class Client {
  readonly transport: Transport;
  readonly #ownerKey: Buffer;

  constructor(o: ClientOptions = {}) {
    const target =
      o.target ?? process.env.BULKHEAD_URL ?? (process.env.BULKHEAD_SOCKET ? `unix:${process.env.BULKHEAD_SOCKET}` : "unix:/run/bulkhead/bulkhead.sock");
    const token = o.token ?? process.env.BULKHEAD_TOKEN ?? "";
    const ca = o.ca ?? (process.env.BULKHEAD_CACERT ? readFileSync(process.env.BULKHEAD_CACERT) : undefined);
    this.transport = new Transport({ target, token, fetch: o.fetch, callTimeoutMs: o.callTimeoutMs, ca, cert: o.cert, key: o.key });
    this.#ownerKey = ownerKey(token);
  }

  /** The owner as OpenSession carries it: a keyed digest, so the id itself never leaves this process. */
  ownerDigest(owner: string): string {
    if (!owner) throw refused("invalid_argument", "request", "an owner must not be empty");
    return ownerDigestWith(this.#ownerKey, owner);
  }

  async call(method: string, body: unknown, signal?: AbortSignal): Promise<{ json: Record<string, unknown> }> {
    const a = await this.transport.call(`${SERVICE}/${method}`, JSON.stringify(body), signal);
    const e = errorOf(a);
    if (e) throw e;
    try {
      const j = JSON.parse(a.body) as unknown;
      if (!j || typeof j !== "object" || Array.isArray(j)) throw new TypeError("not an object");
      return { json: j as Record<string, unknown> };
    } catch (err) {
      throw dataLoss(`the answer is not JSON: ${(err as Error).message}`);
    }
  }

  async describe(signal?: AbortSignal): Promise<Describe> {
    const { json } = await this.call("Describe", {}, signal);
    const env = (json.sessionEnvironment ?? {}) as Record<string, unknown>;
    return {
      sandbox: str(json.sandbox),
      isolation: str(json.isolation),
      protocol: num(json.protocol),
      supportsSessions: bool(json.supportsSessions),
      sessionLanguages: Array.isArray(env.languages) ? (env.languages as string[]) : [],
      supportsJavascriptGrants: bool(json.supportsJavascriptGrants),
      grantProfiles: grantProfilesOf(json.grantProfiles),
      raw: json,
    };
  }

  /** One JavaScript snippet in a fresh sandbox, checked; grantProfile: an egress profile held for this run only. */
  async run(code: string, o: { minimumIsolation?: Tier; timeoutMs?: number; grantProfile?: string; signal?: AbortSignal } = {}): Promise<RunAnswer> {
    const floor = validFloor(o.minimumIsolation);
    const timeoutMs = o.timeoutMs && o.timeoutMs > 0 ? Math.trunc(o.timeoutMs) : 0;
    const grantProfile = validGrant(o.grantProfile);
    const sent: RequestFields = { protocol: PROTOCOL, minimumIsolation: floor, timeoutMs, kind: "javascript", code, grantProfile };
    const javascript: Record<string, unknown> = { code };
    if (grantProfile) javascript.grantProfile = grantProfile;
    const body: Record<string, unknown> = { protocol: PROTOCOL, javascript };
    if (floor) body.minimumIsolation = floor;
    if (timeoutMs) body.timeoutMs = timeoutMs;
    const { json } = await this.call("Run", body, o.signal);
    return checkedSingle(sent, () => parseRun(json, "javascript"));
  }

  /** A project in a fresh sandbox (plimsoll's ProjectRun), its answer checked as a snippet's is:
   *  record version 2, request and result digests (plimsoll's project encoding), provider, tier,
   *  environment, the record's own digest, no session fields, tier >= floor. */
  async runProject(o: ProjectOptions): Promise<ProjectAnswer> {
    if (!o || !Array.isArray(o.steps) || o.steps.length === 0)
      throw refused("invalid_argument", "request", "a project needs at least one step");
    const floor = validFloor(o.minimumIsolation);
    const timeoutMs = o.timeoutMs && o.timeoutMs > 0 ? Math.trunc(o.timeoutMs) : 0;
    const grantProfile = validGrant(o.grantProfile);
    const files = (o.files ?? []).map((f) => ({ path: f.path, content: f.content }));
    const steps = [...o.steps];
    const artifacts = [...(o.artifacts ?? [])];
    const sent: RequestFields = { protocol: PROTOCOL, minimumIsolation: floor, timeoutMs, kind: "project", files, steps, artifacts, grantProfile };
    const project: Record<string, unknown> = { steps };
    if (files.length) project.files = files;
    if (artifacts.length) project.artifacts = artifacts;
    if (grantProfile) project.grantProfile = grantProfile;
    const body: Record<string, unknown> = { protocol: PROTOCOL, project };
    if (floor) body.minimumIsolation = floor;
    if (timeoutMs) body.timeoutMs = timeoutMs;
    const { json } = await this.call("Run", body, o.signal);
    return checkedSingle(sent, () => parseProject(json));
  }

  /** Opens a session; its fingerprint and tier are checked (a session that fails is closed). */
  async openSession(o: OpenOptions = {}): Promise<Session> {
    const floor = validFloor(o.minimumIsolation);
    if (o.owner !== undefined && !/^[A-Za-z0-9._:-]{1,64}$/.test(o.owner))
      throw refused("invalid_argument", "request", "an owner is 1 to 64 of [A-Za-z0-9._:-] (send ownerDigest(...))");
    const body: Record<string, unknown> = { protocol: PROTOCOL };
    if (floor) body.minimumIsolation = floor;
    if (o.traceId) body.traceId = o.traceId;
    if (o.lifetimeMs) body.lifetimeMs = o.lifetimeMs;
    if (o.idleTimeoutMs) body.idleTimeoutMs = o.idleTimeoutMs;
    if (o.languages?.length) body.languages = o.languages;
    if (o.owner) body.owner = o.owner;
    const grantProfile = validGrant(o.grantProfile);
    if (grantProfile) body.grantProfile = grantProfile;
    const { json } = await this.call("OpenSession", body, o.signal);
    const id = str(json.sessionId);
    const s = new Session(this, id, {
      fingerprint: str(json.session),
      sandbox: str(json.sandbox),
      isolation: str(json.isolation),
      expiresUnixMs: num(json.expiresUnixMs),
      idleTimeoutMs: num(json.idleTimeoutMs),
      floor,
    });
    let problem: string | null = null;
    if (!/^[0-9a-f]{32}$/.test(id)) problem = "the session id is not 32 hex";
    else if (s.fingerprint !== fingerprintOf(id)) problem = "the session's fingerprint is not the SHA-256 of its id";
    else if (!tierMeets(s.isolation, floor)) problem = `the session's isolation ${s.isolation || "(none)"} is below the requested ${floor}`;
    if (problem) {
      if (id) await s.close().catch(() => {});
      throw dataLoss(problem);
    }
    return s;
  }
}

interface SessionInfo {
  fingerprint: string;
  sandbox: string;
  isolation: string;
  expiresUnixMs: number;
  idleTimeoutMs: number;
  floor: string;
}

export interface CellOptions {
  language: Language;
  code: string;
  files?: CellFile[];
  timeoutMs?: number;
  /** Raises the session's floor for this call. */
  minimumIsolation?: Tier;
  signal?: AbortSignal;
}

/**
 * A session: its id (a capability that goes to the daemon and nowhere else),
 * the evidence stated at open, and the chain of records this client saw.
 * Calls go one at a time, in order. A call that ended without an answer this
 * client could check may have moved the daemon's chain, so every later call
 * is refused here before it is sent.
 */
export class Session {
  readonly fingerprint: string;
  readonly sandbox: string;
  readonly isolation: string;
  readonly expiresUnixMs: number;
  readonly idleTimeoutMs: number;
  readonly floor: string;
  calls = 0n;
  last = "";
  end?: SessionEnd;
  endDetail = "";
  stopped?: string;
  #id: string;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #client: Client;

  constructor(client: Client, id: string, info: SessionInfo) {
    this.#client = client;
    this.#id = id;
    this.fingerprint = info.fingerprint;
    this.sandbox = info.sandbox;
    this.isolation = info.isolation;
    this.expiresUnixMs = info.expiresUnixMs;
    this.idleTimeoutMs = info.idleTimeoutMs;
    this.floor = info.floor;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.#queue.then(fn, fn);
    this.#queue = p.catch(() => {});
    return p;
  }

  private noteEnd(end: SessionEnd | undefined, detail: string): void {
    if (!end || end === "SESSION_END_UNSPECIFIED") return;
    this.end = end;
    this.endDetail = detail;
  }

  private stop(why: string): void {
    this.stopped ??= why;
  }

  runCell(c: CellOptions): Promise<CellAnswer> {
    return this.serial(() => this.#runCell(c));
  }

  async #runCell(c: CellOptions): Promise<CellAnswer> {
    if (this.stopped)
      throw refused(
        "failed_precondition",
        "request",
        `an earlier call of this session ended without an answer this client could check (${this.stopped}); it may have run, so nothing more is sent on the session: open a new one`,
      );
    const floor = higherFloor(this.floor, validFloor(c.minimumIsolation));
    const timeoutMs = c.timeoutMs && c.timeoutMs > 0 ? Math.trunc(c.timeoutMs) : 0;
    const files = c.files ?? [];
    const sent: RequestFields = { protocol: PROTOCOL, minimumIsolation: floor, timeoutMs, kind: "cell", language: c.language, code: c.code, files };
    const cell: Record<string, unknown> = { language: c.language, code: c.code };
    if (files.length) cell.files = files.map((f) => ({ path: f.path, content: f.content }));
    const body: Record<string, unknown> = { protocol: PROTOCOL, sessionId: this.#id, cell };
    if (floor) body.minimumIsolation = floor;
    if (timeoutMs) body.timeoutMs = timeoutMs;
    let json: Record<string, unknown>;
    try {
      ({ json } = await this.#client.call("SessionRun", body, c.signal));
    } catch (e) {
      throw this.settleError(sent, e);
    }
    let answer: CellAnswer;
    let problem: string | null;
    try {
      const run = parseRun(json.run, "cell");
      answer = { run, ended: json.ended !== undefined ? sessionEndOf(json.ended) : undefined, endDetail: str(json.endDetail) };
      problem = checkAnswered(sent, run);
      const r = run.record;
      if (!problem && (r.session !== this.fingerprint || r.sequence !== this.calls + 1n || r.previousSha256 !== this.last))
        problem = `the session's chain is broken: call ${r.sequence} after "${r.previousSha256}", this client's last was call ${this.calls}, "${this.last}"`;
      if (!problem && (run.sandbox !== this.sandbox || run.isolation !== this.isolation))
        problem = `the call ran on ${run.sandbox} at "${run.isolation}", the session opened as ${this.sandbox} at "${this.isolation}"`;
    } catch (e) {
      problem = (e as Error).message;
      answer = undefined as never;
    }
    if (problem) {
      this.stop(problem);
      throw dataLoss(problem);
    }
    this.noteEnd(answer.ended, answer.endDetail);
    this.calls = answer.run.record.sequence;
    this.last = answer.run.record.recordSha256;
    return answer;
  }

  /** An error that may carry the daemon's version-3 record of the call. */
  private settleError(sent: RequestFields, e: unknown): unknown {
    if (!(e instanceof BulkheadError)) {
      this.stop(String(e));
      return e;
    }
    if (e.sessionEnded) this.noteEnd(e.sessionEnded, e.endDetail);
    if (e.notDispatched) return e;
    if (!e.unanswered) {
      this.stop(e.words);
      return e;
    }
    const r = e.unanswered;
    let problem = checkUnanswered(sent, r);
    if (!problem && (r.session !== this.fingerprint || r.sequence !== this.calls + 1n || r.previousSha256 !== this.last))
      problem = `the session's chain is broken: call ${r.sequence} after "${r.previousSha256}", this client's last was call ${this.calls}, "${this.last}"`;
    if (!problem && (r.provider !== this.sandbox || r.isolation !== this.isolation || r.softwareIdentity !== ""))
      problem = `the unanswered call's record names ${r.provider} at "${r.isolation}", the session opened as ${this.sandbox} at "${this.isolation}"`;
    if (problem) {
      this.stop(problem);
      return dataLoss(problem);
    }
    this.calls = r.sequence;
    this.last = r.recordSha256;
    return e;
  }

  /** Ends the session (or collects one that ended); the daemon's count and last digest must match this client's chain. */
  close(signal?: AbortSignal): Promise<CloseAnswer> {
    return this.serial(async () => {
      let json: Record<string, unknown>;
      try {
        ({ json } = await this.#client.call("CloseSession", { protocol: PROTOCOL, sessionId: this.#id }, signal));
      } catch (e) {
        if (e instanceof BulkheadError && e.sessionEnded) this.noteEnd(e.sessionEnded, e.endDetail);
        throw e;
      }
      const a: CloseAnswer = {
        session: str(json.session),
        calls: BigInt(num(json.calls)),
        lastRecordSha256: str(json.lastRecordSha256),
        ended: json.ended !== undefined ? sessionEndOf(json.ended) : "SESSION_END_CLOSED",
      };
      this.noteEnd(a.ended === "SESSION_END_UNSPECIFIED" ? "SESSION_END_CLOSED" : a.ended, "");
      if (a.session !== this.fingerprint || a.calls !== this.calls || a.lastRecordSha256 !== this.last)
        throw dataLoss(`the daemon counts ${a.calls} calls ending "${a.lastRecordSha256}", this client saw ${this.calls} ending "${this.last}"`);
      return a;
    });
  }
}
