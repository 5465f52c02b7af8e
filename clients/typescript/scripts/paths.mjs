// The recorder's paths (docs/scenarios.md, "path"): what each hop did in one
// step, down the pipeline to where the step stopped and back up, written
// from what the recorder saw happen — the manager's entry when the call
// came, the exchanges the step's own operation sent (each request and its
// answer, through the fetch wrapper), the tool's answer or error — never
// from a caption per hop. The TypeScript twin of src/cli/record_path.c;
// session ids are capabilities, redacted from every body kept.

const REDACTED = "(a capability: not recorded)";

function redact(v) {
  if (Array.isArray(v)) return v.map(redact);
  if (v && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === "sessionId" && typeof x === "string" ? REDACTED : redact(x)]));
  return v;
}

/** A body as it crossed, session ids redacted; one that is not JSON is kept only when it names none. */
export function redactedBody(text) {
  const t = text ?? "";
  try {
    return JSON.stringify(redact(JSON.parse(t)));
  } catch {
    return t.includes("sessionId") ? "" : t;
  }
}

const PLIMSOLL = new Set(["OpenSession", "SessionRun", "CloseSession"]);
const visit = (hop, leg, narration, wire) => (wire ? { hop, leg, narration, wire } : { hop, leg, narration });
const request = (x) => ({ what: `${PLIMSOLL.has(x.proc) ? "plimsoll.v1" : "bulkhead.v1.OperatorService"} ${x.proc} request`, text: x.request });
const answer = (x) => ({ what: `${x.proc} answer (HTTP ${x.status})`, text: x.answer });
const last = (xs, proc) => [...xs].reverse().find((x) => x.proc === proc);
const ok = (x) => x && x.status === 200;

/** The message of a refusal's body (Connect's {code, message}), else the body. */
function messageOf(x) {
  try {
    return JSON.parse(x.answer).message ?? x.answer;
  } catch {
    return x.answer || "no answer";
  }
}

const firstLine = (t) => (t ?? "").split("\n")[0];
const lastLine = (t) => (t ?? "").replace(/\n+$/, "").split("\n").at(-1) ?? "";

/** The hops a hook lit and its path, from the exchanges its operation sent. */
export function hookPath(h) {
  const { hook, key, floor, exchanges } = h;
  const warm = hook === "turn_start";
  const path = [];
  if (warm) path.push(visit("agent", "down", `onTurnStart: the agent stores ${key} in chat.local and asks the manager to warm its sandbox, without waiting.`));
  else if (hook === "suspend")
    path.push(visit("agent", "down", `The run stayed idle past its idle window: onChatSuspend asks the manager to dispose of ${key}'s sandbox before the run suspends.`));
  else path.push(visit("agent", "down", `onComplete: the run is over; the agent asks the manager to dispose of ${key}'s sandbox.`));
  const x = last(exchanges, warm ? "OpenSession" : "CloseSession");
  if (!x) {
    path.push(visit("manager", "down", warm ? `The manager already holds ${key}'s sandbox: nothing opens.` : `The manager holds no sandbox for ${key}: there is nothing to close.`));
    path.push(visit("agent", "up", "The agent goes on: nothing was sent."));
    return { hops: ["agent", "manager"], stopped_at: null, path };
  }
  path.push(
    visit(
      "manager",
      "down",
      warm
        ? `The manager holds no sandbox for ${key}: it sends OpenSession (floor ${floor}, the owner as a keyed digest) and lets the turn go on.`
        : `The manager forgets ${key}'s sandbox and closes it: CloseSession.`,
    ),
  );
  if (!ok(x)) {
    path.push(visit("daemon", "down", `The daemon refused ${x.proc} (HTTP ${x.status}): ${messageOf(x)}${warm ? ". No session opened, so no sandbox exists." : ""}`, request(x)));
    path.push(visit("manager", "up", warm ? "The warm-up failed: the manager holds no sandbox for the run." : "The close was refused: the manager has forgotten the sandbox all the same.", answer(x)));
    path.push(visit("agent", "up", warm ? "The turn goes on without a sandbox: its first call will ask again, and be told why." : "The agent goes on."));
    return { hops: ["agent", "manager", "daemon"], stopped_at: "daemon", path };
  }
  if (warm) {
    path.push(visit("daemon", "down", `The daemon checked the floor ${floor} against its tier and opened a session.`, request(x)));
    path.push(visit("sandbox", "down", "A sandbox started for the session: its init is up, waiting for the first cell."));
    path.push(visit("daemon", "up", "The daemon answers OpenSession with the new session.", answer(x)));
    path.push(visit("manager", "up", `${key} holds the new session now.`));
    path.push(visit("agent", "up", "The turn had not waited: it was already going on."));
  } else {
    path.push(visit("daemon", "down", "The daemon ends the session.", request(x)));
    path.push(visit("sandbox", "down", "The session's sandbox is stopped and removed: its interpreters and /work are gone."));
    path.push(visit("daemon", "up", "The daemon answers CloseSession.", answer(x)));
    path.push(visit("manager", "up", `${key} holds no sandbox now.`));
    path.push(visit("agent", "up", hook === "suspend" ? "The run suspends: it pays for no sandbox while it waits." : "The agent goes on: the run pays for no sandbox."));
  }
  return { hops: ["agent", "manager", "daemon", "sandbox"], stopped_at: null, path };
}

