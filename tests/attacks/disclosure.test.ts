/**
 * Class 7: refusals are not an oracle. For things outside the root, a `PATH_OUTSIDE_ROOT`
 * message names only what the caller gave and the root: never a symlink's target or where the
 * path resolved to, and the same whether the outside target exists, is missing, is a
 * directory, a dangling link or a symlink loop. Checked through the PathValidator, the file
 * tools and command arguments: with the caller's text masked, every message is identical.
 */
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { FileTools, PathValidator, ToolgateError } from '../../ts/src/index.js';
import { attackFixture, type AttackFixture, cli } from './fixture.js';

let fx: AttackFixture;
/** What the caller gives, each naming something outside in another state. */
let asked: string[];

beforeEach(() => {
  fx = attackFixture();
  const o = fx.outside;
  mkdirSync(join(o, 'dir'));
  symlinkSync(join(o, 'loop-b'), join(o, 'loop-a'));
  symlinkSync(join(o, 'loop-a'), join(o, 'loop-b'));
  symlinkSync(join(o, 'nowhere'), join(o, 'dangling-outside'));
  const links: [string, string][] = [
    ['to-existing', fx.secret],
    ['to-missing', join(o, 'missing')],
    ['to-dangling', join(o, 'dangling-outside')],
    ['to-dir', join(o, 'dir')],
    ['to-loop', join(o, 'loop-a')],
    ['to-etc', '/etc'],
  ];
  for (const [name, target] of links) symlinkSync(target, join(fx.work, name));
  asked = [
    ...links.map(([name]) => name),
    'to-dir/new-file',
    'to-loop/x',
    '../outside/secret',
    '../outside/missing',
    '../outside/loop-a',
    '../outside/dir/../secret',
    'src/../../outside/dir',
    '/etc/passwd',
    join(fx.outside, 'secret'),
  ];
});

/** The refusal's message with the caller's text masked; fails when the call was not refused. */
async function shapeOf(what: string, call: () => unknown): Promise<string> {
  try {
    await call();
  } catch (error) {
    expect(error, what).toBeInstanceOf(ToolgateError);
    const refusal = error as ToolgateError;
    expect(refusal.code, `${what}: ${refusal.message}`).toBe('PATH_OUTSIDE_ROOT');
    for (const leak of ['loop-b', 'nowhere', 'dangling-outside', "missing'", '/dir', fx.secret]) {
      if (!what.includes(leak.replace("'", ''))) expect(refusal.message, what).not.toContain(leak);
    }
    return refusal.message.replaceAll(what, '<asked>');
  }
  throw new Error(`${what} was not refused`);
}

async function expectOneShape(calls: [string, () => unknown][]) {
  const shapes = new Set<string>();
  for (const [what, call] of calls) shapes.add(await shapeOf(what, call));
  expect([...shapes], [...shapes].join("\n")).toHaveLength(1);
}

describe('PATH_OUTSIDE_ROOT says the same whatever lies outside', () => {
  it('from the PathValidator', async () => {
    const validator = new PathValidator(fx.work);
    await expectOneShape(asked.map((path) => [path, () => validator.resolve(path)]));
  });

  it('from the file tools: read, info, exists, write, edit, glob, grep, tree', async () => {
    const files = new FileTools(fx.work);
    for (const operation of [
      (path: string) => files.read({ path }),
      (path: string) => files.info(path),
      (path: string) => files.exists(path),
      (path: string) => files.write(path, 'x'),
      (path: string) => files.edit({ path, oldText: 'a', newText: 'b' }),
      (path: string) => files.glob({ pattern: '*', path }),
      (path: string) => files.grep({ pattern: 'SECRET', path }),
      (path: string) => files.tree({ path }),
    ]) {
      await expectOneShape(asked.map((path) => [path, () => operation(path)]));
    }
  });

  it('from command arguments', async () => {
    const run = cli(fx, ['cat']);
    await expectOneShape(asked.map((path) => [path, () => run('cat', [path])]));
    // In `--file=src/../../x` the whole argument climbs out by its text alone, and the message
    // names the whole argument instead: a difference of the caller's text, not of the outside.
    const inFlags = asked.filter((path) => !path.startsWith('src/'));
    await expectOneShape(inFlags.map((path) => [path, () => run('cat', [`--file=${path}`])]));
  });

  it('never names a symlink target or a resolved place outside', async () => {
    const validator = new PathValidator(fx.work);
    const message = await shapeOf('to-existing', () => validator.resolve('to-existing'));
    expect(message).not.toContain(fx.outside);
    expect(message).toContain(fx.work);
  });
});
