/**
 * Saved approvals: the rules of the project permissions file (`toolgate.permissions.yaml`, in
 * the folder of the top-level worker file), which a person wrote by answering "save".
 *
 * - **Decided** in the Rust core (`crates/toolgate-core/src/permissions/`, reached through the
 *   worker's plan): reading the file strictly, which rule covers a call, what saving a call
 *   writes, and writing it (locked, atomic).
 * - **Attached** here: each tool of a loaded worker asks its worker's rules from its
 *   `needsApproval`. A call its rules say needs approval, and that a saved rule covers, needs
 *   none; a call refused before any question (a blocked tool, a blocked command or path, a
 *   caller's restriction) stays refused, so a saved rule never lifts a block.
 */
import { native } from '../native/binding.js';
import { callNative } from '../native/errors.js';
import { commandWordsOf, withChanges } from './approval.js';
import type { NamedTool } from './named-tool.js';
import type { SavedBy, SaveOffer } from './request.js';

export type { SavedBy, SaveOffer };


/** A rule of the project permissions file, with where it is written. */
export interface SavedRule {
  worker: string;
  tool: string;
  /** What the rule holds: `command`, `prefix`, `path`, `input` or `host`. */
  kind: 'command' | 'prefix' | 'path' | 'input' | 'host';
  command?: string;
  prefix?: string;
  path?: string;
  input?: unknown;
  host?: string;
  /** The rule in words (`worker w: shell command exactly: git status`). */
  rule: string;
  /** When it was saved (RFC 3339, UTC). */
  saved: string;
  by: SavedBy;
  /** The permissions file and the line the rule starts on. */
  file: string;
  line: number;
}


/** Calls whose saved rule is remembered between `needsApproval` and the record, at most. */
const REMEMBERED_CALLS = 1000;

/** The saved rules of one worker of a plan. */
export class SavedRules {
  readonly #plan: native.WorkerPlan;
  readonly #worker: number;
  /** The rule that answered each call whose `needsApproval` a rule answered. */
  readonly #covered = new Map<string, SavedRule>();

  /** The rules of worker `worker` (its index) of `plan`. */
  constructor(plan: native.WorkerPlan, worker: number) {
    this.#plan = plan;
    this.#worker = worker;
  }

  /** The rule covering this call, if any. */
  covering(toolName: string, input: unknown, argv: string[] | undefined): SavedRule | undefined {
    const found = callNative(() =>
      native.planSavedRuleFor(this.#plan, this.#worker, toolName, JSON.stringify(input) ?? 'null', argv ?? null),
    );
    return found === null ? undefined : (JSON.parse(found) as SavedRule);
  }

  /** What saving this call would write, or undefined when it cannot be saved. */
  offer(toolName: string, input: unknown, argv: string[] | undefined): SaveOffer | undefined {
    return (
      callNative(() => native.planSaveOffer(this.#plan, this.#worker, toolName, JSON.stringify(input) ?? 'null', argv ?? null)) ??
      undefined
    );
  }

  /** Saves this call's scope as a rule (the file is written before this returns). */
  save(toolName: string, input: unknown, argv: string[] | undefined, by: SavedBy): SavedRule {
    const saved = callNative(() =>
      native.planSaveRule(this.#plan, this.#worker, toolName, JSON.stringify(input) ?? 'null', argv ?? null, by),
    );
    return JSON.parse(saved) as SavedRule;
  }

  /** Remembers that a saved rule answered a call (its record says so). */
  noteCovered(toolCallId: string, rule: SavedRule): void {
    if (this.#covered.size >= REMEMBERED_CALLS) {
      const oldest = this.#covered.keys().next().value;
      if (oldest !== undefined) this.#covered.delete(oldest);
    }
    this.#covered.set(toolCallId, rule);
  }

  /** The rule that answered a call, once (the record takes it). */
  takeCovered(toolCallId: string): SavedRule | undefined {
    const rule = this.#covered.get(toolCallId);
    this.#covered.delete(toolCallId);
    return rule;
  }
}

const SAVED = new WeakMap<object, SavedRules>();

/** Whether the conversation already holds an approval request for this call. */
function inApprovalRoundTrip(toolCallId: string, messages: unknown): boolean {
  if (!Array.isArray(messages)) return false;
  return messages.some((message: { role?: unknown; content?: unknown }) => {
    if (message?.role !== 'assistant' || !Array.isArray(message.content)) return false;
    return message.content.some(
      (part: { type?: unknown; toolCallId?: unknown }) => part?.type === 'tool-approval-request' && part.toolCallId === toolCallId,
    );
  });
}

/** The saved rules a tool of a loaded worker asks, if it has any. */
export function savedRulesOf(tool: object | undefined): SavedRules | undefined {
  return tool ? SAVED.get(tool) : undefined;
}

/**
 * The tool with `rules` answering its questions: its `needsApproval` still decides first (the
 * core's decision, path rules, shell rules), and only a call it says needs approval is looked
 * up in the rules.
 */
export function withSavedRules<T extends NamedTool>(tool: T, rules: SavedRules): T {
  const own = tool.needsApproval;
  if (own === undefined || own === false) {
    SAVED.set(tool, rules);
    return tool;
  }
  const needsApproval = async (input: unknown, options: { toolCallId: string; messages: unknown[] }) => {
    const asks = typeof own === 'function' ? Boolean(await (own as (...args: unknown[]) => unknown)(input, options)) : own === true;
    if (!asks) return false;
    // A call already in the approval round trip keeps needing approval: the AI SDK asks again
    // before it runs an approved call, and turns the approval into a refusal when a tool no
    // longer needs one (a rule saved by that very answer, in this process or another).
    if (inApprovalRoundTrip(options.toolCallId, options.messages)) return true;
    const rule = rules.covering(tool.name, input, commandWordsOf(tool, input));
    if (!rule) return true;
    rules.noteCovered(options.toolCallId, rule);
    return false;
  };
  const wrapped = withChanges(tool, { needsApproval } as unknown as Partial<T>);
  SAVED.set(wrapped, rules);
  return wrapped;
}

/**
 * Every rule of a plan's project permissions file, with where it came from (file, line, date,
 * who saved it): what `toolgate check` shows for a worker file.
 */
export function planSavedRules(plan: native.WorkerPlan): SavedRule[] {
  return JSON.parse(callNative(() => native.planSavedRules(plan))) as SavedRule[];
}
