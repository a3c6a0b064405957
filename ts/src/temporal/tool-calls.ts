import { approvalOf } from '../approval/approval.js';
import { ToolgateError } from '../native/errors.js';
import { gatedCall, needsApproval, type CallRun, type GatedCallOutcome } from '../run/gated-call.js';
import { Recorder } from '../run/records.js';
import type { RunEvent } from '../run/types.js';
import type { LostCallInput, ToolCallInput, ToolCallResult } from './contract.js';
import type { HostedWorker } from './hosted-workers.js';
import { failedPart, toolResultPart } from './tool-output.js';

/**
 * One tool call of a durable run, through the gated-call pipeline `runWorker` uses
 * (`run/gated-call.ts`, entered as the agent loop enters it): the workflow carries the answer of
 * a call that asked, the pipeline records the call (or its denial) and runs it — in the kernel
 * sandbox the worker file gives the tool, with the path and command rules of its policy.
 */
export async function runToolCall(hosted: HostedWorker, call: ToolCallInput, run: CallRun, signal: AbortSignal): Promise<ToolCallResult> {
  const tool = hosted.tools.get(call.toolName);
  if (!tool || hosted.blocked.has(call.toolName)) {
    throw new ToolgateError('TOOL_NOT_FOUND', `worker '${hosted.worker.name}' offers no tool '${call.toolName}'`);
  }
  const { gate, recorder } = run;
  let outcome: GatedCallOutcome;
  if (call.answer && !call.answer.approved) {
    recorder.denied(call.toolCallId, call.toolName, call.input, call.answer);
    outcome = { status: 'denied', answer: call.answer };
  } else {
    if (call.answer) gate.remember(call.toolCallId, call.answer, call.input);
    else if (approvalOf(tool)?.decision === 'ask' && !approvalOf(tool)?.dynamic && (await needsApproval(tool, call.input, { toolCallId: call.toolCallId, messages: [] }))) {
      // The model step said this call needs no approval; a tool that always asks (unless a
      // saved rule answers for it) never runs unanswered.
      throw new ToolgateError('INTERNAL_ERROR', `tool '${call.toolName}' needs approval and the call came without an answer; it was not run`);
    }
    outcome = await gatedCall(
      { toolName: call.toolName, tool, input: call.input, options: { toolCallId: call.toolCallId, messages: [], abortSignal: signal } },
      run,
      'ai-sdk',
    );
  }
  const record = recorder.records.at(-1);
  if (!record) throw new ToolgateError('INTERNAL_ERROR', `call '${call.toolCallId}' left no record`);
  return { result: await toolResultPart(call, tool, outcome), record };
}

/**
 * Records a call whose activity was lost (its worker host died, or it timed out): it may have
 * run, so the model is told its outcome is unknown, and it is not run again. A call of a tool
 * that only reads was retried; it is reported as failed.
 */
export function recordLostCall(hosted: HostedWorker, call: LostCallInput, emit: (event: RunEvent) => void): ToolCallResult {
  const tool = hosted.tools.get(call.toolName);
  const readOnly = hosted.readOnlyTools.includes(call.toolName);
  const message = readOnly
    ? `the call did not complete: ${call.reason}`
    : `the outcome of this call is unknown: ${call.reason}. It may or may not have taken effect, and toolgate does not run it again; check its effect before you repeat it`;
  const recorder = new Recorder(emit);
  const record = recorder.started(call.toolCallId, call.toolName, call.input, call.answer, tool ? approvalOf(tool) : undefined);
  recorder.failed(record, new ToolgateError('TOOL_FAILED', message), 0);
  return { result: failedPart(call, message), record };
}
