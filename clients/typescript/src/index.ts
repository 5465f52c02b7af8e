export { Client, Session, PROTOCOL, TIERS, tierMeets, errorOf, checkAnswered, checkUnanswered } from "./client.js";
export type { ClientOptions, Tier, Language, CellFile, CellOptions, CellAnswer, RunAnswer, ExecResult, Describe, GrantProfile, OpenOptions, CloseAnswer } from "./client.js";
// ---- egress: project runs ----
export { PROJECT_OUTCOMES } from "./client.js";
export type { ProjectOptions, ProjectAnswer, ProjectResult, ProjectStep, ProjectArtifact, ProjectOutcome } from "./client.js";
export { BulkheadError, MAY_HAVE_RUN, REFUSAL_REASONS, SESSION_ENDS } from "./errors.js";
export type { RefusalReason, SessionEnd } from "./errors.js";
export {
  requestDigest,
  resultDigest,
  recordDigest,
  verifyRecord,
  fingerprintOf,
  recordFromJson,
  GOLDEN_REQUEST,
  GOLDEN_REQUEST_SHA256,
} from "./record.js";
export type { RunRecord, RequestFields, ResultFields, ExecResultFields, ProjectResultFields } from "./record.js";
export { ownerDigest, OWNER_KEY_DOMAIN } from "./owner.js";
export { CodeSandboxes } from "./sandboxes.js";
export type { SandboxKey, ExecuteCodeInput, ExecuteCodeOutput, CodeSandboxesOptions } from "./sandboxes.js";
export { Transport, newRequestId } from "./transport.js";
export type { Exchange, FetchLike, TransportOptions } from "./transport.js";
