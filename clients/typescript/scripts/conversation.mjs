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

const ALL_HOPS = ["model", "agent", "execute_code", "manager", "daemon", "sandbox"];

function countingFetch(counts, opens) {
  return async (url, init) => {
    const m = /\/([A-Za-z]+)$/.exec(String(url));
    if (m) counts[m[1]] = (counts[m[1]] ?? 0) + 1;
    // hops: each OpenSession's answer, in the order sent, so a warm-up the
    // daemon refused is not recorded as reaching a sandbox
    const n = m?.[1] === "OpenSession" ? counts.OpenSession : 0;
    const res = await fetch(url, init);
    if (n) opens[n - 1] = { status: res.status, message: res.ok ? "" : await res.clone().text() };
    return res;
  };
}

// hops: a turn_start whose OpenSession the daemon refused stopped there;
// nothing opened, so it lights no sandbox.
function correctRefusedWarmups(steps, opens) {
  for (const s of steps) {
    if (s.kind !== "hook" || s.hook !== "turn_start" || !s.hops.includes("sandbox")) continue;
    const open = opens[s.daemon_calls.OpenSession - 1];
    if (!open || open.status === 200) continue;
    let why = open.message;
    try { why = JSON.parse(open.message).message ?? why; } catch { /* not JSON: as received */ }
    s.hops = ["agent", "manager", "daemon"];
    s.stopped_at = "daemon";
    s.narration = `Turn ${s.turn} starts: onTurnStart warms the run's sandbox without waiting, and the daemon refuses the open (HTTP ${open.status}: ${why}): no sandbox exists.`;
  }
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
  const opens = [];
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
    steps.push({ ...base, daemon_calls: snapshot(counts), t_ms: stamp() });
  };

  const trace = (e) => {
    if (e.hook === "turn_start") {
      push({
        kind: "hook",
        ...firstOfTurn(),
        hook: "turn_start",
        narration: e.opening
          ? `Turn ${turn} starts: onTurnStart stores the run id in chat.local and warms the run's sandbox without waiting (OpenSession in flight).`
          : `Turn ${turn} starts: the run already holds its sandbox, so warm does nothing.`,
        hops: e.opening ? ["agent", "manager", "daemon", "sandbox"] : ["agent", "manager"],
        stopped_at: null,
      });
    } else if (e.hook === "suspend") {
      push({
        kind: "hook",
        turn,
        hook: "suspend",
        narration: e.held
          ? "Nothing arrived within the idle window: the run suspends, and onChatSuspend disposes its sandbox first (CloseSession)."
          : "Nothing arrived within the idle window: the run suspends; it holds no sandbox, so there is nothing to close.",
        hops: e.held ? ["agent", "manager", "daemon", "sandbox"] : ["agent", "manager"],
        stopped_at: null,
      });
      onSuspend();
    } else if (e.hook === "complete") {
      push({
        kind: "hook",
        turn,
        hook: "complete",
        narration: e.held
          ? "The run completes: onComplete disposes the run's sandbox (CloseSession)."
          : "The run completes: onComplete finds no sandbox left to close.",
        hops: e.held ? ["agent", "manager", "daemon", "sandbox"] : ["agent", "manager"],
        stopped_at: null,
      });
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
    push(step);
  };

  const model = scriptedModel(() => calls);
  const { hooks } = createAnalystAgent({
    id: `bulkhead-analyst-${o.name}`,
    model,
    client: () => new Client({ target: o.daemon.url, token: o.daemon.token, fetch: countingFetch(counts, opens) }),
    minimumIsolation: o.floor,
    idleTimeoutInSeconds: o.idleSeconds,
    userId: () => o.userId,
    trace,
    sandboxOptions: { onCall },
  });
  const agentRef = { id: `bulkhead-analyst-${o.name}` };

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
  correctRefusedWarmups(steps, opens);
  return { steps, counts: snapshot(counts), allCounts: { ...counts }, chunks, durationMs: Date.now() - t0 };
}

function err_hop(err) {
  // a refusal the daemon made carries an HTTP status; anything else was refused in this process
  return err?.httpStatus > 0 ? "daemon" : "manager";
}
