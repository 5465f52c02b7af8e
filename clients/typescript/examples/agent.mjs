// The example agent: a Trigger.dev chat.agent whose executeCode tool runs in
// bulkhead, following the code-sandbox recipe — warm on turn start (without
// waiting), reuse for every call of the run, dispose before the run
// suspends and when it completes.
import { chat } from "@trigger.dev/sdk/ai";
import { streamText, stepCountIs } from "ai";
import { bulkheadCodeSandbox, Client } from "@bulkhead/client/trigger";

/**
 * @param {{ id: string, model: import("ai").LanguageModel, client: () => Client,
 *           minimumIsolation?: string, idleTimeoutInSeconds?: number,
 *           userId?: (clientData: unknown) => string | undefined,
 *           trace?: (event: object) => void, sandboxOptions?: object }} o
 */
export function createAnalystAgent(o) {
  const sandbox = bulkheadCodeSandbox({ ...o.sandboxOptions, client: o.client, minimumIsolation: o.minimumIsolation ?? "kernel" });
  const trace = o.trace ?? (() => {});
  const hooks = {
    onTurnStart: async ({ runId, turn, clientData }) => {
      // userId comes from your server's auth; here the test passes it in.
      const had = sandbox.sandboxes.has(runId);
      sandbox.warm(runId, o.userId?.(clientData));
      trace({ hook: "turn_start", runId, turn, opening: !had && sandbox.sandboxes.has(runId) });
    },
    onChatSuspend: async (event) => {
      const held = sandbox.sandboxes.has(event.runId);
      await sandbox.dispose(event.runId);
      trace({ hook: "suspend", runId: event.runId, phase: event.phase, held });
    },
    onComplete: async ({ ctx }) => {
      const held = sandbox.sandboxes.has(ctx.run.id);
      await sandbox.dispose(ctx.run.id);
      trace({ hook: "complete", runId: ctx.run.id, held });
    },
  };
  const agent = chat.agent({
    id: o.id,
    idleTimeoutInSeconds: o.idleTimeoutInSeconds ?? 60,
    ...hooks,
    run: async ({ messages, signal }) =>
      streamText({
        model: o.model,
        system: "You are a data analyst. Use executeCode to compute answers.",
        messages,
        tools: { executeCode: sandbox.executeCode },
        stopWhen: stepCountIs(8),
        abortSignal: signal,
      }),
  });
  return { agent, sandbox, hooks };
}
