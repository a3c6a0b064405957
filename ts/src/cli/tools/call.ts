import { ToolgateError } from '../../native/errors.js';
import { alwaysScopeFor } from '../../approval/always.js';
import { reviewOf } from '../../run/approval-gate.js';
import { terminalApproval } from '../terminal-approval.js';
import { terminalText } from '../../native/terminal-text.js';
import { UsageError } from './errors.js';
import { writeJson, writeText } from './format.js';
import type { Flags } from './options.js';
import { registryFor } from './registry.js';

function parseInput(text: string | undefined): unknown {
  if (text === undefined) return {};
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ToolgateError('INVALID_INPUT', `the input is not valid JSON (${(error as Error).message}); pass one JSON object, e.g. '{"city": "Oslo"}'`);
  }
}

function parseTimeout(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new UsageError(`--timeout must be a positive number of seconds, got '${text}'`);
  return seconds * 1000;
}

/**
 * Asks on the terminal with the prompt `toolgate run` uses (approve / deny, single keys; no
 * "always" for a single call). Ctrl-C denies and is reported as an interruption.
 */
async function askApproval(name: string, input: unknown): Promise<{ approved: boolean; interrupted: boolean; reason?: string }> {
  let interrupted = false;
  const prompt = terminalApproval({ mode: 'ask', always: false, onInterrupt: () => (interrupted = true) });
  try {
    const request = { toolName: name, input, toolCallId: 'toolgate-tools-call', scope: alwaysScopeFor(name, input, undefined), ...reviewOf(input) };
    const answer = await prompt(request, {});
    const decision = typeof answer === 'string' ? answer : answer.decision;
    const reason = typeof answer === 'object' && 'reason' in answer ? answer.reason : undefined;
    return { approved: decision === 'approve', interrupted, ...(reason ? { reason } : {}) };
  } finally {
    prompt.close();
  }
}

/** `toolgate tools call <name> [json]`: runs a tool, asking for approval first. */
export async function call(flags: Flags, [name, json]: string[]): Promise<number> {
  const input = parseInput(json);
  const timeoutMs = parseTimeout(flags.timeout);
  const registry = registryFor(flags, undefined, undefined, timeoutMs);
  const discovery = await registry.refresh();
  const relevant = discovery.diagnostics.filter((d) => d.kind !== 'shadowed');
  const prepared = await registry.prepare(name as string, input); // TOOL_NOT_FOUND / INVALID_INPUT before any question
  if (!flags.yes) {
    if (!process.stdin.isTTY) {
      prepared.kill();
      throw new ToolgateError(
        'APPROVAL_DENIED',
        `tool '${name}' needs approval and there is no terminal to ask; pass --yes to run it without asking`,
      );
    }
    const answer = await askApproval(name as string, input);
    if (!answer.approved) {
      prepared.kill();
      if (answer.interrupted) {
        process.stderr.write(`toolgate tools call: interrupted (Ctrl-C): tool '${terminalText(name ?? '')}' was not run\n`);
        return 130;
      }
      throw new ToolgateError('APPROVAL_DENIED', `tool '${name}' was not approved${answer.reason ? ` (${answer.reason})` : ''}; nothing ran`);
    }
  }
  // Ctrl-C reaches only our process group; the tool runs in its own, so kill it explicitly.
  const controller = new AbortController();
  const onInterrupt = () => controller.abort(new ToolgateError('TOOL_FAILED', `tool '${name}' was interrupted`));
  process.once('SIGINT', onInterrupt);
  try {
    const output = await prepared.start(controller.signal);
    if (flags.json) {
      writeJson({ result: output.result, durationMs: output.durationMs, truncated: output.truncated, ...(output.limit ? { limit: output.limit } : {}) });
    } else {
      const text = typeof output.result === 'string' ? output.result : JSON.stringify(output.result, null, 2);
      writeText(`${text}\n`);
      if (output.limit) {
        process.stderr.write(`toolgate tools call: the run ran into its sandbox limit: ${output.limit}; the result may be incomplete\n`);
      }
      if (relevant.length > 0 && process.stderr.isTTY) {
        process.stderr.write(`(${relevant.length} other tool problem(s); see 'toolgate tools list')\n`);
      }
    }
    return 0;
  } finally {
    process.removeListener('SIGINT', onInterrupt);
  }
}