/**
 * A call's path.
 * @param {object} c
 * @param {string} c.key  the run id
 * @param {string} c.floor
 * @param {string} c.tier
 * @param {{language: string, code: string, files?: {path: string, content: string}[]}} c.call
 * @param {"none"|"opening"|"ready"} c.entry  the manager's entry for the run when the call came
 * @param {object[]} c.exchanges  what the call's own operation sent
 * @param {object|undefined} c.warmOpen  the turn's warm-up OpenSession, when the call waited for it
 * @param {object} c.step  the scenario step (outcome, answer, error, retried, stopped_at)
 */
export function callPath(c) {
  const { key, call, step } = c;
  const path = [];
  const files = call.files ?? [];
  const lines = call.code.split("\n").length;
  const bytes = files.reduce((n, f) => n + Buffer.byteLength(f.content), 0);
  const filesSaid = files.map((f) => `${f.path} (${Buffer.byteLength(f.content)} bytes)`).join(", ");
  path.push(
    visit("model", "down", `The model calls executeCode: ${call.language}, ${lines} line${lines === 1 ? "" : "s"} of code${files.length ? `, with ${filesSaid}` : ""}.`, {
      what: "the model's tool call",
      text: JSON.stringify({ type: "tool-call", toolName: "executeCode", input: call }),
    }),
  );
  path.push(visit("agent", "down", `streamText runs the tool for the model; the run id ${key} comes from chat.local, set by onTurnStart, never from the model.`));
  path.push(
    visit(
      "execute_code",
      "down",
      `executeCode checked its input (language ${call.language}, ${Buffer.byteLength(call.code)} bytes of code, ${files.length ? `${files.length} file${files.length === 1 ? "" : "s"} (${bytes} bytes) for /work` : "no files"}) and hands the call to the manager under ${key}.`,
      { what: "the executeCode arguments", text: JSON.stringify({ runId: key, language: call.language, code: call.code, ...(files.length ? { files: files.map((f) => ({ path: f.path, bytes: Buffer.byteLength(f.content) })) } : {}) }) },
    ),
  );
  const own = last(c.exchanges, "OpenSession");
  const open = own ?? c.warmOpen;
  const runs = c.exchanges.filter((x) => x.proc === "SessionRun");
  const run = runs.at(-1);
  let words;
  if (c.entry === "opening") words = `${key}'s sandbox was still opening from the turn's warm-up: the manager waited for that OpenSession's answer before it could send the call.`;
  else if (c.entry === "ready" && step.retried)
    words = `The manager holds ${key}'s sandbox and sends the call there. The daemon refused it: that session had ended. Nothing ran, so the manager opened a new sandbox and sent the call once more.`;
  else if (c.entry === "ready") words = `The manager holds ${key}'s sandbox, open and ready: it sends the call there.`;
  else if (step.stopped_at === "manager") words = `The manager refused the call before any request left it: ${step.error}`;
  else words = `The manager held no sandbox for ${key}: it opened one (OpenSession, floor ${c.floor}) and sent the call to the new session.`;
  path.push(visit("manager", "down", words, own && ok(own) && run ? request(own) : undefined));
  if (step.stopped_at === "manager") return [...path, ...callUp(c, "manager", undefined)];

  if (step.stopped_at === "daemon") {
    const onOpen = !run || (open && !ok(open));
    const x = onOpen ? open : run;
    path.push(
      visit("daemon", "down", `The daemon refused ${onOpen ? "OpenSession" : "SessionRun"}${x ? ` (HTTP ${x.status})` : ""}: ${x ? messageOf(x) : step.error}${onOpen ? ". No session opened, so no sandbox exists." : ""}`, x ? request(x) : undefined),
    );
    return [...path, ...callUp(c, "daemon", x)];
  }
  path.push(
    visit(
      "daemon",
      "down",
      step.retried
        ? `The daemon refused the first SessionRun (its session had ended: nothing ran), then took the second, on the new session, at the ${c.tier} tier (the floor is ${c.floor}); it passes the cell to the sandbox's init.`
        : `The daemon took SessionRun: a live session of its own, at the ${c.tier} tier (the floor is ${c.floor}), with no other call running on it; it passes the cell to the sandbox's init.`,
      run ? request(run) : undefined,
    ),
  );
  const a = step.answer;
  if (a)
    path.push(
      visit(
        "sandbox",
        "down",
        `The init ran the ${a.language} cell in ${a.freshInterpreter ? "an interpreter started for it" : "the interpreter kept from earlier calls"}${a.freshSandbox ? ", in a sandbox new to this run" : ""}: exit ${a.exitCode}${a.timedOut ? " (timed out)" : ""}, ${Buffer.byteLength(a.stdout)} bytes of stdout and ${Buffer.byteLength(a.stderr)} of stderr${a.filesPersist ? "; /work stays for the next call" : ""}.`,
      ),
    );
  else path.push(visit("sandbox", "down", "Whether the cell ran here is not known: no checked answer came back."));
  return [...path, ...callUp(c, "sandbox", run)];
}

