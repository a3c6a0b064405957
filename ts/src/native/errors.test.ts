/**
 * The error codes and layers are listed once, in the core (`ErrorCode::ALL`, `ErrorLayer::ALL`):
 * the addon hands them out and `scripts/write-native-binding.mjs` writes binding.d.ts's unions
 * from them. These tests fail when the declarations drift from the addon (an addon rebuilt
 * without the script, a hand edit).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { native } from './binding.js';
import { fromNativeError, isToolgateErrorCode, TOOLGATE_ERROR_CODES, ToolgateError, type ToolgateErrorCode, type ToolgateErrorLayer } from './errors.js';
import { PACKAGE_ROOT } from './package-root.js';

/** The members of `export type NAME = 'A' | 'B'` in binding.d.ts, in order. */
function declaredUnion(name: string): string[] {
  const declarations = readFileSync(join(PACKAGE_ROOT, 'native', 'binding.d.ts'), 'utf8');
  const matches = [...declarations.matchAll(new RegExp(`^export type ${name} = (.+)$`, 'gm'))];
  expect(matches, `binding.d.ts declares ${name} once`).toHaveLength(1);
  return (matches[0]?.[1] ?? '').split(' | ').map((member) => JSON.parse(member.replaceAll("'", '"')) as string);
}

describe('error codes', () => {
  it("binding.d.ts's ErrorCode union is exactly the core's list, in its order", () => {
    expect(declaredUnion('ErrorCode')).toEqual(native.errorCodes());
    expect(TOOLGATE_ERROR_CODES).toEqual(native.errorCodes());
    expect(native.constants().errorCodes).toEqual(native.errorCodes());
    expect(new Set(TOOLGATE_ERROR_CODES).size).toBe(TOOLGATE_ERROR_CODES.length);
    // The codes TypeScript raises are the core's too.
    expect(TOOLGATE_ERROR_CODES).toEqual(expect.arrayContaining(['APPROVAL_DENIED', 'MODULE_INVALID', 'TOOL_BLOCKED', 'STATE_INVALID']));
  });

  it("binding.d.ts's ErrorLayer union is exactly the core's list", () => {
    expect(declaredUnion('ErrorLayer')).toEqual(native.constants().errorLayers);
  });

  it('the TypeScript types accept exactly the listed codes and layers', () => {
    const code: ToolgateErrorCode = 'PATH_OUTSIDE_ROOT';
    const layer: ToolgateErrorLayer = 'paths';
    // @ts-expect-error: not a code of the core
    const unknownCode: ToolgateErrorCode = 'NOT_A_CODE';
    // @ts-expect-error: not a layer of the core
    const unknownLayer: ToolgateErrorLayer = 'network';
    expect([code, layer, unknownCode, unknownLayer].map((value) => isToolgateErrorCode(value))).toEqual([true, false, false, false]);
  });

  it('an error of the addon becomes a ToolgateError with a listed code and layer', () => {
    let thrown: unknown;
    try {
      native.alwaysCovers('not json', 'tool', '{}', null);
    } catch (error) {
      thrown = fromNativeError(error);
    }
    expect(thrown).toBeInstanceOf(ToolgateError);
    const { code, layer } = thrown as ToolgateError;
    expect(TOOLGATE_ERROR_CODES).toContain(code);
    expect(native.constants().errorLayers).toContain(layer);
  });
});
