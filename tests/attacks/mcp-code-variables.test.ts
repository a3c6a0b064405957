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
describe('code-loading variables of an MCP server env', () => {
  const CASES: [name: string, command: string, args: string[], target: string, env: Record<string, string>][] = [
    ['PERL5OPT -I', 'perl', ['server.pl'], 'e2/lib/keep', { PERL5OPT: '-I./e2/lib' }],
    ['RUBYOPT -r', 'ruby', ['server.rb'], 'e4/x.rb', { RUBYOPT: '-r./e4/x.rb' }],
    ['LD_AUDIT', 'node', ['server.mjs'], 'e6/a.so', { LD_AUDIT: './e6/a.so' }],
    ['PYTHONUSERBASE (its site-packages .pth files run)', 'python3', ['server.py'], 'e13/keep', { PYTHONUSERBASE: './e13' }],
    ['npm_config_node_options', 'npx', ['some-server'], 'e15/h.cjs', { npm_config_node_options: '--require ./e15/h.cjs' }],
    ['NODE_OPTIONS double-quoted', 'node', ['server.mjs'], 'e16/h.cjs', { NODE_OPTIONS: '--require "./e16/h.cjs"' }],
  ['control: PERL5LIB', 'perl', ['server.pl'], 'c1/keep', { PERL5LIB: './c1' }],
  ['control: NODE_OPTIONS', 'node', ['server.mjs'], 'c2/h.cjs', { NODE_OPTIONS: '--require ./c2/h.cjs' }],
  ['LUA_INIT @file (runs before the script)', 'lua', ['server.lua'], 'l1/init.lua', { LUA_INIT: '@./l1/init.lua' }],
  ['LUA_PATH template', 'lua', ['server.lua'], 'l2/mod.lua', { LUA_PATH: './l2/?.lua;;' }],
  ['LUA_CPATH template', 'lua', ['server.lua'], 'l3/mod.so', { LUA_CPATH: './l3/?.so;;' }],
  ['TCLLIBPATH', 'tclsh', ['server.tcl'], 't1/pkgIndex.tcl', { TCLLIBPATH: './t1' }],
  ['R_PROFILE_USER', 'Rscript', ['server.R'], 'r1/profile.R', { R_PROFILE_USER: './r1/profile.R' }],
  ['IRBRC', 'irb', [], 'i1/irbrc.rb', { IRBRC: './i1/irbrc.rb' }],
  ['PHPRC (auto_prepend_file)', 'php', ['server.php'], 'p1/php.ini', { PHPRC: './p1/php.ini' }],
  ['PHP_INI_SCAN_DIR', 'php', ['server.php'], 'p2/x.ini', { PHP_INI_SCAN_DIR: './p2' }],
  ['PYTHONPYCACHEPREFIX (a forged .pyc there is imported)', 'python3', ['server.py'], 'pc/keep', { PYTHONPYCACHEPREFIX: './pc' }],
  ['GIT_CONFIG_GLOBAL', 'node', ['server.mjs'], 'g1/gitconfig', { GIT_CONFIG_GLOBAL: './g1/gitconfig' }],
  ['GIT_EXEC_PATH', 'node', ['server.mjs'], 'g2/git-remote-https', { GIT_EXEC_PATH: './g2' }],
  ['GIT_TEMPLATE_DIR (hooks copied into new repos)', 'node', ['server.mjs'], 'g3/hooks/post-checkout', { GIT_TEMPLATE_DIR: './g3' }],
  ['NODE_REPL_EXTERNAL_MODULE', 'node', [], 'n1/repl.cjs', { NODE_REPL_EXTERNAL_MODULE: './n1/repl.cjs' }],
  ['NODE_OPTIONS --import with a percent-encoded name', 'node', ['server.mjs'], 'n2/h.mjs', { NODE_OPTIONS: '--import ./n2/h%2emjs' }],
  ['BUNDLE_GEMFILE', 'bundle', ['exec', 'ruby', 'server.rb'], 'b1/Gemfile', { BUNDLE_GEMFILE: './b1/Gemfile' }],
  ['GUILE_LOAD_PATH', 'guile', ['server.scm'], 'gu/keep', { GUILE_LOAD_PATH: './gu' }],
  ['ERL_LIBS', 'erl', [], 'er/keep', { ERL_LIBS: './er' }],
  ['PIP_CONFIG_FILE (for a uvx/pip-run server)', 'uvx', ['some-server'], 'u1/pip.conf', { PIP_CONFIG_FILE: './u1/pip.conf' }],
  ['UV_CONFIG_FILE', 'uvx', ['some-server'], 'u2/uv.toml', { UV_CONFIG_FILE: './u2/uv.toml' }],
  ['NPM_CONFIG_USERCONFIG (node-options in an npmrc)', 'npx', ['some-server'], 'u3/npmrc', { NPM_CONFIG_USERCONFIG: './u3/npmrc' }],
  ['BUN_CONFIG / bunfig preload', 'bun', ['server.ts'], 'u4/bunfig.toml', { BUN_CONFIG: './u4/bunfig.toml' }],
  ['DENO_DIR (module cache: code Deno runs)', 'deno', ['run', 'server.ts'], 'u5/keep', { DENO_DIR: './u5' }],
  ];
  for (const [name, command, args, target, env] of CASES) {
    it(`${name}: '${target}' is protected`, async () => {
      const work = tempDir('toolgate-mcpenv-');
      writeFiles(work, {
        ...Object.fromEntries(['mjs', 'py', 'pl', 'rb', 'lua', 'tcl', 'R', 'php', 'ts', 'scm'].map((extension) => [`server.${extension}`, '# x\n'])),
        // A folder the variable names is written as `<folder>/keep`.
        [target]: '# x\n',
        'worker.yaml': `name: v\ntoolsets:\n  mcp:\n    servers: { s: { command: ${command}, args: ${JSON.stringify(args)}, env: ${JSON.stringify(env)} } }\n`,
      });
      const plan = await native.planWorker(join(work, 'worker.yaml'), null, false);
      const guarded = plan.guardedPaths(0).flatMap((sandbox) => sandbox.paths.map((line) => line.path.slice(work.length + 1)));
      const bare = target.endsWith('/keep') ? target.slice(0, -'/keep'.length) : target;
      expect(guarded.some((path) => path === bare || target.startsWith(`${path}/`)), JSON.stringify([...new Set(guarded)])).toBe(true);
    });
  }
});
