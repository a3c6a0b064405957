/**
 * A CLI command, loaded only when it is run so that `toolgate --help` stays fast. A command
 * with several forms has one entry per form (same name), so that each gets a help line.
 */
export interface CliCommand {
  name: string;
  usage: string;
  summary: string;
  load: () => Promise<{ run: (argv: readonly string[]) => Promise<number> }>;
}

export const COMMANDS: readonly CliCommand[] = [
  {
    name: 'run',
    usage: 'run <worker> [input]',
    summary: 'Run a worker as an agent, asking for approvals in the terminal',
    load: () => import('./run.js'),
  },
  {
    name: 'resume',
    usage: 'resume <state-file> --answers <id>=<answer>',
    summary: 'Answer the approvals a deferred run waits for, and continue it',
    load: () => import('./resume.js'),
  },
  {
    name: 'audit',
    usage: 'audit <file>',
    summary: 'Summarise an audit log: calls per tool, denials, refusals, slowest calls',
    load: () => import('./audit.js'),
  },
  {
    name: 'check',
    usage: 'check <worker>',
    summary: 'Show what a worker and every worker it may call may do (tools, decisions, sandboxes, rules)',
    load: () => import('./check.js'),
  },
  {
    name: 'check',
    usage: 'check --rules <file> <command>',
    summary: 'Explain how shell rules decide a command (decision, rule, refusing layer)',
    load: () => import('./check.js'),
  },
  {
    name: 'check',
    usage: 'check --sandbox [worker]',
    summary: 'Show what this kernel supports and the effective sandbox policy',
    load: () => import('./check.js'),
  },
  {
    name: 'check',
    usage: 'check --path <file> <worker>',
    summary: "Explain how the file toolsets' path rules decide a path, tool by tool",
    load: () => import('./check.js'),
  },
  {
    name: 'sandbox',
    usage: 'sandbox [options] -- <program> [args]',
    summary: 'Run any program under the kernel sandbox (exit code passed through)',
    load: () => import('./sandbox.js'),
  },
  {
    name: 'mcp',
    usage: 'mcp serve <worker> [--http PORT]',
    summary: "Serve a worker's gated tools to MCP clients (stdio or Streamable HTTP)",
    load: () => import('./mcp.js'),
  },
  {
    name: 'tools',
    usage: 'tools <list|describe|call|validate|new>',
    summary: 'List, inspect, run, check and create executable tools',
    load: () => import('./tools/index.js'),
  },
];
