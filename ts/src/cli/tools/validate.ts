import { problems, shown, specJson, table, writeJson, writeText } from './format.js';
import type { Flags } from './options.js';
import { registryFor, searched } from './registry.js';

/** `toolgate tools validate [dir]`: checks every tool; exit 1 on a problem. */
export async function validate(flags: Flags, [dir]: string[]): Promise<number> {
  const dirs = dir !== undefined ? [dir] : undefined;
  const discovery = await registryFor(flags, dirs, 'refresh').refresh();
  const failures = discovery.diagnostics.filter((d) => d.kind !== 'shadowed');
  const ok = failures.length === 0;
  if (flags.json) {
    writeJson({ valid: ok, directories: searched(flags, dirs), tools: discovery.tools.map(specJson), diagnostics: discovery.diagnostics });
    return ok ? 0 : 1;
  }
  const rows = discovery.tools.map((spec) => ['ok', spec.name, spec.format, shown(spec.source)]);
  if (rows.length > 0) writeText(`${table(rows)}\n`);
  writeText(problems(discovery.diagnostics));
  const where = searched(flags, dirs).map(shown).join(', ');
  writeText(
    `\n${discovery.tools.length} valid tool(s), ${failures.length} problem(s) in ${where}${ok ? '' : ' — fix the problems above'}\n`,
  );
  return ok ? 0 : 1;
}
