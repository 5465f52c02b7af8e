/**
 * The conversation manager: one sandbox (a bulkhead session) per key — a
 * Trigger.dev run, an AI SDK conversation — kept in this process's memory.
 * `warm` starts opening without waiting, `run` answers like the executeCode
 * tool, `dispose` forgets a key at once and closes its sandbox, `disposeAll`
 * closes everything. A sandbox idle for `idleCloseMs` is closed; an owner
 * holding `maxSessionsPerOwner` sandboxes (or the manager holding
 * `maxSessions`) has its least recently used idle one closed to make room;
 * a call refused because its session ended (nothing ran) is retried once in
 * a new sandbox. Keys must come from verified identities, never from the
 * model. The session id never leaves this object.
 */
import { BulkheadError, refused } from "./errors.js";
import { Client, type CellFile, type Language, type Session, type Tier } from "./client.js";

export type SandboxKey = string | { owner: string; conversation: string };

export interface ExecuteCodeInput {
  code: string;
  language?: Language;
  files?: CellFile[];
}

export interface ExecuteCodeOutput {
  language: Language;
  exitCode: number;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  /** The daemon cut a stream, or this manager cut it at maxOutputChars. */
  truncated: boolean;
  /** Variables from earlier calls are still there for the next one. */
  stateKept: boolean;
  /** This call started a new interpreter (no variables from before it). */
  freshInterpreter: boolean;
  /** Files in /work stay for the next call. */
  filesPersist: boolean;
  /** The first answered call in a newly opened sandbox. */
  freshSandbox: boolean;
  isolation: string;
  recordSha256: string;
}

export interface CodeSandboxesOptions {
  /** A client, or a factory called once, lazily. */
  client: Client | (() => Client);
  /** Default `kernel`. */
  minimumIsolation?: Tier;
  /** Default ["python", "javascript"]; the first is the default language. */
  languages?: Language[];
  timeoutMs?: number;
  sessionLifetimeMs?: number;
  sessionIdleTimeoutMs?: number;
  /** Close a sandbox no call used for this long; default 10 minutes; 0: never. */
  idleCloseMs?: number;
  /** Default 3; 0: no cap. */
  maxSessionsPerOwner?: number;
  /** Default 0: no cap. */
  maxSessions?: number;
  /** Characters kept per stream; default 16000. */
  maxOutputChars?: number;
  onCloseError?: (keyHint: string, err: unknown) => void;
  /** The egress profile a conversation's sandbox holds from open to close (OpenSession's
   *  grantProfile; the profile must allow sessions): one name for every conversation, or a
   *  function naming it per conversation (undefined: none). Asked once per open; a name given
   *  to warm() for the key wins. The server picks it, never the model. */
  grantProfile?: string | ((key: SandboxKey, owner: string | undefined) => string | undefined);
  /** Called after each call settles (for tracing); `retried` is set when the call was rerun in a new sandbox. */
  onCall?: (event: { key: string; input: ExecuteCodeInput; retried: boolean; output?: ExecuteCodeOutput; error?: unknown }) => void;
}

interface Entry {
  id: string;
  owner?: string;
  grantProfile?: string;
  session?: Session;
  opening?: Promise<Session>;
  busy: number;
  lastUsed: number;
  timer?: NodeJS.Timeout;
  answered: boolean;
}

let clock = 0;
const tick = () => ++clock;

function keyId(key: SandboxKey): { id: string; owner?: string } {
  if (typeof key === "string") {
    if (!key) throw refused("invalid_argument", "request", "a sandbox key must not be empty");
    return { id: JSON.stringify([key]) };
  }
  if (!key || !key.owner || !key.conversation) throw refused("invalid_argument", "request", "a sandbox key needs an owner and a conversation");
  return { id: JSON.stringify([key.owner, key.conversation]), owner: key.owner };
}

function hint(id: string): string {
  return `sandbox ${Buffer.from(id).toString("hex").slice(0, 12)}`;
}

const dec = new TextDecoder("utf-8");

function cut(b: Uint8Array, max: number): { text: string; cut: boolean } {
  const text = dec.decode(b);
  if (max <= 0 || text.length <= max) return { text, cut: false };
  let n = max;
  const c = text.charCodeAt(n - 1);
  if (c >= 0xd800 && c <= 0xdbff) n--; // never split a surrogate pair
  return { text: text.slice(0, n), cut: true };
}

