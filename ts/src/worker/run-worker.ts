import { generateText, stepCountIs, wrapLanguageModel, type GenerateTextResult, type LanguageModel, type ModelMessage, type ToolSet } from 'ai';
import { approvalOf, isBlocked } from '../approval/approval.js';
import { native } from '../native/binding.js';
import { LIMITS } from '../native/constants.js';
import { callNative, ToolgateError } from '../native/errors.js';
import type { NamedTool } from '../approval/named-tool.js';
import { resolveModel } from './models.js';
import { modelIsCompatible } from './models.js';
import { AI_MAJOR } from './ai-version.js';
import { runContext, type RunContext } from './run-context.js';
import { ApprovalGate } from './approval-gate.js';
import { xmlToolCalls } from './xml-tool-calls.js';
import { ASK_QUESTION, CONVERSE, loopBreakingTools, RESERVED_TOOL_NAMES, TASK_COMPLETION } from './loop-tools.js';
import type {
  RunEvent,
  RunnableWorker,
  RunStatus,
  RunWorkerOptions,
  StepRecord,
  ToolCallRecord,
  WorkerRunResult,
} from './types.js';

/** Model steps of a run when neither the worker nor the caller says (the core's default). */
export const DEFAULT_MAX_STEPS: number = LIMITS.defaultMaxSteps;
/** How deep workers may call workers (the top-level worker is depth 0; the core's limit). */
export const MAX_WORKER_DEPTH: number = LIMITS.maxWorkerDepth;

type AnyTool = ToolSet[string];

function toolsByName(tools: ToolSet | readonly NamedTool[]): Map<string, AnyTool> {
  const entries: [string, AnyTool][] = Array.isArray(tools)
    ? (tools as readonly NamedTool[]).map((tool) => [tool.name, tool])
    : Object.entries(tools as ToolSet);
  const map = new Map<string, AnyTool>();
  for (const [name, tool] of entries) {
    if (RESERVED_TOOL_NAMES.includes(name)) {
      throw new ToolgateError('CONFIG_INVALID', `'${name}' is a reserved tool name (it ends the run); rename your tool`);
    }
    if (map.has(name)) throw new ToolgateError('CONFIG_INVALID', `two tools are named '${name}'; rename one`);
    map.set(name, tool);
  }
  return map;
}

/**
 * Runs a worker's agent loop on the AI SDK. Tools that need approval go through the SDK's own
 * approval flow: the SDK stops with approval requests, `onApproval` answers them, and the SDK
 * executes the approved calls when the loop continues — every tool executes exactly once.
 */
