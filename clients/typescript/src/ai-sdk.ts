/**
 * executeCode for plain AI SDK apps (`streamText` in a route handler): one
 * sandbox per (user, conversation), both from your server's auth and
 * storage, never from the model.
 *
 *   const sandboxes = createBulkheadSandboxes({ client: () => new Client() });
 *   streamText({ model, messages, tools: { executeCode: sandboxes.forConversation({ userId, conversationId }) } });
 *   // when the conversation ends or goes quiet: await sandboxes.dispose({ userId, conversationId })
 *
 * `forConversation` on its own uses a default manager whose client reads
 * BULKHEAD_URL (or BULKHEAD_SOCKET) and BULKHEAD_TOKEN, floor `kernel`.
 */
import { Client, type Tier } from "./client.js";
import { CodeSandboxes, type CodeSandboxesOptions } from "./sandboxes.js";
import { executeCodeTool } from "./tool.js";

export interface ConversationIds {
  userId: string;
  conversationId: string;
}

export interface BulkheadSandboxesOptions extends Omit<CodeSandboxesOptions, "client" | "minimumIsolation"> {
  client?: Client | (() => Client);
  minimumIsolation?: Tier;
}

export function createBulkheadSandboxes(o: BulkheadSandboxesOptions = {}) {
  const sandboxes = new CodeSandboxes({ ...o, client: o.client ?? (() => new Client()), minimumIsolation: o.minimumIsolation ?? "kernel" });
  const keyOf = (ids: ConversationIds) => ({ owner: ids.userId, conversation: ids.conversationId });
  return {
    /** The executeCode tool bound to this conversation's sandbox. */
    forConversation(ids: ConversationIds) {
      const key = keyOf(ids);
      return executeCodeTool(sandboxes, () => key);
    },
    warm(ids: ConversationIds): void {
      sandboxes.warm(keyOf(ids));
    },
    dispose(ids: ConversationIds): Promise<void> {
      return sandboxes.dispose(keyOf(ids));
    },
    disposeAll(): Promise<void> {
      return sandboxes.disposeAll();
    },
    sandboxes,
  };
}

let defaults: ReturnType<typeof createBulkheadSandboxes> | undefined;

/** The executeCode tool for one conversation, on the default manager (configured from the environment). */
export function forConversation(ids: ConversationIds) {
  defaults ??= createBulkheadSandboxes();
  return defaults.forConversation(ids);
}

/** Closes every sandbox of the default manager (call at shutdown). */
export function disposeAll(): Promise<void> {
  return defaults ? defaults.disposeAll() : Promise.resolve();
}

export { Client } from "./client.js";
export { CodeSandboxes } from "./sandboxes.js";
export type { ExecuteCodeInput, ExecuteCodeOutput } from "./sandboxes.js";
