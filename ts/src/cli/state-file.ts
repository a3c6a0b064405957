import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { ToolgateError } from '../native/errors.js';
import type { ApprovalAnswer, ApprovalAnswers, PendingApproval } from '../worker/index.js';
import { terminalText } from '../native/terminal-text.js';

/** What `toolgate run --defer-approvals --state-file F` writes, and `toolgate resume F` reads. */
export interface StateFile {
  format: 'toolgate-cli-state';
  /** The worker file, absolute. */
  worker: string;
  workDir?: string;
  model: string;
  baseUrl?: string;
  runId: string;
  pending: PendingApproval[];
  /** The signed run state (only toolgate reads it; any change makes it invalid). */
  state: string;
}

export const SECRET_VARIABLE = 'TOOLGATE_STATE_SECRET';

/** The secret that signs and checks CLI run states. */
export function stateSecret(): string {
  const secret = process.env[SECRET_VARIABLE];
  if (!secret) {
    throw new ToolgateError(
      'CONFIG_INVALID',
      `deferred approvals are signed with ${SECRET_VARIABLE}; set it to at least 32 secret bytes, the same for 'run' and 'resume' (e.g. export ${SECRET_VARIABLE}=$(openssl rand -hex 32))`,
    );
  }
  return secret;
}

/** Writes the file atomically (a temporary file renamed over it), readable by the user only. */
export function writeStateFile(path: string, content: StateFile): void {
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, path);
}

export function readStateFile(path: string): StateFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ToolgateError('STATE_INVALID', `'${path}' cannot be read as a run state file: ${(error as Error).message}; pass the file 'toolgate run --defer-approvals --state-file' wrote`);
  }
  const file = parsed as Partial<StateFile> | null;
  if (file?.format !== 'toolgate-cli-state' || typeof file.worker !== 'string' || typeof file.state !== 'string' || typeof file.model !== 'string') {
    throw new ToolgateError('STATE_INVALID', `'${path}' is not a run state file written by 'toolgate run --defer-approvals --state-file'`);
  }
  return file as StateFile;
}

/** Reads one `id=decision` answer (`deny:<reason>` gives the model a reason). */
function parseAnswer(item: string): [string, ApprovalAnswer] {
  const match = /^\s*([^=\s]+)\s*=\s*(approve|always|save|deny)(?::(.*))?$/s.exec(item);
  if (!match) {
    throw new ToolgateError(
      'INVALID_INPUT',
      `'${terminalText(item)}' is not an answer; write <id>=approve, <id>=always, <id>=save or <id>=deny[:reason] (ids are listed by 'toolgate run' and in the state file)`,
    );
  }
  const [, id = '', decision = 'deny', reason] = match;
  if (decision !== 'deny' && reason !== undefined) {
    throw new ToolgateError('INVALID_INPUT', `'${terminalText(item)}': only a denial takes a reason (<id>=deny:<reason>)`);
  }
  if (decision === 'deny') return [id, reason?.trim() ? { decision: 'deny', reason: reason.trim() } : 'deny'];
  return [id, decision === 'always' ? 'always' : decision === 'save' ? 'save' : 'approve'];
}

/**
 * Reads `--answers` values: `id=approve,id2=deny:not now` (a comma starts a new answer only
 * before another `id=`), or a JSON object `{ "<id>": "approve" | { "decision": … } }`.
 */
export function parseAnswers(values: readonly string[]): ApprovalAnswers {
  const answers: ApprovalAnswers = {};
  for (const value of values) {
    if (value.trim().startsWith('{')) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(value);
      } catch (error) {
        throw new ToolgateError('INVALID_INPUT', `--answers is not valid JSON (${(error as Error).message})`);
      }
      Object.assign(answers, parsed);
      continue;
    }
    for (const item of value.split(/,(?=\s*[^,=\s]+\s*=\s*(?:approve|always|save|deny)\b)/)) {
      if (!item.trim()) continue;
      const [id, answer] = parseAnswer(item);
      if (id in answers) throw new ToolgateError('INVALID_INPUT', `request '${id}' is answered twice; give one answer per id`);
      answers[id] = answer;
    }
  }
  return answers;
}

/**
 * The pending requests as the CLI lists them: each tool with its whole input as the core renders
 * it for review (nothing hidden; an input too long to show says so with its size and SHA-256
 * and takes no `always` or `save`), what `always` and `save` would cover, and how to answer.
 */
export function describePending(pending: readonly PendingApproval[], stateFile: string): string {
  const lines = [`approval required; the run is saved in ${terminalText(stateFile)}:`];
  for (const request of pending) {
    lines.push(`  ${terminalText(request.id)}  ${terminalText(request.toolName)}`);
    lines.push(...terminalText(request.review, { layout: true }).split('\n').map((line) => `      ${line}`));
    if (request.reviewable) {
      lines.push(`    always covers ${terminalText(request.scope.description)}`);
      if (request.save) lines.push(`    save writes to ${terminalText(request.save.file)}: ${terminalText(request.save.rule)}`);
    } else {
      lines.push(`    too long to show whole (${request.inputBytes} bytes, sha256 ${request.inputSha256}): answer approve or deny only`);
    }
  }
  const example = pending.map((request) => `${request.id}=approve`).join(',');
  const choices = pending.some((request) => request.save) ? 'approve | always | save | deny[:reason]' : 'approve | always | deny[:reason]';
  lines.push(`answer with: toolgate resume ${terminalText(stateFile)} --answers ${terminalText(example)}   (${choices})`);
  return `${lines.join('\n')}\n`;
}
