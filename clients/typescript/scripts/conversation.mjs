// Plays one scripted conversation through Trigger.dev's own offline harness
// (mockChatAgent from @trigger.dev/sdk/ai/test) driving a real chat.agent
// (examples/agent.mjs) whose model is the AI SDK's MockLanguageModelV3,
// against a real bulkhead serve. Returns what happened as scenario steps
// (docs/scenarios.md), the daemon procedures counted by a fetch wrapper, and
// every turn's chunks. Used by the tests and by `npm run record`.
//
// The offline harness cannot wake a run once it has suspended (its session
// wait resolves only on close), so a segment marked `suspendAfter` waits out
// the idle window, lets onChatSuspend run, closes the harness, and the next
// segment boots the same run id in "continuation" mode: the run resuming
// after its suspend. The harness does not run task lifecycle hooks either,
// so the conversation ends by calling the agent's own onComplete.
import { mockChatAgent } from "@trigger.dev/sdk/ai/test";
import { Client } from "@bulkhead/client";
import { createAnalystAgent } from "../examples/agent.mjs";
import { scriptedModel } from "../examples/scripted-model.mjs";

import { AsyncLocalStorage } from "node:async_hooks";
import { hookPath, callPath, redactedBody } from "./paths.mjs";

const ALL_HOPS = ["model", "agent", "execute_code", "manager", "daemon", "sandbox"];

// Counts the daemon procedures by URL suffix and keeps every exchange (its
// request and answer, session ids redacted) with the manager operation that
// sent it: the warm, run or dispose in whose async context the fetch ran. A
// step's path is written from its own operation's exchanges, so a warm-up
// answered after the turn went on is still the warm-up's.
function countingFetch(counts, ops) {
  return async (url, init) => {
    const m = /\/([A-Za-z]+)$/.exec(String(url));
    const proc = m?.[1] ?? String(url);
    counts[proc] = (counts[proc] ?? 0) + 1;
    const body = init?.body == null ? "" : typeof init.body === "string" ? init.body : Buffer.from(init.body).toString("utf8");
    const x = { proc, request: redactedBody(body), status: 0, answer: "" };
    ops.getStore()?.exchanges.push(x);
    const res = await fetch(url, init);
    x.status = res.status;
    x.answer = redactedBody(await res.clone().text());
    return res;
  };
}

const PROCS = ["OpenSession", "SessionRun", "CloseSession"];
const snapshot = (counts) => Object.fromEntries(PROCS.map((p) => [p, counts[p] ?? 0]));

function narrateCall(call, step) {
  const lang = call.language ?? "python";
  if (step.outcome === "refused") return `executeCode was refused before anything ran: ${step.error}`;
  if (step.outcome === "may_have_run") return `No checked answer came back, so the code may have run: ${step.error}`;
  const a = step.answer;
  const where = a.freshSandbox
    ? "runs in the run's newly opened sandbox (freshSandbox)"
    : "reuses the run's sandbox, whose interpreter kept its variables";
  const retried = step.retried ? " The manager retried once in a new sandbox after the old one was refused as ended." : "";
  if (a.exitCode !== 0) {
    const last = a.stderr.trim().split("\n").at(-1) ?? "";
    return `The model's ${lang} ${where}; it raised (${last}): a guest error is an answer with exit code ${a.exitCode}, not a failure.${retried}`;
  }
  return `The model's ${lang} ${where}; exit 0, printed ${JSON.stringify(a.stdout.trim()).slice(0, 60)}.${retried}`;
}

/**
 * @param {object} o
 * @param {{url: string, token: string}} o.daemon
 * @param {string} o.name   unique: the agent id is derived from it
 * @param {string} o.floor
 * @param {number} o.idleSeconds  the chat.agent idle window
 * @param {string} o.runId
 * @param {string} [o.userId]
 * @param {Array<{turns: Array<{user: string, calls: object[]}>, suspendAfter?: boolean}>} o.segments
 */
