/** A CLI command, loaded only when it is run so that `toolgate --help` stays fast. */
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
    usage: 'check --rules <file> <command>',
    summary: 'Explain how shell rules decide a command (decision, rule, refusing layer)',
    load: () => import('./check.js'),
  },
  {
    name: 'tools',
    usage: 'tools <list|describe|call|validate|new>',
    summary: 'List, inspect, run, check and create executable tools',
    load: () => import('./tools/index.js'),
  },
];
