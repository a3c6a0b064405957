/**
 * Errors cross the native boundary one way (issue 11): every failure, synchronous or async,
 * arrives as an error object the core built with `code` and `layer`; the SDK turns it into a
 * `ToolgateError` without reading the message, and the code list is the one in binding.d.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { native } from '../ts/src/native/binding.js';
import { exec, FileTools, PathValidator, TOOLGATE_ERROR_CODES, ToolgateError } from '../ts/src/index.js';
import { tempDir } from './helpers/fs.js';

const ROOT = join(import.meta.dirname, '..');

describe('structured errors', () => {
  it('the code list is generated from the core and carries every code, the TypeScript-raised ones too', () => {
    const declarations = readFileSync(join(ROOT, 'native/binding.d.ts'), 'utf8');
    const union = /export type ErrorCode = ([^\n]+)/.exec(declarations)?.[1] ?? '';
    for (const code of TOOLGATE_ERROR_CODES) expect(union).toContain(`'${code}'`);
    expect(TOOLGATE_ERROR_CODES).toEqual(expect.arrayContaining(['APPROVAL_DENIED', 'MODULE_INVALID', 'TOOL_BLOCKED', 'INTERNAL_ERROR']));
    expect(new Set(TOOLGATE_ERROR_CODES).size).toBe(TOOLGATE_ERROR_CODES.length);
  });

  it('a rejected native promise carries code and layer as properties, not in the message', async () => {
    const dir = tempDir();
    const handle = native.prepareProcess({ command: join(dir, 'missing-program'), cwd: dir });
    const raw = (await handle.wait().catch((error: unknown) => error)) as Error & { code?: string; layer?: string };
    expect(raw).toBeInstanceOf(Error);
    expect(raw.code).toBe('BINARY_NOT_FOUND');
    expect(raw.layer).toBe('process');
    expect(raw.message).not.toMatch(/^[A-Z_]+: /);

    const files = native.FileTools ? new native.FileTools(dir) : undefined;
    const read = (await files?.read({ path: 'nope.txt' }).catch((error: unknown) => error)) as { code?: string; layer?: string };
    expect(read).toMatchObject({ code: 'FILE_NOT_FOUND', layer: 'files' });
  });

  it('the SDK turns both forms into ToolgateError with the same code and layer', async () => {
    const dir = tempDir();
    const async = await exec({ command: join(dir, 'missing-program'), cwd: dir }).catch((error: unknown) => error);
    expect(async).toBeInstanceOf(ToolgateError);
    expect(async).toMatchObject({ code: 'BINARY_NOT_FOUND', layer: 'process' });

    const sync = (() => {
      try {
        new PathValidator(dir).resolve('../outside');
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(sync).toBeInstanceOf(ToolgateError);
    expect(sync).toMatchObject({ code: 'PATH_OUTSIDE_ROOT', layer: 'paths' });

    const files = new FileTools(dir);
    const input = await files.grep({ pattern: 'x', context: 1e300 }).catch((error: unknown) => error);
    expect(input).toMatchObject({ code: 'INVALID_INPUT', layer: 'input', message: "option 'context' is 1e300; give a whole number from 0 to 20" });
  });

  it('a message that only looks like a code prefix is not parsed into one', async () => {
    const dir = tempDir();
    const files = new FileTools(dir);
    const error = await files.read({ path: 'TOOL_BLOCKED: fake' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'FILE_NOT_FOUND' });
  });
});