export async function playConversation(o) {
  const counts = {};
  const ops = new AsyncLocalStorage(); // the manager operation a fetch belongs to
  const opOf = new Map(); // step -> the operation it shows
  const lastOp = {};
  const steps = [];
  const chunks = [];
  const t0 = Date.now();
  let turn = 0;
  let userMessage = null;
  let calls = [];
  let onSuspend = () => {};
  const stamp = () => Date.now() - t0;
  const firstOfTurn = () => {
    const s = userMessage !== null ? { turn, user_message: userMessage } : { turn };
    userMessage = null;
    return s;
  };
  const push = (s) => {
    const base = s.turn !== undefined ? s : { ...s, turn: 0 };
    const step = { ...base, daemon_calls: snapshot(counts), t_ms: stamp() };
    steps.push(step);
    return step;
  };

  const trace = (e) => {
    if (e.hook === "turn_start") {
      const step = push({
        kind: "hook",
        ...firstOfTurn(),
        hook: "turn_start",
        narration: e.opening
          ? `Turn ${turn} starts: onTurnStart stores the run id in chat.local and warms the run's sandbox without waiting (OpenSession in flight).`
          : `Turn ${turn} starts: the run already holds its sandbox, so warm does nothing.`,
        hops: e.opening ? ["agent", "manager", "daemon", "sandbox"] : ["agent", "manager"],
        stopped_at: null,
      });
      opOf.set(step, lastOp.warm);
    } else if (e.hook === "suspend") {
      const step = push({
        kind: "hook",
        turn,
        hook: "suspend",
        narration: e.held
          ? "Nothing arrived within the idle window: the run suspends, and onChatSuspend disposes its sandbox first (CloseSession)."
          : "Nothing arrived within the idle window: the run suspends; it holds no sandbox, so there is nothing to close.",
        hops: e.held ? ["agent", "manager", "daemon", "sandbox"] : ["agent", "manager"],
        stopped_at: null,
      });
      opOf.set(step, lastOp.dispose);
      onSuspend();
    } else if (e.hook === "complete") {
      const step = push({
        kind: "hook",
        turn,
        hook: "complete",
        narration: e.held
          ? "The run completes: onComplete disposes the run's sandbox (CloseSession)."
          : "The run completes: onComplete finds no sandbox left to close.",
        hops: e.held ? ["agent", "manager", "daemon", "sandbox"] : ["agent", "manager"],
        stopped_at: null,
      });
      opOf.set(step, lastOp.dispose);
    }
  };

  const onCall = (e) => {
    const call = { language: e.input.language ?? "python", code: e.input.code, ...(e.input.files?.length ? { files: e.input.files } : {}) };
    const step = { kind: "call", ...firstOfTurn(), call, outcome: "answered", answer: null, error: null, retried: e.retried };
    if (e.output) step.answer = e.output;
    else {
      const err = e.error;
      step.outcome = err?.notDispatched ? "refused" : "may_have_run";
      step.error = err instanceof Error ? err.message : String(err);
    }
    if (step.outcome === "refused") {
      const at = err_hop(e.error);
      step.hops = ALL_HOPS.slice(0, ALL_HOPS.indexOf(at) + 1);
      step.stopped_at = at;
    } else {
      step.hops = ALL_HOPS;
      step.stopped_at = null;
    }
    step.narration = narrateCall(call, step);
    const op = ops.getStore(); // onCall runs inside the run that made the call
    step.sent_ms = op?.sentMs ?? stamp();
    step.answered_ms = stamp();
    opOf.set(push(step), op);
  };

  const model = scriptedModel(() => calls);
  const { hooks, sandbox } = createAnalystAgent({
    id: `bulkhead-analyst-${o.name}`,
    model,
    client: () => new Client({ target: o.daemon.url, token: o.daemon.token, fetch: countingFetch(counts, ops) }),
    minimumIsolation: o.floor,
    idleTimeoutInSeconds: o.idleSeconds,
    userId: () => o.userId,
    trace,
    sandboxOptions: { onCall },
  });
  const agentRef = { id: `bulkhead-analyst-${o.name}` };
  // Each manager operation runs in its own async context, so the fetches it
  // makes (even a warm-up's open answered later) are its own; the manager's
  // entry for the run is noted as the operation begins.
  const manager = sandbox.sandboxes;
  const entryOf = (key) => {
    const e = typeof key === "string" ? manager.entries?.get(JSON.stringify([key])) : undefined;
    return !e ? "none" : e.session ? "ready" : "opening";
  };
  for (const kind of ["warm", "run", "dispose"]) {
    const original = manager[kind].bind(manager);
    manager[kind] = (key, ...rest) => {
      const op = { kind, key, entry: entryOf(key), exchanges: [], sentMs: stamp() };
      lastOp[kind] = op;
      return ops.run(op, () => original(key, ...rest));
    };
  }

  for (const [i, seg] of o.segments.entries()) {
    const harness = mockChatAgent(agentRef, {
      chatId: `chat-${o.name}`,
      mode: i === 0 ? "preload" : "continuation",
      taskContext: { ctx: { run: { id: o.runId } } },
    });
    try {
      for (const t of seg.turns) {
        turn++;
        userMessage = t.user;
        calls = t.calls;
        const r = await harness.sendMessage({ id: `m${turn}`, role: "user", parts: [{ type: "text", text: t.user }] });
        chunks.push({ turn, chunks: r.chunks });
      }
      if (seg.suspendAfter) {
        const from = Date.now();
        const suspended = new Promise((res, rej) => {
          onSuspend = res;
          setTimeout(() => rej(new Error("the run did not suspend")), o.idleSeconds * 1000 + 15_000).unref();
        });
        // the wait step goes before the suspend hook it leads to
        const waitIndex = steps.length;
        await suspended;
        steps.splice(waitIndex, 0, {
          kind: "wait",
          turn,
          ms: Date.now() - from,
          narration: `No user message for the agent's idle window (idleTimeoutInSeconds: ${o.idleSeconds}).`,
          hops: ["agent"],
          stopped_at: null,
          daemon_calls: steps[waitIndex - 1]?.daemon_calls ?? snapshot({}),
          t_ms: from - t0,
        });
      }
    } finally {
      await harness.close();
    }
  }
  await hooks.onComplete({ ctx: { run: { id: o.runId } } });
  writePaths(steps, opOf, o);
  return { steps, counts: snapshot(counts), allCounts: { ...counts }, chunks, durationMs: Date.now() - t0 };
}

