import {
  generateText,
  stepCountIs,
  streamText,
  wrapLanguageModel,
  type GenerateTextResult,
  type LanguageModel,
  type LanguageModelUsage,
  type ModelMessage,
  type StepResult,
  type ToolSet,
} from 'ai';
import { approvalOf, commandWordsOf, isBlocked } from '../approval/approval.js';
import { savedRulesOf } from '../approval/saved-rules.js';
import { native } from '../native/binding.js';
import { LIMITS } from '../native/constants.js';
import { callNative, ToolgateError } from '../native/errors.js';
import { ApprovalGate } from '../run/approval-gate.js';
import { AuditTrail, newRunId, type AuditTarget } from '../run/audit.js';
import { askGate, gatedCall, gatedTools, needsApproval, outputOrThrow, rejectedDecision, type CallRun } from '../run/gated-call.js';
import { NETWORK_TOOL, NetworkApprovals, type DeferredNetworkRequest } from '../run/network.js';
import { Recorder } from '../run/records.js';
import { AI_MAJOR } from './ai-version.js';
import { planOf } from './plans.js';
import { ASK_QUESTION, CONVERSE, loopBreakingTools, RESERVED_TOOL_NAMES, TASK_COMPLETION } from './loop-tools.js';
import { modelIsCompatible, resolveModel } from './models.js';
import { runContext, type RunContext } from './run-context.js';
import { sealState, workerFingerprint, type PendingCall } from './run-state.js';
import { xmlToolCalls } from './xml-tool-calls.js';
import type {
  AlwaysScope,
  ApprovalHandler,
  PendingApproval,
  RunEvent,
  RunnableWorker,
  RunStatus,
  RunUsage,
  StepRecord,
  WorkerRunResult,
} from './types.js';

/** Model steps of a run when neither the worker nor the caller says (the core's default). */
export const DEFAULT_MAX_STEPS: number = LIMITS.defaultMaxSteps;
/** How deep workers may call workers (the top-level worker is depth 0; the core's limit). */
export const MAX_WORKER_DEPTH: number = LIMITS.maxWorkerDepth;

type AnyTool = ToolSet[string];

/** What the loop needs of the caller's options (run, stream and resume alike). */
export interface LoopOptions {
  model?: string | LanguageModel;
  onApproval?: ApprovalHandler | 'defer';
  signal?: AbortSignal;
  onEvent?: (event: RunEvent) => void;
}

/** What the core checked of the options, and what a resumed state brings. */
export interface LoopSettings {
  maxSteps: number | undefined;
  runId?: string;
  always?: readonly AlwaysScope[];
  stream: boolean;
  stateSecret?: string;
  audit?: { file: string; redact: readonly string[] } | null;
}

/** A run ready to loop: model, tools, gate, records, audit. */
export interface RunSetup {
  worker: RunnableWorker;
  model: LanguageModel;
  modelLabel: string;
  maxSteps: number;
  /** The JSON Schema (JSON text) a `task_completion` result must match (`outputSchema`). */
  outputSchema: string | undefined;
  original: Map<string, AnyTool>;
  tools: ToolSet;
  /** Tools of the worker the model is not offered because they are blocked. */
  blocked: Set<string>;
  gate: ApprovalGate;
  recorder: Recorder;
  /** The egress proxy's questions and records (shared with the workers the run calls). */
  network: NetworkApprovals;
  context: RunContext;
  emit: (event: RunEvent) => void;
  signal: AbortSignal | undefined;
  /** Top-level `onApproval: 'defer'`: stop at the first approval request. */
  defer: boolean;
  stateSecret: string | undefined;
  runId: string;
  /** Where the audit log goes (top-level runs only); the trail is made when the run starts. */
  auditTarget: AuditTarget | undefined;
  trail: AuditTrail | undefined;
  stream: boolean;
}

/**
 * The worker's tools by name and the blocked ones; reserved or repeated names are
 * `CONFIG_INVALID`.
 */
function toolsOf(worker: RunnableWorker): { tools: Map<string, AnyTool>; blocked: Set<string> } {
  const table = gatedTools(worker.tools, (worker as { toolApproval?: Record<string, { decision: string }> }).toolApproval);
  for (const name of table.tools.keys()) {
    if (RESERVED_TOOL_NAMES.includes(name)) {
      throw new ToolgateError('CONFIG_INVALID', `'${name}' is a reserved tool name (it ends the run); rename your tool`);
    }
  }
  return table;
}

