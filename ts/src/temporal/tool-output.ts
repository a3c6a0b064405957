import type { ToolSet } from 'ai';
import type { GatedCallOutcome } from '../run/gated-call.js';
import type { ToolResultPart } from './contract.js';

type AnyTool = ToolSet[string];

function errorMessage(error: unknown): string {
  if (error === null || error === undefined) return 'unknown error';
  if (typeof error === 'string') return error;
  if (error instanceof Error) return error.message;
  return JSON.stringify(error) ?? String(error);
}

/**
 * The tool-result part the model reads for a call, written as the AI SDK writes it when it runs
 * the call itself (`runWorker`): the tool's `toModelOutput`, else text for a string and JSON for
 * anything else; a failure as its message (`error-text`); a denial as `execution-denied` with
 * the reason.
 */
export async function toolResultPart(
  call: { toolCallId: string; toolName: string; input: unknown },
  tool: AnyTool | undefined,
  outcome: GatedCallOutcome,
): Promise<ToolResultPart> {
  const base = { type: 'tool-result' as const, toolCallId: call.toolCallId, toolName: call.toolName };
  if (outcome.status === 'denied') return { ...base, output: { type: 'execution-denied', reason: outcome.answer.reason } };
  if (outcome.status === 'failed') return failedPart(call, errorMessage(outcome.error));
  const { output } = outcome;
  if (tool?.toModelOutput) {
    return { ...base, output: await tool.toModelOutput({ toolCallId: call.toolCallId, input: call.input as never, output: output as never }) };
  }
  return { ...base, output: typeof output === 'string' ? { type: 'text', value: output } : { type: 'json', value: output ?? null } };
}

/** A failure the model reads (`error-text`), as the AI SDK writes a failed call. */
export function failedPart(call: { toolCallId: string; toolName: string }, message: string): ToolResultPart {
  return { type: 'tool-result', toolCallId: call.toolCallId, toolName: call.toolName, output: { type: 'error-text', value: message } };
}
