import { resolve } from 'node:path';
import { native } from '../../native/binding.js';
import { LIMITS } from '../../native/constants.js';
import { callNative } from '../../native/errors.js';
import { shown, writeJson, writeText } from './format.js';
import type { Flags } from './options.js';
import { workDirOf } from './registry.js';

/** `toolgate tools new <name>`: writes a working example tool. */
export function scaffold(flags: Flags, [name = '']: string[]): number {
  const language = flags.lang ?? 'python';
  const dir = resolve(flags.dir?.[0] ?? resolve(workDirOf(flags), LIMITS.defaultToolDirectory));
  const path = callNative(() => native.scaffoldTool(dir, name, language, flags.manifest ?? false));
  const format = flags.manifest ? 'manifest' : 'protocol';
  if (flags.json) {
    writeJson({ name, path, format, language });
    return 0;
  }
  const example = language === 'bash' && !flags.manifest ? '{"text": "hello"}' : '{"name": "Ada"}';
  writeText(
    `Created ${shown(path)} (${language} ${format} tool '${name}').\n` +
      `Edit it, then check and try it:\n` +
      `  toolgate tools validate ${shown(dir)}\n` +
      `  toolgate tools call ${name} '${example}'${flags.dir?.[0] ? ` --dir ${shown(dir)}` : ''}\n`,
  );
  return 0;
}
