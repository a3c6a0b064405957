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
  /**
   * The worker whose tool it is (its name). Workers of one run share its answers; an answer
   * covers only the worker it was given for. Absent outside a worker run.
   */
  worker?: string;
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

/** What answering `'save'` writes: the rule in words and the project permissions file. */
export interface SaveOffer {
  file: string;
  rule: string;
}

/**
 * A tool call waiting for a human decision. Show `review` (the whole input, readable, nothing
 * hidden) — not `input` — to the person who decides.
 */
export interface ApprovalRequest {
  toolName: string;
  input: unknown;
  toolCallId: string;
  /** What answering "always" covers: exactly this call. Show it before the person picks. */
  scope: AlwaysScope;
  /** The command's words, for command tools (`shell`, `cli_execute`). */
  argv?: string[];
  /**
   * The input as a person reviews it (decided by the core, one rule for every surface): keys
   * and values as lines, strings unescaped, long whitespace runs counted (`⟨4100 spaces⟩`),
   * control and invisible characters named (`⟨ESC⟩`, `⟨U+202E⟩`). When the input is too long
   * to show, its first part and a notice with its size and SHA-256.
   */
  review: string;
  /** Whether `review` shows the whole input. When false offer neither "always" nor "save". */
  reviewable: boolean;
  /** The size of the input as canonical JSON (keys sorted), in bytes. */
  inputBytes: number;
  /** SHA-256 (hex) of the input as canonical JSON. */
  inputSha256: string;
  /**
   * Present when the call can be saved as a rule (a worker loaded from a file, a reviewable
   * input): what `'save'` writes, and where.
   */
  save?: SaveOffer;
}

/** Who saved a rule: the terminal, a deferred answer, MCP elicitation, or a handler in code. */
export type SavedBy = 'terminal' | 'deferred-answer' | 'mcp-elicitation' | 'approval-handler';

/**
 * The answer to an approval request: run it, refuse it (the model sees the reason), run it and
 * every later call the "always" scope covers in this run — exactly this call unless a wider
 * `scope` is chosen explicitly — or run it and save its scope as a rule that later runs read
 * (`save`, offered when `request.save` is present). `always` and `save` count as `approve`
 * (this call only) for a request that does not offer them.
 */
export type ApprovalAnswer =
  | 'approve'
  | 'always'
  | 'save'
  | 'deny'
  | { decision: 'approve' }
  | { decision: 'always'; scope?: AlwaysScopeChoice }
  | { decision: 'save'; by?: SavedBy }
  | { decision: 'deny'; reason?: string };

/** What a handler gets besides the request: the run's signal (aborted on Ctrl-C or by the caller). */
export interface ApprovalContext {
  signal?: AbortSignal;
}

export type ApprovalHandler = (request: ApprovalRequest, context: ApprovalContext) => ApprovalAnswer | Promise<ApprovalAnswer>;
