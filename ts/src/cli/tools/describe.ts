import { ToolgateError } from '../../native/errors.js';
import { LIMITS } from '../../native/constants.js';
import { shown, specJson, table, writeJson, writeText } from './format.js';
import type { Flags } from './options.js';
import { registryFor } from './registry.js';

/** `toolgate tools describe <name>`: a tool's description, input schema and source. */
export async function describe(flags: Flags, [name]: string[]): Promise<number> {
  const registry = registryFor(flags);
  await registry.refresh();
  const spec = registry.tools().find((candidate) => candidate.name === name);
  if (!spec) {
    const known = registry.tools().map((t) => t.name);
    throw new ToolgateError(
      'TOOL_NOT_FOUND',
      `no executable tool is named '${name}' (${known.length ? `known tools: ${known.join(', ')}` : 'no tools were discovered'}); run 'toolgate tools list'`,
    );
  }
  if (flags.json) {
    writeJson(specJson(spec));
    return 0;
  }
  const lines = [
    `${spec.name} (${spec.format} tool)`,
    '',
    spec.description,
    '',
    `model name:  ${LIMITS.executableToolPrefix}${spec.name}`,
    `source:      ${shown(spec.source)}`,
    `runs:        ${shown(spec.program)}`,
  ];
  if (spec.version) lines.push(`version:     ${spec.version}`);
  if (spec.usage) lines.push(`usage:       ${spec.usage}`);
  if (spec.parameters) {
    lines.push('', 'parameters (passed as --name=value, in this order):');
    const rows = [['  NAME', 'TYPE', 'REQUIRED', 'DESCRIPTION']];
    for (const p of spec.parameters) rows.push([`  ${p.name}`, p.type, p.required ? 'yes' : 'no', p.description ?? '']);
    lines.push(table(rows));
  }
  lines.push('', 'input schema:', JSON.stringify(spec.inputSchema, null, 2).replace(/^/gm, '  '));
  writeText(`${lines.join('\n')}\n`);
  return 0;
}
