/**
 * The executeCode tool (AI SDK `tool` with a zod input schema), shared by
 * the Trigger.dev and AI SDK add-ons. `ai` and `zod` are the application's
 * own (peer dependencies).
 */
import { tool } from "ai";
import { z } from "zod";
import type { CodeSandboxes, ExecuteCodeInput, ExecuteCodeOutput, SandboxKey } from "./sandboxes.js";

export const executeCodeInputSchema = z.object({
  code: z.string().min(1).describe("The code to run. In Python the last expression's value is printed, as in a notebook cell."),
  language: z.enum(["python", "javascript"]).optional().describe("python (default) or javascript"),
  files: z
    .array(
      z.object({
        path: z.string().min(1).describe("A relative path under the working directory, without .."),
        content: z.string().describe("The file's text"),
      }),
    )
    .max(200)
    .optional()
    .describe("Text files written into the working directory before the code runs"),
});

export const EXECUTE_CODE_DESCRIPTION =
  "Run Python or JavaScript in this conversation's sandbox. Variables and files in the working directory are kept " +
  "between calls of the same conversation (stateKept, filesPersist say whether they were); freshSandbox says the " +
  "sandbox is new, so nothing from earlier calls exists. There is no network. A program that raises is an answer " +
  "(exitCode 1 and stderr), not a failure.";

/** The executeCode tool for a key that is resolved per call (so a run id can come from task-local state). */
export function executeCodeTool(sandboxes: CodeSandboxes, resolve: () => SandboxKey) {
  return tool({
    description: EXECUTE_CODE_DESCRIPTION,
    inputSchema: executeCodeInputSchema,
    execute: async (input: ExecuteCodeInput, options: { abortSignal?: AbortSignal }): Promise<ExecuteCodeOutput> =>
      sandboxes.run(resolve(), input, { signal: options?.abortSignal }),
  });
}