/** A worker with `allowEmptyInput: false` refuses an empty task (`INVALID_INPUT`). */
export function checkInput(worker: RunnableWorker, input: string): void {
  if (worker.allowEmptyInput === false && input.trim() === '') {
    throw new ToolgateError(
      'INVALID_INPUT',
      `worker '${worker.name}' does not accept an empty task (allow_empty_input: false in its file); give it a task`,
    );
  }
}

/** `onApproval` is a function, `'defer'` or absent (only JavaScript can tell a function). */
export function checkApprovalOption(onApproval: unknown, stateSecret: string | undefined, where: string): void {
  if (onApproval === undefined || typeof onApproval === 'function') return;
  if (onApproval !== 'defer') {
    throw new ToolgateError('CONFIG_INVALID', `${where}: onApproval is a function or 'defer', not ${JSON.stringify(onApproval) ?? typeof onApproval}`);
  }
  if (stateSecret === undefined) {
    throw new ToolgateError(
      'CONFIG_INVALID',
      `${where}: onApproval 'defer' returns a signed state; pass stateSecret (at least 32 bytes, the same secret resumeWorker gets)`,
    );
  }
}

function modelLabel(spec: string | LanguageModel): string {
  if (typeof spec === 'string') return spec;
  const model = spec as { provider?: string; modelId?: string };
  return `${model.provider ?? 'model'}:${model.modelId ?? 'unknown'}`;
}

/** The audit target of a top-level run (or an MCP serving): the option, else the worker file's `audit.file`. */
export function auditTarget(worker: RunnableWorker, option: LoopSettings['audit']): AuditTarget | undefined {
  const file = option?.file ?? (worker as { auditFile?: string }).auditFile;
  if (!file) return undefined;
  const plan = planOf(worker);
  const planPatterns = plan ? callNative(() => native.planRedactionPatterns(plan)) : [];
  return { file, redact: [...planPatterns, ...(option?.redact ?? [])] };
}

