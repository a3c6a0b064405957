/**
 * Class 2: programs that rewrite their arguments before using them. curl expands URL globs
 * (`{fil}e:`, `[f-f]ile:` become `file:`), reads more options from `-K` files and takes
 * schemeless URLs as local files with `--proto-default file`; git runs a command for an
 * `ext::` remote. Each attack is run without toolgate first (it reads the secret or runs the
 * command), then through `cli_execute` and `shell`, which must refuse it. Skipped where curl or
 * git is not installed.
 */
import { execFile } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { attackFixture, type AttackFixture, cli, plain, refusedWith, SECRET, shell, skip, which } from './fixture.js';

let fx: AttackFixture;
beforeEach(() => {
  fx = attackFixture();
});

const curl = which('curl');

describe('curl URL globs that spell file:', () => {
  it.each([
    ['a brace around part of the scheme', (s: string) => `{fil}e://${s}`],
    ['a one-letter range', (s: string) => `[f-f]ile://${s}`],
    ['alternatives inside the scheme', (s: string) => `fi{l,x}e://${s}`],
    ['upper case in braces', (s: string) => `{F}ILE://${s}`],
    ['a whole URL as one alternative', (s: string) => `{http://127.0.0.1:9,fi}le://${s}`],
    ['a range with a step', (s: string) => `[a-z:5]ile://${s}`],
  ])('refuses %s', async (_name, build) => {
    if (!curl) return skip('curl is not installed');
    const url = build(fx.secret);
    expect(plain(curl, ['-s', url], fx.work), 'the attack works without toolgate').toContain(SECRET);
    expect(await refusedWith(() => cli(fx, ['curl'])('curl', ['-s', url]))).toBe('ARGUMENT_REJECTED');
    expect(await refusedWith(() => shell(fx)(`curl -s '${url}'`))).toBe('ARGUMENT_REJECTED');
  });

  it('lets ordinary globs and JSON data through', async () => {
    if (!curl) return skip('curl is not installed');
    const run = cli(fx, ['curl']);
    for (const args of [
      ['-s', '--max-time', '5', 'http://127.0.0.1:9/{a,b}/[1-2].png'],
      ['-s', '--max-time', '5', '-d', '{"name":"x","tags":["a","b"]}', 'http://127.0.0.1:9/'],
    ]) {
      const result = await run('curl', args);
      expect(result.exitCode, args.join(' ')).not.toBe(0); // nothing listens; the checks let it through
    }
  });
});

describe('curl options that make URLs or options out of files', () => {
  it.each([
    ['-K with a config file', () => ['-s', '-K', 'cfg']],
    ['-K in a cluster', () => ['-sKcfg']],
    ['--config', () => ['-s', '--config', 'cfg']],
    ['an abbreviated --config', () => ['-s', '--conf', 'cfg']],
    ['--proto-default file with a schemeless URL', (f: AttackFixture) => ['-s', '--proto-default', 'file', `localhost${f.secret}`]],
  ])('refuses %s', async (_name, build) => {
    if (!curl) return skip('curl is not installed');
    writeFileSync(join(fx.work, 'cfg'), `url = "file://${fx.secret}"\n`);
    const args = build(fx);
    expect(plain(curl, args, fx.work), 'the attack works without toolgate').toContain(SECRET);
    expect(await refusedWith(() => cli(fx, ['curl'])('curl', args))).toBe('ARGUMENT_REJECTED');
  });

  it('refuses curl variables that could assemble a file: URL', async () => {
    if (!curl) return skip('curl is not installed');
    const run = cli(fx, ['curl']);
    for (const args of [
      ['--variable', 's=fil', '--expand-url', '{{s}}e:///etc/passwd'],
      ['--expand-data', '{{x}}', 'http://127.0.0.1:9/'],
      ['--proto-redir', '=all', '-L', 'http://127.0.0.1:9/'],
    ]) {
      expect(await refusedWith(() => run('curl', args)), args.join(' ')).toBe('ARGUMENT_REJECTED');
    }
  });
});

describe("git's ext:: and fd:: transports", () => {
  it.each([
    ['clone from ext::', ['-c', 'protocol.ext.allow=always', 'clone', 'ext::sh -c touch% pwned', 'dest']],
    ['ls-remote of ext:: in upper case', ['-c', 'protocol.ext.allow=always', 'ls-remote', 'EXT::sh -c touch% pwned']],
    ['ext:: as a configured remote', ['-c', 'protocol.ext.allow=always', '-c', 'remote.x.url=ext::sh -c touch% pwned', 'fetch', 'x']],
    ['fd:: as a remote', ['fetch', 'fd::0']],
  ])('refuses %s', async (_name, args) => {
    const git = which('git');
    if (!git) return skip('git is not installed');
    plain(git, ['init', '-q'], fx.work);
    if (args.some((arg) => /ext::/i.test(arg))) {
      plain(git, args.map((arg) => arg.replace('EXT::', 'ext::')), fx.work);
      expect(existsSync(join(fx.work, 'pwned')), 'the attack works without toolgate').toBe(true);
      plain('rm', ['-f', 'pwned'], fx.work);
    }
    expect(await refusedWith(() => cli(fx, ['git'])('git', args))).toBe('ARGUMENT_REJECTED');
    expect(existsSync(join(fx.work, 'pwned'))).toBe(false);
  });
});

describe('wget command files', () => {
  it.each([['--config=cfg'], ['--config', 'cfg'], ['--conf=cfg']])('refuses %s', async (...args) => {
    const wget = which('wget');
    if (!wget) return skip('wget is not installed');
    writeFileSync(join(fx.work, 'cfg'), `output_document = ${join(fx.outside, 'written')}\n`);
    const server = createServer((_request, response) => response.end('from the server'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/x`;
    try {
      // Without toolgate, the command file makes wget write outside.
      await new Promise((resolve) => execFile(wget, ['-q', ...args, url], { cwd: fx.work }, resolve));
      expect(existsSync(join(fx.outside, 'written')), 'the attack works without toolgate').toBe(true);
      rmSync(join(fx.outside, 'written'));
      expect(await refusedWith(() => cli(fx, ['wget'])('wget', ['-q', ...args, url]))).toBe('ARGUMENT_REJECTED');
      expect(existsSync(join(fx.outside, 'written'))).toBe(false);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
