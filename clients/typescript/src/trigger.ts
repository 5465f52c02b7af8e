/**
 * executeCode for Trigger.dev `chat.agent`s, following Trigger.dev's
 * code-sandbox recipe: warm the run's sandbox when a turn starts (without
 * waiting), reuse it for every executeCode call of the run, close it right
 * before the run suspends (`onChatSuspend`) and when it completes
 * (`onComplete`).
 *
 *   const sandbox = bulkheadCodeSandbox({ client: () => new Client({ target, token }) });
 *   chat.agent({
 *     id: "analyst",
 *     onTurnStart: ({ runId }) => sandbox.warm(runId, userIdFromYourAuth, profileForThisUser),
 *     onChatSuspend: ({ runId }) => sandbox.dispose(runId),
 *     onComplete: ({ ctx }) => sandbox.dispose(ctx.run.id),
 *     run: async ({ messages, signal }) =>
 *       streamText({ model, messages, tools: { executeCode: sandbox.executeCode }, abortSignal: signal }),
 *   });
 *
 * The run id reaches the tool through a `chat.local` that holds nothing but
 * the run id (set by `warm`). The model never sees or picks the run id, the
 * sandbox or the floor. One sandbox per run is one trust domain: everything
 * the run's turns run shares it.
 */
import { chat } from "@trigger.dev/sdk/ai";
import { refused } from "./errors.js";
import { CodeSandboxes, type CodeSandboxesOptions } from "./sandboxes.js";
import { executeCodeTool } from "./tool.js";
import type { Client, Tier } from "./client.js";

/** The run-scoped local: the run id and nothing else. */
export const bulkheadRun = chat.local<{ runId: string }>({ id: "bulkhead.runId" });

export interface BulkheadCodeSandboxOptions extends Omit<CodeSandboxesOptions, "client" | "minimumIsolation"> {
  client: Client | (() => Client);
  /** Default `kernel`: the daemon refuses before anything runs when its tier is weaker. */
  minimumIsolation?: Tier;
}

function currentRunId(): string {
  let runId: unknown;
  try {
    runId = bulkheadRun.runId;
  } catch {
    runId = undefined;
  }
  if (typeof runId !== "string" || !runId)
    throw refused("failed_precondition", "request", "executeCode has no run id: call sandbox.warm(runId) in onTurnStart");
  return runId;
}

export function bulkheadCodeSandbox(o: BulkheadCodeSandboxOptions) {
  const sandboxes = new CodeSandboxes({ ...o, minimumIsolation: o.minimumIsolation ?? "kernel" });
  const executeCode = executeCodeTool(sandboxes, currentRunId);
  return {
    executeCode,
    /** On turn start: remember the run id for executeCode and start opening its sandbox without waiting.
     *  userId (from your server's auth, never from clientData) takes part in the per-owner caps;
     *  grantProfile (your server's choice, e.g. by the user's plan) is the egress profile the run's
     *  sandbox holds, else the options' grantProfile. */
    warm(runId: string, userId?: string, grantProfile?: string): void {
      if (!runId) return;
      try {
        bulkheadRun.init({ runId });
      } catch {
        /* outside a run: executeCode will say so */
      }
      sandboxes.warm(runId, userId, grantProfile);
    },
    /** Before the run suspends and when it completes: forget the run's sandbox and close it. */
    dispose(runId: string): Promise<void> {
      return sandboxes.dispose(runId);
    },
    sandboxes,
  };
}

export type BulkheadCodeSandbox = ReturnType<typeof bulkheadCodeSandbox>;
export { CodeSandboxes } from "./sandboxes.js";
export type { ExecuteCodeInput, ExecuteCodeOutput } from "./sandboxes.js";
export { Client } from "./client.js";
