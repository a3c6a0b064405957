import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exec, ToolgateError } from '../ts/src/index.js';
import { tempDir } from './helpers/fs.js';
import { openDescriptorCount, waitUntilGone, zombieChildren } from './helpers/processes.js';

const PATH_ONLY = { PATH: '/usr/bin:/bin' };
const sh = (script: string) => ({ command: '/bin/sh', args: ['-c', script], env: PATH_ONLY });

describe('exec', () => {
  it('reports exit codes, signals and both streams as data', async () => {
    const result = await exec(sh('echo out; echo err >&2; exit 3'));
    expect(result).toMatchObject({ exitCode: 3, signal: null, stdout: 'out\n', stderr: 'err\n' });
    expect(result).toMatchObject({ truncated: false, timedOut: false, aborted: false });
    expect(result.durationMs).toBeGreaterThan(0);

    const killed = await exec(sh('kill -TERM $$'));
    expect(killed).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
  });

  it('never uses a shell: metacharacters reach the program verbatim', async () => {
    const args = ['$(touch pwned)', '`id`', 'a; rm -rf /', '*', '$HOME', '| cat', '> out'];
    const dir = tempDir();
    const result = await exec({ command: '/usr/bin/printf', args: ['%s\\n', ...args], cwd: dir });
    expect(result.stdout).toBe(args.map((arg) => `${arg}\n`).join(''));
    const listing = await exec({ command: '/bin/ls', args: ['-A'], cwd: dir });
    expect(listing.stdout).toBe('');
  });

  it('passes exactly the given environment', async () => {
    process.env.TOOLGATE_PARENT_SECRET = 'hunter2';
    try {
      const none = await exec({ command: '/usr/bin/env' });
      expect(none.stdout).toBe('');
      const some = await exec({ command: '/usr/bin/env', env: { A: '1', B: 'two words' } });
      expect(some.stdout.split('\n').filter(Boolean).sort()).toEqual(['A=1', 'B=two words']);
    } finally {
      delete process.env.TOOLGATE_PARENT_SECRET;
    }
  });

  it('runs in cwd and writes stdin', async () => {
    const dir = tempDir();
    expect((await exec({ command: '/bin/pwd', cwd: dir })).stdout).toBe(`${dir}\n`);
    const echoed = await exec({ command: '/bin/cat', stdin: 'hello' });
    expect(echoed.stdout).toBe('hello');
    const bytes = await exec({ command: '/bin/cat', stdin: new Uint8Array([104, 105]) });
    expect(bytes.stdout).toBe('hi');
  });

  it('kills the whole group on timeout even when a grandchild holds the pipes', async () => {
    const started = Date.now();
    const result = await exec({ ...sh('sleep 30 & echo $!; wait'), timeoutMs: 1000 });
    const elapsed = Date.now() - started;
    expect(result.timedOut).toBe(true);
    expect(elapsed).toBeLessThan(2000);
    const grandchild = Number(result.stdout.trim());
    expect(grandchild).toBeGreaterThan(0);
    expect(await waitUntilGone(grandchild)).toBe(true);
  });

  it('kills the whole group when the AbortSignal fires', async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 300);
    const result = await exec({ ...sh('sleep 30 & echo $!; wait'), signal: controller.signal });
    expect(result).toMatchObject({ aborted: true, timedOut: false });
    expect(Date.now() - started).toBeLessThan(1500);
    expect(await waitUntilGone(Number(result.stdout.trim()))).toBe(true);
  });

  it('does not start when the signal is already aborted', async () => {
    const dir = tempDir();
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expect(exec({ command: '/usr/bin/touch', args: ['x'], cwd: dir, signal: controller.signal })).rejects.toThrow('stop');
    expect((await exec({ command: '/bin/ls', cwd: dir })).stdout).toBe('');
  });

  it('caps a 1 GiB stream at exactly 1 MiB without growing memory', async () => {
    let peak = process.memoryUsage.rss();
    const before = peak;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss());
    }, 5);
    try {
      const result = await exec({
        command: '/usr/bin/head',
        args: ['-c', String(1024 ** 3), '/dev/zero'],
        maxOutputBytes: 1024 * 1024,
      });
      expect(Buffer.byteLength(result.stdout)).toBe(1024 * 1024);
      expect(result.truncated).toBe(true);
      expect(result.exitCode).toBe(0);
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, process.memoryUsage.rss());
    expect(peak - before).toBeLessThan(64 * 1024 * 1024);
  });

  it('does not deadlock on 10 MiB of stdin the child never reads', async () => {
    const result = await exec({ ...sh('sleep 0.1'), stdin: 'x'.repeat(10 * 1024 * 1024), timeoutMs: 10_000 });
    expect(result).toMatchObject({ exitCode: 0, timedOut: false });
  });

  it('completes 500 concurrent calls', async () => {
    const results = await Promise.all(
      Array.from({ length: 500 }, (_, i) => exec({ command: '/bin/echo', args: [String(i)] })),
    );
    results.forEach((result, i) => expect(result.stdout).toBe(`${i}\n`));
  });

  it('leaks no descriptors and leaves no zombies over 1,000 calls', async () => {
    await exec({ command: '/bin/true' }); // starts the runtime and its descriptors
    const before = openDescriptorCount();
    for (let batch = 0; batch < 20; batch++) {
      await Promise.all(Array.from({ length: 50 }, () => exec({ command: '/bin/true', stdin: 'x' })));
    }
    expect(openDescriptorCount()).toBe(before);
    expect(zombieChildren()).toEqual([]);
  });

  it('throws ToolgateError only when the process cannot start', async () => {
    const dir = tempDir();
    const missing = await exec({ command: 'no-such-tool-xyz', env: PATH_ONLY, cwd: dir }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ToolgateError);
    expect(missing).toMatchObject({ code: 'BINARY_NOT_FOUND' });
    expect((missing as Error).message).toContain('no-such-tool-xyz');

    const badCwd = await exec({ command: '/bin/true', cwd: join(dir, 'nope') }).catch((e: unknown) => e);
    expect(badCwd).toMatchObject({ code: 'SPAWN_FAILED' });
    expect((badCwd as Error).message).toContain(join(dir, 'nope'));
    expect((badCwd as Error).message).toContain('/bin/true');

    const script = join(dir, 'tool.sh');
    writeFileSync(script, '#!/bin/sh\necho hi\n');
    chmodSync(script, 0o644);
    const denied = await exec({ command: script, cwd: dir }).catch((e: unknown) => e);
    expect(denied).toMatchObject({ code: 'SPAWN_FAILED' });
    expect((denied as Error).message).toMatch(/permission denied/);
    expect((denied as Error).message).toContain(dir);
  });
});
