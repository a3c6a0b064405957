// The ESM smoke test of an installed toolgate. scripts/test-release.sh copies it into a fresh
// app whose node_modules has toolgate, its platform package (chosen by npm), ai and zod, and
// runs it there with `node smoke.mjs PLATFORM`. Under user-mode emulation (qemu, argument
// `--emulated`) the kernel sandbox cannot work, since qemu emulates neither Landlock nor
// seccomp nor the launcher's exec; there the sandboxed call must fail with SANDBOX_UNAVAILABLE
// and the other tools run with `sandbox: false`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { MockLanguageModelV3 } from 'ai/test';
import { cliExecuteTool, exec, loadWorker, runWorker, VERSION } from 'toolgate';

const [platform, mode] = process.argv.slice(2);
const emulated = mode === '--emulated';
const require = createRequire(import.meta.url);
const step = (text) => console.log(`  ok  ${text}`);

// npm chose the platform package: exactly this one is installed, and the main package has no binary.
const platformPackage = dirname(require.resolve(`toolgate-${platform}/package.json`));
const installed = readdirSync(join(process.cwd(), 'node_modules')).filter((name) => name.startsWith('toolgate-'));
assert.deepEqual(installed, [`toolgate-${platform}`], `npm should install only toolgate-${platform}`);
const mainPackage = dirname(require.resolve('toolgate/package.json'));
const binaries = execFileSync('find', [mainPackage, '-name', '*.node', '-o', '-name', 'toolgate-sandbox'], { encoding: 'utf8' });
assert.equal(binaries, '', 'the main package carries no binary');
for (const shipped of ['LICENSE', 'docs/sandbox.md', 'schemas/worker.schema.json']) {
  assert.ok(existsSync(join(mainPackage, shipped)), `the main package ships ${shipped}`);
}
const installedManifest = JSON.parse(readFileSync(join(mainPackage, 'package.json'), 'utf8'));
assert.equal(installedManifest.scripts, undefined, 'the installed manifest has no scripts (no install script runs)');
assert.equal(require.resolve('toolgate/schemas/worker.schema.json'), join(mainPackage, 'schemas', 'worker.schema.json'), 'the schema has a package path');
step(`toolgate ${VERSION} with toolgate-${platform} (picked by npm), no binary in the main package, no scripts, toolgate/schemas/worker.schema.json resolves`);

const base = mkdtempSync(join(tmpdir(), 'toolgate-smoke-'));
const work = join(base, 'work');
const outside = join(base, 'outside');
mkdirSync(work);
mkdirSync(outside);
const secret = join(outside, 'secret.txt');
writeFileSync(secret, 'the outside secret\n');
writeFileSync(join(work, 'inside.txt'), 'inside\n');
const env = { PATH: '/usr/bin:/bin' };

// exec: the raw primitive, unsandboxed without the option.
const echoed = await exec({ command: 'echo', args: ['hello from exec'], cwd: work, env });
assert.equal(echoed.exitCode, 0);
assert.equal(echoed.stdout, 'hello from exec\n');
const unsandboxed = await exec({ command: 'cat', args: [secret], cwd: work, env });
assert.equal(unsandboxed.stdout, 'the outside secret\n', 'without a sandbox the outside file is readable (the control)');
step('exec runs a program and returns its output');

// cli_execute: an allowlisted binary with an argument array (sandboxed by default).
const sandboxOff = emulated ? { sandbox: false } : {};
const cli = cliExecuteTool({ workDir: work, allowedBinaries: ['ls', 'cat'], ...sandboxOff });
const listing = await cli.execute({ binary: 'ls', args: ['.'] }, { toolCallId: 'smoke-1', messages: [] });
assert.equal(listing.exitCode, 0, JSON.stringify(listing));
assert.match(listing.stdout, /inside\.txt/);
step(`cli_execute lists the work dir${emulated ? ' (sandbox: false under emulation)' : ''}`);

// A worker from YAML with the mock model, approvals answered: write_file, then cli_execute
// reads the file back (left out under emulation, where its default sandbox cannot run).
const cliYaml = emulated ? '' : '\n  cli_execute:\n    allowed_binaries: [cat]';
writeFileSync(join(work, 'worker.yaml'), `name: smoke\ninstructions: You write a file and read it back.\ntoolsets:\n  filesystem: {}${cliYaml}\n`);
const turns = [
  [{ toolName: 'write_file', input: { path: 'notes/hello.txt', content: 'hello from the worker\n' } }],
  ...(emulated ? [] : [[{ toolName: 'cli_execute', input: { binary: 'cat', args: ['notes/hello.txt'] } }]]),
  'done',
];
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
let turn = 0;
const model = new MockLanguageModelV3({
  doGenerate: async () => {
    const next = turns[turn++];
    if (next === undefined) throw new Error(`the scripted model ran out of turns after ${turns.length}`);
    if (typeof next === 'string') {
      return { content: [{ type: 'text', text: next }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
    }
    const content = next.map((call, index) => ({ type: 'tool-call', toolCallId: `call-${turn}-${index}`, toolName: call.toolName, input: JSON.stringify(call.input) }));
    return { content, finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] };
  },
});
const worker = await loadWorker(join(work, 'worker.yaml'));
const run = await runWorker(worker, 'write notes/hello.txt', { model, onApproval: () => 'approve', maxSteps: 5 });
assert.equal(run.text, 'done', JSON.stringify(run));
assert.equal(readFileSync(join(work, 'notes/hello.txt'), 'utf8'), 'hello from the worker\n');
if (!emulated) {
  const catCall = run.toolCalls.find((call) => call.toolName === 'cli_execute');
  assert.equal(catCall?.output?.stdout, 'hello from the worker\n', JSON.stringify(run.toolCalls));
}
step(`a worker loaded from YAML runs with the mock model (write_file${emulated ? '' : ', cli_execute'})`);

// The kernel sandbox (issue 12's contract): the launcher ships next to the addon.
assert.ok(existsSync(join(platformPackage, 'toolgate-sandbox')), 'the launcher ships in the platform package');
if (emulated) {
  await assert.rejects(
    exec({ command: 'cat', args: [secret], cwd: work, env, sandbox: 'enforce' }),
    (error) => error.code === 'SANDBOX_UNAVAILABLE',
  );
  step('a sandboxed exec is SANDBOX_UNAVAILABLE under emulation (fails closed)');
} else {
  const denied = await exec({ command: 'cat', args: [secret], cwd: work, env, sandbox: 'enforce' });
  assert.equal(denied.sandboxed, true, JSON.stringify(denied));
  assert.notEqual(denied.exitCode, 0);
  assert.doesNotMatch(denied.stdout, /outside secret/);
  const allowed = await exec({ command: 'cat', args: ['inside.txt'], cwd: work, env, sandbox: 'enforce' });
  assert.equal(allowed.stdout, 'inside\n', JSON.stringify(allowed));
  step('a sandboxed exec reads inside the work dir and not outside it');
}
console.log(`smoke (ESM, node ${process.version}, ${platform}${emulated ? ', emulated' : ''}): passed`);