/** Back up from the hop `from` to the model: an answer, a refusal or an error. */
function callUp(c, from, x) {
  const { step } = c;
  const up = [];
  const a = step.answer;
  const below = (h) => ["model", "agent", "execute_code", "manager", "daemon", "sandbox"].indexOf(from) > ["model", "agent", "execute_code", "manager", "daemon", "sandbox"].indexOf(h);
  if (a) {
    up.push(visit("daemon", "up", "The daemon wrote the call's run record, the next link in the session's chain, and answered SessionRun with it: the receipt (enter opens it, verified).", x ? answer(x) : undefined));
    up.push(visit("manager", "up", `The manager makes the tool's answer of it: stateKept ${a.stateKept}, freshSandbox ${a.freshSandbox}${step.retried ? ", retried once" : ""}.`));
    up.push(visit("execute_code", "up", `executeCode returns exit code ${a.exitCode}${a.timedOut ? " (timed out)" : ""} to streamText.`, { what: "the executeCode answer", text: JSON.stringify(a) }));
    up.push(visit("agent", "up", "streamText hands the tool's result to the model's next step, and the chat stream carries it to the user (tool-output-available)."));
    const said = a.exitCode === 0 && a.stdout ? firstLine(a.stdout) : a.stderr ? lastLine(a.stderr) : firstLine(a.stdout);
    up.push(visit("model", "up", `The model reads the answer: ${said || "(nothing printed)"}`));
    return up;
  }
  const refused = step.outcome === "refused";
  if (below("daemon")) up.push(visit("daemon", "up", `No checked answer comes back from the sandbox: ${step.error}`));
  if (below("manager"))
    up.push(
      visit(
        "manager",
        "up",
        refused ? "The refusal comes back through the manager: nothing ran, so the call is safe to retry." : "The manager cannot say whether the cell ran: it does not retry it.",
        refused && from === "daemon" && x && !ok(x) ? answer(x) : undefined,
      ),
    );
  up.push(visit("execute_code", "up", `executeCode throws the ${refused ? "refusal" : "error"}: ${step.error}`));
  up.push(visit("agent", "up", `streamText hands the ${refused ? "refusal" : "error"} to the model as the tool's error (tool-output-error).`));
  up.push(visit("model", "up", `The model reads: ${step.error}`));
  return up;
}