export async function runWorker(worker: RunnableWorker, input: string, options: RunWorkerOptions = {}): Promise<WorkerRunResult> {
  const checked = callNative(() => native.checkRunWorkerOptions(options));
  const parent = runContext.getStore();
  // A called worker's events reach its caller's listener, marked with its name.
  const emit = (event: RunEvent) => {
    options.onEvent?.(event);
    if (!options.onEvent) parent?.emit({ ...event, worker: event.worker ?? worker.name });
  };
  const depth = parent ? parent.depth + 1 : 0;
  if (depth > MAX_WORKER_DEPTH) {
    throw new ToolgateError(
      'CONFIG_INVALID',
      `workers are nested more than ${MAX_WORKER_DEPTH} deep: ${[...(parent?.chain ?? []), worker.name].join(' -> ')}`,
    );
  }
  if (worker.allowEmptyInput === false && input.trim() === '') {
    throw new ToolgateError(
      'INVALID_INPUT',
      `worker '${worker.name}' does not accept an empty task (allow_empty_input: false in its file); give it a task`,
    );
  }
  const forcedModel = options.model !== undefined || (parent?.forcedModel ?? false);
  const modelSpec = options.model ?? (parent?.forcedModel ? parent.model : (worker.model ?? parent?.model));
  if (modelSpec === undefined) {
    throw new ToolgateError(
      'CONFIG_INVALID',
      `worker '${worker.name}' names no model; set 'model' in the worker file, pass --model, or set TOOLGATE_MODEL`,
    );
  }
  if (typeof modelSpec === 'string' && worker.compatibleModels && !modelIsCompatible(worker.compatibleModels, modelSpec)) {
    throw new ToolgateError(
      'CONFIG_INVALID',
      `model '${modelSpec}' is not one of the models worker '${worker.name}' is written for (compatible_models: ${worker.compatibleModels.join(', ')}); pick one of those`,
    );
  }
  const resolved: LanguageModel = typeof modelSpec === 'string' ? await resolveModel(modelSpec) : modelSpec;
  const model: LanguageModel =
    worker.toolCallFormat === 'xml' ? wrapLanguageModel({ model: resolved as Parameters<typeof wrapLanguageModel>[0]['model'], middleware: xmlToolCalls() }) : resolved;
  const maxSteps =
    checked.maxSteps ?? callNative(() => native.checkRunWorkerOptions({ maxSteps: worker.maxSteps })).maxSteps ?? DEFAULT_MAX_STEPS;

  const gate = parent && !options.onApproval ? parent.gate : new ApprovalGate(options.onApproval, emit);
  const context: RunContext = {
    depth,
    chain: [...(parent?.chain ?? []), worker.name],
    gate,
    // Called workers get the model itself: each applies its own tool_call_format.
    model: resolved,
    forcedModel,
    emit,
  };
  const records: ToolCallRecord[] = [];
  const original = toolsByName(worker.tools);
  const tools: ToolSet = {};
  for (const [name, tool] of original) {
    if (!isBlocked(tool)) tools[name] = instrument(name, tool, gate, records, emit);
  }
  const outputSchema =
    worker.outputSchema === undefined ? undefined : typeof worker.outputSchema === 'string' ? worker.outputSchema : JSON.stringify(worker.outputSchema);
  for (const breaker of loopBreakingTools(outputSchema)) tools[breaker.name] = breaker;

  const messages: ModelMessage[] = [...(options.messages ?? []), { role: 'user', content: input }];
  const steps: StepRecord[] = [];
  const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  const finish = (status: RunStatus, text: string, question?: string): WorkerRunResult => ({
    status,
    text,
    ...(question === undefined ? {} : { question }),
    steps,
    toolCalls: records,
    usage,
    messages,
  });

  for (;;) {
    const stepsBefore = steps.length;
    const result = await runContext.run(context, () => generateText({
      model,
      tools,
      messages,
      ...(worker.instructions ? { system: worker.instructions } : {}),
      stopWhen: stepCountIs(maxSteps - stepsBefore),
      abortSignal: options.signal,
      ...(AI_MAJOR >= 7 ? { toolApproval: callLevelApproval(original, gate) } : {}),
      prepareStep: ({ stepNumber }) => {
        emit({ type: 'step-start', step: stepsBefore + stepNumber + 1 });
        return undefined;
      },
      onStepFinish: (step) => {
        const record: StepRecord = {
          step: steps.length + 1,
          text: step.text,
          finishReason: step.finishReason,
          toolCalls: step.toolCalls.map((call) => ({ toolCallId: call.toolCallId, toolName: call.toolName, input: call.input })),
        };
        steps.push(record);
        emit({ type: 'step-end', step: record.step, text: record.text, finishReason: record.finishReason, toolCalls: record.toolCalls.length });
      },
    } as Parameters<typeof generateText>[0]));
    // ai 7 keeps only the final step in `response.messages` and offers every message the call
    // produced (including results of approved calls run before the first step) as `responseMessages`.
    messages.push(...((result as { responseMessages?: ModelMessage[] }).responseMessages ?? result.response.messages));
    usage.inputTokens += result.totalUsage.inputTokens ?? 0;
    usage.outputTokens += result.totalUsage.outputTokens ?? 0;
    usage.totalTokens += result.totalUsage.totalTokens ?? 0;

    const calls = result.steps.at(-1)?.toolCalls ?? [];
    const completion = calls.find((call) => call.toolName === TASK_COMPLETION);
    if (completion) {
      const text = String((completion.input as { result?: unknown }).result ?? '');
      const problem = outputSchema === undefined ? null : callNative(() => native.checkWorkerResult(outputSchema, text));
      if (!problem) return finish('task-completed', text);
      // The result breaks the output schema: the model sees why, as the call's result, and tries again.
      if (steps.length >= maxSteps) return finish('max-steps', text);
      messages.push({
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: completion.toolCallId,
            toolName: TASK_COMPLETION,
            output: {
              type: 'error-text',
              value: `the result does not match the worker's output schema: ${problem}; call ${TASK_COMPLETION} again with a result that matches`,
            },
          },
        ],
      });
      continue;
    }
    const question = calls.find((call) => call.toolName === ASK_QUESTION);
    if (question) {
      const text = String((question.input as { question?: unknown }).question ?? '');
      return finish('question', text, text);
    }
    const reply = calls.find((call) => call.toolName === CONVERSE);
    if (reply) return finish('conversed', String((reply.input as { message?: unknown }).message ?? ''));

    const requests = pendingApprovalRequests(result.steps.at(-1)?.content ?? []);
    if (steps.length >= maxSteps) {
      const unfinished = requests.length > 0 || result.finishReason === 'tool-calls';
      return finish(unfinished ? 'max-steps' : 'completed', result.text);
    }
    if (requests.length === 0) return finish('completed', result.text);

    const responses = [];
    for (const request of requests) {
      const call = request.toolCall;
      const answer = await gate.decide(original.get(call.toolName), {
        toolName: call.toolName,
        input: call.input,
        toolCallId: call.toolCallId,
      });
      if (!answer.approved) {
        records.push({
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          input: call.input,
          decision: 'denied',
          durationMs: 0,
          ...(answer.reason ? { reason: answer.reason } : {}),
        });
      }
      responses.push({
        type: 'tool-approval-response' as const,
        approvalId: request.approvalId,
        approved: answer.approved,
        ...(answer.reason ? { reason: answer.reason } : {}),
      });
    }
    messages.push({ role: 'tool', content: responses });
  }
}

