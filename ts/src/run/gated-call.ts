import type { ToolSet } from 'ai';
import { approvalOf } from '../approval/approval.js';
import type { NamedTool } from '../approval/named-tool.js';
import { savedRulesOf } from '../approval/saved-rules.js';
import { ToolgateError } from '../native/errors.js';
import type { ApprovalGate, GateAnswer } from './approval-gate.js';
import { withNetworkCall, type NetworkApprovals } from './network.js';
import type { Recorder } from './records.js';
import type { ToolCallRecord } from './types.js';

type AnyTool = ToolSet[string];

/** What the AI SDK hands a tool's `execute` besides the input (call id, conversation, signal). */
export type ToolExecuteOptions = Parameters<NonNullable<AnyTool['execute']>>[1];

/** One call of a named tool, its input already checked against the tool's schema. */
export interface ToolCall {
  toolName: string;
  /** The tool as gated (`attachApproval`): its approval is read from it, its `execute` runs. */
  tool: AnyTool;
  input: unknown;
  /** Handed to the tool's `execute` unchanged; `toolCallId` and `messages` also to `needsApproval`. */
  options: ToolExecuteOptions;
}

/**
 * What a call is gated and recorded with: the approval gate of the run (or MCP session) and its
 * recorder. The recorder's listener feeds the audit trail, so every record is an audit line.
 */
export interface CallRun {
  gate: ApprovalGate;
  recorder: Recorder;
  /** The run's network approvals: what the egress proxy asks about hosts and records into. */
  network?: NetworkApprovals;
}

/**
 * Where a call's approval is asked. `inline`: `gatedCall` calls the tool's own `needsApproval`
 * and asks the gate itself (`toolgate mcp serve`, `toAgentSettings`). `ai-sdk`: the AI SDK's
 * approval round trip already asked (the agent loop answers its approval requests with
 * `askGate` between two model calls, and the SDK executes only approved calls), so the gate's
 * answer for this call is taken as it is.
 */
export type ApprovalFlow = 'inline' | 'ai-sdk';

/** How a gated call ended; its record is in the recorder either way. */
export type GatedCallOutcome =
  | { status: 'denied'; answer: GateAnswer }
  | { status: 'succeeded'; output: unknown; record: ToolCallRecord }
  | { status: 'failed'; error: unknown; record: ToolCallRecord };

/**
 * Whether a call needs approval: the tool's own `needsApproval`, `true` or a function of the
 * input (user code, so it is called here, once per call). The core already turned every
 * decision into this flag (`attachApproval`).
 */
export async function needsApproval(tool: AnyTool, input: unknown, options: Pick<ToolExecuteOptions, 'toolCallId' | 'messages'>): Promise<boolean> {
  const own = tool.needsApproval;
  // Any truthy answer asks: a function that answers something odd fails closed.
  if (typeof own === 'function') return Boolean(await own(input as never, { toolCallId: options.toolCallId, messages: options.messages }));
  return own === true;
}

/**
 * Asks the gate about a call that needs approval (an "always" given earlier, the handler, or
 * fail closed) and records the call when it is denied. The answer is remembered by the gate.
 */
export async function askGate(
  run: CallRun,
  call: { toolName: string; tool: object | undefined; input: unknown; toolCallId: string },
): Promise<GateAnswer> {
  const answer = await run.gate.decide(call.tool, call.toolName, call.input, call.toolCallId);
  if (!answer.approved) run.recorder.denied(call.toolCallId, call.toolName, call.input, answer);
  return answer;
}

/**
 * The one pipeline of a tool call: decide whether it needs approval, ask the gate, record the
 * decision (denied, or started and then succeeded or failed, with who decided), and execute.
 * The audit line is the record's (`CallRun`). A failure of the tool is returned, not thrown;
 * a failure of the approval itself (the handler throws, the run is aborted while asking) is
 * thrown.
 */