/** Resolves the model, checks depth and compatibility, builds the gate and instruments the tools. */
export async function prepareRun(worker: RunnableWorker, options: LoopOptions, settings: LoopSettings): Promise<RunSetup> {
  const parent = runContext.getStore();
  let trail: AuditTrail | undefined;
  // A called worker's events reach its caller's listener, marked with its name.
  const emit = (event: RunEvent) => {
    trail?.collect(event);
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
    worker.toolCallFormat === 'xml'
      ? wrapLanguageModel({ model: resolved as Parameters<typeof wrapLanguageModel>[0]['model'], middleware: xmlToolCalls() })
      : resolved;
  const maxSteps =
    settings.maxSteps ?? callNative(() => native.checkRunWorkerOptions({ maxSteps: worker.maxSteps })).maxSteps ?? DEFAULT_MAX_STEPS;

  const defer = options.onApproval === 'defer' && !parent;
  // A called worker shares its caller's answers, under its own name (an "always" covers the
  // tool of the worker it was given for).
  const shared = parent !== undefined && !options.onApproval;
  const gate = shared
    ? parent.gate.forWorker(worker.name)
    : new ApprovalGate(options.onApproval, emit, options.signal, settings.always ?? [], worker.name);
  const recorder = new Recorder(emit);
  const network = shared ? parent.network : new NetworkApprovals(gate, (record) => recorder.connection(record));
  // Called workers get the model itself: each applies its own tool_call_format.
  const context: RunContext = { depth, chain: [...(parent?.chain ?? []), worker.name], gate, network, model: resolved, forcedModel, emit };
  const { tools: original, blocked } = toolsOf(worker);
  const tools: ToolSet = {};
  for (const [name, tool] of original) {
    if (!isBlocked(tool)) tools[name] = executedThroughGate(name, tool, { gate, recorder, network });
  }
  const outputSchema =
    worker.outputSchema === undefined ? undefined : typeof worker.outputSchema === 'string' ? worker.outputSchema : JSON.stringify(worker.outputSchema);
  for (const breaker of loopBreakingTools(outputSchema)) tools[breaker.name] = breaker;
  const setup: RunSetup = {
    worker,
    model,
    modelLabel: modelLabel(modelSpec),
    maxSteps,
    outputSchema,
    original,
    tools,
    blocked,
    gate,
    recorder,
    network,
    context,
    emit,
    signal: options.signal,
    defer,
    stateSecret: settings.stateSecret,
    runId: settings.runId ?? newRunId(),
    auditTarget: parent ? undefined : auditTarget(worker, settings.audit),
    get trail() {
      return trail;
    },
    set trail(value) {
      trail = value;
    },
    stream: settings.stream,
  };
  return setup;
}

/**
 * Runs `body` with the run's audit trail: the start line, the end line (or the error), and one
 * append with fsync when it is over — also when the run fails or is aborted.
 */
export async function audited(
  setup: RunSetup,
  start: { input?: string; resumed: boolean },
  body: () => Promise<WorkerRunResult>,
): Promise<WorkerRunResult> {
  if (!setup.auditTarget) return body();
  const trail = new AuditTrail(setup.auditTarget, setup.runId, setup.worker.name);
  setup.trail = trail;
  const workerFile = (setup.worker as { path?: string }).path;
  trail.start({ ...start, model: setup.modelLabel, ...(workerFile ? { workerFile } : {}) });
  try {
    const result = await body();
    trail.end({
      status: result.status,
      steps: result.steps.at(-1)?.step ?? 0,
      usage: result.usage,
      calls: result.toolCalls.length,
      ...(result.pending ? { pending: result.pending.map((request) => request.id) } : {}),
    });
    return result;
  } catch (error) {
    trail.end({ error });
    throw error;
  } finally {
    await trail.flush();
  }
}

/** Where the loop starts: the conversation so far, the steps taken, the usage so far. */
export interface LoopStart {
  messages: ModelMessage[];
  stepsTaken: number;
  usage: RunUsage;
}

/**
 * The agent loop. Each round runs the AI SDK (`generateText`, or `streamText` for a streamed
 * run) until it stops: at a loop-breaking tool, at the step limit, with an answer, or with
 * approval requests. The requests are answered through the gate and the SDK executes the
 * approved calls when the next round starts — every tool executes exactly once. A deferred run
 * stops at the first requests and returns them with a signed state instead.
 */
export async function runLoop(setup: RunSetup, start: LoopStart): Promise<WorkerRunResult> {
  const { messages, usage } = start;
  const steps: StepRecord[] = [];
  const taken = () => start.stepsTaken + steps.length;
  const finish = (status: RunStatus, text: string, extra: Partial<WorkerRunResult> = {}): WorkerRunResult => ({
    status,
    text,
    ...extra,
    runId: setup.runId,
    steps,
    toolCalls: setup.recorder.records,
    connections: setup.recorder.connections,
    usage,
    messages,
  });

  for (;;) {
    setup.signal?.throwIfAborted();
    const round = await runRound(setup, messages, taken(), steps);
    messages.push(...round.messages);
    usage.inputTokens += round.usage.inputTokens ?? 0;
    usage.outputTokens += round.usage.outputTokens ?? 0;
    usage.totalTokens += round.usage.totalTokens ?? 0;

    const last = round.steps.at(-1);
    const calls = (last?.toolCalls ?? []).filter((call) => !(call as { invalid?: boolean }).invalid);
    const completion = calls.find((call) => call.toolName === TASK_COMPLETION);
    if (completion) {
      const text = String((completion.input as { result?: unknown }).result ?? '');
      const schema = setup.outputSchema;
      const problem = schema === undefined ? null : callNative(() => native.checkWorkerResult(schema, text));
      if (!problem) return finish('task-completed', text);
      // The result breaks the output schema: the model sees why, as the call's result, and tries again.
      if (taken() >= setup.maxSteps) return finish('max-steps', text);
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
      return finish('question', text, { question: text });
    }
    const reply = calls.find((call) => call.toolName === CONVERSE);
    if (reply) return finish('conversed', String((reply.input as { message?: unknown }).message ?? ''));

    const requests = pendingApprovalRequests(last?.content ?? []);
    // A process asked about a host in a deferred run: the connection was refused, and the run
    // stops here with the question (and any approval requests of the step) pending.
    const deferredHosts = setup.defer ? setup.network.takeDeferred() : [];
    if (deferredHosts.length > 0) {
      const { pending, state } = deferRun(setup, requests, messages, taken(), usage, deferredHosts);
      return finish('approval-required', round.text, { pending, state });
    }
    if (taken() >= setup.maxSteps) {
      const unfinished = requests.length > 0 || round.finishReason === 'tool-calls';
      return finish(unfinished ? 'max-steps' : 'completed', round.text);
    }
    if (requests.length === 0) return finish('completed', round.text);

    const open = setup.defer ? requests.filter((request) => !coveredByAlways(setup, request)) : [];
    if (open.length > 0) {
      // Requests an earlier "always" covers are answered now; the answers travel in the state's
      // last message and the resume adds the others to it (the AI SDK reads one message).
      const covered = requests.filter((request) => !open.includes(request));
      const responses = await answerRequests(setup, covered);
      if (responses.length > 0) messages.push({ role: 'tool', content: responses });
      const { pending, state } = deferRun(setup, open, messages, taken(), usage);
      return finish('approval-required', round.text, { pending, state });
    }
    messages.push({ role: 'tool', content: await answerRequests(setup, requests) });
  }
}

function coveredByAlways(setup: RunSetup, request: ApprovalRequestPart): boolean {
  const call = request.toolCall;
  return setup.gate.coveredByAlways(setup.original.get(call.toolName), call.toolName, call.input);
}

/**
 * Answers requests through the gate (handler, "always", or fail closed) and records denials: the
 * approval stage of the gated-call pipeline, run between two model calls because the AI SDK's
 * approval flow asks there. The approved calls then run through `gatedCall` when the SDK
 * executes them.
 */
async function answerRequests(setup: RunSetup, requests: readonly ApprovalRequestPart[]) {
  const responses = [];
  for (const request of requests) {
    const call = request.toolCall;
    const answer = await askGate(setup, { toolName: call.toolName, tool: setup.original.get(call.toolName), input: call.input, toolCallId: call.toolCallId });
    responses.push({
      type: 'tool-approval-response' as const,
      approvalId: request.approvalId,
      approved: answer.approved,
      ...(answer.reason ? { reason: answer.reason } : {}),
    });
  }
  return responses;
}

/** Seals the run at its approval requests. */
function deferRun(
  setup: RunSetup,
  requests: readonly ApprovalRequestPart[],
  messages: ModelMessage[],
  stepsTaken: number,
  usage: RunUsage,
  hosts: readonly DeferredNetworkRequest[] = [],
): { pending: PendingApproval[]; state: string } {
  const secret = setup.stateSecret;
  if (secret === undefined) throw new ToolgateError('CONFIG_INVALID', "onApproval 'defer' needs stateSecret");
  const pendingCalls: PendingCall[] = requests.map((request) => {
    const call = request.toolCall;
    const argv = commandWordsOf(setup.original.get(call.toolName), call.input);
    return { toolCallId: call.toolCallId, approvalId: request.approvalId, toolName: call.toolName, input: call.input, ...(argv ? { argv } : {}) };
  });
  // A host is asked about as the request `toolName: 'network'`; its ids name the call and the destination.
  for (const { requestId, host, port, tool } of hosts) {
    pendingCalls.push({ toolCallId: requestId, approvalId: requestId, toolName: NETWORK_TOOL, input: { host, port, tool } });
  }
  const sealed = sealState(
    {
      worker: setup.worker.name,
      fingerprint: workerFingerprint(setup.worker, setup.original),
      runId: setup.runId,
      steps: stepsTaken,
      maxSteps: setup.maxSteps,
      always: setup.gate.alwaysScopes,
      pending: pendingCalls,
      usage,
      messages,
    },
    secret,
  );
  for (const request of sealed.pending) {
    // What the answer `save` would write, for a tool of a loaded worker and a reviewable input.
    const offer = request.reviewable
      ? savedRulesOf(setup.original.get(request.toolName))?.offer(request.toolName, request.input, request.argv)
      : undefined;
    if (offer) request.save = offer;
    setup.emit({ type: 'approval-asked', toolCallId: request.toolCallId, toolName: request.toolName, input: request.input, scope: request.scope });
  }
  return sealed;
}

interface Round {
  steps: StepResult<ToolSet>[];
  messages: ModelMessage[];
  usage: LanguageModelUsage;
  finishReason: string;
  text: string;
}

/** One call of the AI SDK: until the model answers, stops at approvals, or the steps run out. */
async function runRound(setup: RunSetup, messages: ModelMessage[], stepsBefore: number, steps: StepRecord[]): Promise<Round> {
  let current = stepsBefore;
  let finished = 0;
  const parameters = {
    model: setup.model,
    tools: setup.tools,
    messages,
    ...(setup.worker.instructions ? { system: setup.worker.instructions } : {}),
    // A deferred run also stops after a step in which a process asked about a host.
    stopWhen: setup.defer ? [stepCountIs(setup.maxSteps - stepsBefore), () => setup.network.hasDeferred] : stepCountIs(setup.maxSteps - stepsBefore),
    abortSignal: setup.signal,
    ...(AI_MAJOR >= 7 ? { toolApproval: callLevelApproval(setup.original, setup.gate) } : {}),
    prepareStep: ({ stepNumber }: { stepNumber: number }) => {
      current = stepsBefore + stepNumber + 1;
      setup.emit({ type: 'step-start', step: current });
      return undefined;
    },
    onStepFinish: (step: StepResult<ToolSet>) => {
      finished++;
      const record: StepRecord = {
        step: stepsBefore + finished,
        text: step.text,
        finishReason: step.finishReason,
        toolCalls: step.toolCalls.map((call) => ({ toolCallId: call.toolCallId, toolName: call.toolName, input: call.input })),
      };
      steps.push(record);
      recordRejectedCalls(setup, step);
      setup.emit({ type: 'step-end', step: record.step, text: record.text, finishReason: record.finishReason, toolCalls: record.toolCalls.length });
    },
  };
  return runContext.run(setup.context, async (): Promise<Round> => {
    if (!setup.stream) {
      const result = await generateText(parameters as Parameters<typeof generateText>[0]);
      return {
        steps: result.steps as StepResult<ToolSet>[],
        messages: responseMessages(result, result.response.messages),
        usage: result.totalUsage,
        finishReason: result.finishReason,
        text: result.text,
      };
    }
    const result = streamText({ ...parameters, onError: () => {} } as Parameters<typeof streamText>[0]);
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') setup.emit({ type: 'text-delta', step: current, text: part.text });
      else if (part.type === 'error') throw part.error;
      else if (part.type === 'abort') throw setup.signal?.reason ?? new Error('the run was aborted');
    }
    const [resultSteps, response, totalUsage, finishReason, text] = await Promise.all([
      result.steps,
      result.response,
      result.totalUsage,
      result.finishReason,
      result.text,
    ]);
    const all = (result as { responseMessages?: Promise<ModelMessage[]> }).responseMessages;
    return {
      steps: resultSteps as StepResult<ToolSet>[],
      messages: all ? await all : response.messages,
      usage: totalUsage,
      finishReason,
      text,
    };
  });
}