type ContentPart = GenerateTextResult<ToolSet, never>['content'][number];
type ApprovalRequestPart = Extract<ContentPart, { type: 'tool-approval-request' }>;

/**
 * Approval requests of a step that still wait for a human. ai 7 also reports requests it
 * answered itself (from `toolApproval`), marked `isAutomatic` and followed by their response.
 */
function pendingApprovalRequests(content: readonly ContentPart[]): ApprovalRequestPart[] {
  const answered = new Set<string>();
  for (const part of content) {
    if ((part as { type: string }).type === 'tool-approval-response') answered.add((part as unknown as { approvalId: string }).approvalId);
  }
  return content.filter(
    (part): part is ApprovalRequestPart =>
      part.type === 'tool-approval-request' && !answered.has(part.approvalId) && !(part as { isAutomatic?: boolean }).isAutomatic,
  );
}

/** Wraps `execute` to record the decision, the duration and the outcome of every call. */
function instrument(name: string, tool: AnyTool, gate: ApprovalGate, records: ToolCallRecord[], emit: (e: RunEvent) => void): AnyTool {
  const execute = tool.execute;
  if (!execute) return tool;
  return {
    ...tool,
    execute: async (input: unknown, options: Parameters<NonNullable<AnyTool['execute']>>[1]) => {
      const answer = gate.answerFor(options.toolCallId);
      const decision = answer ? (answer.decision === 'always' ? 'always' : 'approved') : 'preApproved';
      emit({ type: 'tool-call', toolCallId: options.toolCallId, toolName: name, input, decision });
      const started = performance.now();
      const record: ToolCallRecord = { toolCallId: options.toolCallId, toolName: name, input, decision, durationMs: 0 };
      records.push(record);
      try {
        const output = await execute(input as never, options);
        record.durationMs = performance.now() - started;
        record.output = output;
        emit({ type: 'tool-result', toolCallId: options.toolCallId, toolName: name, output, durationMs: record.durationMs });
        return output;
      } catch (error) {
        record.durationMs = performance.now() - started;
        record.error = error instanceof Error ? error.message : String(error);
        if (error instanceof ToolgateError) record.errorCode = error.code;
        emit({
          type: 'tool-error',
          toolCallId: options.toolCallId,
          toolName: name,
          error: record.error,
          ...(record.errorCode ? { errorCode: record.errorCode } : {}),
          durationMs: record.durationMs,
        });
        throw error;
      }
    },
  } as AnyTool;
}

/**
 * ai 7's call-level `toolApproval`: the same decisions as the tools' own `needsApproval`, plus
 * calls covered by an earlier "always" run without another round trip.
 */
function callLevelApproval(tools: Map<string, AnyTool>, gate: ApprovalGate) {
  const approval: Record<string, (input: unknown, options: { toolCallId: string; messages: ModelMessage[] }) => Promise<unknown>> = {};
  for (const [name, tool] of tools) {
    const info = approvalOf(tool);
    approval[name] = async (input, options) => {
      if (info?.decision === 'blocked') return { type: 'denied', reason: `tool '${name}' is blocked by its approval configuration` };
      const gateFlag = tool.needsApproval;
      const asks =
        typeof gateFlag === 'function'
          ? await gateFlag(input as never, { toolCallId: options.toolCallId, messages: options.messages })
          : gateFlag === true;
      if (!asks) return 'approved';
      if (gate.coveredByAlways(tool, { toolName: name, input, toolCallId: options.toolCallId })) {
        gate.noteAlways(options.toolCallId);
        return 'approved';
      }
      return 'user-approval';
    };
  }
  return approval;
}