function environmentError(e: unknown, what: string): unknown {
  if (e instanceof BulkheadError) return e;
  return refused("unavailable", "environment", `${what}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
}

export class CodeSandboxes {
  readonly minimumIsolation: Tier;
  readonly languages: Language[];
  private readonly o: CodeSandboxesOptions;
  private readonly entries = new Map<string, Entry>();
  /** Owners named by warm(key, owner) for string keys, until disposed. */
  private readonly owners = new Map<string, string>();
  /** Profiles named by warm(key, owner, grantProfile), until disposed. */
  private readonly profiles = new Map<string, string>();
  private clientInstance?: Client;

  constructor(o: CodeSandboxesOptions) {
    this.o = o;
    this.minimumIsolation = o.minimumIsolation ?? "kernel";
    this.languages = o.languages?.length ? o.languages : ["python", "javascript"];
  }

  get client(): Client {
    if (!this.clientInstance) this.clientInstance = typeof this.o.client === "function" ? this.o.client() : this.o.client;
    return this.clientInstance;
  }

  /** Keys with a sandbox open or opening. */
  get size(): number {
    return this.entries.size;
  }

  has(key: SandboxKey): boolean {
    return this.entries.has(keyId(key).id);
  }

  private ownerOf(key: SandboxKey, owner?: string): { id: string; owner?: string } {
    const k = keyId(key);
    if (owner) {
      this.owners.set(k.id, owner);
      return { id: k.id, owner };
    }
    return { id: k.id, owner: k.owner ?? this.owners.get(k.id) };
  }

  private heldBy(owner: string | undefined): Entry[] {
    return [...this.entries.values()].filter((e) => owner !== undefined && e.owner === owner);
  }

  /** Room for one more sandbox: closes LRU idle entries if close is allowed, else reports false. */
  private makeRoom(owner: string | undefined, mayClose: boolean): boolean {
    const caps: [Entry[], number, string][] = [];
    const perOwner = this.o.maxSessionsPerOwner ?? 3;
    if (owner !== undefined && perOwner > 0) caps.push([this.heldBy(owner), perOwner, "owner"]);
    if ((this.o.maxSessions ?? 0) > 0) caps.push([[...this.entries.values()], this.o.maxSessions!, "manager"]);
    for (const [held, cap, who] of caps) {
      if (held.length < cap) continue;
      if (!mayClose) return false;
      const idle = held.filter((e) => e.busy === 0).sort((a, b) => a.lastUsed - b.lastUsed);
      const need = held.length - cap + 1;
      if (idle.length < need)
        throw refused("resource_exhausted", "capacity", `all ${held.length} sandboxes of this ${who} are busy`);
      for (const e of idle.slice(0, need)) this.forget(e);
    }
    return true;
  }

  /** The profile key's next sandbox opens with: warm's, else the options'. */
  private profileOf(key: SandboxKey, id: string, owner: string | undefined): string | undefined {
    const named = this.profiles.get(id);
    if (named) return named;
    const g = this.o.grantProfile;
    return (typeof g === "function" ? g(key, owner) : g) || undefined;
  }

  private open(key: SandboxKey, id: string, owner: string | undefined): Entry {
    const e: Entry = { id, owner, busy: 0, lastUsed: tick(), answered: false };
    this.entries.set(id, e);
    let client: Client;
    try {
      client = this.client;
      e.grantProfile = this.profileOf(key, id, owner);
    } catch (err) {
      this.entries.delete(id);
      throw environmentError(err, "building the client");
    }
    const digest = owner !== undefined ? client.ownerDigest(owner) : undefined;
    e.opening = client
      .openSession({
        minimumIsolation: this.minimumIsolation,
        languages: this.languages,
        lifetimeMs: this.o.sessionLifetimeMs,
        idleTimeoutMs: this.o.sessionIdleTimeoutMs,
        owner: digest,
        grantProfile: e.grantProfile,
      })
      .then(
        (s) => {
          if (this.entries.get(id) !== e) {
            // disposed while opening: nobody will use it
            void this.closeQuietly(id, s);
          } else {
            e.session = s;
            this.arm(e);
          }
          return s;
        },
        (err) => {
          if (this.entries.get(id) === e) this.entries.delete(id);
          throw environmentError(err, "opening a sandbox");
        },
      );
    e.opening.catch(() => {}); // a warm nobody awaits
    return e;
  }

  private arm(e: Entry): void {
    if (e.timer) clearTimeout(e.timer);
    e.timer = undefined;
    const ms = this.o.idleCloseMs ?? 10 * 60_000;
    if (ms <= 0 || e.busy > 0 || !e.session) return;
    e.timer = setTimeout(() => {
      if (this.entries.get(e.id) === e && e.busy === 0) this.forget(e);
    }, ms);
    e.timer.unref?.();
  }

  /** Drops an entry at once and closes its sandbox in the background. */
  private forget(e: Entry): Promise<void> {
    if (this.entries.get(e.id) === e) this.entries.delete(e.id);
    if (e.timer) clearTimeout(e.timer);
    e.timer = undefined;
    if (e.session) return this.closeQuietly(e.id, e.session);
    if (e.opening) return e.opening.then((s) => this.closeQuietly(e.id, s), () => {});
    return Promise.resolve();
  }

  private async closeQuietly(id: string, s: Session): Promise<void> {
    try {
      await s.close();
    } catch (err) {
      // an ended session is collected the same way; its refusal is not news
      if (err instanceof BulkheadError && err.sessionEnded) return;
      (this.o.onCloseError ?? ((k, x) => console.warn(`bulkhead: closing ${k}: ${x instanceof Error ? x.message : x}`)))(hint(id), err);
    }
  }

  /** Starts opening the key's sandbox without waiting. Does nothing if it exists or a cap is reached.
   *  grantProfile names the egress profile this conversation's sandbox holds (kept until dispose). */
  warm(key: SandboxKey, owner?: string, grantProfile?: string): void {
    let k: { id: string; owner?: string };
    try {
      k = this.ownerOf(key, owner);
    } catch {
      return;
    }
    if (grantProfile) this.profiles.set(k.id, grantProfile);
    if (this.entries.has(k.id)) return;
    try {
      if (!this.makeRoom(k.owner, false)) return;
      this.open(key, k.id, k.owner);
    } catch {
      /* a warm never fails anyone: the next run says why */
    }
  }

  /** Runs one call in the key's sandbox, opening it if needed. */
  async run(key: SandboxKey, input: ExecuteCodeInput, o: { signal?: AbortSignal; owner?: string } = {}): Promise<ExecuteCodeOutput> {
    const k = this.ownerOf(key, o.owner);
    if (!input || typeof input.code !== "string" || !input.code) throw refused("invalid_argument", "request", "executeCode needs code");
    const language = input.language ?? this.languages[0]!;
    if (!this.languages.includes(language)) throw refused("invalid_argument", "request", `language ${language} is not offered (${this.languages.join(", ")})`);
    const files = input.files ?? [];
    for (const f of files)
      if (!f || typeof f.path !== "string" || typeof f.content !== "string")
        throw refused("invalid_argument", "request", "a file is {path, content} with text content");
    let retried = false;
    try {
      for (;;) {
        try {
          const out = await this.once(key, k, language, input.code, files, o.signal);
          this.o.onCall?.({ key: k.id, input, retried, output: out });
          return out;
        } catch (err) {
          if (!retried && err instanceof BulkheadError && err.notDispatched && err.sessionEnded) {
            retried = true;
            continue;
          }
          throw err;
        }
      }
    } catch (err) {
      this.o.onCall?.({ key: k.id, input, retried, error: err });
      throw err;
    }
  }

  private async once(key: SandboxKey, k: { id: string; owner?: string }, language: Language, code: string, files: CellFile[], signal?: AbortSignal): Promise<ExecuteCodeOutput> {
    if (signal?.aborted) throw refused("canceled", "request", "the call was aborted before it was sent");
    let e = this.entries.get(k.id);
    if (!e) {
      this.makeRoom(k.owner, true);
      e = this.open(key, k.id, k.owner);
    }
    e.busy++;
    e.lastUsed = tick();
    if (e.timer) clearTimeout(e.timer);
    e.timer = undefined;
    try {
      const s = e.session ?? (await e.opening!);
      if (signal?.aborted) throw refused("canceled", "request", "the call was aborted while its sandbox opened");
      let a;
      try {
        a = await s.runCell({ language, code, files, timeoutMs: this.o.timeoutMs, signal });
      } catch (err) {
        if (err instanceof BulkheadError && err.notDispatched && err.sessionEnded) void this.forget(e);
        else if (s.stopped || s.end) void this.forget(e);
        throw err;
      }
      const fresh = !e.answered;
      e.answered = true;
      const r = a.run.result;
      const ended = !!a.ended && a.ended !== "SESSION_END_UNSPECIFIED";
      if (ended) void this.forget(e);
      const max = this.o.maxOutputChars ?? 16_000;
      const out = cut(r.stdout, max);
      const err = cut(r.stderr, max);
      return {
        language,
        exitCode: r.exitCode,
        timedOut: r.timedOut,
        stdout: out.text,
        stderr: err.text,
        truncated: r.stdoutTruncated || r.stderrTruncated || out.cut || err.cut,
        stateKept: !r.interpreterEnded && !ended,
        freshInterpreter: r.interpreterStarted,
        filesPersist: !ended,
        freshSandbox: fresh,
        isolation: a.run.isolation,
        recordSha256: a.run.record.recordSha256,
      };
    } finally {
      e.busy--;
      e.lastUsed = tick();
      if (this.entries.get(e.id) === e) this.arm(e);
    }
  }

  /** Forgets the key at once, then closes its sandbox (awaiting the close). */
  async dispose(key: SandboxKey): Promise<void> {
    let id: string;
    try {
      id = keyId(key).id;
    } catch {
      return;
    }
    this.owners.delete(id);
    this.profiles.delete(id);
    const e = this.entries.get(id);
    if (e) await this.forget(e);
  }

  /** Disposes every key (shutdown). */
  async disposeAll(): Promise<void> {
    const all = [...this.entries.values()];
    this.owners.clear();
    this.profiles.clear();
    await Promise.all(all.map((e) => this.forget(e)));
  }
}
