import { hasToolCall, stepCountIs, wrapLanguageModel, type LanguageModel, type StepResult, type StopCondition, type ToolSet } from 'ai';
import { native } from '../native/binding.js';
import { callNative, ToolgateError } from '../native/errors.js';
import { gatedCall, outputOrThrow } from '../run/gated-call.js';
import { answerAsText } from './answer-as-text.js';
import { ASK_QUESTION, CONVERSE, RESERVED_TOOL_NAMES, TASK_COMPLETION } from './loop-tools.js';
import { prepareRun, recordRejectedCalls, type RunSetup } from './run-loop.js';
import { runContext } from './run-context.js';
import type { ApprovalHandler, RunEvent, RunnableWorker } from './types.js';

type AnyTool = ToolSet[string];

export interface AgentSettingsOptions {
  /** Overrides the worker's model. */
  model?: string | LanguageModel;
  /** Asked for every call that needs approval; without it every such call is denied (fail closed). */
  onApproval?: ApprovalHandler;
  /** Every event of the agent's runs: calls, approvals, `call-recorded` with each decision. */
  onEvent?: (event: RunEvent) => void;
  /** Model steps per `generate` / `stream` (default: the worker's `max_steps`, else 20). */
  maxSteps?: number;
}

/** Settings for the AI SDK's `ToolLoopAgent`: `new ToolLoopAgent(await toAgentSettings(worker))`. */
export interface WorkerAgentSettings {
  model: LanguageModel;
  instructions?: string;
  tools: ToolSet;
  stopWhen: StopCondition<ToolSet>[];
  onStepFinish: (step: StepResult<ToolSet>) => void;
}

/**
 * Settings for the AI SDK's `ToolLoopAgent` that run a worker's gated tools and stop where the
 * worker's loop stops (its step limit, `task_completion`, `ask_question`, `converse`). Approvals still go
 * through toolgate: a call that needs one asks `onApproval` (with "always" scopes, as in
 * `runWorker`) before it runs, inside the tool, so the agent needs no approval round trips; a
 * denied call fails with `APPROVAL_DENIED` and the reason, which the model reads. Blocked tools
 * are not offered. Every call the model makes is reported to `onEvent` as `call-recorded`. The
 * answer of a run that ends with `task_completion` (or `ask_question`, `converse`) is the text of
 * its last step: `result.text` of `agent.generate()` is the answer, as `runWorker`'s `text` is
 * (`agent.stream()` streams it as text after what the model wrote in that step).
 */
export async function toAgentSettings(worker: RunnableWorker, options: AgentSettingsOptions = {}): Promise<WorkerAgentSettings> {
  const maxSteps = callNative(() => native.checkAgentSettingsOptions(options));
  if (options.onApproval !== undefined && typeof options.onApproval !== 'function') {
    throw new ToolgateError('CONFIG_INVALID', 'toAgentSettings: onApproval is a function (the agent asks while it runs; nothing can be deferred)');
  }
  const setup = await prepareRun(worker, options, { maxSteps: maxSteps ?? undefined, stream: false });
  const tools: ToolSet = {};
  for (const [name, tool] of Object.entries(setup.tools)) {
    tools[name] = RESERVED_TOOL_NAMES.includes(name) ? tool : askingInside(name, tool, setup);
  }
  return {
    // The run's answer (task_completion's result, the question, the reply) is the text of the
    // step that ends it, so `result.text` is the answer, as `runWorker`'s `text` is.
    model: wrapLanguageModel({ model: setup.model as Parameters<typeof wrapLanguageModel>[0]['model'], middleware: answerAsText() }),
    ...(worker.instructions ? { instructions: worker.instructions } : {}),
    tools,
    stopWhen: [stepCountIs(setup.maxSteps), hasToolCall(TASK_COMPLETION), hasToolCall(ASK_QUESTION), hasToolCall(CONVERSE)],
    onStepFinish: (step) => recordRejectedCalls(setup, step),
  };
}

/**
 * The tool with its approval asked inside `execute`: the SDK sees a tool that needs no
 * approval; the gated-call pipeline asks the tool's own `needsApproval` and the gate (or an
 * "always" covers the call), records the call and runs it at most once.
 */
function askingInside(name: string, tool: AnyTool, setup: RunSetup): AnyTool {
  const original = setup.original.get(name);
  if (!original?.execute || !tool.execute) return tool;
  return {
    ...tool,
    needsApproval: false,
    execute: (input: unknown, options: Parameters<NonNullable<AnyTool['execute']>>[1]) =>
      // Workers this tool calls find their caller's gate and model here.
      runContext.run(setup.context, async () => outputOrThrow(await gatedCall({ toolName: name, tool: original, input, options }, setup, 'inline'), name)),
  } as AnyTool;
}
