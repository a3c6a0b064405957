/**
 * Class 2: code an MCP server loads through `NODE_OPTIONS` in its `env`. Node accepts double
 * quotes there (`--require "./hooks/h.cjs"`, for paths with spaces); the quoted form must be
 * protected like the bare one.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadWorker, type LoadedWorker, type NamedTool } from '../../ts/src/index.js';
import { tempDir } from '../helpers/fs.js';
import { call, writeFiles } from '../helpers/tools.js';
import { native } from '../../ts/src/native/binding.js';
import { ATTACK_PY, MOUNT_VIEW, snapshotOf, victimFiles } from './protected-fixture.js';

const open: LoadedWorker[] = [];
afterEach(async () => {
  for (const worker of open.splice(0)) await worker.close();
});

describe.runIf(MOUNT_VIEW)('NODE_OPTIONS of an MCP server, quoted', () => {
  for (const [label, nodeOptions, target] of [
    ['bare (control)', '--require ./hooks/bare.cjs', 'hooks/bare.cjs'],
    ['double-quoted', '--require \\"./hooks/quoted.cjs\\"', 'hooks/quoted.cjs'],
    ['double-quoted with =', '--require=\\"./hooks/eq.cjs\\"', 'hooks/eq.cjs'],
  ] as const) {
    it(`${label}: a process cannot rewrite the file it requires`, { timeout: 30_000 }, async () => {
      const work = tempDir('toolgate-nodeopts-');
      const files = victimFiles();
      writeFiles(work, {
        'server.mjs': files['server.mjs']!,
        'srv/payload.mjs': files['srv/payload.mjs']!,
        [target]: '// a hook the server loads\n',
        'attack.py': ATTACK_PY,
        'worker.yaml': [
          'name: victim',
          'toolsets:',
          '  cli_execute: { allowed_binaries: [python3] }',
          '  mcp:',
          `    servers: { srv: { command: node, args: [./server.mjs], env: { NODE_OPTIONS: "${nodeOptions}" } } }`,
          '    approval: { default: preApproved }',
          '',
        ].join('\n'),
      });
      const before = snapshotOf(work, [target]);
      const worker = await loadWorker(join(work, 'worker.yaml'), {});
      open.push(worker);
      const said = await call(worker.tools.cli_execute as NamedTool, { binary: 'python3', args: ['attack.py', target, 'write'] });
      expect(snapshotOf(work, [target]), JSON.stringify(said)).toEqual(before);
    });
  }
});

/**
 * Other variables that make a runtime load code from a path, as an MCP server's `env` may set
 * them: the file (or folder) must be among the protected paths of the plan, like `PERL5LIB`,
 * `RUBYLIB`, `LD_PRELOAD` and `PYTHONPATH` are.
 */
describe('code-loading variables of an MCP server env beyond the known list', () => {
  const CASES: [name: string, command: string, args: string[], target: string, env: Record<string, string>][] = [
    ['PERL5OPT -I', 'perl', ['server.pl'], 'e2/lib', { PERL5OPT: '-I./e2/lib' }],
    ['RUBYOPT -r', 'ruby', ['server.rb'], 'e4/x.rb', { RUBYOPT: '-r./e4/x.rb' }],
    ['LD_AUDIT', 'node', ['server.mjs'], 'e6/a.so', { LD_AUDIT: './e6/a.so' }],
    ['PYTHONUSERBASE (its site-packages .pth files run)', 'python3', ['server.py'], 'e13', { PYTHONUSERBASE: './e13' }],
    ['npm_config_node_options', 'npx', ['some-server'], 'e15/h.cjs', { npm_config_node_options: '--require ./e15/h.cjs' }],
    ['NODE_OPTIONS double-quoted', 'node', ['server.mjs'], 'e16/h.cjs', { NODE_OPTIONS: '--require "./e16/h.cjs"' }],
  ];
  for (const [name, command, args, target, env] of CASES) {
    it(`${name}: '${target}' is protected`, async () => {
      const work = tempDir('toolgate-mcpenv-');
      writeFiles(work, {
        'server.mjs': '// x\n',
        'server.py': '# x\n',
        'server.pl': '# x\n',
        'server.rb': '# x\n',
        [target.includes('.') ? target : `${target}/keep`]: '# x\n',
        'worker.yaml': `name: v\ntoolsets:\n  mcp:\n    servers: { s: { command: ${command}, args: ${JSON.stringify(args)}, env: ${JSON.stringify(env)} } }\n`,
      });
      const plan = await native.planWorker(join(work, 'worker.yaml'), null, false);
      const guarded = plan.guardedPaths(0).flatMap((sandbox) => sandbox.paths.map((line) => line.path.slice(work.length + 1)));
      expect(guarded.some((path) => path === target || target.startsWith(`${path}/`)), JSON.stringify([...new Set(guarded)])).toBe(true);
    });
  }
});