function err_hop(err) {
  // a refusal the daemon made carries an HTTP status; anything else was refused in this process
  return err?.httpStatus > 0 ? "daemon" : "manager";
}

// Every step's hops, stopped_at and path from what its operation sent, and
// its daemon_calls counted from the exchanges of the steps up to it: a
// warm-up's open is counted at its turn_start even when it was answered
// after the turn went on.
function writePaths(steps, opOf, o) {
  const so_far = {};
  let warm = null;
  for (const s of steps) {
    const op = opOf.get(s);
    const exchanges = op?.exchanges ?? [];
    for (const x of exchanges) so_far[x.proc] = (so_far[x.proc] ?? 0) + 1;
    s.daemon_calls = snapshot(so_far);
    if (s.kind === "hook") {
      const h = hookPath({ hook: s.hook, key: o.runId, floor: o.floor, exchanges });
      if (s.hook === "turn_start") warm = op;
      if (h.stopped_at && s.hook === "turn_start") {
        const open = exchanges.find((x) => x.proc === "OpenSession");
        let why = open.answer;
        try {
          why = JSON.parse(open.answer).message ?? why;
        } catch {
          /* not JSON: as received */
        }
        s.narration = `Turn ${s.turn} starts: onTurnStart warms the run's sandbox without waiting, and the daemon refuses the open (HTTP ${open.status}: ${why}): no sandbox exists.`;
      }
      Object.assign(s, { hops: h.hops, stopped_at: h.stopped_at, path: h.path });
    } else if (s.kind === "call") {
      const warmOpen = op?.entry === "opening" ? warm?.exchanges.find((x) => x.proc === "OpenSession") : undefined;
      s.path = callPath({ key: o.runId, floor: o.floor, tier: o.daemon.tier, call: s.call, entry: op?.entry ?? "none", exchanges, warmOpen, step: s });
    } else if (s.kind === "wait") {
      s.path = [{ hop: "agent", leg: "down", narration: `chat.agent waits for the next user message; none came within its idle window (idleTimeoutInSeconds: ${o.idleSeconds}), so the run will suspend.` }];
    }
  }
}
