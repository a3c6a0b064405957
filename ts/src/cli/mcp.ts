import { createReadStream, createWriteStream, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_MCP_IDLE_TIMEOUT_MS, serveMcp } from '../mcp/serve.js';
import { ToolgateError } from '../native/errors.js';
import { flagAnswer } from '../run/approval-gate.js';
import { loadWorker } from '../worker/load-worker.js';
import type { ApprovalHandler } from '../worker/types.js';
import { terminalText } from '../native/terminal-text.js';
import { terminalApproval } from './terminal-approval.js';

export const HELP = `Usage: toolgate mcp serve <worker-file> [options]

Serves the worker's tools to MCP clients (Claude Desktop, Claude Code, Cursor, the AI SDK…),
gated as in \`toolgate run\`: blocked tools are not listed, preApproved tools run, and a tool
that asks is approved through MCP elicitation when the client supports it, else in this
terminal (/dev/tty) when there is one, else denied.

Options:
  --http <port>        Serve Streamable HTTP on this port (0 picks one) instead of stdio
  --host <host>        Address to bind with --http (default 127.0.0.1)
  --token-file <file>  Read the bearer token clients must send from this file (or set
                       TOOLGATE_MCP_TOKEN). Without either, one is generated and written to a
                       file only you can read; its path is printed. Every HTTP request needs it,
                       on loopback too. (Never on the command line: /proc shows it to everyone.)
  --idle-timeout <s>   Close HTTP sessions idle for this many seconds (default 600)
  --yes                Approve every call that asks (blocked tools stay blocked; recorded as
                       decided by the flag)
  --log <file>         Append every tool call to this JSON Lines audit log, the format of
                       'toolgate run --audit' (default: the worker file's audit.file)
  --work-dir <dir>     Work directory (default: the worker's sandbox root, else its directory)
  -h, --help           Show this help
`;

/** Approvals in the controlling terminal, read and written through /dev/tty (stdio is the protocol). */
function ttyApproval(): (ApprovalHandler & { close(): void }) | undefined {
  let fd: number;
  try {
    fd = openSync('/dev/tty', 'r+');
  } catch {
    return undefined;
  }
  const input = createReadStream('', { fd, autoClose: false });
  const output = createWriteStream('', { fd, autoClose: false });
  const handler = terminalApproval({ mode: 'ask', input, output });
  return Object.assign(handler, {
    close: () => {
      handler.close();
      input.destroy();
      output.destroy();
    },
  });
}

