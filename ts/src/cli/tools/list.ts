import { firstLine, problems, shown, specJson, table, writeJson, writeText } from './format.js';
import type { Flags } from './options.js';
import { registryFor, searched } from './registry.js';

/** `toolgate tools list`: the tools and every problem found. */
export async function list(flags: Flags): Promise<number> {
  const discovery = await registryFor(flags).refresh();
  if (flags.json) {
    writeJson({ directories: searched(flags), tools: discovery.tools.map(specJson), diagnostics: discovery.diagnostics, stats: discovery.stats });
    return 0;
  }
  if (discovery.tools.length === 0) {
    writeText(`No executable tools found in: ${searched(flags).map(shown).join(', ')}\nCreate one with: toolgate tools new <name>\n`);
  } else {
    const rows = [['NAME', 'FORMAT', 'DESCRIPTION', 'SOURCE']];
    for (const spec of discovery.tools) rows.push([firstLine(spec.name, 64), spec.format, firstLine(spec.description, 60), shown(spec.source)]);
    writeText(`${table(rows)}\n`);
  }
  writeText(problems(discovery.diagnostics));
  return 0;
}
