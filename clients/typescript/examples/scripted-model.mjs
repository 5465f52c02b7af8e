// A scripted language model (the AI SDK's MockLanguageModelV3, no model API):
// for each turn it emits one executeCode tool call per scripted call, in
// order, then a short text once the last tool result is in.
import { MockLanguageModelV3, simulateReadableStream } from "ai/test";

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/**
 * @param {() => Array<{code: string, language?: string, files?: {path: string, content: string}[]}>} nextCalls
 *   called when a new turn begins (a user message is last): the calls of that turn
 */
export function scriptedModel(nextCalls) {
  let pending = [];
  let n = 0;
  return new MockLanguageModelV3({
    provider: "scripted",
    modelId: "executeCode-script",
    doStream: async ({ prompt }) => {
      const last = prompt[prompt.length - 1];
      if (last?.role === "user") pending = [...nextCalls()];
      const call = pending.shift();
      const chunks = call
        ? [
            { type: "stream-start", warnings: [] },
            { type: "tool-call", toolCallId: `call-${++n}`, toolName: "executeCode", input: JSON.stringify(call) },
            { type: "finish", finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage },
          ]
        : [
            { type: "stream-start", warnings: [] },
            { type: "text-start", id: `t${++n}` },
            { type: "text-delta", id: `t${n}`, delta: "Done." },
            { type: "text-end", id: `t${n}` },
            { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
          ];
      return { stream: simulateReadableStream({ chunks, initialDelayInMs: null, chunkDelayInMs: null }) };
    },
  });
}
