import { openSync, createReadStream, createWriteStream } from 'node:fs';
import { parseArgs } from 'node:util';
import { serveMcp } from '../mcp/serve.js';
import { ToolgateError } from '../native/errors.js';
import { loadWorker } from '../worker/load-worker.js';
import type { ApprovalHandler } from '../worker/types.js';
import { terminalApproval } from './terminal-approval.js';

export const HELP = `Usage: toolgate mcp serve <worker-file> [options]

Serves the worker's tools to MCP clients (Claude Desktop, Claude Code, Cursor, the AI SDK…),
gated as in \`toolgate run\`: blocked tools are not listed, preApproved tools run, and a tool
that asks is approved through MCP elicitation when the client supports it, else in this
terminal (/dev/tty) when there is one, else denied.

Options:
  --http <port>        Serve Streamable HTTP on this port (0 picks one) instead of stdio
  --host <host>        Address to bind with --http (default 127.0.0.1)
  --token <token>      Bearer token clients must send (or TOOLGATE_MCP_TOKEN); required when
                       --host is not loopback
  --yes                Approve every call that asks (blocked tools stay blocked)
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
  if (port === undefined && (values.host || values.token)) {
    throw new ToolgateError('INVALID_INPUT', '--host and --token are for --http; stdio serving has no network listener');
  }
  const worker = await loadWorker(workerPath, values['work-dir'] ? { workDir: values['work-dir'] } : {});
  for (const warning of worker.warnings) process.stderr.write(`toolgate mcp serve: warning: ${warning}\n`);
  const tty = values.yes ? undefined : ttyApproval();
  const onApproval: ApprovalHandler | undefined = values.yes ? () => 'approve' : tty;
  const token = values.token ?? process.env.TOOLGATE_MCP_TOKEN;
  let serving;
  try {
    serving = await serveMcp(worker, {
      transport: port === undefined ? 'stdio' : { http: { port, ...(values.host ? { host: values.host } : {}), ...(token ? { token } : {}) } },
      ...(onApproval ? { onApproval } : {}),
      ...(values.log ? { log: values.log } : {}),
    });
  } catch (error) {
    tty?.close();
    await worker.close();
    throw error;
  }
  if (serving.url) process.stderr.write(`toolgate mcp serve: ${worker.name} on ${serving.url}\n`);
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
  tty?.close();
  await worker.close();
  return 0;
}