/**
 * ai 7 keeps only the final step in `response.messages` and offers every message the call
 * produced (including results of approved calls run before the first step) as `responseMessages`.
 */
function responseMessages(result: object, fallback: ModelMessage[]): ModelMessage[] {
  return (result as { responseMessages?: ModelMessage[] }).responseMessages ?? fallback;
}

/** Records calls the AI SDK refused before any tool saw them: unknown tools and invalid input. */
export function recordRejectedCalls(setup: RunSetup, step: StepResult<ToolSet>): void {
  for (const call of step.toolCalls) {
    const invalid = call as { invalid?: boolean; error?: unknown };
    if (!invalid.invalid) continue;
    const error = invalid.error instanceof Error ? invalid.error.message : String(invalid.error ?? 'invalid tool call');
    const decision = rejectedDecision(call.toolName, { has: (name) => Object.hasOwn(setup.tools, name) }, setup.blocked);
    setup.recorder.rejected(call.toolCallId, call.toolName, call.input, decision, error);
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

/**
 * The tool with its `execute` running through the gated-call pipeline: the AI SDK's approval
 * flow has asked already (see `answerRequests`), so the pipeline takes the gate's answer for the
 * call, records it and the outcome, and executes.
 */
function executedThroughGate(name: string, tool: AnyTool, run: CallRun): AnyTool {
  if (!tool.execute) return tool;
  return {
    ...tool,
    execute: async (input: unknown, options: Parameters<NonNullable<AnyTool['execute']>>[1]) =>
      outputOrThrow(await gatedCall({ toolName: name, tool, input, options }, run, 'ai-sdk'), name),
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
      if (!(await needsApproval(tool, input, options))) return 'approved';
      if (gate.coveredByAlways(tool, name, input)) {
        gate.noteAlways(options.toolCallId);
        return 'approved';
      }
      return 'user-approval';
    };
  }
  return approval;
}

