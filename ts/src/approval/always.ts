/**
 * "Always" answers: where each part lives.
 *
 * - **Decided** in the Rust core, `crates/toolgate-core/src/run/always.rs`: what an answer
 *   covers (exactly the call, every command starting with some words, or every call of the
 *   tool) and whether a scope covers a call. This file reaches it through `native.alwaysScope`
 *   and `native.alwaysCovers`; nothing here compares inputs or commands.
 * - **Held** here, by `AlwaysAnswers`: the scopes given so far in one run (or one MCP session).
 *   The run's approval gate (`ts/src/run/approval-gate.ts`) owns one and shares it with the
 *   workers the run calls.
 * - **Carried** across processes in a deferred run's signed state: `run/state.rs` in the core
 *   seals and checks it (`ts/src/worker/run-state.ts` hands the scopes over).
 *
 * Tools that run commands say so with `setCommandWords` (`approval.ts`), which is what lets an
 * answer be widened, explicitly, to a command prefix.
 */
import { commandWordsOf } from './approval.js';
import type { AlwaysScope, AlwaysScopeChoice, ApprovalRequest } from './request.js';
import { native } from '../native/binding.js';
import { callNative } from '../native/errors.js';

export type { AlwaysScope, AlwaysScopeChoice };

/**
 * The scope "always" covers for a call of `worker`'s tool, as the core decides it (`choice`
 * widens it explicitly).
 */
export function alwaysScopeFor(
  toolName: string,
  input: unknown,
  argv: string[] | undefined,
  choice?: AlwaysScopeChoice,
  worker?: string,
): AlwaysScope {
  return JSON.parse(
    callNative(() => native.alwaysScope(toolName, JSON.stringify(input) ?? 'null', argv ?? null, choice ?? null, worker ?? null)),
  ) as AlwaysScope;
}

/**
 * The scope an "always" answer to `request` would cover with `choice` (`'call'`, `'tool'` or
 * `{ prefix }`), with the sentence to show before it is picked. Throws `INVALID_INPUT` for a
 * prefix that does not cover the request, or a prefix for a tool that runs no command.
 */
export function alwaysScope(
  request: Pick<ApprovalRequest, 'toolName' | 'input' | 'argv'> & { scope?: Pick<AlwaysScope, 'worker'> },
  choice: AlwaysScopeChoice = 'call',
): AlwaysScope {
  return alwaysScopeFor(request.toolName, request.input, request.argv, choice, request.scope?.worker);
}

/**
 * The "always" answers of one run: the scopes the core made, kept for as long as the run (or
 * the MCP session) lasts. Whether one covers a call is asked of the core every time.
 */
export class AlwaysAnswers {
  readonly #scopes: AlwaysScope[] = [];

  constructor(scopes: readonly AlwaysScope[] = []) {
    this.add(scopes);
  }

  /** The scopes given so far (what a deferred run's state carries). */
  get scopes(): AlwaysScope[] {
    return [...this.#scopes];
  }

  /** Adds scopes; one already held is not added twice. */
  add(scopes: readonly AlwaysScope[]): void {
    for (const scope of scopes) {
      if (!this.#scopes.some((known) => JSON.stringify(known) === JSON.stringify(scope))) this.#scopes.push(scope);
    }
  }

  /**
   * Whether an answer given so far covers this call of `worker`'s `tool` (its command words come
   * from `setCommandWords`). An input the core cannot read is not covered.
   */
  covers(tool: object | undefined, toolName: string, input: unknown, worker?: string): boolean {
    if (this.#scopes.length === 0) return false;
    try {
      const argv = commandWordsOf(tool, input);
      return native.alwaysCovers(JSON.stringify(this.#scopes), toolName, JSON.stringify(input) ?? 'null', argv ?? null, worker ?? null);
    } catch {
      return false;
    }
  }
}
