import { generateText, stepCountIs, type LanguageModel, type ModelMessage, type StepResult, type ToolSet } from 'ai';
import { native } from '../native/binding.js';
import { LIMITS } from '../native/constants.js';
import { callNative } from '../native/errors.js';
import { needsApproval } from '../run/gated-call.js';
import { ASK_QUESTION, CONVERSE, RESERVED_TOOL_NAMES, TASK_COMPLETION } from '../worker/loop-tools.js';
import { recordRejectedCalls, type RunSetup } from '../worker/run-loop.js';
import type { ModelStepInput, ModelStepResult, PendingToolCall, PlannedCall, ToolResultPart } from './contract.js';

/**
 * The size (bytes of the review display, the core's `LIMITS.maxReviewBytes`) above which a
 * call's input is too long to review: `toolgate.pending` still lists it (its `input` whole, its
 * `review` cut with its size and digest), but it may only be approved once, never for always.
 */
export const MAX_REVIEWABLE_INPUT_BYTES: number = LIMITS.maxReviewBytes;

type AnyTool = ToolSet[string];

/** The tools as the model is offered them: schemas and descriptions only (nothing runs inside a model step). */
function offeredOnly(tools: ToolSet): ToolSet {
  const offered: ToolSet = {};
  for (const [name, tool] of Object.entries(tools)) {
    const { execute: _execute, needsApproval: _needsApproval, ...rest } = tool as AnyTool & Record<string, unknown>;
    offered[name] = rest as AnyTool;
  }
  return offered;
}

/**
 * What `toolgate.pending` shows of a call: the request the gate would make, with the input as
 * every approval surface shows it (the core's review), its size and digest.
 */
export function reviewOf(setup: RunSetup, call: { toolCallId: string; toolName: string; input: unknown }): Omit<PendingToolCall, 'id'> {
  const request = setup.gate.request(setup.original.get(call.toolName), call.toolName, call.input, call.toolCallId);
  return {
    toolName: call.toolName,
    input: call.input,
    toolCallId: call.toolCallId,
    scope: request.reviewable ? request.scope : null,
    ...(request.argv ? { argv: request.argv } : {}),
    review: request.review,
    reviewable: request.reviewable,
    inputBytes: request.inputBytes,
    inputSha256: request.inputSha256,
  };
}

/** What to do with one valid call: run it, ask, or take the answer already given. */
async function planCall(setup: RunSetup, call: { toolCallId: string; toolName: string; input: unknown }, messages: ModelMessage[]): Promise<PlannedCall> {
  const tool = setup.original.get(call.toolName);
  const base = { toolCallId: call.toolCallId, toolName: call.toolName, input: call.input };
  if (!tool || !(await needsApproval(tool, call.input, { toolCallId: call.toolCallId, messages }))) return { ...base, action: 'run' };
  if (setup.gate.coveredByAlways(tool, call.toolName, call.input)) {
    return { ...base, action: 'answered', answer: { approved: true, decision: 'always', decidedBy: 'always' } };
  }
  try {
    return { ...base, action: 'ask', request: reviewOf(setup, call) };
  } catch (error) {
    // The core cannot read this input (nested deeper than JSON allows): nobody can review it.
    const reason = `denied: the input cannot be shown for review (${error instanceof Error ? error.message : String(error)})`;
    return { ...base, action: 'answered', answer: { approved: false, decision: 'denied', decidedBy: 'policy', reason } };
  }
}

/**
 * One model step of a durable run: the model's reply to the conversation so far (the worker's
 * instructions, its offered tools, the AI SDK's schema checks), and for each call what to do
 * with it, decided as `runWorker` decides it. Calls the AI SDK refused (unknown tool, invalid
 * input) are recorded here. A loop-breaking tool ends the run as in `runLoop`.
 */
export async function modelStep(setup: RunSetup, input: ModelStepInput, signal: AbortSignal): Promise<ModelStepResult> {
  const result = await generateText({
    model: setup.model as LanguageModel,
    tools: offeredOnly(setup.tools),
    messages: input.messages,
    ...(setup.worker.instructions ? { system: setup.worker.instructions } : {}),
    stopWhen: stepCountIs(1),
    abortSignal: signal,
  } as Parameters<typeof generateText>[0]);
  const step = result.steps[0] as StepResult<ToolSet> | undefined;
  const toolCalls = step?.toolCalls ?? [];
  if (step) recordRejectedCalls(setup, step);
  const usage = {
    inputTokens: result.usage.inputTokens ?? 0,
    outputTokens: result.usage.outputTokens ?? 0,
    totalTokens: result.usage.totalTokens ?? 0,
  };
  const reply: ModelStepResult = {
    messages: result.response.messages.filter((message) => message.role !== 'tool'),
    step: {
      step: input.step,
      text: result.text,
      finishReason: result.finishReason,
      toolCalls: toolCalls.map((call) => ({ toolCallId: call.toolCallId, toolName: call.toolName, input: call.input })),
    },
    usage,
    finishReason: result.finishReason,
    text: result.text,
    calls: [],
  };

  const valid = toolCalls.filter((call) => !(call as { invalid?: boolean }).invalid);
  const completion = valid.find((call) => call.toolName === TASK_COMPLETION);
  if (completion) {
    const text = String((completion.input as { result?: unknown }).result ?? '');
    const schema = setup.outputSchema;
    const problem = schema === undefined ? null : callNative(() => native.checkWorkerResult(schema, text));
    if (!problem) return { ...reply, end: { status: 'task-completed', text } };
    if (input.step >= input.maxSteps) return { ...reply, end: { status: 'max-steps', text } };
    const retry: ToolResultPart = {
      type: 'tool-result',
      toolCallId: completion.toolCallId,
      toolName: TASK_COMPLETION,
      output: {
        type: 'error-text',
        value: `the result does not match the worker's output schema: ${problem}; call ${TASK_COMPLETION} again with a result that matches`,
      },
    };
    return { ...reply, retry };
  }
  const question = valid.find((call) => call.toolName === ASK_QUESTION);
  if (question) {
    const text = String((question.input as { question?: unknown }).question ?? '');
    return { ...reply, end: { status: 'question', text, question: text } };
  }
  const converse = valid.find((call) => call.toolName === CONVERSE);
  if (converse) return { ...reply, end: { status: 'conversed', text: String((converse.input as { message?: unknown }).message ?? '') } };

  // The AI SDK answered the refused calls in a tool message; the workflow puts them in order with the others.
  const refusals = result.response.messages.flatMap((message) => (message.role === 'tool' ? message.content : []));
  for (const call of toolCalls) {
    if ((call as { invalid?: boolean }).invalid) {
      const part = refusals.find((candidate) => candidate.type === 'tool-result' && candidate.toolCallId === call.toolCallId);
      const record = [...setup.recorder.records].reverse().find((candidate) => candidate.toolCallId === call.toolCallId);
      if (!part || !record) throw new Error(`the AI SDK refused call '${call.toolCallId}' without a result`);
      reply.calls.push({ toolCallId: call.toolCallId, toolName: call.toolName, input: call.input, action: 'rejected', result: part as ToolResultPart, record });
    } else if (!RESERVED_TOOL_NAMES.includes(call.toolName)) {
      reply.calls.push(await planCall(setup, call, input.messages));
    }
  }
  return reply;
}
