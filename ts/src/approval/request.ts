/**
 * Asking a human about a tool call: the request, the answers, and the "always" scopes an
 * answer can reach (decided by the core, `crates/toolgate-core/src/run/always.rs`; see
 * `always.ts`).
 */

/**
 * What an "always" answer covers, with the sentence to show before someone picks it:
 * `call` — exactly this call (the default); `prefix` — command tools: every command whose words
 * start with `prefix`; `tool` — every call of the tool.
 */
export interface AlwaysScope {
  kind: 'call' | 'prefix' | 'tool';
  tool: string;
  /** `call`: the input of the approved call. */
  input?: unknown;
  /** `prefix`: the words a command must start with. */
  prefix?: string[];
  description: string;
}

/**
 * A wider scope for "always", chosen explicitly: `'call'` (exactly this call, the default),
 * `'tool'` (every call of the tool) or `{ prefix: 'rm -rf' }` (command tools: commands starting
 * with these words, which must cover the call being answered).
 */
export type AlwaysScopeChoice = 'call' | 'tool' | { prefix: string };

/** A tool call waiting for a human decision. */
export interface ApprovalRequest {
  toolName: string;
  input: unknown;
  toolCallId: string;
  /** What answering "always" covers: exactly this call. Show it before the person picks. */
  scope: AlwaysScope;
  /** The command's words, for command tools (`shell`, `cli_execute`). */
  argv?: string[];
}

/**
 * The answer to an approval request: run it, refuse it (the model sees the reason), or run it
 * and every later call the "always" scope covers in this run — exactly this call unless a wider
 * `scope` is chosen explicitly.
 */
export type ApprovalAnswer =
  | 'approve'
  | 'always'
  | 'deny'
  | { decision: 'approve' }
  | { decision: 'always'; scope?: AlwaysScopeChoice }
  | { decision: 'deny'; reason?: string };

/** What a handler gets besides the request: the run's signal (aborted on Ctrl-C or by the caller). */
export interface ApprovalContext {
  signal?: AbortSignal;
}

export type ApprovalHandler = (request: ApprovalRequest, context: ApprovalContext) => ApprovalAnswer | Promise<ApprovalAnswer>;
