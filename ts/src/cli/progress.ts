import type { RunEvent } from '../worker/index.js';
import { formatToolInput } from './terminal-approval.js';

const ONE_LINE = 160;

function short(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > ONE_LINE ? `${flat.slice(0, ONE_LINE)}…` : flat;
}

/** Prints a run's progress as it happens (to stderr, so stdout keeps only the answer). */
export function progressPrinter(stream: NodeJS.WritableStream = process.stderr): (event: RunEvent) => void {
  return (event) => {
    const write = (line: string) => stream.write(event.worker ? `  [${event.worker}]${line}` : line);
    switch (event.type) {
      case 'step-start':
        write(`· step ${event.step}\n`);
        break;
      case 'tool-call':
        write(`  → ${event.toolName} ${short(event.input)} [${event.decision}]\n`);
        break;
      case 'tool-result':
        write(`  ✓ ${event.toolName} ${Math.round(event.durationMs)} ms\n`);
        break;
      case 'tool-error':
        write(`  ✗ ${event.toolName} ${Math.round(event.durationMs)} ms: ${event.errorCode ? `${event.errorCode}: ` : ''}${short(event.error)}\n`);
        break;
      case 'approval-answered':
        if (event.source !== 'handler') {
          write(`  ${event.decision === 'denied' ? '✗' : '✓'} ${event.toolName} ${event.decision} (${event.source})\n`);
        } else if (event.decision === 'denied') {
          write(`  ✗ ${event.toolName} denied${event.reason ? `: ${event.reason}` : ''}\n`);
        }
        break;
      case 'error':
        write(`  ! ${short(event.error instanceof Error ? event.error.message : event.error)}\n`);
        break;
      case 'approval-asked':
      case 'step-end':
        break;
    }
  };
}

export { formatToolInput };