export async function gatedCall(call: ToolCall, run: CallRun, flow: ApprovalFlow): Promise<GatedCallOutcome> {
  const { toolName, tool, input, options } = call;
  const execute = tool.execute;
  if (!execute) throw new ToolgateError('INTERNAL_ERROR', `tool '${toolName}' has no execute function; only tools that run can be called through the gate`);
  let answer: GateAnswer | undefined;
  if (flow === 'ai-sdk') {
    // The AI SDK executes approved calls only: a denial under this id belongs to another call
    // (scripted models repeat ids), so only an approval labels this one.
    const given = run.gate.answerFor(options.toolCallId);
    answer = given?.approved ? given : undefined;
    // Two calls of one step sharing an id: the SDK may run the one that was not approved
    // under the other's approval. Only the approved input runs.
    if ((await needsApproval(tool, input, options)) && !run.gate.approvedFor(tool, toolName, options.toolCallId, input)) {
      const denied: GateAnswer = {
        approved: false,
        decision: 'denied',
        decidedBy: 'policy',
        reason: `denied: no approval was given for this input of tool call '${options.toolCallId}' (another call of the step has the same id)`,
      };
      run.recorder.denied(options.toolCallId, toolName, input, denied);
      return { status: 'denied', answer: denied };
    }
  } else if (await needsApproval(tool, input, options)) {
    answer = await askGate(run, { toolName, tool, input, toolCallId: options.toolCallId });
    if (!answer.approved) return { status: 'denied', answer };
  }
  // A rule of the project permissions file that answered `needsApproval` is named in the record.
  const savedRule = answer ? undefined : savedRulesOf(tool)?.takeCovered(options.toolCallId);
  const record = run.recorder.started(options.toolCallId, toolName, input, answer, approvalOf(tool), savedRule);
  const started = performance.now();
  try {
    const output = await withNetworkCall(run.network, options.toolCallId, toolName, () => Promise.resolve(execute(input as never, options)), tool);
    run.recorder.succeeded(record, output, performance.now() - started);
    return { status: 'succeeded', output, record };
  } catch (error) {
    run.recorder.failed(record, error, performance.now() - started);
    return { status: 'failed', error, record };
  }
}

/**
 * A gated call's output for a caller that speaks in exceptions (the AI SDK's tools): the
 * tool's own error is rethrown, a denial becomes `APPROVAL_DENIED` with the reason, which the
 * model reads.
 */
export function outputOrThrow(outcome: GatedCallOutcome, toolName: string): unknown {
  if (outcome.status === 'succeeded') return outcome.output;
  if (outcome.status === 'failed') throw outcome.error;
  throw new ToolgateError('APPROVAL_DENIED', `tool '${toolName}' was not run: ${outcome.answer.reason ?? 'denied'}`);
}

/**
 * Why a call that no tool saw was refused: the tool is blocked (recorded as such, though the
 * caller is told no more than for an unknown tool), it does not exist, or it exists and its
 * input does not match its schema.
 */
export function rejectedDecision(
  toolName: string,
  offered: { has(name: string): boolean },
  blocked: ReadonlySet<string>,
): 'blocked' | 'unknown-tool' | 'invalid-input' {
  if (blocked.has(toolName)) return 'blocked';
  return offered.has(toolName) ? 'invalid-input' : 'unknown-tool';
}

/**
 * A worker's tools by name and the names of the blocked ones (blocked by their own gate, or by
 * the decisions a loaded worker's plan made). Two tools with one name are `CONFIG_INVALID`.
 */
export function gatedTools(
  tools: ToolSet | readonly NamedTool[],
  decided: Readonly<Record<string, { decision: string }>> | undefined,
): { tools: Map<string, AnyTool>; blocked: Set<string> } {
  const entries: [string, AnyTool][] = Array.isArray(tools)
    ? (tools as readonly NamedTool[]).map((tool) => [tool.name, tool])
    : Object.entries(tools as ToolSet);
  const byName = new Map<string, AnyTool>();
  const blocked = new Set<string>();
  for (const [name, tool] of entries) {
    if (byName.has(name)) throw new ToolgateError('CONFIG_INVALID', `two tools are named '${name}'; rename one`);
    byName.set(name, tool);
    if (approvalOf(tool)?.decision === 'blocked') blocked.add(name);
  }
  for (const [name, info] of Object.entries(decided ?? {})) {
    if (info.decision === 'blocked') blocked.add(name);
  }
  return { tools: byName, blocked };
}