/** `toolgate mcp serve <worker>`. */
export async function run(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === '-h' || sub === '--help') {
    process.stdout.write(HELP);
    return 0;
  }
  if (sub !== 'serve') {
    process.stderr.write(HELP);
    return 2;
  }
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      http: { type: 'string' },
      host: { type: 'string' },
      token: { type: 'string' },
      'token-file': { type: 'string' },
      'idle-timeout': { type: 'string' },
      yes: { type: 'boolean', default: false },
      log: { type: 'string' },
      'work-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const [workerPath, ...extra] = positionals;
  if (!workerPath || extra.length > 0) {
    process.stderr.write(HELP);
    return 2;
  }
  const port = values.http === undefined ? undefined : Number(values.http);
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) {
    throw new ToolgateError('INVALID_INPUT', `--http takes a port number from 0 to 65535, got '${values.http}'`);
  }
  if (values.token !== undefined) {
    throw new ToolgateError(
      'INVALID_INPUT',
      '--token is refused: a token on the command line is readable by every local user (/proc/<pid>/cmdline, ps). Put it in TOOLGATE_MCP_TOKEN or in a file only you can read and pass --token-file <file>, or leave it out to have one generated',
    );
  }
  if (port === undefined && (values.host || values['token-file'] || values['idle-timeout'])) {
    throw new ToolgateError('INVALID_INPUT', '--host, --token-file and --idle-timeout are for --http; stdio serving has no network listener');
  }
  const idleSeconds = values['idle-timeout'] === undefined ? DEFAULT_MCP_IDLE_TIMEOUT_MS / 1000 : Number(values['idle-timeout']);
  if (!Number.isInteger(idleSeconds) || idleSeconds < 1 || idleSeconds > 86_400) {
    throw new ToolgateError('INVALID_INPUT', `--idle-timeout takes a whole number of seconds from 1 to 86400, got '${values['idle-timeout']}'`);
  }
  const given = port === undefined ? undefined : givenToken(values['token-file']);
  const worker = await loadWorker(workerPath, values['work-dir'] ? { workDir: values['work-dir'] } : {});
  for (const warning of worker.warnings) process.stderr.write(`toolgate mcp serve: warning: ${terminalText(warning)}\n`);
  const tty = values.yes ? undefined : ttyApproval();
  // A flag is not a person: calls it approves are recorded as decided by --yes.
  const onApproval: ApprovalHandler | undefined = values.yes ? () => flagAnswer({ decision: 'approve' }, '--yes') : tty;
  let serving;
  let tokenDir: string | undefined;
  try {
    serving = await serveMcp(worker, {
      transport:
        port === undefined
          ? 'stdio'
          : { http: { port, idleTimeoutMs: idleSeconds * 1000, ...(values.host ? { host: values.host } : {}), ...(given ? { token: given } : {}) } },
      ...(onApproval ? { onApproval } : {}),
      ...(values.log ? { log: values.log } : {}),
      onEvent: (event) => {
        if (event.type === 'rule-saved') {
          process.stderr.write(
            `toolgate mcp serve: saved ${terminalText(event.rule.rule)} in ${terminalText(event.rule.file)}:${event.rule.line} (${terminalText(event.rule.saved)})\n`,
          );
        } else if (event.type === 'rule-not-saved') {
          process.stderr.write(`toolgate mcp serve: the rule was not saved (the call is approved once): ${terminalText(event.error)}\n`);
        }
      },
    });
    if (serving.token && !given) tokenDir = writeTokenFile(serving.token);
  } catch (error) {
    tty?.close();
    await serving?.close();
    await worker.close();
    throw error;
  }
  if (serving.url) {
    process.stderr.write(`toolgate mcp serve: ${terminalText(worker.name)} on ${serving.url}\n`);
    process.stderr.write(
      tokenDir
        ? `toolgate mcp serve: clients send Authorization: Bearer <the token in ${join(tokenDir, 'token')}> (readable by you only; removed when serving ends)\n`
        : 'toolgate mcp serve: clients send Authorization: Bearer <the token you gave>\n',
    );
  }
  // Serve until stdin ends (stdio: the client went away) or a signal arrives.
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
    if (port === undefined) {
      process.stdin.once('end', resolve);
      process.stdin.once('close', resolve);
    }
  });
  await serving.close();
  if (tokenDir) rmSync(tokenDir, { recursive: true, force: true });
  tty?.close();
  await worker.close();
  return 0;
}

/** The bearer token from --token-file or TOOLGATE_MCP_TOKEN, if one is given. */
function givenToken(file: string | undefined): string | undefined {
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new ToolgateError('CONFIG_INVALID', `--token-file '${terminalText(file)}' cannot be read: ${(error as Error).message}`);
    }
    if ((statSync(file).mode & 0o077) !== 0) {
      process.stderr.write(`toolgate mcp serve: warning: ${terminalText(file)} is readable by other users; chmod 600 it\n`);
    }
    const token = text.trim();
    if (!token) throw new ToolgateError('CONFIG_INVALID', `--token-file '${terminalText(file)}' is empty; write the token in it`);
    return token;
  }
  const fromEnvironment = process.env.TOOLGATE_MCP_TOKEN;
  return fromEnvironment ? fromEnvironment : undefined;
}

/**
 * Writes a generated token to `token` in a new private folder (mode 0700, the file 0600, made
 * with a random name so no other user can place a file there first). Returns the folder.
 */
function writeTokenFile(token: string): string {
  const dir = mkdtempSync(join(process.env.XDG_RUNTIME_DIR || tmpdir(), 'toolgate-mcp-'));
  writeFileSync(join(dir, 'token'), `${token}\n`, { mode: 0o600, flag: 'wx' });
  return dir;
}
