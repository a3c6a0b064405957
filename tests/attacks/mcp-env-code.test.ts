/**
 * Class 2: variables of an MCP server's `env` that make its runtime (or a program it runs) load
 * code from the work directory, beyond the list round 4 added. The file must be among the plan's
 * protected paths, or a sandboxed process rewrites it and the server runs the agent's code with
 * the server's secrets and network.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { native } from '../../ts/src/native/binding.js';
import { tempDir } from '../helpers/fs.js';
import { writeFiles } from '../helpers/tools.js';

const CASES: [name: string, command: string, args: string[], target: string, env: Record<string, string>][] = [
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

describe('code-loading variables of an MCP server env (round 5)', () => {
  for (const [name, command, args, target, env] of CASES) {
    it(`${name}: '${target}' is protected`, async () => {
      const work = tempDir('toolgate-mcpenv5-');
      writeFiles(work, {
        'server.mjs': '// x\n',
        'server.py': '# x\n',
        'server.lua': '-- x\n',
        'server.tcl': '# x\n',
        'server.R': '# x\n',
        'server.php': '<?php\n',
        'server.rb': '# x\n',
        'server.ts': '// x\n',
        'server.scm': '; x\n',
        'server.pl': '# x\n',
        [target]: '# x\n',
        'worker.yaml': `name: v\ntoolsets:\n  mcp:\n    servers: { s: { command: ${command}, args: ${JSON.stringify(args)}, env: ${JSON.stringify(env)} } }\n`,
      });
      const plan = await native.planWorker(join(work, 'worker.yaml'), null, false);
      const guarded = plan.guardedPaths(0).flatMap((sandbox) => sandbox.paths.map((line) => line.path.slice(work.length + 1)));
      const bare = target.endsWith('/keep') ? target.slice(0, -5) : target;
      expect(guarded.some((path) => path === bare || target.startsWith(`${path}/`)), JSON.stringify([...new Set(guarded)])).toBe(true);
    });
  }
});
